# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Filter nim_alert_rules: the alert rules of a multi-node NIM site as a Prometheus rule file's
groups (docs in nim_alert_rules.yml)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.nimstack.multinode.plugins.module_utils.lazy import lazy_module

_alerts = lazy_module('nim_alerts')


def nim_alert_rules(thresholds=None):
    if thresholds is not None and not isinstance(thresholds, dict):
        raise AnsibleFilterError('nim_alert_rules: expects a dict of threshold overrides (or none), got %r'
                                 % type(thresholds).__name__)
    try:
        return _alerts.rule_groups(dict(thresholds or {}))
    except _alerts.AlertConfigError as exc:
        raise AnsibleFilterError('nim_alert_rules: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'nim_alert_rules': nim_alert_rules}
