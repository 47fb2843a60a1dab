# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.nimstack.multinode.plugins.filter.nim_plan_nodes import FilterModule, nim_plan_nodes


def test_filter_is_registered():
    assert FilterModule().filters()['nim_plan_nodes'] is nim_plan_nodes


def test_a_host_without_nim_group_is_in_the_first_nodes_default_group():
    hostvars = {'gpu-1': {'validate_inventory_default_nim_group': 'pool', 'nim_group': 'llama'},
                'gpu-2': {'nim_image_tag': '1.3.0'}}
    assert [(n['host'], n['group']) for n in nim_plan_nodes(hostvars, ['gpu-1', 'gpu-2'])] == [
        ('gpu-1', 'llama'), ('gpu-2', 'pool')]
    assert nim_plan_nodes({'gpu-2': {}}, ['gpu-2'])[0]['group'] == 'default'


def test_no_nodes():
    assert nim_plan_nodes({}, None) == []
    assert nim_plan_nodes({}, []) == []
