# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: nim_parallelism
short_description: Validate and plan the parallel layout of a multi-node NIM deployment
version_added: 0.1.0
description:
  - Checks a tensor-parallel (TP) and pipeline-parallel (PP) layout against the topology rule of
    the chosen backend and launch contract, the model's shape (attention heads, KV heads, layers)
    and the GPU memory, and returns the plan every launcher consumes.
  - Collects every problem, not just the first, each naming the option(s) and values involved.
  - Runs on the controller or any host; it reads nothing from the host and changes nothing.
  - "Backend V(nim) with O(launch_contract=mpi) follows the NIM Operator's multi-node contract:
    one node is one pipeline stage of O(tensor_parallel) GPUs, so O(nodes) must equal
    O(pipeline_parallel) and TP cannot span nodes."
  - "Backend V(nim) with O(launch_contract=ray) or O(launch_contract=leader_address), and backend
    V(lws), use every GPU of every node: O(tensor_parallel) x O(pipeline_parallel) must equal
    O(nodes) x O(gpus_per_node), and TP may span nodes (with a warning when the interconnect is
    slower than NVLink)."
  - "Backend V(dynamo) runs one TP group over all GPUs: O(tensor_parallel) must equal
    O(nodes) x O(gpus_per_node) and O(pipeline_parallel) must be 1."
  - "Model rules: attention heads divisible by TP; KV heads divisible by TP or TP divisible by
    the KV heads; PP not above the number of layers."
  - "Memory: weights per GPU are params x bytes per parameter / (TP x PP) and must fit in
    O(gpu_memory_gb) x O(gpu_memory_utilization); what is left is the KV cache, with a warning
    below 10% of that budget."
author:
  - nimstack maintainers (@nimstack)
options:
  tensor_parallel:
    description:
      - Tensor-parallel size (TP), the GPUs that share every layer.
    type: int
    required: true
  pipeline_parallel:
    description:
      - Pipeline-parallel size (PP), the number of stages the layers are split into.
    type: int
    default: 1
  nodes:
    description:
      - Number of nodes (ranks) in one deployment group.
    type: int
    required: true
  gpus_per_node:
    description:
      - GPUs on each node.
    type: int
    required: true
  backend:
    description:
      - Which engine contract the layout must satisfy, see the description.
    type: str
    choices: [nim, lws, dynamo]
    default: nim
  launch_contract:
    description:
      - How the ranks of a NIM find each other. V(mpi) for NIM for LLMs 1.x, V(ray) for NIM for
        LLMs 2.0 and later, V(leader_address) for SGLang-based NIMs.
      - Only shapes the layout rules of O(backend=nim).
    type: str
    choices: [mpi, ray, leader_address]
    default: mpi
  model:
    description:
      - The model, either a name from the built-in catalog or a dict.
      - "Catalog (case-insensitive, with aliases such as C(meta/llama-3.1-405b-instruct)):
        C(llama-3.1-8b), C(llama-3.1-70b), C(llama-3.1-405b), C(mixtral-8x22b),
        C(nemotron-4-340b), C(deepseek-r1), C(deepseek-v3)."
      - "A dict needs C(params_b) (billions of parameters), C(layers), C(attention_heads),
        C(kv_heads) and C(precision), and may carry a C(name)."
      - Without a model the head, layer and memory checks are skipped.
    type: raw
  precision:
    description:
      - Precision the weights are served in; overrides the model's native precision.
      - Bytes per parameter are 4 for V(fp32), 2 for V(fp16) and V(bf16), 1 for V(fp8) and
        V(int8), 0.5 for V(int4) and V(fp4).
    type: str
    choices: [fp32, fp16, bf16, fp8, int8, int4, fp4]
  gpu_memory_gb:
    description:
      - Memory of one GPU in GB (1e9 bytes), for example 80 for an H100, 141 for an H200,
        180 for a B200, 40 or 80 for an A100, 48 for an L40S, 24 for an A10G.
      - Without it the memory fit is not checked.
    type: float
  gpu_memory_utilization:
    description:
      - Share of each GPU's memory the engine may use for weights and KV cache.
    type: float
    default: 0.9
  interconnect:
    description:
      - The link between nodes, used to judge a TP group that spans nodes.
      - "Bandwidths per direction: V(nvlink) 900 GB/s, V(ib_xdr) 100, V(ib_ndr) 50, V(ib_hdr) 25,
        V(roce_100g) 12.5, V(eth_25g) 3.1. V(other) is a link the planner has no figure for."
    type: str
    choices: [nvlink, ib_hdr, ib_ndr, ib_xdr, roce_100g, eth_25g, other]
  mpi_start_timeout:
    description:
      - Seconds the leader waits for its workers to join.
      - When not set, RV(plan.mpi_start_timeout) is the recommendation for the model's size
        (600 under 70B parameters, 3000 from 70B up; 300, the operator default, without a model).
      - With O(backend=nim) and O(launch_contract=mpi), the only contract that waits on it, a value
        below the recommended range (300 s under 70B, 3000 s from 70B up) is warned about.
    type: int
  replicas:
    description:
      - Number of deployment groups.
    type: int
    default: 1
  autoscaling:
    description:
      - Whether the deployment autoscales. Not allowed with more than one node per group.
    type: bool
    default: false
  fail_on_invalid:
    description:
      - Fail when the layout has errors. When V(false), return them with RV(valid=false).
    type: bool
    default: true
