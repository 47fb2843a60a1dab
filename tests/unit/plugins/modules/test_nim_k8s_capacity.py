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


class FakeService:
    """K8sService.find as kubernetes.core answers it: a named object that does not exist is no resource."""

    def __init__(self, objects):
        self.objects, self.calls = objects, []

    def find(self, kind, api_version, name=None, field_selectors=None):
        self.calls.append((kind, api_version, name, tuple(field_selectors or ())))
        return {'resources': [o for o in self.objects
                              if o['kind'] == kind and name in (None, o['metadata']['name'])], 'api_found': True}


def test_reads_the_scheduler_crds_by_name_then_the_nodes_and_the_pods_that_hold_resources():
    listing = kubectl_list(node('gpu-a'), pod('busy', 'gpu-a', gpus=8))['items']
    crd = {'kind': 'CustomResourceDefinition', 'metadata': {'name': 'queues.scheduling.volcano.sh'}}
    service = FakeService(listing + [crd])
    crds, nodes, pods = nim_k8s_capacity.read_cluster(service, 'volcano', [group()])
    assert crds == [crd]
    assert [n['metadata']['name'] for n in nodes] == ['gpu-a'] and [p['metadata']['name'] for p in pods] == ['busy']
    assert service.calls == [
        ('CustomResourceDefinition', 'apiextensions.k8s.io/v1', 'podgroups.scheduling.volcano.sh', ()),
        ('CustomResourceDefinition', 'apiextensions.k8s.io/v1', 'queues.scheduling.volcano.sh', ()),
        ('Node', 'v1', None, ()),
        ('Pod', 'v1', None, ('status.phase!=Succeeded', 'status.phase!=Failed'))]


def test_reads_neither_crds_nor_nodes_where_nothing_needs_them():
    service = FakeService([])
    assert nim_k8s_capacity.read_cluster(service, 'default', []) == ([], [], [])
    assert service.calls == []


def test_read_cluster_refuses_lists_given_as_well():
    result, failed = run_module(nim_k8s_capacity.main, {'read_cluster': True, 'groups': [group()], 'nodes': [node('gpu-a')]})
    assert failed
    assert result['msg'].startswith('read_cluster reads crds, nodes and pods from the cluster')
