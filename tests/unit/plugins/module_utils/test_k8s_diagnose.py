# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""diagnose: what a group's wait waits on, and when waiting cannot help. The objects are in the
shape the API server returns them (events of the scheduler through core/v1: eventTime and series,
no first/lastTimestamp; those of the kubelet and the volume controller: first/lastTimestamp, count)."""

from ansible_collections.nimstack.multinode.plugins.module_utils.k8s_diagnose import (
    PULL_GRACE, diagnose, timestamp)
from ansible_collections.nimstack.multinode.tests.unit.plugins.module_utils.k8s_objects import GPU, node

NS = 'nim'
T0 = timestamp('2026-11-28T18:40:00Z')
UNBOUND = ('0/5 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/5 nodes are '
           'available: 5 Preemption is not helpful for scheduling.')


def at(seconds):
    """The API's time format, ``seconds`` after T0."""
    import time
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(T0 + seconds))


def lws(ready=0, name='nim-alpha'):
    return {'apiVersion': 'leaderworkerset.x-k8s.io/v1', 'kind': 'LeaderWorkerSet',
            'metadata': {'name': name, 'namespace': NS, 'generation': 1, 'uid': 'lws-uid'},
            'spec': {'replicas': 1, 'leaderWorkerTemplate': {'size': 2}},
            'status': {'observedGeneration': 1, 'replicas': 1, 'updatedReplicas': 1, 'readyReplicas': ready,
                       'conditions': [{'type': 'Available', 'status': 'True' if ready else 'False',
                                       'reason': 'AllGroupsReady' if ready else 'GroupsNotReady',
                                       'message': 'All replicas are ready' if ready else 'Replicas are not ready',
                                       'lastTransitionTime': at(0)}]}}


def workloads(obj):
    return [{'kind': 'LeaderWorkerSet', 'namespace': NS, 'name': 'nim-alpha', 'resources': [obj] if obj else []}]


