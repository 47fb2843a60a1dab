# -*- coding: utf-8 -*-
"""The nim_plan module: argument handling, failure with every error, warnings, check mode."""

import pytest
from ansible.module_utils import basic

from ansible_collections.nimstack.multinode.plugins.modules import nim_plan
from ansible_collections.nimstack.multinode.tests.unit.plugins.modules.utils import run_module
from ansible_collections.nimstack.multinode.tests.unit.models import LLAMA_405B

SETTINGS = LLAMA_405B


def _nodes(settings=None, **extra):
    nodes = [{'host': 'gpu-a', 'address': '10.0.0.11', 'settings': dict(settings or SETTINGS)},
             {'host': 'gpu-b', 'address': '10.0.0.12', 'settings': dict(settings or SETTINGS)}]
    for node in nodes:
        node.update(extra)
    return nodes


def test_plans_every_group_without_changing_anything():
    result, failed = run_module(nim_plan.main, {'nodes': _nodes()})
    assert failed is False
    assert result['changed'] is False
    assert result['valid'] is True
    assert result['errors'] == []
    group = result['groups']['default']
    assert group['leader'] == {'host': 'gpu-a', 'address': '10.0.0.11'}
    assert group['hostfile'] == ['localhost slots=8', '10.0.0.12 slots=8']


def test_deployment_mode_overrides_the_inventory():
    settings = dict(SETTINGS, nim_deployment_mode='docker')
    result, failed = run_module(nim_plan.main, {'nodes': _nodes(settings), 'deployment_mode': 'kubernetes'})
    assert failed is False
    assert result['groups']['default']['mode'] == 'kubernetes'
    assert result['groups']['default']['k8s']['name'] == 'nim-default'


def test_fails_with_every_error_numbered():
    nodes = _nodes(dict(SETTINGS, nim_tensor_parallel=6))
    nodes[1]['rank'] = 0
    nodes[0]['rank'] = 0
    result, failed = run_module(nim_plan.main, {'nodes': nodes})
    assert failed is True
    assert result['valid'] is False
    assert result['msg'].startswith('The deployment plan has 1 error(s):\n1. ')
    assert "nim_node_rank=0 is set on gpu-a, gpu-b" in result['msg']


def test_returns_errors_without_failing_when_asked():
    result, failed = run_module(nim_plan.main, {'nodes': _nodes(dict(SETTINGS, nim_tensor_parallel=6)),
                                                'fail_on_invalid': False})
    assert failed is False
    assert result['valid'] is False
    assert len(result['errors']) == 2
    assert result['groups']['default']['valid'] is False


@pytest.fixture
def warned(monkeypatch):
    messages = []
    monkeypatch.setattr(basic.AnsibleModule, 'warn', lambda self, warning: messages.append(warning))
    return messages


def test_warnings_are_returned_and_emitted(warned):
    settings = dict(SETTINGS, nim_mpi_start_timeout=300)
    result, failed = run_module(nim_plan.main, {'nodes': _nodes(settings)})
    assert failed is False
    assert len(result['plan_warnings']) == 1
    assert 'nim_mpi_start_timeout=300: below the 3000-6000 s recommended' in result['plan_warnings'][0]
    assert warned == result['plan_warnings']


def test_check_mode_gives_the_same_plan():
    normal, _failed = run_module(nim_plan.main, {'nodes': _nodes()})
    checked, failed = run_module(nim_plan.main, {'nodes': _nodes()}, check_mode=True)
    assert failed is False
    assert checked['groups'] == normal['groups']


def test_a_node_without_host_is_refused_by_the_argument_spec():
    result, failed = run_module(nim_plan.main, {'nodes': [{'address': '10.0.0.11'}]})
    assert failed is True
    assert 'host' in result['msg']
