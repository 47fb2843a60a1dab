# -*- coding: utf-8 -*-
"""The capacity check: can every rank of a group be placed at once, from the API's node and pod lists."""

import pytest

from ansible_collections.nimstack.multinode.plugins.module_utils import k8s_capacity
from ansible_collections.nimstack.multinode.plugins.module_utils.k8s_capacity import (
    CapacityError, check_capacity, check_scheduler, items, pod_gpu_request, quantity, tolerates)
from ansible_collections.nimstack.multinode.tests.unit.plugins.module_utils.k8s_objects import (
    GPU_TAINT, RACK, group, kubectl_list, node, pod)


def _check(groups, listing):
    return check_capacity(groups, items(listing, 'Node'), items(listing, 'Pod'))


def test_enough_capacity_passes_and_reports_the_counts():
    listing = kubectl_list(node('gpu-a'), node('gpu-b'), node('gpu-c'), pod('web', 'gpu-c', gpus=0))
    reports, errors = _check([group()], listing)
    assert errors == []
    assert reports['default']['needed_nodes'] == 2
    assert reports['default']['qualifying_nodes'] == 3
    assert reports['default']['nodes'] == {'gpu-a': 'fits', 'gpu-b': 'fits', 'gpu-c': 'fits'}


def test_one_node_short_names_the_group_the_need_and_what_was_found():
    cpu_node = node('cpu-1', gpus=0, labels={'nvidia.com/gpu.present': 'false'}, taints=[])
    listing = kubectl_list(node('gpu-a'), node('gpu-b'), cpu_node)
    reports, errors = _check([group(size=3)], listing)
    assert errors == [
        "group 'default' cannot be placed: it needs 3 node(s) with 8 free nvidia.com/gpu each "
        "(3 rank(s) x 1 LWS group(s)), but 2 of 3 node(s) qualify "
        "(excluded: cpu-1: node selector nvidia.com/gpu.present=true does not match)"]
    assert reports['default']['qualifying_nodes'] == 2


def test_replicas_multiply_the_nodes_needed():
    listing = kubectl_list(*[node('gpu-%d' % index) for index in range(3)])
    _reports, errors = _check([group(size=2, replicas=2)], listing)
    assert len(errors) == 1
    assert 'needs 4 node(s) with 8 free nvidia.com/gpu each (2 rank(s) x 2 LWS group(s)), but 3 of 3' in errors[0]


def test_capacity_split_across_two_racks_fails_exclusive_topology():
    listing = kubectl_list(node('gpu-a1', rack='rack-a'), node('gpu-b1', rack='rack-b'),
                           node('gpu-a2', rack='rack-a', gpus=4))
    # Without exclusive topology two nodes are enough ...
    assert _check([group()], listing)[1] == []
    # ... but the group must land in one rack, and each rack has one node with 8 free GPUs.
    reports, errors = _check([group(topology_key=RACK)], listing)
    assert errors == [
        "group 'default' cannot be placed with nim_k8s_exclusive_topology=topology.kubernetes.io/rack: "
        "each of its 1 LWS group(s) needs 2 node(s) with 8 free nvidia.com/gpu inside one "
        "topology.kubernetes.io/rack domain, but 0 domain(s) have that; qualifying nodes per domain: "
        "topology.kubernetes.io/rack=rack-a: 1, topology.kubernetes.io/rack=rack-b: 1 "
        "(excluded: gpu-a2: 4 of 4 nvidia.com/gpu free)"]
    assert reports['default']['domains'] == {'rack-a': 1, 'rack-b': 1}


def test_exclusive_topology_passes_when_one_rack_holds_the_group():
    listing = kubectl_list(node('gpu-a1', rack='rack-a'), node('gpu-a2', rack='rack-a'), node('gpu-b1', rack='rack-b'))
    reports, errors = _check([group(topology_key=RACK)], listing)
    assert errors == []
    assert reports['default']['qualifying_domains'] == ['rack-a']


def test_exclusive_topology_needs_one_domain_per_lws_group():
    listing = kubectl_list(node('gpu-a1', rack='rack-a'), node('gpu-a2', rack='rack-a'),
                           node('gpu-a3', rack='rack-a'), node('gpu-a4', rack='rack-a'))
    # Four fitting nodes, but both LWS groups cannot share rack-a: one group per domain.
    _reports, errors = _check([group(replicas=2, topology_key=RACK)], listing)
    assert len(errors) == 1
    assert 'each of its 2 LWS group(s) needs 2 node(s)' in errors[0]
    assert 'but 1 domain(s) have that' in errors[0]


