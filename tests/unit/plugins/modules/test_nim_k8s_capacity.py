# -*- coding: utf-8 -*-
"""The nim_k8s_capacity module: arguments, failure naming every group, check mode, bad input."""

from ansible_collections.nimstack.multinode.plugins.modules import nim_k8s_capacity
from ansible_collections.nimstack.multinode.tests.unit.plugins.module_utils.k8s_objects import (
    group, kubectl_list, node, pod)
from ansible_collections.nimstack.multinode.tests.unit.plugins.modules.utils import run_module


def test_fits_without_changing_anything_in_check_mode():
    listing = kubectl_list(node('gpu-a'), node('gpu-b'))
    result, failed = run_module(nim_k8s_capacity.main, {'groups': [group()], 'nodes': listing, 'pods': listing},
                                check_mode=True)
    assert not failed
    assert result['changed'] is False
    assert result['errors'] == []
    assert result['groups']['default']['qualifying_nodes'] == 2


def test_fails_with_every_group_that_cannot_be_placed():
    listing = kubectl_list(node('gpu-a'), node('gpu-b'), pod('busy', 'gpu-b', gpus=8))
    result, failed = run_module(nim_k8s_capacity.main, {
        'groups': [group('llama'), group('r1', size=3)], 'nodes': listing['items'], 'pods': listing['items']})
    assert failed
    assert len(result['errors']) == 2
    assert "group 'llama' cannot be placed" in result['msg']
    assert "group 'r1' cannot be placed: it needs 3 node(s)" in result['msg']
    assert 'gpu-b: 0 of 8 nvidia.com/gpu free' in result['msg']


def test_reports_without_failing_on_request():
    listing = kubectl_list(node('gpu-a'))
    result, failed = run_module(nim_k8s_capacity.main, {
        'groups': [group()], 'nodes': listing, 'pods': [], 'fail_on_shortage': False})
    assert not failed
    assert len(result['errors']) == 1


def test_refuses_input_not_shaped_like_the_api():
    result, failed = run_module(nim_k8s_capacity.main, {'groups': [group()], 'nodes': 'gpu-a', 'pods': []})
    assert failed
    assert result['msg'].startswith('crds, nodes and pods must be in the shape the Kubernetes API returns')


def test_missing_scheduler_and_shortage_fail_together():
    listing = kubectl_list(node('gpu-a'))
    result, failed = run_module(nim_k8s_capacity.main, {
        'scheduler': 'volcano', 'crds': [{'metadata': {'name': 'queues.scheduling.volcano.sh'}}],
        'groups': [group()], 'nodes': listing, 'pods': listing})
    assert failed
    assert result['errors'][0].startswith('nim_k8s_scheduler=volcano needs Volcano')
    assert 'no CRD podgroups.scheduling.volcano.sh' in result['errors'][0]
    assert result['errors'][1].startswith("group 'default' cannot be placed")


def test_scheduler_only_without_groups():
    crds = [{'metadata': {'name': 'queues.scheduling.run.ai'}}, {'metadata': {'name': 'podgroups.scheduling.run.ai'}}]
    result, failed = run_module(nim_k8s_capacity.main, {'scheduler': 'kai', 'crds': crds})
    assert not failed
    assert result['errors'] == [] and result['groups'] == {}
