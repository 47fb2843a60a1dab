# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import random
from collections.abc import Mapping

import pytest

from ansible_collections.nimstack.multinode.plugins.module_utils.rolling_restart import (
    RestartWaveError,
    docker_daemon_plan,
    max_unavailable_problems,
    restart_waves,
    rollout_waves,
)

# The security lab: group a (mpi) on hosts 1-2, group b (ray) on hosts 3-4.
LAB = [['h1', 'a'], ['h2', 'a'], ['h3', 'b'], ['h4', 'b']]


def check_waves(hosts, needing, limit, waves):
    group_of = dict((h, g or None) for h, g in hosts)
    flat = [h for wave in waves for h in wave]
    assert sorted(flat) == sorted(set(needing)), 'every host needing a restart is in exactly one wave'
    lone_seen = False
    for wave in waves:
        assert wave, 'no empty wave'
        groups = [group_of.get(h) for h in wave]
        named = [g for g in groups if g is not None]
        assert len(named) == len(set(named)), 'two members of one group in a wave: %r' % (wave,)
        assert len(wave) <= limit, 'more than %d groups in a wave: %r' % (limit, wave)
        if named:
            assert not lone_seen, 'hosts in no group come after the groups'
            assert len(named) == len(wave), 'hosts in no group have waves of their own'
        else:
            lone_seen = True


def test_lab_one_group_at_a_time():
    waves = restart_waves(LAB, ['h1', 'h2', 'h3', 'h4'], 1)
    assert waves == [['h1'], ['h3'], ['h2'], ['h4']]
    check_waves(LAB, ['h1', 'h2', 'h3', 'h4'], 1, waves)


def test_lab_two_groups_at_a_time_never_two_members_of_one():
    waves = restart_waves(LAB, ['h4', 'h3', 'h2', 'h1'], 2)
    assert waves == [['h1', 'h3'], ['h2', 'h4']]


def test_only_the_hosts_that_need_it():
    assert restart_waves(LAB, ['h2'], 1) == [['h2']]
    assert restart_waves(LAB, [], 1) == []


def test_fewest_waves_the_limits_allow():
    # Greedy by members left: a(3) b(1) c(1) with 2 groups at once takes 3 waves, not 4.
    hosts = [['a1', 'a'], ['a2', 'a'], ['a3', 'a'], ['b1', 'b'], ['c1', 'c']]
    waves = restart_waves(hosts, [entry[0] for entry in hosts], 2)
    assert waves == [['a1', 'b1'], ['a2', 'c1'], ['a3']]


def test_hosts_in_no_group_restart_in_their_own_waves():
    hosts = LAB + [['x1', None], ['x2', ''], ['x3', None]]
    waves = restart_waves(hosts, ['x1', 'h1', 'x2', 'h3', 'x3'], 2)
    assert waves == [['h1', 'h3'], ['x1', 'x2'], ['x3']]
    # A host the play does not list counts as one in no group.
    assert restart_waves(LAB, ['h1', 'zz'], 1) == [['h1'], ['zz']]


