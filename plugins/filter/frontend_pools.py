# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Filters frontend_pools (the leaders of the plan's Docker groups, pooled by served model) and frontend_problems
(docs in frontend_pools.yml and frontend_problems.yml)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.nimstack.multinode.plugins.module_utils.lazy import lazy_module

_frontend = lazy_module('frontend')


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


class FilterModule(object):
    def filters(self):
        return {'frontend_pools': frontend_pools, 'frontend_problems': frontend_problems}
