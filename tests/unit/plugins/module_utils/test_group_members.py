# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.nimstack.multinode.plugins.module_utils.group_members import (
    group_drift, groups_of, rollout_state, secret_source)

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


def test_groups_of_picks_by_mode_validity_and_leader_sorted_by_name():
    groups = {'b': {'mode': 'docker', 'valid': True, 'leader': {'host': 'b1'}},
              'a': {'mode': 'docker', 'valid': False, 'leader': {'host': 'a1'}},
              'c': {'mode': 'docker', 'valid': True, 'leader': None},
              'k': {'mode': 'kubernetes', 'valid': True}, 'junk': 'not a group'}
    assert [name for name, _g in groups_of(groups, 'docker')] == ['a', 'b', 'c']
    assert [name for name, _g in groups_of(groups, 'docker', valid=True)] == ['b', 'c']
    assert [name for name, _g in groups_of(groups, 'docker', valid=True, led=True)] == ['b']
    assert groups_of(groups, 'kubernetes') == [('k', groups['k'])]
    assert groups_of(None, 'docker') == []


def test_rollout_state_reads_the_play_s_docker_groups():
    state = rollout_state(PLAN_HOSTS, ['b1', 'a2', 'a1', 'k1', 'elsewhere'],
                          {'a2': True}.get, {'b1': 200, 'a1': 503}.get)
    assert state == {'groups': ['a', 'b'], 'restarting': ['a'], 'serving': ['b'], 'left': []}


def test_rollout_state_leaves_out_groups_without_a_member_in_the_play():
    state = rollout_state(PLAN_HOSTS, ['a1'], lambda h: False, lambda h: None)
    assert state == {'groups': ['a'], 'restarting': [], 'serving': [], 'left': []}


def test_rollout_state_leaves_out_a_group_whose_member_failed_in_the_run():
    # a1 failed (its download, its image): a2 must not re-form group a without it; b goes on.
    state = rollout_state(PLAN_HOSTS, ['a2', 'b1'], lambda h: True, {'b1': 200}.get, failed_hosts=['a1', 'k1', 'x'])
    assert state == {'groups': ['b'], 'restarting': ['b'], 'serving': ['b'], 'left': ['a']}


def _found(drift=(), checksums=None):
    return {'drift': list(drift), 'in_sync': not drift, 'checksums': checksums or {}}


def test_group_drift_is_empty_when_every_member_is_in_sync_with_one_secret():
    found = dict((m, _found(checksums={'/s': 'abc'})) for m in MEMBERS)
    assert group_drift(MEMBERS, lambda m: [found.get(m)]) == []


def test_group_drift_names_a_member_that_drifted():
    found = dict((m, _found()) for m in MEMBERS)
    found['n2'] = _found(['/etc/x: mode 0644, wanted 0600'])
    assert group_drift(MEMBERS, lambda m: [found.get(m)]) == ['n2: /etc/x: mode 0644, wanted 0600']


def test_group_drift_counts_a_member_that_did_not_compare():
    found = {'n1': _found(), 'n2': {'skipped': True, 'changed': False}}
    assert group_drift(MEMBERS, lambda m: [found.get(m)]) == ['n2: not compared', 'n3: not compared']


def test_group_drift_finds_a_missing_or_different_secret():
    found = {'n1': _found(checksums={'/s': 'abc'}), 'n2': _found(checksums={'/s': None}),
             'n3': _found(checksums={'/s': 'def'})}
    assert group_drift(MEMBERS, lambda m: [found.get(m)]) == [
        'n2: /s: missing', 'the members hold different copies of the group secret']


def test_group_drift_reads_every_comparison_of_a_member():
    found = {'n1': [_found(), _found(['/a: content differs'])], 'n2': [_found(), None]}
    assert group_drift(['n1', 'n2'], found.get) == ['n1: /a: content differs', 'n2: not compared']