def test_nodes_without_the_topology_label_are_named():
    listing = kubectl_list(node('gpu-a1', rack='rack-a'), node('gpu-x'))
    _reports, errors = _check([group(topology_key=RACK)], listing)
    assert 'qualifying but without the label: gpu-x' in errors[0]


def test_gpus_used_by_running_pods_are_not_free():
    listing = kubectl_list(
        node('gpu-a'), node('gpu-b'),
        pod('train-0', 'gpu-b', gpus=4),
        pod('train-1', 'gpu-b', gpus=2, limits_only=True),
        # Finished pods and pods not bound to a node hold nothing.
        pod('done', 'gpu-a', gpus=8, phase='Succeeded'),
        pod('failed', 'gpu-a', gpus=8, phase='Failed'),
        pod('pending', None, gpus=8, phase='Pending'))
    reports, errors = _check([group()], listing)
    assert errors == [
        "group 'default' cannot be placed: it needs 2 node(s) with 8 free nvidia.com/gpu each "
        "(2 rank(s) x 1 LWS group(s)), but 1 of 2 node(s) qualify (excluded: gpu-b: 2 of 8 nvidia.com/gpu free)"]
    assert reports['default']['nodes']['gpu-a'] == 'fits'


def test_pods_of_the_group_itself_do_not_count_as_used():
    own = {'leaderworkerset.sigs.k8s.io/name': 'nim-default'}
    listing = kubectl_list(node('gpu-a'), node('gpu-b'),
                           pod('nim-default-0', 'gpu-a', gpus=8, namespace='nim', labels=own),
                           pod('nim-default-0-1', 'gpu-b', gpus=8, namespace='nim', labels=own))
    assert _check([group()], listing)[1] == []
    # The same labels in another namespace are another deployment's pods.
    other = kubectl_list(node('gpu-a'), node('gpu-b'),
                         pod('nim-default-0', 'gpu-a', gpus=8, namespace='elsewhere', labels=own))
    assert len(_check([group()], other)[1]) == 1


def test_taints_and_selectors_exclude_nodes():
    listing = kubectl_list(
        node('gpu-a'),
        node('gpu-maint', taints=[GPU_TAINT, {'key': 'maintenance', 'effect': 'NoExecute'}]),
        node('gpu-prefer', taints=[{'key': 'spot', 'value': 'true', 'effect': 'PreferNoSchedule'}]),
        node('gpu-other', labels={'nvidia.com/gpu.present': 'false'}),
        node('gpu-cordoned', unschedulable=True),
        node('gpu-down', ready=False))
    reports, errors = _check([group(size=3)], listing)
    assert reports['default']['nodes'] == {
        'gpu-a': 'fits',
        'gpu-cordoned': 'cordoned',
        'gpu-down': 'not Ready',
        'gpu-maint': 'taint maintenance:NoExecute not tolerated',
        'gpu-other': 'node selector nvidia.com/gpu.present=true does not match',
        # PreferNoSchedule only steers the scheduler; the node still qualifies.
        'gpu-prefer': 'fits',
    }
    assert errors[0].startswith("group 'default' cannot be placed: it needs 3 node(s)")
    assert 'but 2 of 6 node(s) qualify' in errors[0]
    assert 'gpu-maint: taint maintenance:NoExecute not tolerated' in errors[0]


def test_the_gpu_taint_needs_a_toleration():
    listing = kubectl_list(node('gpu-a'), node('gpu-b'))
    _reports, errors = _check([group(tolerations=[])], listing)
    assert 'gpu-a: taint nvidia.com/gpu=present:NoSchedule not tolerated' in errors[0]


def test_groups_of_different_sizes_are_packed_together():
    listing = kubectl_list(node('gpu-a'), node('gpu-b'), node('big-1', gpus=16), node('big-2', gpus=16))
    reports, errors = _check([group('llama'), group('r1', size=2, gpus_per_rank=16)], listing)
    assert errors == []
    assert reports['r1']['nodes'] == {'big-1': 'fits', 'big-2': 'fits', 'gpu-a': '8 of 8 nvidia.com/gpu free',
                                      'gpu-b': '8 of 8 nvidia.com/gpu free'}
    # llama goes where r1 cannot: the 8-GPU nodes.
    assert reports['llama']['nodes']['gpu-a'] == 'fits'


