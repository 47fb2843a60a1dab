# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""nim_k8s_group_info: what one look reads, and a list the credentials may not read left out."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import CoreException
from ansible_collections.nimstack.multinode.plugins.modules.nim_k8s_group_info import read_group


class FakeService:
    """K8sService.find as kubernetes.core answers it; a kind in ``forbidden`` raises as a 403 does."""

    def __init__(self, objects, forbidden=()):
        self.objects, self.forbidden, self.calls = objects, forbidden, []

    def find(self, kind, api_version, name=None, namespace=None, label_selectors=None):
        self.calls.append((kind, name, namespace, tuple(label_selectors or ())))
        if kind in self.forbidden:
            raise CoreException("Exception '(403) Reason: Forbidden' raised while trying to get resource")
        found = [o for o in self.objects if o['kind'] == kind and (name is None or o['metadata']['name'] == name)
                 and (namespace is None or o['metadata'].get('namespace') == namespace)]
        for selector in label_selectors or ():
            key, value = selector.split('=')
            found = [o for o in found if o['metadata'].get('labels', {}).get(key) == value]
        return {'resources': found, 'api_found': True}


def obj(kind, name, namespace='nim', **rest):
    return dict({'kind': kind, 'metadata': {'name': name, 'namespace': namespace}}, **rest)


def test_the_operators_lws_its_pods_and_the_claims_they_mount_are_read():
    volumes = [{'name': 'cache', 'persistentVolumeClaim': {'claimName': 'nim-alpha-cache'}},
               {'name': 'shm', 'emptyDir': {'medium': 'Memory'}}]
    pod = obj('Pod', 'nim-alpha-lws-0', status={'phase': 'Pending'}, spec={'volumes': volumes})
    pod['metadata']['labels'] = {'leaderworkerset.sigs.k8s.io/name': 'nim-alpha-lws'}
    other = obj('Pod', 'team-0')
    service = FakeService([obj('NIMService', 'nim-alpha'), obj('LeaderWorkerSet', 'nim-alpha-lws'), pod, other,
                           obj('PersistentVolumeClaim', 'nim-alpha-cache'), obj('PersistentVolumeClaim', 'team-data'),
                           obj('Event', 'e1'), obj('Node', 'gpu-a1', namespace=None)], forbidden=('StorageClass',))
    workloads, pods, claims, classes, nodes, events = read_group(service, {
        'kind': 'NIMService', 'name': 'nim-alpha', 'namespace': 'nim', 'lws_name': 'nim-alpha-lws', 'claims': []})
    assert [(w['kind'], w['name'], len(w['resources'])) for w in workloads] == [
        ('NIMService', 'nim-alpha', 1), ('LeaderWorkerSet', 'nim-alpha-lws', 1)]
    assert [p['metadata']['name'] for p in pods] == ['nim-alpha-lws-0']
    assert [c['metadata']['name'] for c in claims] == ['nim-alpha-cache']
    assert classes is None
    assert [n['metadata']['name'] for n in nodes] == ['gpu-a1']
    assert [e['metadata']['name'] for e in events] == ['e1']


def test_a_claim_named_is_read_before_any_pod_mounts_it():
    service = FakeService([obj('LeaderWorkerSet', 'nim-alpha'), obj('PersistentVolumeClaim', 'nim-alpha-model-store')])
    workloads, pods, claims, classes, nodes = read_group(service, {
        'kind': 'LeaderWorkerSet', 'name': 'nim-alpha', 'namespace': 'nim', 'lws_name': '',
        'claims': ['nim-alpha-model-store']})[:5]
    assert [w['kind'] for w in workloads] == ['LeaderWorkerSet'] and pods == []
    assert [c['metadata']['name'] for c in claims] == ['nim-alpha-model-store']
    assert ('Pod', None, 'nim', ('leaderworkerset.sigs.k8s.io/name=nim-alpha',)) in service.calls
    # A claim without a status is Pending: the storage classes are read; no pod is unplaced: the nodes are not.
    assert classes == [] and nodes == []
    assert [c[0] for c in service.calls].count('StorageClass') == 1 and 'Node' not in [c[0] for c in service.calls]


