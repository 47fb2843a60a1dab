# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.nimstack.multinode.plugins.module_utils.group_members import rollout_state, secret_source

MEMBERS = ['n1', 'n2', 'n3']


def test_secret_source_is_the_leader_when_nobody_holds_one():
    assert secret_source(MEMBERS, 'n1', []) == 'n1'


def test_secret_source_is_the_leader_when_it_holds_one():
    assert secret_source(MEMBERS, 'n1', ['n3', 'n1']) == 'n1'


def test_secret_source_is_the_first_holder_when_the_leader_lost_it():
    assert secret_source(MEMBERS, 'n1', ['n3', 'n2']) == 'n2'


def test_secret_source_ignores_holders_outside_the_group():
    assert secret_source(MEMBERS, 'n1', ['other']) == 'n1'


def test_secret_source_without_a_leader():
    assert secret_source([], '', []) == ''


PLAN_HOSTS = {
    'a1': {'group': 'a', 'mode': 'docker'}, 'a2': {'group': 'a', 'mode': 'docker'},
    'b1': {'group': 'b', 'mode': 'docker'}, 'k1': {'group': 'k', 'mode': 'kubernetes'},
}


def test_rollout_state_reads_the_play_s_docker_groups():
    state = rollout_state(PLAN_HOSTS, ['b1', 'a2', 'a1', 'k1', 'elsewhere'],
                          {'a2': True}.get, {'b1': 200, 'a1': 503}.get)
    assert state == {'groups': ['a', 'b'], 'restarting': ['a'], 'serving': ['b']}


def test_rollout_state_leaves_out_groups_without_a_member_in_the_play():
    state = rollout_state(PLAN_HOSTS, ['a1'], lambda h: False, lambda h: None)
    assert state == {'groups': ['a'], 'restarting': [], 'serving': []}
