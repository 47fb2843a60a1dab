# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.nimstack.multinode.plugins.module_utils.secrets_group import exists, problems

HOST = [('root', 0, []), ('users', 100, ['alice']), ('nimstack-secrets', 64910, [])]


def test_our_group_with_its_gid_and_no_members_is_fine():
    assert problems('nimstack-secrets', 64910, HOST) == []
    assert exists('nimstack-secrets', HOST)


def test_a_free_name_and_gid_are_fine():
    assert problems('nimstack-secrets', 64911, HOST[:2]) == []
    assert not exists('nimstack-secrets', HOST[:2])


def test_every_conflict_is_named():
    host = [('users', 64910, []), ('nimstack-secrets', 2000, ['sectest'])]
    assert problems('nimstack-secrets', 64910, host) == [
        'gid 64910 belongs to group users', 'group nimstack-secrets has gid 2000, not 64910',
        'group nimstack-secrets has members sectest']


def test_the_gid_as_text_is_the_same_gid():
    assert problems('nimstack-secrets', '64910', HOST) == []
