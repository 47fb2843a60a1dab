# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: nim_k8s_group_info
short_description: Say whether a NIM group on Kubernetes is ready, what it waits on, and whether waiting can help
version_added: 0.1.0
description:
  - Reads, in one call with one API client, the workload of a deployment group (its LeaderWorkerSet,
    or its NIMService and the LeaderWorkerSet the NIM Operator made of it, or the NIMCache that
    downloads its model and the pods of its caching Job), or a component's Deployment (a controller
    the collection installs, its pods by the Deployment's selector), or a Job (a group's smoke test,
    its pods by their C(job-name) label), the workload's pods, its
    PersistentVolumeClaims (O(claims) and those its pods mount), the events of the namespace, and
    the cluster's storage classes while a claim is not bound and its nodes while a pod is not placed.
  - Returns RV(state) V(ready) when the workload has rolled out (every replica on the current
    template and ready, as filter C(rollout_problem) judges it; a NIMCache whose state is V(Ready); a
    Job whose condition C(Complete) is true),
    V(waiting) while it has not, and
    V(hopeless) when waiting cannot help (the rules are in C(plugins/module_utils/k8s_diagnose.py)), that is
    a claim naming a storage class the cluster lacks, or none with no default class; a claim whose
    provisioning or binding still fails after O(claim_grace) seconds; a pod whose node selector or
    node affinity no node matches, or whose GPU request no node's allocatable holds; an image that
    cannot be pulled for O(pull_grace) seconds, or never can (C(InvalidImageName)); a NIMCache whose
    state is V(Failed); a Job whose condition C(Failed) is true.
  - RV(summary) names what it waits on, that is each pod's phase, readiness, node, restarts and waiting
    reason, each claim's phase and class, and the last events of the scheduler, the kubelet and the
    volume controllers for them. Used with C(until), each call is one retry, which makes one look, or
    with O(look_for) as many as fit in that many seconds, every O(look_every), until the state is no
    longer V(waiting) or O(deadline) has passed (RV(expired)). A look in the same call costs a few API
    reads; a new call costs a Python process that imports the Kubernetes client again (over a second
    of the controller's CPU).
  - Storage classes and nodes that the credentials may not list are left out, and said so; then
    only the events tell.
author:
  - nimstack maintainers (@nimstack)
options:
  kind:
    description: The group's workload.
    type: str
    choices: [LeaderWorkerSet, NIMService, NIMCache, Deployment, Job]
    default: LeaderWorkerSet
  name:
    description: Name of the workload.
    type: str
    required: true
  namespace:
    description: Namespace of the workload.
    type: str
    required: true
  lws_name:
    description:
      - The LeaderWorkerSet whose pods are the group's; empty means O(name).
      - With O(kind=NIMService) it must roll out too (the NIM Operator names it C(<name>-lws)).
    type: str
    default: ""
  claims:
    description:
      - PersistentVolumeClaims of the group besides those its pods mount (the pods may not exist yet).
      - Empty with O(kind=NIMCache) means the claim the NIM Operator makes for it, C(<name>-pvc).
    type: list
    elements: str
    default: []
  started:
    description:
      - When the wait began, in seconds since the epoch; RV(elapsed) counts from it, and an image that
        fails to pull with no event left to date it is dated from it.
    type: float
  look_for:
    description:
      - Seconds to keep looking in this call while the state is V(waiting); 0 looks once.
    type: int
    default: 0
  look_every:
    description: Seconds between two looks of one call.
    type: int
    default: 3
  deadline:
    description:
      - When the whole wait ends, in seconds since the epoch; no look of this call starts after it, and
        a call that finds the state V(waiting) when no further look (O(look_every) later) could start
        before it returns RV(expired) true (end the C(until) on it).
    type: float
  pull_grace:
    description: Seconds an image may fail to pull before the group is V(hopeless).
    type: int
    default: 180
  claim_grace:
    description: Seconds a claim may stay Pending while its provisioning or binding fails before the group is V(hopeless).
    type: int
    default: 120
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - nimstack.multinode.attributes.k8s_read
'''

EXAMPLES = r'''
- name: Wait until group alpha is ready, stopping as soon as it cannot become so
  nimstack.multinode.nim_k8s_group_info:
    name: nim-alpha
    namespace: nim
    claims: [nim-alpha-model-store]
    started: "{{ now(utc=true).timestamp() }}"
    look_for: 20
    deadline: "{{ now(utc=true).timestamp() + 3600 }}"
  register: alpha
  until: alpha.state != 'waiting' or alpha.expired
  retries: 720
  delay: 5
  failed_when: alpha.state != 'ready'
'''

RETURN = r'''
state:
  description: V(ready), V(waiting) or V(hopeless).
  returned: always
  type: str
  sample: hopeless
reason:
  description: Empty when ready; why it is not ready yet (waiting), or why it never will be (hopeless).
  returned: always
  type: str
  sample: >-
    claim nim-alpha-model-store names storage class fast-rwx, which the cluster does not have (it has: standard);
    the scheduler: 0/5 nodes are available: pod has unbound immediate PersistentVolumeClaims.
waiting_on:
  description: The object not rolled out yet, as C(Kind namespace/name); empty when ready.
  returned: always
  type: str
  sample: LeaderWorkerSet nim/nim-alpha
summary:
  description: What the look found, one line per object and event; empty when ready.
  returned: always
  type: list
  elements: str
  sample:
    - "LeaderWorkerSet nim/nim-alpha: 0 of 1 replicas are ready; it is not Available"
    - "pod nim-alpha-0: Pending, not ready, no node, 0 restarts"
    - "claim nim-alpha-model-store: Pending, storage class fast-rwx"
    - "event Pod nim-alpha-0 FailedScheduling (default-scheduler, 12 s ago): 0/5 nodes are available: pod has unbound
      immediate PersistentVolumeClaims."
elapsed:
  description: Seconds since O(started), 0 without it.
  returned: always
  type: int
  sample: 35
expired:
  description: Whether the state is V(waiting) and no further look could start before O(deadline).
  returned: always
  type: bool
  sample: false
looks:
  description: How many looks this call made.
  returned: always
  type: int
  sample: 7
'''

import copy
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.core import AnsibleK8SModule
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import CoreException
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.service import K8sService
from ansible_collections.nimstack.multinode.plugins.module_utils.k8s_capacity import LWS_NAME_LABEL
from ansible_collections.nimstack.multinode.plugins.module_utils.k8s_diagnose import CLAIM_GRACE, PULL_GRACE, diagnose

_WORKLOAD_API = {'LeaderWorkerSet': 'leaderworkerset.x-k8s.io/v1', 'NIMService': 'apps.nvidia.com/v1alpha1',
                 'NIMCache': 'apps.nvidia.com/v1alpha1', 'Deployment': 'apps/v1', 'Job': 'batch/v1'}
# The NIM Operator runs a NIMCache's download as the Job <name>-job into the claim <name>-pvc
# (internal/controller/nimcache_controller.go, internal/shared/pvc.go, v3.1.2); the Job controller
# labels its pods job-name=<job>.
_JOB_NAME_LABEL = 'job-name'


def read_group(service, params):
    """The objects diagnose() reads, as the API returns them; None for a list the credentials may not read."""
    namespace = params['namespace']
    lws_name = params['lws_name'] or params['name']
    names = [(params['kind'], params['name'])]
    if params['kind'] == 'NIMService':
        names.append(('LeaderWorkerSet', lws_name))
    workloads = [{'kind': kind, 'namespace': namespace, 'name': name,
                  'resources': service.find(kind, _WORKLOAD_API[kind], name=name, namespace=namespace)['resources']}
                 for kind, name in names]
    if params['kind'] == 'NIMCache':
        selectors = ['%s=%s-job' % (_JOB_NAME_LABEL, params['name'])]
    elif params['kind'] == 'Job':
        selectors = ['%s=%s' % (_JOB_NAME_LABEL, params['name'])]
    elif params['kind'] == 'Deployment':
        # Its pods are those its selector's labels match (a selector of expressions alone reads none).
        found = workloads[0]['resources']
        labels = ((((found[0] if found else {}).get('spec') or {}).get('selector') or {}).get('matchLabels') or {})
        selectors = ['%s=%s' % item for item in sorted(labels.items())]
    else:
        selectors = ['%s=%s' % (LWS_NAME_LABEL, lws_name)]
    pods = service.find('Pod', 'v1', namespace=namespace, label_selectors=selectors)['resources'] if selectors else []
    mounted = set(params['claims'] or (['%s-pvc' % params['name']] if params['kind'] == 'NIMCache' else []))
    for pod in pods:
        for volume in (pod.get('spec') or {}).get('volumes') or []:
            mounted.add((volume.get('persistentVolumeClaim') or {}).get('claimName'))
    claims = [c for c in service.find('PersistentVolumeClaim', 'v1', namespace=namespace)['resources']
              if c['metadata']['name'] in mounted]
    events = service.find('Event', 'v1', namespace=namespace)['resources']

    # The cluster-wide lists are read only when they can tell something (a claim not bound, a pod
    # not placed): a large cluster's node list is megabytes, and the wait looks every few seconds.
    def optional(kind, api_version, needed):
        if not needed:
            return []
        try:
            return service.find(kind, api_version)['resources']
        except CoreException:
            return None

    pending = any((c.get('status') or {}).get('phase') != 'Bound' for c in claims)
    unplaced = any(not (p.get('spec') or {}).get('nodeName') for p in pods)
    return (workloads, pods, claims, optional('StorageClass', 'storage.k8s.io/v1', pending),
            optional('Node', 'v1', unplaced), events)


def look(service, params, clock=time.time, sleep=time.sleep):
    """Look once, or again every look_every seconds while the group is waiting, for at most look_for
    seconds and never past the deadline: the last look's diagnosis with elapsed, expired and looks."""
    started, deadline, every = params['started'], params['deadline'], max(params['look_every'], 1)
    stop = clock() + max(params['look_for'], 0)
    if deadline is not None:
        stop = min(stop, deadline)
    looks = 0
    while True:
        workloads, pods, claims, classes, nodes, events = read_group(service, params)
        looks += 1
        now = clock()
        result = diagnose(workloads, pods, claims, classes, nodes, events, now, started=started,
                          pull_grace=params['pull_grace'], claim_grace=params['claim_grace'])
        if result['state'] != 'waiting' or now + every > stop:
            break
        sleep(every)
    result.update(elapsed=int(now - started) if started else 0, looks=looks,
                  expired=result['state'] == 'waiting' and deadline is not None and now + every > deadline)
    return result


def main():
    argument_spec = copy.deepcopy(AUTH_ARG_SPEC)
    argument_spec.update(
        kind=dict(type='str', choices=list(_WORKLOAD_API), default='LeaderWorkerSet'),
        name=dict(type='str', required=True),
        namespace=dict(type='str', required=True),
        lws_name=dict(type='str', default=''),
        claims=dict(type='list', elements='str', default=[]),
        started=dict(type='float'),
        pull_grace=dict(type='int', default=PULL_GRACE),
        claim_grace=dict(type='int', default=CLAIM_GRACE),
        look_for=dict(type='int', default=0),
        look_every=dict(type='int', default=3),
        deadline=dict(type='float'),
    )
    module = AnsibleK8SModule(module_class=AnsibleModule, argument_spec=argument_spec, supports_check_mode=True)
    try:
        result = look(K8sService(get_api_client(module), module), module.params)
    except CoreException as exc:
        module.fail_from_exception(exc)
    module.exit_json(changed=False, **result)


if __name__ == '__main__':
    main()
