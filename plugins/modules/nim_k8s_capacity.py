# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: nim_k8s_capacity
short_description: Check that a cluster runs the chosen scheduler and can place every rank of each NIM group at once
version_added: 0.1.0
description:
  - With O(scheduler) V(volcano) or V(kai), checks that the scheduler's CRDs are among O(crds)
    (Volcano's C(podgroups)/C(queues.scheduling.volcano.sh), KAI's C(queues)/C(podgroups.scheduling.run.ai))
    and reports the missing component otherwise, naming the variable C(nim_k8s_scheduler).
  - A multi-node group serves only when all of its pods run. This module counts, for each
    deployment group, the nodes that can hold one rank, from the node and pod lists the Kubernetes
    API returns (C(kubectl get nodes,pods -o json), or the C(resources) of
    M(kubernetes.core.k8s_info)), and fails before anything is applied when a group cannot be placed.
  - "A node qualifies when it is Ready and not cordoned, its labels match the group's node selector,
    every NoSchedule and NoExecute taint on it is tolerated, and its allocatable O(resource) minus
    what the pods bound to it request (pods that have finished excepted) holds one rank."
  - Pods of the group itself (its namespace and LeaderWorkerSet name) are not counted as using
    GPUs, so re-running a deployment that already runs does not fail.
  - "With a topology key (LWS exclusive topology) each LeaderWorkerSet group must fit inside one
    domain of that node label, one group per domain; the counts are reported per domain."
  - Each group is checked on its own; several groups that each fit may still compete for the same nodes.
  - With O(read_cluster), reads the scheduler's CRDs, the nodes and the pods that hold resources
    from the cluster of the auth options, with one API client, and returns only its verdict; the
    lists never reach a result or a log. Otherwise it reads only its arguments and contacts no cluster.
author:
  - nimstack maintainers (@nimstack)
