# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Filter monitoring_files: the Prometheus targets, configurations and Grafana provisioning of the plan's
Docker groups (docs in monitoring_files.yml)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.nimstack.multinode.plugins.module_utils.lazy import lazy_module

_monitoring = lazy_module('monitoring')


def monitoring_files(groups, settings=None):
    if not isinstance(groups, dict) or not isinstance(settings or {}, dict):
        raise AnsibleFilterError('monitoring_files: expects the groups of nimstack.multinode.nim_plan (a dict) and a '
                                 'dict of settings')
    try:
        return _monitoring.monitoring_files(groups, settings)
    except ValueError as exc:
        raise AnsibleFilterError('monitoring_files: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'monitoring_files': monitoring_files}
