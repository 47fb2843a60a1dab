# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Filter frontend_pools: the leaders of the plan's Docker groups, pooled by served model (docs in frontend_pools.yml)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.nimstack.multinode.plugins.module_utils.frontend import frontend_pools as _frontend_pools


def frontend_pools(groups):
    if not isinstance(groups, dict):
        raise AnsibleFilterError('frontend_pools: expects the groups of nimstack.multinode.nim_plan (a dict), got %r'
                                 % type(groups).__name__)
    return _frontend_pools(groups)


class FilterModule(object):
    def filters(self):
        return {'frontend_pools': frontend_pools}
