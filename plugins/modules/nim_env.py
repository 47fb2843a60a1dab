# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: nim_env
short_description: Build the environment and command of one rank of a multi-node NIM
version_added: 0.1.0
description:
  - Returns the environment variables, the Kubernetes env list, the extra resource requests of
    the network profile and the container command of one rank (container or pod) of a
    multi-node NVIDIA NIM, for one of three launch contracts.
  - Rank 0 is the leader, the only rank that serves HTTP; every other rank is a worker.
  - "V(mpi) (NIM for LLMs 1.x) follows the NIM Operator: common variables NIM_MPI_ALLOW_RUN_AS_ROOT,
    NIM_NUM_COMPUTE_NODES, NIM_MULTI_NODE, NIM_TENSOR_PARALLEL_SIZE, NIM_PIPELINE_PARALLEL_SIZE,
    NIM_NODE_RANK; leader only NIM_LEADER_ROLE=1, OMPI_MCA_orte_keep_fqdn_hostnames,
    OMPI_MCA_plm_rsh_args, GPUS_PER_NODE, CLUSTER_START_TIMEOUT, CLUSTER_SIZE, GROUP_INDEX;
    workers only NIM_LEADER_ROLE=0, LEADER_NAME, NAMESPACE, LWS_NAME; plus NIM_CACHE_PATH,
    NIM_SERVER_PORT, NIM_HTTP_API_PORT, NIM_JSONL_LOGGING and NIM_LOG_LEVEL on every rank."
  - "V(ray) (NIM for LLMs 2.0 and later) uses the same variables with NIM_JSONL_LOGGING=0 (JSON
    logging breaks multi-node worker start) and no SSH port in OMPI_MCA_plm_rsh_args."
  - "V(leader_address) (SGLang-based NIMs) sets NIM_MULTI_NODE, NIM_LEADER_IP_ADDRESS,
    NIM_NUM_COMPUTE_NODES, NIM_NODE_RANK, NIM_LEADER_ROLE, NIM_TENSOR_PARALLEL_SIZE,
    NIM_PIPELINE_PARALLEL_SIZE, MASTER_ADDR, MASTER_PORT, NIM_USE_SGLANG=1,
    NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME, plus the five standard variables."
  - "With O(backend=lws) the values Kubernetes knows about the pod come from the pod, as the
    operator writes them: NIM_NODE_RANK from the label C(leaderworkerset.sigs.k8s.io/worker-index),
    GROUP_INDEX from the label C(leaderworkerset.sigs.k8s.io/group-index), CLUSTER_SIZE from the
    annotation C(leaderworkerset.sigs.k8s.io/size), LEADER_NAME from the annotation
    C(leaderworkerset.sigs.k8s.io/leader-name), NAMESPACE from C(metadata.namespace), LWS_NAME from
    the label C(leaderworkerset.sigs.k8s.io/name), and the leader's address from the
    C(LWS_LEADER_ADDRESS) variable LeaderWorkerSet injects, as the reference $(LWS_LEADER_ADDRESS)."
  - "With O(backend=docker) the collection plays the operator's part and every value is literal.
    NAMESPACE and LWS_NAME have no Docker meaning; a worker gets them only when O(namespace) and
    O(lws_name) are given, and they are left out otherwise rather than invented."
  - Runs anywhere; it reads nothing from the host and changes nothing.
  - Never returns a secret. The NGC API key (and a Ray token) reach the containers through a
    root-only env file or a Kubernetes Secret; O(extra_env) refuses names that look like secrets
    and values that look like NGC keys.
author:
  - nimstack maintainers (@nimstack)