extends_documentation_fragment:
  - nimstack.multinode.attributes.compute
notes:
  - The planner's warnings are also emitted as Ansible warnings.
'''

EXAMPLES = r'''
- name: Plan Llama 3.1 405B in fp8 over two nodes of 8 x H100 (one pipeline stage per node)
  nimstack.multinode.nim_parallelism:
    model: meta/llama-3.1-405b-instruct
    precision: fp8
    tensor_parallel: 8
    pipeline_parallel: 2
    nodes: 2
    gpus_per_node: 8
    gpu_memory_gb: 80
    interconnect: ib_ndr
  register: nim_layout

- name: Show the tensor-parallel group spanning both nodes under the Ray contract
  nimstack.multinode.nim_parallelism:
    model: llama-3.1-405b
    launch_contract: ray
    tensor_parallel: 16
    nodes: 2
    gpus_per_node: 8
    gpu_memory_gb: 80
    interconnect: ib_ndr

- name: Check a custom model without failing, to report every problem
  nimstack.multinode.nim_parallelism:
    model:
      name: my-model
      params_b: 120
      layers: 64
      attention_heads: 96
      kv_heads: 8
      precision: bf16
    tensor_parallel: 8
    nodes: 1
    gpus_per_node: 8
    gpu_memory_gb: 141
    fail_on_invalid: false
  register: nim_layout_check
'''

RETURN = r'''
valid:
  description: Whether the layout has no errors.
  returned: always
  type: bool
  sample: true
errors:
  description: Every problem found, each naming the option(s) and values involved.
  returned: always
  type: list
  elements: str
  sample:
    - "tensor_parallel=6: the model's 128 attention heads are not divisible by 6 (model llama-3.1-405b)"
plan_warnings:
  description:
    - Things that do not stop the layout but deserve a look (idle GPUs, TP across a slow
      interconnect, a tight KV cache, a short O(mpi_start_timeout)). Also emitted as Ansible warnings.
  returned: always
  type: list
  elements: str
  sample:
    - "gpus_per_node=8, tensor_parallel=4: each node runs one rank of 4 GPUs, so 4 GPU(s) per node (8 in all) sit idle"
