# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: nim_plan
short_description: Plan every multi-node NIM deployment group of the inventory
version_added: 0.1.0
description:
  - "Builds the deployment plan that every launcher of the collection consumes (the Docker role,
    the Kubernetes roles and their render-only mode): per deployment group, the validated
    layout, the leader, every rank with its environment and container command, the MPI hostfile
    and the ports the launch contract listens on."
  - Runs once on the controller for all groups and contacts no host. Give it every host of
    C(nim_nodes) in inventory order, each with its public C(nim_*) variables.
  - "Group rules, each error naming the group, the hosts and the variable: ranks
    (C(nim_node_rank), else inventory order) are unique and contiguous from 0, so there is
    exactly one leader; under the V(mpi) launch contract on Docker the group has exactly
    C(nim_pipeline_parallel) hosts (one pipeline stage per host); required settings are set;
    settings other than C(nim_socket_ifname) agree between the hosts of a group; the layout
    passes M(nimstack.multinode.nim_parallelism)."
  - "On Kubernetes the hosts of a group only carry its settings: LeaderWorkerSet numbers the pods,
    so the ranks are the pods C(<name>-<group index>-<rank>.<name>.<namespace>.svc), one per
    pipeline stage under V(mpi)."
  - Collects every problem of every group and fails once with all of them.
  - The plan never holds a secret. Only the variables listed in O(nodes[].settings) are read, and
    C(nim_extra_env) may not set C(NGC_API_KEY).
author:
  - nimstack maintainers (@nimstack)
options:
  nodes:
    description:
      - The hosts of C(nim_nodes), in inventory order.
    type: list
    elements: dict
    required: true
    suboptions:
      host:
        description:
          - Inventory name of the host.
        type: str
        required: true
      address:
        description:
          - Address the other ranks reach the host on (C(ansible_host)); defaults to O(nodes[].host).
        type: str
      group:
        description:
          - Deployment group of the host (C(nim_group)); V(default) when not set.
          - 1 to 30 lowercase letters, digits and C(-), starting with a letter.
        type: str
      rank:
        description:
          - Explicit rank of the host in its group (C(nim_node_rank)); 0 is the leader.
          - Hosts without one take the lowest free ranks in inventory order.
        type: raw
      settings:
        description:
          - "The host's public variables. Read: C(nim_deployment_mode), C(nim_image),
            C(nim_image_tag), C(nim_model), C(nim_model_profile), C(nim_precision),
            C(nim_tensor_parallel), C(nim_pipeline_parallel), C(nim_gpus_per_node),
            C(nim_gpu_memory_gb), C(nim_interconnect), C(nim_network_profile),
            C(nim_network_devices_per_gpu), C(nim_socket_ifname), C(nim_cache_path),
            C(nim_api_port), C(nim_mpi_start_timeout), C(nim_launch_contract), C(nim_ssh_port),
            C(nim_ray_port), C(nim_master_port), C(nim_shm_size_gb), C(nim_log_level),
            C(nim_extra_env), C(nim_k8s_namespace), C(nim_k8s_replicas), C(nim_k8s_autoscaling).
            Anything else is ignored."
          - Required for every group are C(nim_image), C(nim_image_tag) and C(nim_tensor_parallel).
          - C(nim_launch_contract) is V(mpi) (the default), V(ray), V(leader_address), or V(auto),
            which decides from the image tag (1.x is V(mpi), 2.x and later V(ray)) and the model
            profile (an SGLang profile is V(leader_address)); a tag that is no release version
            is an error under V(auto).
        type: dict
        default: {}
  deployment_mode:
    description:
      - Plan every group for this mode instead of its C(nim_deployment_mode).
      - The Kubernetes playbook passes V(kubernetes), so the same inventory serves both paths.
    type: str
    choices: [docker, kubernetes]
  fail_on_invalid:
    description:
      - Fail when any group has errors. When V(false), return them with RV(valid=false).
    type: bool
    default: true
extends_documentation_fragment:
  - nimstack.multinode.attributes.compute
notes:
  - The groups' warnings are also emitted as Ansible warnings.
seealso:
  - module: nimstack.multinode.nim_parallelism