options:
  node_rank:
    description:
      - Rank of this node in its group, from 0 (the leader) to O(cluster_size) - 1.
      - With O(backend=lws) it only picks the leader or the worker template; the pod reads its
        own rank from its labels.
    type: int
    required: true
  tensor_parallel:
    description:
      - Tensor-parallel size (TP).
    type: int
    required: true
  pipeline_parallel:
    description:
      - Pipeline-parallel size (PP).
    type: int
    default: 1
  backend:
    description:
      - V(docker) for containers the collection starts on bare-metal hosts (literal values),
        V(lws) for LeaderWorkerSet pods (values from the pod's metadata).
    type: str
    choices: [docker, lws]
    default: docker
  launch_contract:
    description:
      - How the ranks find each other. V(mpi) for NIM for LLMs 1.x, V(ray) for NIM for LLMs 2.0
        and later, V(leader_address) for SGLang-based NIMs.
    type: str
    choices: [mpi, ray, leader_address]
    default: mpi
  mpi_start_timeout:
    description:
      - Seconds the leader waits for its workers (CLUSTER_START_TIMEOUT). The operator's
        default is 300; models from 70B up need 3000 to 6000.
    type: int
    default: 300
  api_port:
    description:
      - Port of the OpenAI API (NIM_SERVER_PORT and NIM_HTTP_API_PORT).
    type: int
    default: 8000
  network:
    description:
      - Network profile of the NCCL and UCX variables and of RV(resources).
      - "V(tcp): NCCL_IB_DISABLE=1, UCX_TLS=tcp,shm, and NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME
        when O(socket_ifname) is set. No resources."
      - "V(ib): NCCL_IB_DISABLE=0, NCCL_NET=IB, NCCL_IB_HCA=O(ib_hca), NCCL_SOCKET_IFNAME,
        NCCL_NET_GDR_LEVEL=5, UCX_TLS=rc,cuda_copy,cuda_ipc, UCX_NET_DEVICES (the first HCA of
        O(ib_hca), port 1, left out for an exclusion list). Resource
        C(rdma/rdma_shared_device_a) 1."
      - "V(roce): as V(ib) plus NCCL_IB_GID_INDEX=O(gid_index)."
      - "V(aws_efa): FI_PROVIDER=efa, FI_EFA_USE_DEVICE_RDMA=1, NCCL_IB_DISABLE=1. Resource
        C(vpc.amazonaws.com/efa) = O(devices_per_gpu) x the rank's GPUs."
      - "V(azure_ib): as V(ib) plus NCCL_IB_PCI_RELAXED_ORDERING=1. Resource
        C(rdma/hca_shared_devices_a) = O(devices_per_gpu) x the rank's GPUs. The VM size's
        NCCL_TOPO_FILE goes in O(extra_env) (and the file must be mounted); the IPC_LOCK
        capability is the launcher's part."
      - "V(oci_rdma): as V(ib) with RoCE tuning (NCCL_IB_GID_INDEX, NCCL_IB_TC=41, NCCL_IB_SL=0,
        NCCL_IB_QPS_PER_CONNECTION=4, NCCL_IB_SPLIT_DATA_ON_QPS=0, NCCL_IB_TIMEOUT=22). Resource
        C(nvidia.com/mlnxnics) = O(devices_per_gpu) x the rank's GPUs."
      - "V(gcp_tcpxo): the NCCL FasTrak variables of GPUDirect-TCPXO with the control device
        O(socket_ifname) (default C(eth0)) and the data NICs C(eth1) to C(eth8); the NICs and the
        TCPXO daemon come from the node pool, so no resources."
      - The rank's GPUs are TP under V(mpi), otherwise TP x PP / O(cluster_size).
    type: str
    choices: [ib, roce, tcp, aws_efa, azure_ib, gcp_tcpxo, oci_rdma]
    default: tcp
  socket_ifname:
    description:
      - Interface (or comma-separated interfaces) the ranks reach each other on, for
        NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME.
      - Required with O(network=ib), V(roce), V(azure_ib) and V(oci_rdma), and with
        O(launch_contract=leader_address).
    type: str
  ib_hca:
    description:
      - NCCL_IB_HCA of the RDMA profiles, a prefix (V(mlx5)), a list (V(mlx5_0:1,mlx5_1:1)), an
        exact list (V(=mlx5_0)) or an exclusion list (V(^mlx5_2)).
    type: str
    default: mlx5
  gid_index:
    description:
      - NCCL_IB_GID_INDEX of the RoCE profiles (V(roce), V(oci_rdma)).
    type: int
    default: 3
  devices_per_gpu:
    description:
      - RDMA or EFA devices per GPU of the instance type, for example 4 on AWS p5.48xlarge.
      - Required with O(network=aws_efa), V(azure_ib) and V(oci_rdma). A count that does not
        match the instance type leaves pods unschedulable or silently on TCP.
    type: int
  ssh_port:
    description:
      - Port of the workers' in-container sshd under O(launch_contract=mpi). It must differ from
        the host's sshd under host networking; a port other than 22 is added to
        OMPI_MCA_plm_rsh_args as C(-p).
    type: int
    default: 2222
  cluster_size:
    description:
      - Ranks in the group (CLUSTER_SIZE and NIM_NUM_COMPUTE_NODES). Defaults to
        O(pipeline_parallel).
      - Under O(launch_contract=mpi) it must equal O(pipeline_parallel) (one node per pipeline
        stage). Under V(ray) and V(leader_address) tensor parallelism may span nodes, for
        example TP 16, PP 1 on O(cluster_size=2).
      - With O(backend=lws) CLUSTER_SIZE comes from the pod; set the LeaderWorkerSet size to it.
    type: int
  group_index:
    description:
      - Index of the deployment group (GROUP_INDEX) with O(backend=docker). With O(backend=lws)
        it comes from the pod.
    type: int
    default: 0
  leader_name:
    description:
      - Name of the leader (LEADER_NAME of the workers) with O(backend=docker); defaults to
        O(leader_address). One of them is required for worker ranks under V(mpi) and V(ray).
      - Ignored with O(backend=lws), where it comes from the pod.
    type: str
  leader_address:
    description:
      - Address (host name or IP) the workers reach the leader at, with O(backend=docker).
      - Required for every rank under O(launch_contract=leader_address) (NIM_LEADER_IP_ADDRESS,
        MASTER_ADDR) and for worker ranks under V(ray) (C(--head-address)).
      - Ignored with O(backend=lws), which uses the reference $(LWS_LEADER_ADDRESS).
    type: str
  namespace:
    description:
      - NAMESPACE of the workers with O(backend=docker), left out when not set. Ignored with
        O(backend=lws).
    type: str
  lws_name:
    description:
      - LWS_NAME of the workers with O(backend=docker), left out when not set. Ignored with
        O(backend=lws).
    type: str
  ray_port:
    description:
      - Port of the Ray head under O(launch_contract=ray).
    type: int
    default: 6379
  master_port:
    description:
      - MASTER_PORT of the rendezvous under O(launch_contract=leader_address).
    type: int
    default: 50000
  model_profile:
    description:
      - NIM_MODEL_PROFILE of every rank, when set.
    type: str
  json_logging:
    description:
      - NIM_JSONL_LOGGING. When not set it is on (the operator's default), except under
        O(launch_contract=ray), where it is always off; V(true) there is an error.
    type: bool
  log_level:
    description:
      - NIM_LOG_LEVEL.
    type: str
    choices: [DEFAULT, TRACE, DEBUG, INFO, WARNING, ERROR, CRITICAL]
    default: INFO
  cache_path:
    description:
      - NIM_CACHE_PATH, where the model store is mounted in the container (a path inside the
        container, so it is not expanded on the host).
    type: str
    default: /model-store
  extra_env:
    description:
      - More variables for this rank; they win over the generated ones. Numbers become strings;
        booleans are refused as ambiguous.
      - Names that end in TOKEN, SECRET, PASSWORD, API_KEY, ACCESS_KEY, PRIVATE_KEY or CREDENTIALS
        (for example NGC_API_KEY, HF_TOKEN, RAY_AUTH_TOKEN) and values that start with
        C(nvapi-) are refused.
    type: dict
extends_documentation_fragment:
  - nimstack.multinode.attributes.compute
notes:
  - "RV(command) is the container's arguments after the image's entrypoint: Kubernetes C(args),
    or the command of C(docker run IMAGE ...)."
  - "Under V(mpi) the leader's command waits (up to CLUSTER_START_TIMEOUT) until every worker of
    the hostfile accepts TCP on O(ssh_port), then runs C(mpirun) over all TP x PP ranks with the
    group-wide variables forwarded (C(-x); the NGC key by name only, when present), running
    C(/opt/nim/start-mpi-cluster.sh). A worker's command runs C(sshd) on O(ssh_port)."
  - "Files the launcher mounts under V(mpi): the hostfile (C(localhost slots=TP), then one
    C(<worker> slots=TP) line per worker) at C(/etc/mpi/hostfile) with O(backend=docker), or the
    operator's ConfigMap at C(/etc/mpi) with a C(hostfile-<group index>) key per group with
    O(backend=lws); the deployment's private key at C(/opt/nim/llm/pk/private.key) (mode 0400);
    a writable C(/opt/nim/llm/.ssh) (an C(authorized_keys), C(config) and C(known_hosts) found
    there are kept); a writable C(/ssh-confs) on workers (a host key at
    C(/ssh-confs/ssh_host_ed25519_key) found there is kept)."
  - "Under V(ray) the leader runs C(nim-serve-ray --head --port) O(ray_port) and each worker
    C(nim-serve-ray --head-address <leader>:)O(ray_port). Under V(leader_address) every rank
    runs C(/opt/nim/start_server.sh)."
