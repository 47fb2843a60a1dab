# -*- coding: utf-8 -*-
"""The front door's pools: leaders by served model, from the plan."""

import os

import pytest
import yaml

from ansible_collections.nimstack.multinode.plugins.module_utils import frontend
from ansible_collections.nimstack.multinode.plugins.module_utils.nim_plan import build_plan
from ansible_collections.nimstack.multinode.tests.unit.models import LLAMA_405B
from ansible_collections.nimstack.multinode.plugins.module_utils.frontend import (
    backend_name, frontend_pools, served_model)


@pytest.mark.parametrize('image, model', [
    ('nvcr.io/nim/meta/llama-3.1-405b-instruct', 'meta/llama-3.1-405b-instruct'),
    ('nvcr.io/nim/deepseek-ai/deepseek-r1:1.7.3', 'deepseek-ai/deepseek-r1'),
    ('nvcr.io/nim/meta/llama-3.1-8b-instruct@sha256:' + 'a' * 64, 'meta/llama-3.1-8b-instruct'),
    ('registry.lab:5000/nim/meta/llama-3.1-70b-instruct', 'meta/llama-3.1-70b-instruct'),
    ('localhost/nimstack-lab/nim-standin', 'nimstack-lab/nim-standin'),
    ('nimstack-lab/nim-standin', 'nimstack-lab/nim-standin'),
])
def test_the_served_model_is_the_image_path_without_registry_and_nim(image, model):
    assert served_model(image) == model


def test_a_group_setting_wins():
    assert served_model('nvcr.io/nim/x/y', 'nimstack/standin-llm') == 'nimstack/standin-llm'


def _group(name, image, address, valid=True, mode='docker', port=8000, model=None):
    return {'name': name, 'valid': valid, 'mode': mode, 'leader': {'host': name + '-1', 'address': address},
            'ports': {'api': port}, 'settings': {'nim_image': image, 'nim_frontend_model': model}}


def test_groups_of_one_model_form_one_pool_sorted_by_group():
    groups = {'b': _group('b', 'nvcr.io/nim/meta/m', '10.0.0.3'), 'a': _group('a', 'nvcr.io/nim/meta/m', '10.0.0.1'),
              'c': _group('c', 'nvcr.io/nim/other/o', '10.0.0.5', port=9000)}
    pools = frontend_pools(groups)
    assert [p['model'] for p in pools] == ['meta/m', 'other/o']
    assert pools[0]['backend'] == 'model_meta_m'
    assert pools[0]['servers'] == [
        {'name': 'group_a', 'group': 'a', 'address': '10.0.0.1', 'port': 8000},
        {'name': 'group_b', 'group': 'b', 'address': '10.0.0.3', 'port': 8000}]
    assert pools[1]['servers'][0]['port'] == 9000


def test_kubernetes_and_invalid_groups_have_no_server():
    groups = {'k': _group('k', 'nvcr.io/nim/meta/m', 'x', mode='kubernetes'),
              'bad': _group('bad', 'nvcr.io/nim/meta/m', '10.0.0.9', valid=False),
              'ok': _group('ok', 'nvcr.io/nim/meta/m', '10.0.0.1')}
    assert [s['group'] for p in frontend_pools(groups) for s in p['servers']] == ['ok']


def test_backend_names_are_safe_identifiers():
    assert backend_name('meta/llama-3.1-405b instruct') == 'model_meta_llama-3.1-405b_instruct'


def _mixed_plan():
    nodes = [{'host': 'd%d' % i, 'address': '10.0.0.%d' % i, 'group': 'dock', 'settings': dict(LLAMA_405B, nim_pipeline_parallel=2)}
             for i in (1, 2)]
    nodes += [{'host': 'k%d' % i, 'address': '10.0.1.%d' % i, 'group': 'k8s',
               'settings': dict(LLAMA_405B, nim_pipeline_parallel=2, nim_deployment_mode='kubernetes')} for i in (1, 2)]
    plan = build_plan(nodes)
    assert plan['valid'], plan['errors']
    return plan


def test_a_front_door_on_a_kubernetes_group_s_host_is_refused():
    plan = _mixed_plan()
    assert frontend.frontend_problems(plan, {'k1': {}}) == [frontend.PROBLEM_ON_KUBERNETES % ('k1', 'k8s')]
    assert frontend.frontend_problems(plan, {'k1': {'nim_frontend_state': 'absent'}}) == []
    assert frontend.frontend_problems(plan, {'door': {}}) == []


def test_a_front_door_port_that_a_rank_on_its_host_listens_on_is_refused():
    plan = _mixed_plan()
    # d2 is a worker: its sshd port clashes as much as the leader's API port does on d1.
    assert frontend.frontend_problems(plan, {'d2': {'nim_frontend_port': 2222}}) == [
        frontend.PROBLEM_PORT % ('nim_frontend_port', '2222', 'd2', 'ssh', 'ssh', 'dock')]
    assert frontend.frontend_problems(plan, {'d1': {'nim_frontend_port': '8000'}}) == [
        frontend.PROBLEM_PORT % ('nim_frontend_port', '8000', 'd1', 'api', 'api', 'dock')]
    assert frontend.frontend_problems(plan, {'d1': {}}) == []