def test_the_cluster_wide_lists_are_not_read_once_everything_is_bound_and_placed():
    pod = obj('Pod', 'nim-alpha-0', spec={'nodeName': 'gpu-a1', 'volumes': [
        {'name': 'model-store', 'persistentVolumeClaim': {'claimName': 'nim-alpha-model-store'}}]})
    pod['metadata']['labels'] = {'leaderworkerset.sigs.k8s.io/name': 'nim-alpha'}
    service = FakeService([obj('LeaderWorkerSet', 'nim-alpha'), pod,
                           obj('PersistentVolumeClaim', 'nim-alpha-model-store', status={'phase': 'Bound'})])
    read_group(service, {'kind': 'LeaderWorkerSet', 'name': 'nim-alpha', 'namespace': 'nim', 'lws_name': '', 'claims': []})
    assert not {'StorageClass', 'Node'} & set(c[0] for c in service.calls)


def test_a_nimcache_its_caching_jobs_pods_and_the_operators_claim_are_read():
    job_pod = obj('Pod', 'nim-alpha-cache-job-x7k2p', status={'phase': 'Pending'})
    job_pod['metadata']['labels'] = {'job-name': 'nim-alpha-cache-job'}
    service = FakeService([obj('NIMCache', 'nim-alpha-cache', status={'state': 'PVC-Created'}), job_pod,
                           obj('PersistentVolumeClaim', 'nim-alpha-cache-pvc'), obj('PersistentVolumeClaim', 'other-pvc')])
    workloads, pods, claims = read_group(service, {
        'kind': 'NIMCache', 'name': 'nim-alpha-cache', 'namespace': 'nim', 'lws_name': '', 'claims': []})[:3]
    assert [(w['kind'], w['name'], len(w['resources'])) for w in workloads] == [('NIMCache', 'nim-alpha-cache', 1)]
    assert [p['metadata']['name'] for p in pods] == ['nim-alpha-cache-job-x7k2p']
    assert [c['metadata']['name'] for c in claims] == ['nim-alpha-cache-pvc']
    assert ('Pod', None, 'nim', ('job-name=nim-alpha-cache-job',)) in service.calls


def test_a_components_deployment_and_the_pods_its_selector_matches_are_read():
    deployment = obj('Deployment', 'lws-controller-manager', namespace='lws-system',
                     spec={'selector': {'matchLabels': {'control-plane': 'controller-manager'}}})
    pod = obj('Pod', 'lws-controller-manager-7d9-x', namespace='lws-system', status={'phase': 'Pending'})
    pod['metadata']['labels'] = {'control-plane': 'controller-manager'}
    other = obj('Pod', 'other', namespace='lws-system')
    service = FakeService([deployment, pod, other])
    workloads, pods = read_group(service, {'kind': 'Deployment', 'name': 'lws-controller-manager',
                                           'namespace': 'lws-system', 'lws_name': '', 'claims': []})[:2]
    assert [(w['kind'], w['name'], len(w['resources'])) for w in workloads] == [('Deployment', 'lws-controller-manager', 1)]
    assert [p['metadata']['name'] for p in pods] == ['lws-controller-manager-7d9-x']
    assert ('Pod', None, 'lws-system', ('control-plane=controller-manager',)) in service.calls


def test_a_deployment_not_there_yet_reads_no_pod():
    service = FakeService([obj('Pod', 'stray', namespace='lws-system')])
    workloads, pods = read_group(service, {'kind': 'Deployment', 'name': 'lws-controller-manager',
                                           'namespace': 'lws-system', 'lws_name': '', 'claims': []})[:2]
    assert workloads[0]['resources'] == [] and pods == []
    assert 'Pod' not in [c[0] for c in service.calls]


