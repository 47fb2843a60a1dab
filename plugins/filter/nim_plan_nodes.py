# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Filter nim_plan_nodes: the hosts of nim_nodes as nimstack.multinode.nim_plan takes them (docs in nim_plan_nodes.yml)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.nimstack.multinode.plugins.module_utils.lazy import lazy_module

_plan = lazy_module('nim_plan')


def nim_plan_nodes(hostvars, hosts):
    hosts = list(hosts or [])
    # A host without nim_group belongs to the group the validator counts it in: the first node's
    # validate_inventory_default_nim_group, as playbooks/preflight.yml reads it.
    default_group = hostvars[hosts[0]].get('validate_inventory_default_nim_group', _plan.DEFAULT_GROUP) if hosts else _plan.DEFAULT_GROUP
    return _plan.plan_nodes(hosts, hostvars, default_group=default_group)


class FilterModule(object):
    def filters(self):
        return {'nim_plan_nodes': nim_plan_nodes}
