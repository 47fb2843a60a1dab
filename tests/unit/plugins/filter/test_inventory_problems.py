# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.nimstack.multinode.plugins.filter.inventory_problems import (
    FilterModule,
    inventory_problems,
)

HOSTVARS = {
    'gpu-1': {'nim_group': 'llama', 'nim_node_rank': 0, 'unrelated': 'x',
              'ansible_facts': {'distribution': 'Debian', 'distribution_version': '12.7',
                                'distribution_major_version': '12', 'os_family': 'Debian'}},
    'gpu-2': {'nim_group': 'llama',
              'ansible_facts': {'distribution': 'Ubuntu', 'distribution_version': '20.04',
                                'distribution_major_version': '20', 'os_family': 'Debian'}},
    'gpu-3': {'nim_group': 'llama', 'nim_node_rank': 0},
}
GROUPS = {'all': list(HOSTVARS), 'nim_nodes': list(HOSTVARS)}


def test_filter_is_registered():
    assert FilterModule().filters()['inventory_problems'] is inventory_problems


def test_reports_os_and_duplicate_leader():
    assert inventory_problems(HOSTVARS, GROUPS, '2.19.14') == [
        'group llama: nim_node_rank=0 is set on gpu-1, gpu-3; each rank must be unique in a group',
        'host gpu-2: Ubuntu 20.04 (os_family Debian) is not supported; supported: Ubuntu '
        '22.04/24.04, Debian 12, RedHat 9, Rocky 9 (validate_inventory_supported_os)',
    ]


def test_check_os_false_reads_no_facts():
    problems = inventory_problems(HOSTVARS, GROUPS, '2.19.14', check_os=False)
    assert problems == ['group llama: nim_node_rank=0 is set on gpu-1, gpu-3; each rank must be '
                        'unique in a group']


def test_check_inventory_false_checks_only_the_os():
    # The OS check of a run whose inventory the preflight validated: the ranks are not judged again.
    problems = inventory_problems(HOSTVARS, GROUPS, '1.0', check_inputs=False, check_inventory=False)
    assert problems == [
        'host gpu-2: Ubuntu 20.04 (os_family Debian) is not supported; supported: Ubuntu '
        '22.04/24.04, Debian 12, RedHat 9, Rocky 9 (validate_inventory_supported_os)',
    ]


def test_other_node_group_and_version_bounds():
    problems = inventory_problems(HOSTVARS, GROUPS, '2.19.14', node_group='gpus',
                                  min_version='2.20.0', check_os=False)
    assert problems == [
        'ansible-core 2.19.14 is not supported: the collection needs ansible-core >= 2.20.0 and '
        '< 2.21.0 (validate_inventory_ansible_min_version, validate_inventory_ansible_max_version)',
        "the inventory has no hosts in group 'gpus' (validate_inventory_group): put every GPU node "
        "in that group",
    ]


def test_bad_settings_become_filter_errors():
    with pytest.raises(AnsibleFilterError, match='needs distribution and versions'):
        inventory_problems(HOSTVARS, GROUPS, '2.19.14', supported_os=[{'versions': ['12']}])
    with pytest.raises(AnsibleFilterError, match='ansible_version must be a string'):
        inventory_problems(HOSTVARS, GROUPS, {'full': '2.19.14'})