'''

EXAMPLES = r'''
- name: Plan every deployment group of the inventory once, on the controller
  nimstack.multinode.nim_plan:
    # Only the public settings are copied: nim_ngc_api_key never reaches the plan.
    nodes: >-
      {%- set nodes = [] -%}
      {%- for host in groups['nim_nodes'] -%}
      {%-   set settings = {} -%}
      {%-   for name in ['nim_image', 'nim_image_tag', 'nim_tensor_parallel', 'nim_pipeline_parallel']
              if hostvars[host][name] is defined -%}
      {%-     set _ = settings.update({name: hostvars[host][name]}) -%}
      {%-   endfor -%}
      {%-   set _ = nodes.append({'host': host, 'address': hostvars[host]['ansible_host'] | default(host),
                                  'group': hostvars[host]['nim_group'] | default('default'),
                                  'rank': hostvars[host]['nim_node_rank'] | default(none),
                                  'settings': settings}) -%}
      {%- endfor -%}
      {{ nodes }}
  run_once: true
  delegate_to: localhost
  register: nim_plan

- name: Plan two hosts by hand for the Kubernetes path
  nimstack.multinode.nim_plan:
    deployment_mode: kubernetes
    nodes:
      - host: gpu-a
        settings: &settings
          nim_image: nvcr.io/nim/meta/llama-3.1-405b-instruct
          nim_image_tag: "1.5.0"
          nim_model: llama-3.1-405b
          nim_precision: fp8
          nim_tensor_parallel: 8
          nim_pipeline_parallel: 2
          nim_gpu_memory_gb: 80
      - host: gpu-b
        settings: *settings
  register: nim_plan
'''

RETURN = r'''
valid:
  description: Whether every group is valid.
  returned: always
  type: bool
  sample: true
errors:
  description: Every problem of every group, each naming the group, the hosts and the variable.
  returned: always
  type: list
  elements: str
  sample:
    - "group default: nim_node_rank=0 is set on gpu-a, gpu-b; each rank must be unique in a group"
plan_warnings:
  description: Warnings of every group (idle GPUs, a short start timeout, ...).
  returned: always
  type: list
  elements: str
  sample: []
groups:
  description: The plan of each deployment group, keyed by group name.
  returned: always
  type: dict
  contains:
    name:
      description: The group name.
      type: str
      sample: default
    valid:
      description: Whether this group is valid.
      type: bool
      sample: true
    errors:
      description: This group's errors.
      type: list
      elements: str
      sample: []
    warnings:
      description: This group's warnings.
      type: list
      elements: str
      sample: []
    mode:
      description: The deployment mode the group was planned for.
      type: str
      sample: docker
    contract:
      description:
        - The launch contract the group runs with, V(mpi), V(ray) or V(leader_address); under
          C(nim_launch_contract=auto) the one decided from the image tag and model profile.
      type: str
      sample: mpi
    contract_requested:
      description: The group's C(nim_launch_contract) as set, V(auto) or a contract.
      type: str
      sample: auto
    contract_reason:
      description: Why the group runs with that contract (null when it could not be decided).
      type: str
      sample: image tag 1.8.4 is NIM for LLMs 1.x, which runs multi-node with mpirun over SSH
    hosts:
      description: The inventory hosts of the group, in inventory order.
      type: list
      elements: str
      sample: [gpu-a, gpu-b]
    settings:
      description: The group's settings with defaults applied and types coerced (never a secret).
      type: dict
      sample: {nim_api_port: 8000, nim_tensor_parallel: 8, nim_pipeline_parallel: 2}
    layout:
      description: The plan of M(nimstack.multinode.nim_parallelism) for the group.
      type: dict
      sample: {ranks: 2, gpus_per_rank: 8, mpi_start_timeout: 3000}
    image:
      description:
        - The image reference to pull, C(nim_image:nim_image_tag), or C(nim_image@sha256:...) when
          the tag is a digest; null while the group has errors.
      type: str
      sample: nvcr.io/nim/meta/llama-3.1-405b-instruct:1.8.4
    operator_image:
      description:
        - The same image as the NIM Operator's C(spec.image) takes it, C(repository) and C(tag); the
          operator pulls C(repository:tag), so a digest splits at its last colon
          (C(nim_image@sha256) and the hex digest). Null while the group has errors.
      type: dict
      sample: {repository: nvcr.io/nim/meta/llama-3.1-405b-instruct, tag: 1.8.4}
    leader:
      description: The leader (rank 0), with C(host) and C(address).
      type: dict
      sample: {host: gpu-a, address: 10.0.0.11}
    ranks:
      description:
        - Every rank in rank order, with C(host), C(address), C(rank), C(role) (V(leader) or
          V(worker)), C(env) (name to value), C(env_list) (container env entries),
          C(resources) (network device requests per container) and C(command).
      type: list
      elements: dict
      sample:
        - {host: gpu-a, address: 10.0.0.11, rank: 0, role: leader, env: {NIM_NODE_RANK: "0"}, command: []}
    hostfile:
      description:
        - The leader's MPI hostfile as lines, C(localhost slots=N) then one line per worker;
          empty unless the contract is V(mpi). On Kubernetes it is the hostfile of LWS group 0.
      type: list
      elements: str
      sample: ["localhost slots=8", "10.0.0.12 slots=8"]
    size:
      description: Ranks in the group.
      type: int
      sample: 2
    ports:
      description: The ports the contract listens on (C(api), and C(ssh), C(ray) or C(master)).
      type: dict
      sample: {api: 8000, ssh: 2222}
    k8s:
      description:
        - Kubernetes only (null on Docker). C(name) of the group's objects, C(namespace),
          C(replicas) (LWS groups) and C(hostfiles), the hostfile of every LWS group keyed
          C(hostfile-<index>) as the operator names them.
      type: dict
      sample: {name: nim-default, namespace: nim, replicas: 1, hostfiles: {hostfile-0: ["localhost slots=8"]}}
    launch:
      description:
        - How the launch contract starts the group, as data (null when the group has errors).
          C(steps) what the Docker launcher does, in order (C(workers), C(workers_ready),
          C(workers_reach_leader), C(leader), C(ready)); C(start_order) the hosts in the order
          their ranks start; C(leader_first); C(ssh_mesh) and C(hostfile), whether the group
          needs the SSH trust and an MPI hostfile; C(ray_token), whether Ray token
          authentication applies; C(mounts), each with C(base) (C(cache), C(mesh) or C(group)),
          C(path) in it, C(target) in the container (empty for the host path), C(mode),
          C(ranks) (C(all), C(leader), C(worker)) and C(needs); C(member_ports), the ports only
          the group's members may reach; C(port_sets), the named port ranges they also need
          (C(mpi_btl), C(ray), C(ray_workers)); C(operator_multinode), the key of the NIM
          Operator's NIMService C(spec.multiNode) that runs the contract (C(mpi), C(ray); null
          when only a LeaderWorkerSet of the collection's own can).
      type: dict
      sample: {steps: [leader, workers, ready], start_order: [gpu-a, gpu-b], leader_first: true, ssh_mesh: false,
               hostfile: false, ray_token: false, member_ports: [29500], port_sets: [], operator_multinode: null,
               mounts: [{base: cache, path: '', target: /model-store, mode: rw, ranks: all, needs: null}]}