@pytest.mark.parametrize('limit', [1, 2, 3, 5])
def test_random_inventories_respect_both_limits(limit):
    rng = random.Random(limit)
    for _round in range(200):
        hosts = []
        for g in range(rng.randint(0, 6)):
            hosts += [['g%d-%d' % (g, i), 'g%d' % g] for i in range(rng.randint(1, 5))]
        hosts += [['lone-%d' % i, None] for i in range(rng.randint(0, 3))]
        rng.shuffle(hosts)
        needing = [entry[0] for entry in hosts if rng.random() < 0.7]
        waves = restart_waves(hosts, needing, limit)
        check_waves(hosts, needing, limit, waves)
        sizes = {}
        for h, g in hosts:
            if h in needing and g:
                sizes[g] = sizes.get(g, 0) + 1
        lone = len([h for h, g in hosts if h in needing and not g])
        grouped_waves = len([w for w in waves if w[0] not in [h for h, g in hosts if not g]])
        bound = max([max(sizes.values()) if sizes else 0, -(-sum(sizes.values()) // limit)])
        assert grouped_waves == bound
        assert len(waves) - grouped_waves == -(-lone // limit)


def test_the_check_itself_catches_all_at_once():
    # What the old handler did: every host in one wave.
    with pytest.raises(AssertionError):
        check_waves(LAB, ['h1', 'h2', 'h3', 'h4'], 1, [['h1', 'h2', 'h3', 'h4']])


@pytest.mark.parametrize('value', [0, -1, '0', 'two', 1.5, True, None, [1]])
def test_max_unavailable_refuses(value):
    problems = max_unavailable_problems(value)
    assert problems and problems[0].startswith('nim_max_unavailable_groups=')
    assert '1 or more' in problems[0]
    with pytest.raises(RestartWaveError, match='nim_max_unavailable_groups'):
        restart_waves(LAB, ['h1'], value)


@pytest.mark.parametrize('value', [1, 2, '3', ' 4 '])
def test_max_unavailable_accepts(value):
    assert max_unavailable_problems(value) == []


def test_bad_host_entries_are_named():
    with pytest.raises(RestartWaveError, match=r'\[host, group\]'):
        restart_waves(['h1'], ['h1'], 1)


ROLE = dict(log_driver='json-file', log_max_size='100m', log_max_file='3', live_restore=True)


def test_site_log_driver_and_default_runtime_are_kept():
    site = {'log-driver': 'journald', 'default-runtime': 'crun',
            'runtimes': {'crun': {'path': '/usr/bin/crun'}}, 'labels': ['site=x']}
    plan = docker_daemon_plan(site, nvidia_runtime_path='/usr/bin/nvidia-container-runtime', **ROLE)
    config = plan['config']
    assert config['log-driver'] == 'journald'
    assert config['default-runtime'] == 'crun'
    assert config['runtimes']['crun'] == {'path': '/usr/bin/crun'}
    assert config['runtimes']['nvidia']['path'] == '/usr/bin/nvidia-container-runtime'
    # journald refuses max-size/max-file: dockerd would not start with them.
    assert 'log-opts' not in config
    assert config['live-restore'] is True
    assert config['labels'] == ['site=x']


def test_role_fills_in_where_the_site_has_nothing():
    plan = docker_daemon_plan({}, nvidia_runtime_path='/usr/bin/nvidia-container-runtime', **ROLE)
    assert plan['config'] == {
        'log-driver': 'json-file', 'log-opts': {'max-size': '100m', 'max-file': '3'},
        'default-runtime': 'nvidia', 'runtimes': {'nvidia': {'path': '/usr/bin/nvidia-container-runtime', 'args': []}},
        'live-restore': True}
    assert plan['action'] == 'restart'


def test_the_toolkit_runtime_entry_wins():
    site = {'runtimes': {'nvidia': {'path': 'nvidia-container-runtime', 'args': []}}}
    plan = docker_daemon_plan(site, nvidia_runtime_path='/usr/bin/nvidia-container-runtime')
    assert plan['config']['runtimes'] == site['runtimes']


def test_options_replace_a_site_value():
    site = {'log-driver': 'journald', 'default-runtime': 'crun', 'log-opts': {'tag': 'x'}}
    plan = docker_daemon_plan(site, options={'log-driver': 'local', 'default-runtime': 'nvidia',
                                             'log-opts': {'max-file': '9'}}, **ROLE)
    config = plan['config']
    assert config['log-driver'] == 'local'
    assert config['default-runtime'] == 'nvidia'
    assert config['log-opts'] == {'tag': 'x', 'max-size': '100m', 'max-file': '9'}


def test_rotation_for_the_local_driver_keeps_other_options():
    site = {'log-driver': 'local', 'log-opts': {'compress': 'true', 'max-file': '7'}}
    config = docker_daemon_plan(site, **ROLE)['config']
    assert config['log-opts'] == {'compress': 'true', 'max-size': '100m', 'max-file': '3'}


def test_live_restore_none_leaves_the_key_alone():
    assert docker_daemon_plan({'live-restore': False}, live_restore=None)['config'] == {'live-restore': False, 'log-driver': 'json-file'}
    assert docker_daemon_plan({'live-restore': True}, live_restore=False)['config']['live-restore'] is False


@pytest.mark.parametrize('before, settings, action, changed', [
    ({'log-driver': 'json-file', 'log-opts': {'max-size': '100m', 'max-file': '3'}, 'live-restore': True},
     ROLE, 'none', []),
    ({'log-driver': 'json-file', 'log-opts': {'max-size': '100m', 'max-file': '3'}},
     ROLE, 'reload', ['live-restore']),
    ({'log-driver': 'json-file', 'log-opts': {'max-size': '100m', 'max-file': '3'}, 'live-restore': True},
     dict(ROLE, log_max_file='4'), 'restart', ['log-opts']),
    ({'log-driver': 'json-file', 'log-opts': {'max-size': '100m', 'max-file': '3'}, 'live-restore': True},
     dict(ROLE, nvidia_runtime_path='/usr/bin/nvidia-container-runtime'), 'reload', ['default-runtime', 'runtimes']),
    ({'log-driver': 'json-file', 'log-opts': {'max-size': '100m', 'max-file': '3'}, 'live-restore': True},
     dict(ROLE, data_root='/srv/docker'), 'restart', ['data-root']),
])
def test_reload_or_restart(before, settings, action, changed):
    plan = docker_daemon_plan(before, **settings)
    assert plan['action'] == action
    assert plan['changed'] == changed


def test_the_current_file_is_not_modified():
    site = {'runtimes': {'crun': {'path': '/usr/bin/crun'}}, 'log-opts': {'tag': 'x'}}
    snapshot = repr(site)
    docker_daemon_plan(site, nvidia_runtime_path='/x', options={'log-opts': {'a': 'b'}}, **ROLE)
    assert repr(site) == snapshot


@pytest.mark.parametrize('current, options', [([], None), ({}, ['x'])])
def test_bad_inputs_are_named(current, options):
    with pytest.raises(RestartWaveError):
        docker_daemon_plan(current, options=options)


# ---- rollout_waves -----------------------------------------------------------------------------

def _names(waves):
    return [w['groups'] for w in waves]


def test_rollout_first_rollout_starts_every_group_in_one_wave():
    waves = rollout_waves(['a', 'b', 'c'], ['a', 'b', 'c'], [], 1)
    assert _names(waves) == [['a', 'b', 'c']]
    assert waves[0]['stops_serving'] == [] and waves[0]['canary'] is False


def test_rollout_serving_groups_go_max_unavailable_at_a_time():
    groups = ['a', 'b', 'c', 'd']
    waves = rollout_waves(groups, groups, groups, 2)
    assert _names(waves) == [['a', 'b'], ['c', 'd']]
    assert [w['stops_serving'] for w in waves] == [['a', 'b'], ['c', 'd']]


def test_rollout_unchanged_and_down_groups_join_the_first_wave():
    waves = rollout_waves(['a', 'b', 'c', 'd'], ['b', 'c', 'd'], ['c', 'd'], 1)
    assert _names(waves) == [['a', 'b', 'c'], ['d']]
    assert [w['stops_serving'] for w in waves] == [['c'], ['d']]


def test_rollout_never_stops_every_serving_group():
    waves = rollout_waves(['a', 'b'], ['a', 'b'], ['a', 'b'], 5)
    assert _names(waves) == [['a'], ['b']]


def test_rollout_a_lone_serving_group_restarts_alone():
    assert _names(rollout_waves(['a'], ['a'], ['a'], 1)) == [['a']]


def test_rollout_canary_goes_first_alone():
    waves = rollout_waves(['a', 'b', 'c'], ['a', 'b', 'c'], ['a', 'b', 'c'], 2, 'b')
    assert _names(waves) == [['b'], ['a', 'c']]
    assert waves[0]['canary'] is True and waves[0]['stops_serving'] == ['b']
    assert [w['later'] for w in waves] == [['a', 'c'], []]
    assert not any(w['canary'] for w in waves[1:])


def test_rollout_canary_without_a_change_is_no_wave_of_its_own():
    waves = rollout_waves(['a', 'b'], ['a'], ['a', 'b'], 1, 'b')
    assert _names(waves) == [['a', 'b']]
    assert waves[0]['canary'] is False


def test_rollout_nothing_to_restart_still_waits_for_every_group():
    assert _names(rollout_waves(['a', 'b'], [], ['a'], 1)) == [['a', 'b']]


@pytest.mark.parametrize('kwargs, words', [
    ({'max_unavailable_groups': 0}, 'nim_max_unavailable_groups=0'),
    ({'canary': 'zz'}, "nim_canary_group='zz'"),
])
def test_rollout_refuses_bad_settings(kwargs, words):
    with pytest.raises(RestartWaveError) as err:
        rollout_waves(['a', 'b'], ['a'], [], **kwargs)
    assert words in str(err.value)


def test_rollout_refuses_unknown_groups():
    with pytest.raises(RestartWaveError, match='x'):
        rollout_waves(['a'], ['x'], [], 1)


class _ReadOnlyMapping(Mapping):
    """Stands for ansible-core's lazy containers: a Mapping that is no dict and must not be
    deep-copied (its deep copy takes the templating context along)."""

    def __init__(self, data):
        self._data = data

    def __getitem__(self, key):
        value = self._data[key]
        return _ReadOnlyMapping(value) if isinstance(value, dict) else value

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)

    def __deepcopy__(self, memo):
        raise AssertionError('deep-copied')


def test_docker_daemon_plan_copies_mappings_as_plain_data():
    site = {'log-opts': {'tag': 'site'}, 'runtimes': {'crun': {'path': '/usr/bin/crun'}}}
    plan = docker_daemon_plan(_ReadOnlyMapping(site), log_max_size='10m', options=_ReadOnlyMapping({'debug': True}))
    assert plan['config']['log-opts'] == {'tag': 'site', 'max-size': '10m'}
    assert plan['config']['runtimes'] == {'crun': {'path': '/usr/bin/crun'}}
    assert isinstance(plan['config']['runtimes']['crun'], dict)
    assert plan['config']['debug'] is True
    assert site == {'log-opts': {'tag': 'site'}, 'runtimes': {'crun': {'path': '/usr/bin/crun'}}}
