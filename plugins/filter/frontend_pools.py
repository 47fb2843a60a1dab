# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Filters frontend_pools (the leaders of the plan's Docker groups, pooled by served model), frontend_problems,
frontend_drain_marks (where a planned restart drains a group) and requests_in_flight (docs in the .yml files of
their names)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.nimstack.multinode.plugins.module_utils.lazy import lazy_module

_frontend = lazy_module('frontend')
_weights = lazy_module('frontend_weights')


def frontend_pools(groups):
    if not isinstance(groups, dict):
        raise AnsibleFilterError('frontend_pools: expects the groups of nimstack.multinode.nim_plan (a dict), got %r'
                                 % type(groups).__name__)
    return _frontend.frontend_pools(groups)


def frontend_problems(plan, frontends):
    if not isinstance(plan, dict) or not isinstance(frontends, dict):
        raise AnsibleFilterError('frontend_problems: expects the whole plan of nimstack.multinode.nim_plan and a dict of '
                                 'front door hosts to their settings')
    return _frontend.frontend_problems(plan, frontends)


def frontend_drain_marks(groups, group, stopping, hostvars, frontend_hosts):
    if not isinstance(groups, dict):
        raise AnsibleFilterError('frontend_drain_marks: expects the groups of nimstack.multinode.nim_plan (a dict), got %r'
                                 % type(groups).__name__)
    frontends = {}
    for host in frontend_hosts or []:
        variables = hostvars[host] if host in hostvars else {}
        frontends[host] = dict((name, variables.get(name)) for name in _frontend.DRAIN_DEFAULTS)
    return _frontend.drain_marks(groups, str(group), list(stopping or []), frontends)


def requests_in_flight(text):
    load = _weights.load_of(_weights.parse_metrics(str(text or '')))
    return None if load is None else int(load['running'] + load['waiting'])


class FilterModule(object):
    def filters(self):
        return {'frontend_pools': frontend_pools, 'frontend_problems': frontend_problems,
                'frontend_drain_marks': frontend_drain_marks, 'requests_in_flight': requests_in_flight}
