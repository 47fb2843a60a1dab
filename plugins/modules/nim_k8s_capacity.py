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
  - Reads only its arguments; contacts no cluster.
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
extends_documentation_fragment:
  - nimstack.multinode.attributes.compute
'''

EXAMPLES = r'''
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

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.nimstack.multinode.plugins.module_utils.k8s_capacity import (
    CapacityError, check_capacity, check_scheduler, items)


def main():
    module = AnsibleModule(
        argument_spec=dict(
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
        ),
        supports_check_mode=True,
    )
    try:
        errors = check_scheduler(module.params['scheduler'], module.params['crds'])
        nodes = items(module.params['nodes'], 'Node')
        pods = items(module.params['pods'], 'Pod')
        reports, shortages = check_capacity(module.params['groups'], nodes, pods, module.params['resource'])
        errors.extend(shortages)
    except (CapacityError, TypeError, AttributeError) as exc:
        module.fail_json(msg='crds, nodes and pods must be in the shape the Kubernetes API returns: %s' % exc)
    if errors and module.params['fail_on_shortage']:
        module.fail_json(msg=' | '.join(errors), errors=errors, groups=reports)
    module.exit_json(changed=False, errors=errors, groups=reports)


if __name__ == '__main__':
    main()
