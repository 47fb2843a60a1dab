#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The alert rules' test helpers (tests/monitoring/test-rules.sh):

  rules_tool.py write FILE [THRESHOLDS_JSON]   the rule file of rule_groups(thresholds)
  rules_tool.py coverage TEST_FILE...          every alert has a firing and a quiet promtool case

A firing case is an alert_rule_test whose exp_alerts is not empty, a quiet one an empty exp_alerts.
"""

from __future__ import absolute_import, division, print_function

import json
import os
import sys

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _import_alerts():
    sys.path.insert(0, os.path.join(REPO, 'build', 'collections'))
    from ansible_collections.nimstack.multinode.plugins.module_utils import nim_alerts
    return nim_alerts


def rule_file_text(groups):
    return yaml.safe_dump({'groups': groups}, sort_keys=False, width=1000, default_flow_style=False)


def coverage(alerts, test_documents):
    """(counts, problems): counts {alert: [firing cases, quiet cases]} over promtool test documents,
    problems naming each alert without a firing or a quiet case, and each case of an alert the rules lack."""
    counts = dict((name, [0, 0]) for name in alerts)
    problems = []
    for source, doc in test_documents:
        for test in (doc or {}).get('tests') or []:
            for case in test.get('alert_rule_test') or []:
                name = case.get('alertname')
                if name not in counts:
                    problems.append('%s: a case of alert %s, which rule_groups() does not make' % (source, name))
                    continue
                counts[name][0 if case.get('exp_alerts') else 1] += 1
    for name in alerts:
        firing, quiet = counts[name]
        if not firing:
            problems.append('alert %s has no promtool case where it fires (a non-empty exp_alerts)' % name)
        if not quiet:
            problems.append('alert %s has no promtool case where it stays quiet (exp_alerts: [])' % name)
    return counts, problems


def main(argv):
    nim_alerts = _import_alerts()
    if len(argv) >= 2 and argv[0] == 'write':
        thresholds = json.loads(argv[2]) if len(argv) > 2 else None
        with open(argv[1], 'w') as handle:
            handle.write(rule_file_text(nim_alerts.rule_groups(thresholds)))
        return 0
    if len(argv) >= 2 and argv[0] == 'coverage':
        docs = []
        for path in argv[1:]:
            with open(path) as handle:
                docs.append((os.path.basename(path), yaml.safe_load(handle)))
        counts, problems = coverage(nim_alerts.alert_names(nim_alerts.rule_groups()), docs)
        for name in sorted(counts):
            print('   %-26s %2d firing, %2d quiet' % (name, counts[name][0], counts[name][1]))
        print('   %d cases in all' % sum(sum(c) for c in counts.values()))
        for problem in problems:
            print('rules_tool.py: %s' % problem, file=sys.stderr)
        return 1 if problems else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
