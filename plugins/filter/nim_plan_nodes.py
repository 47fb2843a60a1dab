# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Filter nim_plan_nodes: the hosts of nim_nodes as nimstack.multinode.nim_plan takes them (docs in nim_plan_nodes.yml)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.nimstack.multinode.plugins.module_utils.nim_plan import DEFAULT_GROUP, plan_nodes


def nim_plan_nodes(hostvars, hosts):
    hosts = list(hosts or [])
    # A host without nim_group belongs to the group the validator counts it in: the first node's
    # validate_inventory_default_nim_group, as playbooks/preflight.yml reads it.
    default_group = hostvars[hosts[0]].get('validate_inventory_default_nim_group', DEFAULT_GROUP) if hosts else DEFAULT_GROUP
    return plan_nodes(hosts, hostvars, default_group=default_group)


class FilterModule(object):
    def filters(self):
        return {'nim_plan_nodes': nim_plan_nodes}