def test_a_smoke_test_job_and_its_pods_by_their_job_name_are_read():
    job_pod = obj('Pod', 'nim-alpha-smoke-x7k2p', status={'phase': 'Running'})
    job_pod['metadata']['labels'] = {'job-name': 'nim-alpha-smoke'}
    service = FakeService([obj('Job', 'nim-alpha-smoke', status={'active': 1}), job_pod, obj('Pod', 'other')])
    workloads, pods = read_group(service, {'kind': 'Job', 'name': 'nim-alpha-smoke', 'namespace': 'nim',
                                           'lws_name': '', 'claims': []})[:2]
    assert [(w['kind'], w['name'], len(w['resources'])) for w in workloads] == [('Job', 'nim-alpha-smoke', 1)]
    assert [p['metadata']['name'] for p in pods] == ['nim-alpha-smoke-x7k2p']
    assert ('Pod', None, 'nim', ('job-name=nim-alpha-smoke',)) in service.calls


class Clock:
    """time.time and time.sleep of one call: sleeping moves the clock; each look can change the group."""

    def __init__(self, on_sleep=None):
        self.now, self.slept, self.on_sleep = 1000.0, [], on_sleep

    def time(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds
        if self.on_sleep:
            self.on_sleep(self)


def _lws(ready):
    return obj('LeaderWorkerSet', 'nim-alpha', metadata={'name': 'nim-alpha', 'namespace': 'nim', 'generation': 1},
               spec={'replicas': 1}, status={'replicas': 1, 'readyReplicas': 1 if ready else 0,
                                             'updatedReplicas': 1, 'observedGeneration': 1,
                                             'conditions': [{'type': 'Available', 'status': 'True' if ready else 'False'}]})


def _params(**extra):
    params = {'kind': 'LeaderWorkerSet', 'name': 'nim-alpha', 'namespace': 'nim', 'lws_name': '', 'claims': [],
              'started': 990.0, 'pull_grace': 180, 'claim_grace': 120, 'look_for': 0, 'look_every': 3,
              'deadline': None}
    params.update(extra)
    return params


def test_one_look_without_look_for():
    from ansible_collections.nimstack.multinode.plugins.modules.nim_k8s_group_info import look
    clock = Clock()
    result = look(FakeService([_lws(False)]), _params(), clock.time, clock.sleep)
    assert (result['state'], result['looks'], result['expired'], result['elapsed']) == ('waiting', 1, False, 10)
    assert clock.slept == []


def test_a_call_keeps_looking_and_returns_at_the_look_that_finds_the_group_ready():
    from ansible_collections.nimstack.multinode.plugins.modules.nim_k8s_group_info import look
    service = FakeService([_lws(False)])

    def ready_after_two_sleeps(clock):
        if len(clock.slept) == 2:
            service.objects[:] = [_lws(True)]
    clock = Clock(ready_after_two_sleeps)
    result = look(service, _params(look_for=20), clock.time, clock.sleep)
    assert (result['state'], result['looks'], result['expired']) == ('ready', 3, False)
    assert clock.slept == [3, 3]


def test_a_call_stops_looking_after_look_for_and_says_expired_only_past_the_deadline():
    from ansible_collections.nimstack.multinode.plugins.modules.nim_k8s_group_info import look
    clock = Clock()
    result = look(FakeService([_lws(False)]), _params(look_for=10, deadline=1100.0), clock.time, clock.sleep)
    # Looks at 0, 3, 6 and 9 s: a fifth, at 12 s, would start past the 10 s this call may look.
    assert (result['state'], result['looks'], result['expired']) == ('waiting', 4, False)
    clock = Clock()
    result = look(FakeService([_lws(False)]), _params(look_for=60, deadline=1007.0), clock.time, clock.sleep)
    # The deadline comes first: looks at 0, 3 and 6 s; a fourth, at 9 s, would start past it: expired.
    assert (result['state'], result['looks'], result['expired']) == ('waiting', 3, True)
