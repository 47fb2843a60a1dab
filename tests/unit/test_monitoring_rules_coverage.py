# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The coverage check of the alert rules' promtool cases (tests/monitoring/rules_tool.py): an alert
without a firing or a quiet case, or a case of an alert that no longer exists, is named."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import glob
import importlib.util
import os

import yaml

from ansible_collections.nimstack.multinode.plugins.module_utils.nim_alerts import ALERTS

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_SPEC = importlib.util.spec_from_file_location('rules_tool', os.path.join(REPO, 'tests', 'monitoring', 'rules_tool.py'))
rules_tool = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(rules_tool)


def _docs():
    docs = []
    for path in sorted(glob.glob(os.path.join(REPO, 'tests', 'monitoring', 'rules', 'test-*.yml'))):
        with open(path) as handle:
            docs.append((os.path.basename(path), yaml.safe_load(handle)))
    return docs


def test_the_committed_cases_cover_every_alert():
    counts, problems = rules_tool.coverage(list(ALERTS), _docs())
    assert problems == []
    assert all(firing and quiet for firing, quiet in counts.values())


def test_a_new_alert_without_cases_is_named():
    problems = rules_tool.coverage(list(ALERTS) + ['NIMNewAlert'], _docs())[1]
    assert problems == ['alert NIMNewAlert has no promtool case where it fires (a non-empty exp_alerts)',
                        'alert NIMNewAlert has no promtool case where it stays quiet (exp_alerts: [])']


def test_an_alert_with_firing_cases_only_is_named():
    doc = {'tests': [{'alert_rule_test': [{'alertname': 'GPUTooHot', 'exp_alerts': [{'exp_labels': {}}]}]}]}
    problems = rules_tool.coverage(['GPUTooHot'], [('t.yml', doc)])[1]
    assert problems == ['alert GPUTooHot has no promtool case where it stays quiet (exp_alerts: [])']


def test_a_case_of_a_removed_alert_is_named():
    doc = {'tests': [{'alert_rule_test': [{'alertname': 'OldAlert', 'exp_alerts': []}]}]}
    problems = rules_tool.coverage([], [('t.yml', doc)])[1]
    assert problems == ['t.yml: a case of alert OldAlert, which rule_groups() does not make']


def test_the_rule_file_is_a_prometheus_rule_file():
    text = rules_tool.rule_file_text([{'name': 'g', 'rules': [{'alert': 'A', 'expr': 'up == 0'}]}])
    assert yaml.safe_load(text) == {'groups': [{'name': 'g', 'rules': [{'alert': 'A', 'expr': 'up == 0'}]}]}
