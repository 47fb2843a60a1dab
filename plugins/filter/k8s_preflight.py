# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Filters k8s_groups, k8s_limited_groups, k8s_limit_problems, k8s_run_scope, k8s_problems and
k8s_capacity_groups of the role nim_k8s: which groups a run covers and what is wrong with them, before
any object is built (the objects: filter file k8s_objects.py; docs in the .yml files)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.nimstack.multinode.plugins.module_utils.lazy import lazy_module

k8s_preflight = lazy_module('k8s_preflight')


def plan_argument(name, plan):
    if not isinstance(plan, dict) or not isinstance(plan.get('groups'), dict):
        raise AnsibleFilterError('%s: expects the whole plan of nimstack.multinode.nim_plan ({groups, hosts}), got %r'
                                 % (name, type(plan).__name__))
    return plan


def settings_argument(name, settings):
    if not isinstance(settings, dict):
        raise AnsibleFilterError('%s: expects the nim_k8s settings as a mapping, got %r' % (name, type(settings).__name__))
    return settings


def k8s_groups(plan):
    return k8s_preflight.k8s_groups(plan_argument('k8s_groups', plan))


def k8s_limited_groups(plan, play_hosts):
    return k8s_preflight.limited_groups(plan_argument('k8s_limited_groups', plan), list(play_hosts or []))['whole']


def k8s_limit_problems(plan, play_hosts, limit=None, inventory_groups=None):
    return k8s_preflight.limit_problems(plan_argument('k8s_limit_problems', plan), list(play_hosts or []), limit,
                                        dict(inventory_groups or {}))


def k8s_run_scope(plan, names=None, state='present', monitoring=True):
    try:
        return k8s_preflight.run_scope(plan_argument('k8s_run_scope', plan), list(names or []), state, monitoring)
    except ValueError as exc:
        raise AnsibleFilterError('k8s_run_scope: %s' % exc)


def k8s_problems(plan, settings):
    return k8s_preflight.k8s_problems(plan_argument('k8s_problems', plan), settings_argument('k8s_problems', settings))


def k8s_capacity_groups(plan, settings):
    return k8s_preflight.capacity_groups(plan_argument('k8s_capacity_groups', plan), settings_argument('k8s_capacity_groups', settings))


class FilterModule(object):
    def filters(self):
        return {
            'k8s_groups': k8s_groups,
            'k8s_limited_groups': k8s_limited_groups,
            'k8s_limit_problems': k8s_limit_problems,
            'k8s_run_scope': k8s_run_scope,
            'k8s_problems': k8s_problems,
            'k8s_capacity_groups': k8s_capacity_groups,
        }