hosts:
  description:
    - Every host of C(nim_nodes) with its C(group), C(mode) and, on Docker, its C(rank) and
      C(role) (C(leader) or C(worker); null on Kubernetes, where the pods are the ranks). Roles
      read their own host's entry here.
  returned: always
  type: dict
  sample: {gpu-a: {group: default, mode: docker, rank: 0, role: leader}}
hosts_by_mode:
  description: The hosts of the groups of each mode (C(docker), C(kubernetes)), in inventory order.
  returned: always
  type: dict
  sample: {docker: [gpu-a, gpu-b], kubernetes: []}
groups_by_mode:
  description: The names of the groups planned for each mode (C(docker), C(kubernetes)), sorted.
  returned: always
  type: dict
  sample: {docker: [default], kubernetes: []}
summary:
  description: One line per group, the mode and launch contract it was planned for and why.
  returned: always
  type: list
  elements: str
  sample:
    - "group 'default': docker, launch contract mpi: nim_launch_contract=mpi is set explicitly"
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.nimstack.multinode.plugins.module_utils.nim_plan import build_plan
from ansible_collections.nimstack.multinode.plugins.module_utils.outcome import exit_with_outcome


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nodes=dict(
                type='list', elements='dict', required=True,
                options=dict(
                    host=dict(type='str', required=True),
                    address=dict(type='str'),
                    group=dict(type='str'),
                    rank=dict(type='raw'),
                    settings=dict(type='dict', default={}),
                ),
            ),
            deployment_mode=dict(type='str', choices=['docker', 'kubernetes']),
            fail_on_invalid=dict(type='bool', default=True),
        ),
        supports_check_mode=True,
    )

    outcome = build_plan(module.params['nodes'], deployment_mode=module.params['deployment_mode'])
    exit_with_outcome(module, outcome, 'The deployment plan', groups=outcome['groups'], hosts=outcome['hosts'],
                      hosts_by_mode=outcome['hosts_by_mode'], groups_by_mode=outcome['groups_by_mode'],
                      summary=outcome['summary'])


if __name__ == '__main__':
    main()