plan:
  description: The layout as far as the inputs allow; values that cannot be computed are null.
  returned: always
  type: dict
  contains:
    backend:
      description: The backend the layout was judged for.
      type: str
      sample: nim
    launch_contract:
      description: The launch contract the layout was judged for.
      type: str
      sample: mpi
    nodes:
      description: Nodes per deployment group.
      type: int
      sample: 2
    gpus_per_node:
      description: GPUs on each node.
      type: int
      sample: 8
    tensor_parallel:
      description: Tensor-parallel size.
      type: int
      sample: 8
    pipeline_parallel:
      description: Pipeline-parallel size.
      type: int
      sample: 2
    total_gpus:
      description: GPUs the engine uses, TP x PP.
      type: int
      sample: 16
    gpus_on_nodes:
      description: GPUs the nodes hold, nodes x gpus_per_node.
      type: int
      sample: 16
    idle_gpus:
      description: GPUs on the nodes that the engine leaves unused.
      type: int
      sample: 0
    tp_spans_nodes:
      description: Whether a tensor-parallel group includes GPUs of more than one node.
      type: bool
      sample: false
    ranks:
      description: Ranks (containers or pods) per group, one per node.
      type: int
      sample: 2
    gpus_per_rank:
      description: GPUs each rank requests (TP under the mpi contract, else gpus_per_node).
      type: int
      sample: 8
    replicas:
      description: Number of deployment groups.
      type: int
      sample: 1
    gpus_all_replicas:
      description: GPUs the nodes of all groups hold.
      type: int
      sample: 16
    model:
      description: The resolved model, or null when none was given.
      type: dict
      sample:
        name: llama-3.1-405b
        params_b: 405.9
        layers: 126
        attention_heads: 128
        kv_heads: 8
        precision: bf16
    precision:
      description: Precision the weights are served in (O(precision) over the model's own).
      type: str
      sample: fp8
    bytes_per_param:
      description: Bytes per parameter of that precision.
      type: float
      sample: 1
    gpu_memory_gb:
      description: Memory of one GPU in GB.
      type: float
      sample: 80.0
    gpu_memory_utilization:
      description: Share of GPU memory the engine may use.
      type: float
      sample: 0.9
    memory_budget_gb_per_gpu:
      description: O(gpu_memory_gb) x O(gpu_memory_utilization), in GB.
      type: float
      sample: 72.0
    weights_gb_per_gpu:
      description: GB of weights on each GPU, params x bytes / (TP x PP).
      type: float
      sample: 25.37
    kv_cache_gb_per_gpu:
      description: GB left for the KV cache on each GPU; negative when the weights do not fit.
      type: float
      sample: 46.63
    interconnect:
      description: The interconnect given.
      type: str
      sample: ib_ndr
    interconnect_gbps:
      description: Its bandwidth per direction in GB/s, null when unknown.
      type: float
      sample: 50
    mpi_start_timeout:
      description: The given O(mpi_start_timeout), else the recommended one.
      type: int
      sample: 3000
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.nimstack.multinode.plugins.module_utils.nim_parallelism import plan_parallelism
from ansible_collections.nimstack.multinode.plugins.module_utils.outcome import exit_with_outcome

_PLANNER_OPTIONS = (
    'tensor_parallel', 'pipeline_parallel', 'nodes', 'gpus_per_node', 'backend', 'model', 'precision',
    'gpu_memory_gb', 'gpu_memory_utilization', 'interconnect', 'mpi_start_timeout', 'replicas', 'autoscaling',
    'launch_contract',
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            tensor_parallel=dict(type='int', required=True),
            pipeline_parallel=dict(type='int', default=1),
            nodes=dict(type='int', required=True),
            gpus_per_node=dict(type='int', required=True),
            backend=dict(type='str', choices=['nim', 'lws', 'dynamo'], default='nim'),
            launch_contract=dict(type='str', choices=['mpi', 'ray', 'leader_address'], default='mpi'),
            model=dict(type='raw'),
            precision=dict(type='str', choices=['fp32', 'fp16', 'bf16', 'fp8', 'int8', 'int4', 'fp4']),
            gpu_memory_gb=dict(type='float'),
            gpu_memory_utilization=dict(type='float', default=0.9),
            interconnect=dict(type='str', choices=['nvlink', 'ib_hdr', 'ib_ndr', 'ib_xdr', 'roce_100g', 'eth_25g', 'other']),
            mpi_start_timeout=dict(type='int'),
            replicas=dict(type='int', default=1),
            autoscaling=dict(type='bool', default=False),
            fail_on_invalid=dict(type='bool', default=True),
        ),
        supports_check_mode=True,
    )

    outcome = plan_parallelism(**dict((name, module.params[name]) for name in _PLANNER_OPTIONS))
    exit_with_outcome(module, outcome, 'The parallel layout', plan=outcome['plan'])


if __name__ == '__main__':
    main()
