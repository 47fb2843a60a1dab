# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The supported distributions: one list, the validator's and the roles' views of it."""

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.nimstack.multinode.plugins.filter.supported_platforms import supported_platforms
from ansible_collections.nimstack.multinode.plugins.module_utils import inventory_checks, platforms


def test_the_roles_and_the_validator_read_the_same_list():
    assert inventory_checks.DEFAULT_SUPPORTED_OS is platforms.SUPPORTED_OS


def test_platform_names_as_the_roles_spell_them():
    assert supported_platforms([]) == ['Ubuntu 22.04', 'Ubuntu 24.04', 'Debian 12', 'RedHat 9', 'Rocky 9']


def test_families_each_once():
    assert supported_platforms([], 'families') == ['Debian', 'RedHat']


def test_distributions_and_entries():
    assert supported_platforms(None, 'distributions') == ['Ubuntu', 'Debian', 'RedHat', 'Rocky']
    assert supported_platforms([], 'entries')[1] == {'distribution': 'Debian', 'os_family': 'Debian', 'versions': ['12']}


def test_a_given_list_replaces_the_collections():
    assert supported_platforms([{'distribution': 'Debian', 'versions': ['11', '12']}]) == ['Debian 11', 'Debian 12']


@pytest.mark.parametrize('value, view', [([{'versions': ['12']}], 'platforms'), ([], 'kernels'),
                                         ([{'distribution': 'Debian', 'versions': ['12']}], 'families')])
def test_bad_input_is_refused(value, view):
    with pytest.raises(AnsibleFilterError):
        supported_platforms(value, view)