options:
  scheduler:
    description: The scheduler the NIM pods name (the C(nim_k8s_scheduler) of role nim_k8s).
    type: str
    choices: [default, volcano, kai]
    default: default
  crds:
    description:
      - CustomResourceDefinition objects (or names) found in the cluster; only read with O(scheduler)
        V(volcano) or V(kai).
    type: list
    elements: raw
    default: []
  groups:
    description: The deployment groups to place; empty skips the capacity check.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: Name of the deployment group, used in messages.
        type: str
        required: true
      size:
        description: Pods per LeaderWorkerSet group (leader included), one per node.
        type: int
        required: true
      replicas:
        description: LeaderWorkerSet groups (replicas) of the deployment group.
        type: int
        default: 1
      gpus_per_rank:
        description: GPUs one pod requests (TP, or the launch contract's per-node share).
        type: int
        required: true
      node_selector:
        description: Labels a node must carry.
        type: dict
        default: {}
      tolerations:
        description: Tolerations of the pods, as in a pod spec.
        type: list
        elements: dict
        default: []
      topology_key:
        description: Node label of LWS exclusive topology; empty for none.
        type: str
        default: ""
      namespace:
        description: Namespace of the group's pods.
        type: str
        default: ""
      object_name:
        description: LeaderWorkerSet (or NIMService) name of the group; its own pods are not counted as used.
        type: str
        default: ""
      lws_name:
        description:
          - The LeaderWorkerSet whose pods are the group's (not counted as used); empty means O(groups[].object_name).
          - The NIM Operator names the LeaderWorkerSet of NIMService C(nim-alpha) C(nim-alpha-lws).
        type: str
        default: ""
  nodes:
    description:
      - Node objects (the C(items) of a NodeList), or a whole List; objects of another kind are ignored,
        so the List of C(kubectl get nodes,pods -o json) can be passed to both O(nodes) and O(pods).
    type: raw
    default: []
  pods:
    description: Pod objects of every namespace (the C(items) of a PodList), or a whole List.
    type: raw
    default: []
  resource:
    description: The extended resource a rank requests.
    type: str
    default: nvidia.com/gpu
  fail_on_shortage:
    description:
      - Fail when the scheduler is missing or a group cannot be placed. When V(false), return the
        problems in RV(errors).
    type: bool
    default: true
  read_cluster:
    description:
      - Read O(crds) (the CRDs of O(scheduler), by name), O(nodes) and O(pods) (those not Succeeded
        or Failed, of every namespace) from the cluster, instead of taking them as arguments, which
        must then be empty. The nodes and pods are read only when O(groups) is not empty.
    type: bool
    default: false
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - nimstack.multinode.attributes.k8s_read
'''

EXAMPLES = r'''
- name: Check, against the cluster of the default kubeconfig, that two nodes of 8 free GPUs exist
  nimstack.multinode.nim_k8s_capacity:
    read_cluster: true
    groups:
      - name: default
        size: 2
        gpus_per_rank: 8
        namespace: nim
        object_name: nim-default

- name: Read the nodes
  kubernetes.core.k8s_info:
    kind: Node
  register: nodes

- name: Read the pods of every namespace
  kubernetes.core.k8s_info:
    kind: Pod
  register: pods

- name: Read the CRDs
  kubernetes.core.k8s_info:
    kind: CustomResourceDefinition
  register: crds

- name: Check that Volcano runs and that two nodes of 8 free GPUs exist in one rack
  nimstack.multinode.nim_k8s_capacity:
    scheduler: volcano
    crds: "{{ crds.resources }}"
    groups:
      - name: default
        size: 2
        gpus_per_rank: 8
        node_selector:
          nvidia.com/gpu.present: "true"
        tolerations:
          - key: nvidia.com/gpu
            operator: Exists
            effect: NoSchedule
        topology_key: topology.kubernetes.io/rack
        namespace: nim
        object_name: nim-default
    nodes: "{{ nodes.resources }}"
    pods: "{{ pods.resources }}"
'''

RETURN = r'''
errors:
  description:
    - The missing scheduler, then one message per group that cannot be placed, naming the group,
      what it needs and what was found.
  returned: always
  type: list
  elements: str
  sample:
    - "group 'default' cannot be placed: it needs 2 node(s) with 8 free nvidia.com/gpu each (2 rank(s) x 1 LWS group(s)),
      but 1 of 3 node(s) qualify (excluded: gpu-b: 4 of 8 nvidia.com/gpu free; gpu-c: taint maintenance:NoSchedule not tolerated)"
groups:
  description: Per group name, the counts behind the verdict.
  returned: always
  type: dict
  sample:
    default:
      group: default
      needed_nodes: 2
      qualifying_nodes: 2
      nodes: {gpu-a: fits, gpu-b: fits}
      errors: []
'''

import copy

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.core import AnsibleK8SModule
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import CoreException
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.service import K8sService

from ansible_collections.nimstack.multinode.plugins.module_utils.k8s_capacity import (
    SCHEDULERS, CapacityError, check_capacity, check_scheduler, items)

# Pods that have finished released their resources.
HOLDING = ['status.phase!=Succeeded', 'status.phase!=Failed']


def read_cluster(service, scheduler, groups):
    """(crds, nodes, pods) as the API returns them: the CRDs of ``scheduler`` found by name, and,
    when there are groups to place, the nodes and the pods that hold resources."""
    crds = []
    for name in SCHEDULERS[scheduler][1]:
        crds.extend(service.find('CustomResourceDefinition', 'apiextensions.k8s.io/v1', name=name)['resources'])
    if not groups:
        return crds, [], []
    return (crds, service.find('Node', 'v1')['resources'],
            service.find('Pod', 'v1', field_selectors=HOLDING)['resources'])


def main():
    argument_spec = copy.deepcopy(AUTH_ARG_SPEC)
    argument_spec.update(
        scheduler=dict(type='str', choices=['default', 'volcano', 'kai'], default='default'),
        crds=dict(type='list', elements='raw', default=[]),
        groups=dict(type='list', elements='dict', default=[], options=dict(
            name=dict(type='str', required=True),
            size=dict(type='int', required=True),
            replicas=dict(type='int', default=1),
            gpus_per_rank=dict(type='int', required=True),
            node_selector=dict(type='dict', default={}),
            tolerations=dict(type='list', elements='dict', default=[]),
            topology_key=dict(type='str', default='', no_log=False),
            namespace=dict(type='str', default=''),
            object_name=dict(type='str', default=''),
            lws_name=dict(type='str', default=''),
        )),
        nodes=dict(type='raw', default=[]),
        pods=dict(type='raw', default=[]),
        resource=dict(type='str', default='nvidia.com/gpu'),
        fail_on_shortage=dict(type='bool', default=True),
        read_cluster=dict(type='bool', default=False),
    )
    module = AnsibleK8SModule(module_class=AnsibleModule, argument_spec=argument_spec, supports_check_mode=True)
    params = module.params
    crds, nodes, pods = params['crds'], params['nodes'], params['pods']
    if params['read_cluster']:
        if crds or nodes or pods:
            module.fail_json(msg='read_cluster reads crds, nodes and pods from the cluster: give those or '
                                 'read_cluster, not both')
        try:
            crds, nodes, pods = read_cluster(K8sService(get_api_client(module), module), params['scheduler'],
                                             params['groups'])
        except CoreException as exc:
            module.fail_from_exception(exc)
    try:
        errors = check_scheduler(params['scheduler'], crds)
        nodes = items(nodes, 'Node')
        pods = items(pods, 'Pod')
        reports, shortages = check_capacity(params['groups'], nodes, pods, params['resource'])
        errors.extend(shortages)
    except (CapacityError, TypeError, AttributeError) as exc:
        module.fail_json(msg='crds, nodes and pods must be in the shape the Kubernetes API returns: %s' % exc)
    if errors and params['fail_on_shortage']:
        module.fail_json(msg=' | '.join(errors), errors=errors, groups=reports)
    module.exit_json(changed=False, errors=errors, groups=reports)


if __name__ == '__main__':
    main()
