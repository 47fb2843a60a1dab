# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The one reading of booleans and whole numbers: strict for the checks, Ansible's for the plans."""

import pytest

from ansible_collections.nimstack.multinode.plugins.module_utils import values


@pytest.mark.parametrize('value,strict,ansible', [
    (True, True, True), (False, False, False), (1, True, True), (0, False, False),
    ('yes', True, True), ('Y', True, True), (' true ', True, True), ('on', True, True), ('t', True, True),
    ('1.0', True, True), ('no', False, False), ('OFF', False, False), ('f', False, False), ('0.0', False, False),
    ('maybe', None, False), ('', None, False), (None, None, False), (2, None, False), ([], None, False),
])
def test_the_two_boolean_readings_know_the_same_words(value, strict, ansible):
    assert values.strict_bool(value) is strict
    assert values.truthy(value) is ansible


def test_a_value_the_check_accepts_reads_the_same_both_ways():
    for word in values.TRUE_WORDS + values.FALSE_WORDS:
        assert values.strict_bool(word) is values.truthy(word)


@pytest.mark.parametrize('value,checked,ansible', [
    (8, (8, None), 8), ('8', (8, None), 8), (' -3 ', (-3, None), -3),
    (True, (None, 'is a boolean, not a number'), 1), ('8.5', (None, 'is not a whole number'), 8),
    (8.5, (None, 'is not a whole number'), 8), ('eight', (None, 'is not a whole number'), 0),
    (None, (None, 'is not a whole number'), 0),
])
def test_the_two_integer_readings(value, checked, ansible):
    assert values.checked_int(value) == checked
    assert values.ansible_int(value) == ansible