def test_two_groups_that_each_fit_alone_but_not_together_are_refused():
    # Found on the live cluster: 3 free nodes, two groups of 2 each fit alone, not together.
    listing = kubectl_list(node('gpu-a'), node('gpu-b'), node('gpu-c'), node('gpu-d'),
                           pod('holder', 'gpu-a', gpus=8))
    reports, errors = _check([group('alpha'), group('beta')], listing)
    assert reports['alpha']['errors'] == []
    assert len(errors) == 1
    assert errors[0].startswith("group 'beta' cannot be placed: it needs 2 node(s)")
    assert 'gpu-a: 0 of 8 nvidia.com/gpu free' in errors[0]
    assert '(8 taken by groups placed before)' in errors[0]


def test_exclusive_topology_gives_each_group_a_domain_of_its_own():
    listing = kubectl_list(node('a1', labels={RACK: 'a'}), node('a2', labels={RACK: 'a'}),
                           node('b1', labels={RACK: 'b'}), node('b2', labels={RACK: 'b'}),
                           pod('holder', 'a1', gpus=8))
    _reports, errors = _check([group('alpha', topology_key=RACK), group('beta', topology_key=RACK)], listing)
    assert len(errors) == 1 and errors[0].startswith("group 'beta' cannot be placed with nim_k8s_exclusive_topology")
    assert 'b1: 0 of 8 nvidia.com/gpu free (8 taken by groups placed before)' in errors[0]


def test_exclusive_topology_keeps_off_a_domain_where_another_leaderworkerset_runs():
    # Found live: a LeaderWorkerSet of someone else's (no GPUs) on rack a; LWS's exclusive-topology
    # anti-affinity keeps a group's leader out of that rack, so the group needs rack b alone.
    other = {'leaderworkerset.sigs.k8s.io/name': 'team-lws', 'leaderworkerset.sigs.k8s.io/group-key': 'f00d'}
    listing = kubectl_list(node('a1', labels={RACK: 'a'}), node('a2', labels={RACK: 'a'}),
                           node('b1', labels={RACK: 'b'}), node('b2', labels={RACK: 'b'}),
                           pod('team-lws-0', 'a1', namespace='nim', labels=other))
    _reports, errors = _check([group('alpha', topology_key=RACK), group('beta', topology_key=RACK)], listing)
    assert len(errors) == 1 and errors[0].startswith("group ")
    assert ('a1: its %s domain runs pods of LeaderWorkerSet nim/team-lws, which exclusive topology keeps other '
            'groups away from' % RACK) in errors[0]
    assert _check([group('alpha', topology_key=RACK)], listing)[1] == []
    # Without exclusive topology the pod takes no GPU and nothing else.
    assert _check([group('alpha'), group('beta')], listing)[1] == []
    # A finished pod of that LeaderWorkerSet holds nothing.
    done = kubectl_list(node('a1', labels={RACK: 'a'}), node('a2', labels={RACK: 'a'}),
                        node('b1', labels={RACK: 'b'}), node('b2', labels={RACK: 'b'}),
                        pod('team-lws-0', 'a1', namespace='nim', labels=other, phase='Succeeded'))
    assert _check([group('alpha', topology_key=RACK), group('beta', topology_key=RACK)], done)[1] == []


def test_the_running_pods_of_every_planned_group_are_not_counted_on_a_rerun():
    # Both groups already run on the four nodes; a re-run replaces or keeps them, so they fit.
    listing = kubectl_list(node('gpu-a'), node('gpu-b'), node('gpu-c'), node('gpu-d'),
                           pod('nim-alpha-0', 'gpu-a', gpus=8, namespace='nim', labels={'leaderworkerset.sigs.k8s.io/name': 'nim-alpha'}),
                           pod('nim-alpha-0-1', 'gpu-b', gpus=8, namespace='nim', labels={'leaderworkerset.sigs.k8s.io/name': 'nim-alpha'}),
                           pod('nim-beta-0', 'gpu-c', gpus=8, namespace='nim', labels={'leaderworkerset.sigs.k8s.io/name': 'nim-beta'}),
                           pod('nim-beta-0-1', 'gpu-d', gpus=8, namespace='nim', labels={'leaderworkerset.sigs.k8s.io/name': 'nim-beta'}))
    _reports, errors = _check([group('alpha'), group('beta')], listing)
    assert errors == []