@pytest.mark.parametrize('table', [frontend.SETTING_DEFAULTS, frontend.DRAIN_DEFAULTS], ids=['settings', 'drain'])
def test_the_defaults_are_the_role_s(table):
    path = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'roles', 'nim_frontend', 'defaults', 'main.yml')
    with open(path) as handle:
        defaults = yaml.safe_load(handle)
    assert dict((k, defaults[k]) for k in table) == table


def test_a_front_door_port_that_the_group_supervisor_on_its_host_listens_on_is_refused():
    plan = _mixed_plan()
    assert frontend.frontend_problems(plan, {'d2': {'nim_frontend_port': 8479}}) == [
        frontend.PROBLEM_SUPERVISOR_PORT % ('nim_frontend_port', '8479', 'd2', 'dock')]
    assert frontend.frontend_problems(plan, {'d1': {'nim_frontend_port': 9000, 'nim_group_supervisor_port': '9000'}}) == [
        frontend.PROBLEM_SUPERVISOR_PORT % ('nim_frontend_port', '9000', 'd1', 'dock')]
    # The role's own setting wins over the inventory-wide one, as in roles/nim_docker/defaults.
    assert frontend.frontend_problems(plan, {'d1': {'nim_frontend_port': 9000, 'nim_group_supervisor_port': 9000,
                                                    'nim_docker_supervisor_port': 9001}}) == []
    # No supervisor, or a front door beside no group: nothing to clash with.
    assert frontend.frontend_problems(plan, {'d1': {'nim_frontend_port': 8479, 'nim_group_supervisor': 'false'}}) == []
    assert frontend.frontend_problems(plan, {'d1': {'nim_frontend_port': 8479, 'nim_docker_supervisor': False}}) == []
    assert frontend.frontend_problems(plan, {'door': {'nim_frontend_port': 8479}}) == []


def test_the_supervisor_defaults_are_the_docker_role_s():
    path = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'roles', 'nim_docker', 'defaults', 'main.yml')
    with open(path) as handle:
        defaults = yaml.safe_load(handle)
    assert defaults['nim_docker_supervisor'] == '{{ nim_group_supervisor | default(%s) }}' % (
        str(frontend.SUPERVISOR_DEFAULTS['nim_group_supervisor']).lower())
    assert defaults['nim_docker_supervisor_port'] == '{{ nim_group_supervisor_port | default(%d) }}' % (
        frontend.SUPERVISOR_DEFAULTS['nim_group_supervisor_port'])


def test_the_metrics_port_clashes_like_the_api_port_and_needs_a_port_of_its_own():
    plan = _mixed_plan()
    assert frontend.frontend_problems(plan, {'d1': {'nim_frontend_metrics_port': 8000}}) == [
        frontend.PROBLEM_PORT % ('nim_frontend_metrics_port', '8000', 'd1', 'api', 'api', 'dock')]
    assert frontend.frontend_problems(plan, {'d2': {'nim_frontend_metrics_port': '8479'}}) == [
        frontend.PROBLEM_SUPERVISOR_PORT % ('nim_frontend_metrics_port', '8479', 'd2', 'dock')]
    # Beside no group too: the front door's two listeners.
    assert frontend.frontend_problems(plan, {'door': {'nim_frontend_port': 9100, 'nim_frontend_metrics_port': 9100}}) == [
        frontend.PROBLEM_METRICS_PORT % ('9100', 'door')]
    assert frontend.frontend_problems(plan, {'door': {'nim_frontend_metrics_port': 9100}}) == []


def test_a_restart_drains_a_group_on_every_load_aware_front_door_while_its_pool_keeps_a_leader():
    groups = {'a': _group('a', 'nvcr.io/nim/meta/m', '10.0.0.1'), 'b': _group('b', 'nvcr.io/nim/meta/m', '10.0.0.3'),
              'c': _group('c', 'nvcr.io/nim/other/o', '10.0.0.5')}
    doors = {'d2': {'nim_frontend_config_dir': '/srv/door/'}, 'd1': {'nim_frontend_config_dir': None},
             'off': {'nim_frontend_load_aware': 'false'}, 'gone': {'nim_frontend_state': 'absent'}}
    assert frontend.drain_marks(groups, 'a', ['a'], doors) == [
        {'host': 'd1', 'path': '/etc/nimstack/frontend/drains/a'}, {'host': 'd2', 'path': '/srv/door/drains/a'}]
    # Nowhere else to send its model's requests: alone in its pool, or its pool's other group stops too.
    assert frontend.drain_marks(groups, 'c', ['c'], doors) == []
    assert frontend.drain_marks(groups, 'a', ['a', 'b'], doors) == []
    assert frontend.drain_marks(groups, 'k', ['k'], doors) == []
    assert frontend.drain_marks(groups, 'a', ['a'], {}) == []
