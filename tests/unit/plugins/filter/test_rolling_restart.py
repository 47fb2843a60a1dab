# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.nimstack.multinode.plugins.filter.rolling_restart import FilterModule


FILTERS = FilterModule().filters()


def test_filters_are_registered():
    assert sorted(FILTERS) == ['docker_daemon_plan', 'max_unavailable_problems', 'restart_waves', 'rollout_waves']


def test_restart_waves_takes_tuples_from_zip():
    hosts = list(zip(['h1', 'h2', 'h3'], ['a', 'a', '']))
    assert FILTERS['restart_waves'](hosts, ['h1', 'h2', 'h3'], '1') == [['h1'], ['h2'], ['h3']]


def test_restart_waves_error_is_a_filter_error():
    with pytest.raises(AnsibleFilterError, match='restart_waves: nim_max_unavailable_groups=0'):
        FILTERS['restart_waves']([['h1', 'a']], ['h1'], 0)


def test_max_unavailable_problems_names_the_variable():
    assert FILTERS['max_unavailable_problems']('x', 'docker_max_unavailable_groups')[0].startswith('docker_max_unavailable_groups=')


def test_docker_daemon_plan_errors():
    with pytest.raises(AnsibleFilterError, match='docker_daemon_plan'):
        FILTERS['docker_daemon_plan']({}, no_such_setting=1)
    assert FILTERS['docker_daemon_plan']({'log-driver': 'local'})['config'] == {'log-driver': 'local'}


def test_rollout_waves_takes_any_sequence_and_an_empty_canary():
    waves = FILTERS['rollout_waves'](('a', 'b'), ('a', 'b'), ('a', 'b'), '1', '')
    assert [w['groups'] for w in waves] == [['a'], ['b']]


def test_rollout_waves_error_is_a_filter_error():
    with pytest.raises(AnsibleFilterError, match="rollout_waves: nim_canary_group='c'"):
        FILTERS['rollout_waves'](['a', 'b'], ['a'], [], 1, 'c')