def test_the_pods_the_nim_operator_made_for_planned_groups_are_theirs_on_a_rerun():
    # The operator names the LeaderWorkerSet of NIMService nim-alpha nim-alpha-lws; a re-run of the
    # nim_operator backend keeps those pods, so their GPUs are the group's own, not someone else's.
    operator = {'app.kubernetes.io/managed-by': 'k8s-nim-operator'}
    listing = kubectl_list(node('gpu-a'), node('gpu-b'), node('gpu-c'), node('gpu-d'), *[
        pod('nim-%s-lws-0%s' % (name, suffix), where, gpus=8, namespace='nim',
            labels=dict(operator, **{'leaderworkerset.sigs.k8s.io/name': 'nim-%s-lws' % name}))
        for name, suffix, where in (('alpha', '', 'gpu-a'), ('alpha', '-1', 'gpu-b'),
                                    ('beta', '', 'gpu-c'), ('beta', '-1', 'gpu-d'))])
    groups = [group(name, lws_name='nim-%s-lws' % name) for name in ('alpha', 'beta')]
    assert _check(groups, listing)[1] == []
    # The same pods in another namespace, or of an LWS of another name, are someone else's.
    assert len(_check([group('alpha', lws_name='nim-alpha-lws', namespace='other')], listing)[1]) == 1
    assert len(_check([group('alpha')], listing)[1]) == 1


@pytest.mark.parametrize('toleration, taint, expected', [
    ({'key': 'k', 'operator': 'Exists'}, {'key': 'k', 'value': 'v', 'effect': 'NoSchedule'}, True),
    ({'key': 'k', 'value': 'v'}, {'key': 'k', 'value': 'v', 'effect': 'NoSchedule'}, True),
    ({'key': 'k', 'value': 'w'}, {'key': 'k', 'value': 'v', 'effect': 'NoSchedule'}, False),
    ({'operator': 'Exists'}, {'key': 'anything', 'effect': 'NoExecute'}, True),
    ({'key': 'k', 'operator': 'Exists', 'effect': 'NoExecute'}, {'key': 'k', 'effect': 'NoSchedule'}, False),
    ({'key': 'other', 'operator': 'Exists'}, {'key': 'k', 'effect': 'NoSchedule'}, False),
])
def test_toleration_matching_follows_kubernetes(toleration, taint, expected):
    assert tolerates(toleration, taint) is expected


def test_init_containers_count_when_larger():
    assert pod_gpu_request(pod('p', 'n', gpus=2, init_gpus=4)) == 4
    assert pod_gpu_request(pod('p', 'n', gpus=4, init_gpus=2)) == 4


@pytest.mark.parametrize('value, expected', [('8', 8), (8, 8), ('1k', 1000), ('0', 0), (None, 0), ('500m', 0)])
def test_quantities(value, expected):
    assert quantity(value) == expected


def test_input_not_shaped_like_the_api_is_refused():
    with pytest.raises(CapacityError):
        quantity('eight')
    with pytest.raises(CapacityError):
        items('nodes')
    with pytest.raises(CapacityError):
        items([['not', 'an', 'object']])
    with pytest.raises(CapacityError):
        check_capacity([group()], {'items': []}, [])


def test_items_picks_one_kind_from_a_mixed_list():
    listing = kubectl_list(node('gpu-a'), pod('p', 'gpu-a'))
    assert [obj['metadata']['name'] for obj in items(listing, 'Node')] == ['gpu-a']
    assert [obj['metadata']['name'] for obj in items(listing, 'Pod')] == ['p']
    assert k8s_capacity.items([node('x')]) == [node('x')]


def _crd(name):
    return {'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition', 'metadata': {'name': name},
            'status': {'conditions': [{'type': 'Established', 'status': 'True'}]}}


def test_scheduler_installed_when_its_crds_exist():
    assert check_scheduler('default', []) == []
    assert check_scheduler('volcano', [_crd('podgroups.scheduling.volcano.sh'), _crd('queues.scheduling.volcano.sh')]) == []
    assert check_scheduler('kai', ['queues.scheduling.run.ai', 'podgroups.scheduling.run.ai']) == []


def test_missing_scheduler_names_the_variable_and_the_component():
    assert check_scheduler('volcano', [_crd('queues.scheduling.volcano.sh')]) == [
        'nim_k8s_scheduler=volcano needs Volcano (role nimstack.multinode.volcano, or its Helm chart), but the '
        'cluster has no CRD podgroups.scheduling.volcano.sh: install it first, or set nim_k8s_scheduler=default']
    errors = check_scheduler('kai', [_crd('podgroups.scheduling.volcano.sh')])
    assert errors == ['nim_k8s_scheduler=kai needs NVIDIA KAI Scheduler (its Helm chart), but the cluster has no CRD '
                      'queues.scheduling.run.ai, podgroups.scheduling.run.ai: install it first, or set '
                      'nim_k8s_scheduler=default']
    assert check_scheduler('slurm', []) == ["nim_k8s_scheduler must be one of default, kai, volcano, got 'slurm'"]