def pod(name, node_name=None, phase='Pending', waiting=None, restarts=0, selector=None, gpus=8, ready=False):
    spec = {'containers': [{'name': 'nim-llm', 'image': 'nvcr.io/nim/meta/llama-3.1-70b-instruct:1.3.0',
                            'resources': {'limits': {GPU: str(gpus)}, 'requests': {GPU: str(gpus)}}}],
            'volumes': [{'name': 'model-store', 'persistentVolumeClaim': {'claimName': 'nim-alpha-model-store'}}],
            'schedulerName': 'default-scheduler',
            'tolerations': [{'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}]}
    if selector:
        spec['nodeSelector'] = selector
    status = {'phase': phase, 'qosClass': 'BestEffort'}
    if node_name:
        spec['nodeName'] = node_name
        status['conditions'] = [{'type': 'PodScheduled', 'status': 'True', 'lastTransitionTime': at(1)},
                                {'type': 'Ready', 'status': 'True' if ready else 'False', 'lastTransitionTime': at(1)}]
        state = {'waiting': waiting} if waiting else {'running': {'startedAt': at(2)}}
        status['containerStatuses'] = [{'name': 'nim-llm', 'image': spec['containers'][0]['image'], 'imageID': '',
                                        'ready': ready, 'restartCount': restarts, 'started': not waiting,
                                        'state': state, 'lastState': {}}]
    else:
        status['conditions'] = [{'type': 'PodScheduled', 'status': 'False', 'reason': 'Unschedulable',
                                 'message': UNBOUND, 'lastTransitionTime': at(1)}]
    return {'apiVersion': 'v1', 'kind': 'Pod',
            'metadata': {'name': name, 'namespace': NS, 'uid': 'uid-' + name, 'creationTimestamp': at(0),
                         'labels': {'leaderworkerset.sigs.k8s.io/name': 'nim-alpha'}},
            'spec': spec, 'status': status}


def claim(storage_class='nimstack-rwx', phase='Pending', created=0, omit_class=False):
    spec = {'accessModes': ['ReadWriteMany'], 'resources': {'requests': {'storage': '1Ti'}}, 'volumeMode': 'Filesystem'}
    if not omit_class:
        spec['storageClassName'] = storage_class
    if phase == 'Bound':
        spec['volumeName'] = 'pvc-1b6f'
    return {'apiVersion': 'v1', 'kind': 'PersistentVolumeClaim',
            'metadata': {'name': 'nim-alpha-model-store', 'namespace': NS, 'uid': 'claim-uid', 'creationTimestamp': at(created),
                         'finalizers': ['kubernetes.io/pvc-protection']},
            'spec': spec, 'status': {'phase': phase}}


def storage_class(name='nimstack-rwx', default=False, binding='WaitForFirstConsumer'):
    meta = {'name': name}
    if default:
        meta['annotations'] = {'storageclass.kubernetes.io/is-default-class': 'true'}
    return {'apiVersion': 'storage.k8s.io/v1', 'kind': 'StorageClass', 'metadata': meta,
            'provisioner': 'nfs.csi.k8s.io', 'reclaimPolicy': 'Delete', 'volumeBindingMode': binding}


def scheduler_event(pod_name, message, seen=10, count=None):
    event = {'apiVersion': 'v1', 'kind': 'Event', 'type': 'Warning', 'reason': 'FailedScheduling', 'action': 'Scheduling',
             'metadata': {'name': pod_name + '.187c5a1b2c3d4e5f', 'namespace': NS, 'creationTimestamp': at(seen)},
             'involvedObject': {'apiVersion': 'v1', 'kind': 'Pod', 'name': pod_name, 'namespace': NS,
                                'uid': 'uid-' + pod_name, 'resourceVersion': '1200'},
             'message': message, 'eventTime': at(seen).replace('Z', '.123456Z'), 'firstTimestamp': None,
             'lastTimestamp': None, 'reportingComponent': 'default-scheduler',
             'reportingInstance': 'default-scheduler-control-plane', 'source': {}}
    if count:
        event['series'] = {'count': count, 'lastObservedTime': at(seen + 60).replace('Z', '.5Z')}
    return event


def old_event(kind, name, reason, message, first, last=None, count=1, kind_type='Warning', component='kubelet', uid=None):
    """An event of the old recorder (kubelet, persistentvolume-controller)."""
    return {'apiVersion': 'v1', 'kind': 'Event', 'type': kind_type, 'reason': reason, 'message': message,
            'metadata': {'name': name + '.187c5a1b99990000', 'namespace': NS, 'creationTimestamp': at(first)},
            'involvedObject': {'apiVersion': 'v1', 'kind': kind, 'name': name, 'namespace': NS,
                               'uid': uid or ('uid-' + name if kind == 'Pod' else 'claim-uid')},
            'count': count, 'firstTimestamp': at(first), 'lastTimestamp': at(last if last is not None else first),
            'eventTime': None, 'reportingComponent': component, 'reportingInstance': '',
            'source': {'component': component}}


NODES = [node('gpu-a%d' % i, rack='r1') for i in range(1, 6)]


def look(pods=(), claims=(), classes=(storage_class(),), nodes=NODES, events=(), now=60, started=0, obj='not ready'):
    workload = lws(ready=1) if obj == 'ready' else lws() if obj else None
    return diagnose(workloads(workload), list(pods), list(claims), None if classes is None else list(classes),
                    None if nodes is None else list(nodes), list(events), T0 + now, started=T0 + started)


def test_a_ready_group_is_ready_whatever_old_events_say():
    result = look(pods=[pod('nim-alpha-0', 'gpu-a1', 'Running', ready=True)], claims=[claim(phase='Bound')],
                  events=[scheduler_event('nim-alpha-0', UNBOUND)], obj='ready')
    assert result == {'state': 'ready', 'reason': '', 'waiting_on': '', 'summary': []}


def test_a_claim_naming_a_class_the_cluster_lacks_is_hopeless_with_the_schedulers_message():
    result = look(pods=[pod('nim-alpha-0'), pod('nim-alpha-1')], claims=[claim('fast-rwx')],
                  events=[scheduler_event('nim-alpha-0', UNBOUND),
                          old_event('PersistentVolumeClaim', 'nim-alpha-model-store', 'ProvisioningFailed',
                                    'storageclass.storage.k8s.io "fast-rwx" not found', 1, 50, count=4,
                                    component='persistentvolume-controller')],
                  now=15)
    assert result['state'] == 'hopeless'
    assert result['reason'].startswith('claim nim-alpha-model-store names storage class fast-rwx, which the cluster '
                                       'does not have (it has: nimstack-rwx)')
    assert 'the scheduler: ' + UNBOUND.rstrip('.') in result['reason']
    assert result['waiting_on'] == 'LeaderWorkerSet nim/nim-alpha'
    summary = result['summary']
    assert summary[0] == 'LeaderWorkerSet nim/nim-alpha: 0 of 1 replicas are ready; it is not Available'
    assert 'pod nim-alpha-0: Pending, not ready, no node, 0 restarts' in summary
    assert 'claim nim-alpha-model-store: Pending, storage class fast-rwx' in summary
    assert ('event PersistentVolumeClaim nim-alpha-model-store ProvisioningFailed (persistentvolume-controller, 4x, '
            '0 s ago): storageclass.storage.k8s.io "fast-rwx" not found') in summary


def test_the_provisioning_failure_alone_tells_where_storage_classes_cannot_be_read():
    result = look(pods=[pod('nim-alpha-0')], claims=[claim('fast-rwx')], classes=None,
                  events=[old_event('PersistentVolumeClaim', 'nim-alpha-model-store', 'ProvisioningFailed',
                                    'storageclass.storage.k8s.io "fast-rwx" not found', 1,
                                    component='persistentvolume-controller')], now=5)
    assert result['state'] == 'hopeless'
    assert 'claim nim-alpha-model-store cannot be provisioned: storageclass.storage.k8s.io "fast-rwx" not found' \
        in result['reason']
    assert "could not read the cluster's storage classes: only the events tell why" in result['summary']


def test_a_claim_waiting_for_its_first_consumer_is_waited_on():
    event = old_event('PersistentVolumeClaim', 'nim-alpha-model-store', 'WaitForFirstConsumer',
                      'waiting for first consumer to be created before binding', 0, 300, count=20, kind_type='Normal',
                      component='persistentvolume-controller')
    result = look(claims=[claim()], events=[event], now=600)
    assert result['state'] == 'waiting'
    assert result['reason'] == '0 of 1 replicas are ready; it is not Available'
    assert any('WaitForFirstConsumer' in line for line in result['summary'])


def test_a_claim_with_no_class_and_no_default_class_is_hopeless_only_after_the_grace():
    classes = [storage_class('slow', default=False)]
    assert look(claims=[claim(omit_class=True)], classes=classes, now=30)['state'] == 'waiting'
    result = look(claims=[claim(omit_class=True)], classes=classes, now=200)
    assert result['state'] == 'hopeless'
    assert 'names no storage class and the cluster has no default one (it has: slow)' in result['reason']
    assert look(claims=[claim(omit_class=True)], classes=[storage_class('slow', default=True)], now=200)['state'] == 'waiting'


def test_a_provisioner_that_keeps_failing_past_the_grace_is_hopeless_but_not_before():
    def failing(now):
        event = old_event('PersistentVolumeClaim', 'nim-alpha-model-store', 'ProvisioningFailed',
                          'failed to provision volume with StorageClass "nimstack-rwx": rpc error: code = '
                          'ResourceExhausted desc = quota exceeded', 5, now, count=6, component='nfs.csi.k8s.io')
        return look(claims=[claim()], events=[event], now=now)
    assert failing(60)['state'] == 'waiting'
    result = failing(200)
    assert result['state'] == 'hopeless'
    assert result['reason'].startswith('claim nim-alpha-model-store is still Pending 195 s after ProvisioningFailed')


def test_the_failures_of_an_earlier_claim_of_the_same_name_do_not_count():
    event = old_event('PersistentVolumeClaim', 'nim-alpha-model-store', 'ProvisioningFailed', 'quota exceeded', 0, 10,
                      uid='claim-uid-before')
    result = look(claims=[claim()], events=[event], now=900)
    assert result['state'] == 'waiting'
    assert not any('quota' in line for line in result['summary'])


def test_a_bound_claims_old_failure_is_neither_hopeless_nor_shown():
    event = old_event('PersistentVolumeClaim', 'nim-alpha-model-store', 'ProvisioningFailed', 'transient', 0, 10)
    result = look(pods=[pod('nim-alpha-0', 'gpu-a1', 'Running')], claims=[claim(phase='Bound')], events=[event], now=900)
    assert result['state'] == 'waiting'
    assert not any('ProvisioningFailed' in line for line in result['summary'])


def test_an_image_that_cannot_be_pulled_is_waited_on_for_the_grace_then_hopeless():
    waiting = {'reason': 'ImagePullBackOff',
               'message': 'Back-off pulling image "nvcr.io/nim/meta/llama-3.1-70b-instruct:1.3.0"'}
    events = [old_event('Pod', 'nim-alpha-0', 'Failed', 'Failed to pull image "nvcr.io/nim/meta/llama-3.1-70b-instruct:'
                        '1.3.0": rpc error: code = Unknown desc = failed to resolve reference: unauthorized', 20, 100,
                        count=5),
              old_event('Pod', 'nim-alpha-0', 'BackOff', 'Back-off pulling image "nvcr.io/nim/meta/llama-3.1-70b-'
                        'instruct:1.3.0"', 25, 100, count=8, kind_type='Normal')]
    pods = [pod('nim-alpha-0', 'gpu-a1', waiting=waiting)]
    early = look(pods=pods, events=events, now=20 + PULL_GRACE - 1)
    assert early['state'] == 'waiting'
    assert ('pod nim-alpha-0: Pending, not ready, node gpu-a1, 0 restarts, container nim-llm ImagePullBackOff (Back-off '
            'pulling image "nvcr.io/nim/meta/llama-3.1-70b-instruct:1.3.0")') in early['summary']
    late = look(pods=pods, events=events, now=20 + PULL_GRACE)
    assert late['state'] == 'hopeless'
    assert late['reason'].startswith('pod nim-alpha-0 cannot pull image nvcr.io/nim/meta/llama-3.1-70b-instruct:1.3.0 '
                                     '(ImagePullBackOff for %d s)' % PULL_GRACE)
    assert any('unauthorized' in line for line in late['summary'])


def test_the_pull_failures_of_a_pod_that_was_recreated_under_the_same_name_do_not_count():
    waiting = {'reason': 'ErrImagePull', 'message': 'rpc error: code = NotFound'}
    stale = old_event('Pod', 'nim-alpha-0', 'Failed', 'Failed to pull image "x": not found', 0, 10, uid='uid-before')
    result = look(pods=[pod('nim-alpha-0', 'gpu-a1', waiting=waiting)], events=[stale], now=1000, started=900)
    assert result['state'] == 'waiting'
    assert look(pods=[pod('nim-alpha-0', 'gpu-a1', waiting=waiting)], events=[stale], now=1000, started=0)['state'] \
        == 'hopeless'


def test_an_invalid_image_name_is_hopeless_at_once():
    waiting = {'reason': 'InvalidImageName', 'message': 'Failed to apply default image tag "NVCR.io/x": invalid reference format'}
    result = look(pods=[pod('nim-alpha-0', 'gpu-a1', waiting=waiting)], now=1, started=0)
    assert result['state'] == 'hopeless' and 'InvalidImageName' in result['reason']


def test_a_crash_loop_is_reported_and_waited_on():
    waiting = {'reason': 'CrashLoopBackOff', 'message': 'back-off 40s restarting failed container=nim-llm pod=nim-alpha-0'}
    result = look(pods=[pod('nim-alpha-0', 'gpu-a1', 'Running', waiting=waiting, restarts=3)], now=600)
    assert result['state'] == 'waiting'
    assert any(line.startswith('pod nim-alpha-0: Running, not ready, node gpu-a1, 3 restarts, container nim-llm '
                               'CrashLoopBackOff') for line in result['summary'])


def test_a_node_selector_no_node_matches_is_hopeless_from_the_node_list_or_the_scheduler():
    selector = {'nvidia.com/gpu.product': 'H200'}
    result = look(pods=[pod('nim-alpha-0', selector=selector)], now=5)
    assert result['state'] == 'hopeless'
    assert 'node selector nvidia.com/gpu.product=H200, which no node of the cluster (5) matches' in result['reason']
    message = ("0/5 nodes are available: 5 node(s) didn't match Pod's node affinity/selector. preemption: 0/5 nodes are "
               "available: 5 Preemption is not helpful for scheduling.")
    result = look(pods=[pod('nim-alpha-0')], nodes=None, events=[scheduler_event('nim-alpha-0', message, count=3)], now=100)
    assert result['state'] == 'hopeless'
    assert 'no node of the cluster matches its node selector or affinity: ' + message.rstrip('.') in result['reason']
    assert any('FailedScheduling (default-scheduler, 3x, 30 s ago)' in line for line in result['summary'])


def test_a_selector_mismatch_on_some_nodes_only_or_a_scale_up_is_waited_on():
    some = ("0/5 nodes are available: 2 Insufficient nvidia.com/gpu, 3 node(s) didn't match Pod's node affinity/selector. "
            "preemption: 0/5 nodes are available: 2 No preemption victims found for incoming pod, 3 Preemption is not "
            "helpful for scheduling.")
    assert look(pods=[pod('nim-alpha-0')], events=[scheduler_event('nim-alpha-0', some)])['state'] == 'waiting'
    every = "0/5 nodes are available: 5 node(s) didn't match Pod's node affinity/selector."
    scale_up = old_event('Pod', 'nim-alpha-0', 'TriggeredScaleUp', 'pod triggered scale-up: [{gpu-pool 0->2 (max: 4)}]',
                         3, kind_type='Normal', component='cluster-autoscaler')
    result = look(pods=[pod('nim-alpha-0', selector={'pool': 'gpu'})],
                  events=[scheduler_event('nim-alpha-0', every), scale_up])
    assert result['state'] == 'waiting'
    assert any('TriggeredScaleUp' in line for line in result['summary'])


def test_gpus_taken_by_other_pods_are_waited_on_but_a_request_no_node_holds_is_hopeless():
    busy = ('0/5 nodes are available: 5 Insufficient nvidia.com/gpu. preemption: 0/5 nodes are available: 5 No '
            'preemption victims found for incoming pod.')
    result = look(pods=[pod('nim-alpha-0')], events=[scheduler_event('nim-alpha-0', busy)], now=900)
    assert result['state'] == 'waiting'
    assert any(busy in line for line in result['summary'])
    result = look(pods=[pod('nim-alpha-0', gpus=16)], events=[scheduler_event('nim-alpha-0', busy)])
    assert result['state'] == 'hopeless'
    assert result['reason'].startswith('pod nim-alpha-0 requests 16 nvidia.com/gpu, but no node it may run on has that '
                                       'many allocatable (the most is 8)')


def test_a_missing_workload_is_waited_on_and_named():
    result = look(obj=None)
    assert result['state'] == 'waiting'
    assert result['summary'] == ['LeaderWorkerSet nim/nim-alpha: it does not exist']


def test_the_operator_lws_is_waited_on_once_the_nimservice_is_ready():
    service = {'apiVersion': 'apps.nvidia.com/v1alpha1', 'kind': 'NIMService',
               'metadata': {'name': 'nim-alpha', 'namespace': NS, 'generation': 2},
               'status': {'state': 'Ready', 'conditions': [{'type': 'Ready', 'status': 'True'}]}}
    result = diagnose([{'kind': 'NIMService', 'namespace': NS, 'name': 'nim-alpha', 'resources': [service]},
                       {'kind': 'LeaderWorkerSet', 'namespace': NS, 'name': 'nim-alpha-lws', 'resources': [lws()]}],
                      [], [], [], NODES, [], T0)
    assert result['state'] == 'waiting'
    assert result['waiting_on'] == 'LeaderWorkerSet nim/nim-alpha-lws'


def test_timestamps_in_the_forms_the_api_writes():
    assert timestamp('2026-11-28T18:40:00Z') == T0
    assert timestamp('2026-11-28T18:40:00.123456Z') == T0
    assert timestamp('2026-11-28T19:40:00+01:00') == T0
    assert timestamp(None) is None and timestamp('yesterday') is None


def test_the_pods_condition_speaks_for_the_scheduler_once_its_events_have_expired():
    result = look(pods=[pod('nim-alpha-0')], claims=[claim('fast-rwx')], now=4000)
    assert result['state'] == 'hopeless'
    # The role's message puts its own full stop after the reason.
    assert result['reason'].endswith('; the scheduler: ' + UNBOUND.rstrip('.'))


def nimcache(state=None, conditions=()):
    obj = {'apiVersion': 'apps.nvidia.com/v1alpha1', 'kind': 'NIMCache',
           'metadata': {'name': 'nim-alpha-cache', 'namespace': NS, 'generation': 1}, 'status': {}}
    if state:
        obj['status'] = {'state': state, 'conditions': list(conditions)}
    return [{'kind': 'NIMCache', 'namespace': NS, 'name': 'nim-alpha-cache', 'resources': [obj]}]


def test_a_nimcache_is_ready_by_its_state_and_waited_on_while_its_job_runs():
    assert diagnose(nimcache('Ready'), [], [], [], [], [], T0)['state'] == 'ready'
    result = diagnose(nimcache('InProgress'), [pod('nim-alpha-cache-job-x', 'gpu-a1', 'Running')], [claim(phase='Bound')],
                      [], [], [], T0 + 60, started=T0)
    assert result['state'] == 'waiting'
    assert result['summary'][0] == 'NIMCache nim/nim-alpha-cache: it is not Ready (state InProgress)'
    assert diagnose(nimcache(), [], [], [], [], [], T0)['reason'] == 'it is not Ready (state not reported yet)'


def test_a_nimcache_whose_claim_names_a_missing_class_stops_the_wait_naming_class_and_scheduler():
    result = diagnose(nimcache('PVC-Created'), [pod('nim-alpha-cache-job-x')], [claim('fast-rwx')], [storage_class()],
                      NODES, [scheduler_event('nim-alpha-cache-job-x', UNBOUND)], T0 + 15, started=T0)
    assert result['state'] == 'hopeless' and result['waiting_on'] == 'NIMCache nim/nim-alpha-cache'
    assert 'names storage class fast-rwx, which the cluster does not have' in result['reason']
    assert 'the scheduler: 0/5 nodes are available' in result['reason']


def test_a_failed_nimcache_is_hopeless_with_its_conditions():
    failed = nimcache('Failed', [{'type': 'NIM_CACHE_JOB_FAILED', 'status': 'True', 'message': 'the caching job failed'}])
    result = diagnose(failed, [], [], [], [], [], T0 + 5, started=T0)
    assert result['state'] == 'hopeless'
    assert result['reason'] == ('NIMCache nim/nim-alpha-cache failed (its caching Job gave up): it is not Ready '
                                '(state Failed): the caching job failed')


def test_a_failed_job_is_hopeless_and_a_running_one_waited_on_with_its_pods():
    def job(conditions, active=0):
        return [{'kind': 'Job', 'namespace': NS, 'name': 'nim-alpha-smoke',
                 'resources': [{'kind': 'Job', 'metadata': {'name': 'nim-alpha-smoke', 'namespace': NS},
                                'status': {'active': active, 'conditions': conditions}}]}]
    running = pod('nim-alpha-smoke-x', node_name='gpu-a1', phase='Running')
    result = diagnose(job([], active=1), [running], [], [], [], [], T0 + 5, started=T0)
    assert result['state'] == 'waiting' and result['waiting_on'] == 'Job nim/nim-alpha-smoke'
    assert any(line.startswith('pod nim-alpha-smoke-x') for line in result['summary']), result['summary']
    failed = job([{'type': 'Failed', 'status': 'True', 'message': 'Job has reached the specified backoff limit'}])
    result = diagnose(failed, [], [], [], [], [], T0 + 5, started=T0)
    assert result['state'] == 'hopeless'
    assert result['reason'] == 'Job nim/nim-alpha-smoke failed: Job has reached the specified backoff limit'


def test_a_call_that_met_the_api_server_away_is_worth_trying_again_and_no_other():
    from ansible_collections.nimstack.multinode.plugins.module_utils.k8s_diagnose import api_unavailable
    refused = ("Task failed: Module failed: Value of unknown type: <class 'urllib3.exceptions.NewConnectionError'>, "
               "HTTPSConnection(host='127.0.0.1', port=16482): Failed to establish a new connection: "
               "[Errno 111] Connection refused")
    assert api_unavailable({'failed': True, 'msg': refused})
    assert api_unavailable({'failed': True, 'msg': 'Failed to apply object', 'reason': 'Service Unavailable'})
    assert api_unavailable({'failed': True, 'error': 429, 'msg': 'Too Many Requests'})
    # Not failed, or failed for a reason waiting does not clear.
    assert not api_unavailable({'failed': False, 'msg': refused})
    assert not api_unavailable({'changed': True})
    assert not api_unavailable({'failed': True, 'msg': 'admission webhook "vleaderworkerset.kb.io" denied the request'})
    assert not api_unavailable({'failed': True, 'reason': 'Unprocessable Entity', 'msg': 'spec.replicas: Invalid value'})
    assert not api_unavailable(None)
    # ansible-core 2.19: a module's exception leaves no message for `until` to read; tried again.
    assert api_unavailable({'failed': True, 'changed': False, 'exception': '(traceback unavailable)', 'attempts': 1})