seealso:
  - module: nimstack.multinode.nim_parallelism
'''

EXAMPLES = r'''
- name: Build the environment of the leader of a TP 8 / PP 2 group over InfiniBand
  nimstack.multinode.nim_env:
    node_rank: 0
    tensor_parallel: 8
    pipeline_parallel: 2
    network: ib
    socket_ifname: eth0
    mpi_start_timeout: 3000
  register: nim_rank_env

- name: Build the environment of worker 1 of the same group
  nimstack.multinode.nim_env:
    node_rank: 1
    tensor_parallel: 8
    pipeline_parallel: 2
    network: ib
    socket_ifname: eth0
    leader_name: gpu-node-a
    namespace: nim
    lws_name: llama-405b

- name: Build a Ray worker pod's env (TP spans both nodes) for a LeaderWorkerSet on AWS EFA
  nimstack.multinode.nim_env:
    backend: lws
    launch_contract: ray
    node_rank: 1
    tensor_parallel: 16
    cluster_size: 2
    network: aws_efa
    devices_per_gpu: 4

- name: Build the environment of rank 1 of an SGLang NIM that rendezvouses on the leader's address
  nimstack.multinode.nim_env:
    launch_contract: leader_address
    node_rank: 1
    tensor_parallel: 8
    pipeline_parallel: 2
    leader_address: 10.0.0.11
    socket_ifname: bond0
    model_profile: sglang-h100-bf16-tp8-pp2
    extra_env:
      NCCL_DEBUG: WARN
'''

RETURN = r'''
env:
  description:
    - The rank's variables with literal values, all strings.
    - With O(backend=lws) the variables Kubernetes fills from the pod (C(valueFrom)) are only in
      RV(env_list).
  returned: always
  type: dict
  sample:
    NIM_MULTI_NODE: "1"
    NIM_NODE_RANK: "0"
    NIM_LEADER_ROLE: "1"
    GPUS_PER_NODE: "8"
    OMPI_MCA_plm_rsh_args: "-o ConnectionAttempts=20 -p 2222"
env_list:
  description:
    - Every variable of the rank in the Kubernetes container form, sorted by name so that
      renders are byte-identical from run to run.
    - Each item has C(name) and either C(value) or C(valueFrom.fieldRef.fieldPath).
  returned: always
  type: list
  elements: dict
  sample:
    - name: CLUSTER_SIZE
      valueFrom:
        fieldRef:
          fieldPath: "metadata.annotations['leaderworkerset.sigs.k8s.io/size']"
    - name: CLUSTER_START_TIMEOUT
      value: "300"
resources:
  description:
    - Extra Kubernetes resource requests of the network profile for this rank, by resource name.
      Empty for V(tcp) and V(gcp_tcpxo). The Docker path has no use for them.
  returned: always
  type: dict
  sample:
    vpc.amazonaws.com/efa: 32
command:
  description:
    - The container's arguments for this rank and contract (after the image's entrypoint).
  returned: always
  type: list
  elements: str
  sample: [nim-serve-ray, --head, --port, "6379"]
role:
  description: V(leader) for rank 0, else V(worker).
  returned: always
  type: str
  sample: leader
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.nimstack.multinode.plugins.module_utils.nim_env import (
    BACKENDS,
    LAUNCH_CONTRACTS,
    LOG_LEVELS,
    NETWORKS,
    NimEnvError,
    build_env,
)


def main():
    argument_spec = dict(
        node_rank=dict(type='int', required=True),
        tensor_parallel=dict(type='int', required=True),
        pipeline_parallel=dict(type='int', default=1),
        backend=dict(type='str', choices=list(BACKENDS), default='docker'),
        launch_contract=dict(type='str', choices=list(LAUNCH_CONTRACTS), default='mpi'),
        mpi_start_timeout=dict(type='int', default=300),
        api_port=dict(type='int', default=8000),
        network=dict(type='str', choices=list(NETWORKS), default='tcp'),
        socket_ifname=dict(type='str'),
        ib_hca=dict(type='str', default='mlx5'),
        gid_index=dict(type='int', default=3),
        devices_per_gpu=dict(type='int'),
        ssh_port=dict(type='int', default=2222),
        cluster_size=dict(type='int'),
        group_index=dict(type='int', default=0),
        leader_name=dict(type='str'),
        leader_address=dict(type='str'),
        namespace=dict(type='str'),
        lws_name=dict(type='str'),
        ray_port=dict(type='int', default=6379),
        master_port=dict(type='int', default=50000),
        model_profile=dict(type='str'),
        json_logging=dict(type='bool'),
        log_level=dict(type='str', choices=list(LOG_LEVELS), default='INFO'),
        cache_path=dict(type='str', default='/model-store'),
        extra_env=dict(type='dict'),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)

    try:
        result = build_env(**dict((name, module.params[name]) for name in argument_spec))
    except NimEnvError as exc:
        lines = ['%d. %s' % (number, error) for number, error in enumerate(exc.errors, 1)]
        module.fail_json(msg='nim_env: %d problem(s) with the options:\n%s' % (len(lines), '\n'.join(lines)),
                         errors=exc.errors)
    module.exit_json(changed=False, **result)


if __name__ == '__main__':
    main()
