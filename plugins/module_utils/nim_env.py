# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The environment and container command of one rank of a multi-node NIM.

build_env() is pure: it reads nothing and changes nothing. It follows the NIM Operator's
multi-node contract (api/apps/v1alpha1/nimservice_types.go: getLWSCommonEnv, GetLWSLeaderEnv,
GetLWSWorkerEnv, GetStandardEnv; internal/controller/platform/standalone/nimservice.go for Ray),
the SGLang leader-address contract, and the NCCL/UCX network profiles of docs/contracts.md, network profiles.

With backend ``lws`` the values Kubernetes knows about the pod (rank, group, size, names) come
from the pod itself through ``valueFrom.fieldRef``, exactly as the operator writes them; with
backend ``docker`` the collection plays the operator's part and fills in literal values.

It never produces a secret: the NGC key (and a Ray token) reach containers through an env file
or a Secret, and extra_env refuses anything that looks like one.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.nimstack.multinode.plugins.module_utils.nim_contract import LAUNCH_CONTRACTS

BACKENDS = ('docker', 'lws')
NETWORKS = ('ib', 'roce', 'tcp', 'aws_efa', 'azure_ib', 'gcp_tcpxo', 'oci_rdma')
LOG_LEVELS = ('DEFAULT', 'TRACE', 'DEBUG', 'INFO', 'WARNING', 'ERROR', 'CRITICAL')

# Paths inside the container that the MPI commands rely on; the launcher mounts them.
# Docker: the group's hostfile is one file. LWS: the operator's layout, one ConfigMap mounted
# at /etc/mpi with a hostfile-<group index> key per group, so that every group of a
# multi-replica LeaderWorkerSet reads its own hostfile from the same pod template.
MPI_HOSTFILE = '/etc/mpi/hostfile'
LWS_MPI_HOSTFILE = '/etc/mpi/hostfile-${GROUP_INDEX}'
SSH_DIR = '/opt/nim/llm/.ssh'
SSH_PRIVATE_KEY = '/opt/nim/llm/pk/private.key'
SSHD_CONF_DIR = '/ssh-confs'
SSH_HOST_KEY = SSHD_CONF_DIR + '/ssh_host_ed25519_key'
# The model cache in every NIM container (NIM_CACHE_PATH), and the Ray token under token authentication.
CACHE_PATH = '/model-store'
RAY_TOKEN_PATH = '/run/secrets/nimstack-ray-token'
MPI_START_SCRIPT = '/opt/nim/start-mpi-cluster.sh'
SGLANG_START_SCRIPT = '/opt/nim/start_server.sh'
RAY_LAUNCHER = 'nim-serve-ray'

# Pod metadata LeaderWorkerSet sets (kubernetes-sigs/lws v0.10.0) and the operator reads.
LWS_WORKER_INDEX_FIELD = "metadata.labels['leaderworkerset.sigs.k8s.io/worker-index']"
LWS_GROUP_INDEX_FIELD = "metadata.labels['leaderworkerset.sigs.k8s.io/group-index']"
LWS_NAME_FIELD = "metadata.labels['leaderworkerset.sigs.k8s.io/name']"
LWS_SIZE_FIELD = "metadata.annotations['leaderworkerset.sigs.k8s.io/size']"
LWS_LEADER_NAME_FIELD = "metadata.annotations['leaderworkerset.sigs.k8s.io/leader-name']"
NAMESPACE_FIELD = 'metadata.namespace'
# LWS prepends LWS_LEADER_ADDRESS to every container's env, so $(LWS_LEADER_ADDRESS) resolves
# in env values and args wherever they sit in the list.
LWS_LEADER_ADDRESS_REF = '$(LWS_LEADER_ADDRESS)'

OPERATOR_SSH_ARGS = '-o ConnectionAttempts=20'
DEFAULT_SSH_PORT = 22
# How long the leader gives one TCP probe of a worker's sshd before trying again; a firewall that
# drops SYNs would otherwise hold a probe for the kernel's whole connect timeout.
SSH_PROBE_TIMEOUT_S = 5
SSH_PROBE_INTERVAL_S = 2

# GKE A3 Mega names its eight GPUDirect-TCPXO data NICs eth1..eth8 (networking.gke.io/interfaces).
GCP_TCPXO_DATA_NICS = ','.join('eth%d' % n for n in range(1, 9))
GCP_TCPXO_DEFAULT_CTRL_DEV = 'eth0'

RDMA_SHARED_DEVICE_RESOURCE = 'rdma/rdma_shared_device_a'
AZURE_RDMA_RESOURCE = 'rdma/hca_shared_devices_a'
EFA_RESOURCE = 'vpc.amazonaws.com/efa'
OCI_RDMA_RESOURCE = 'nvidia.com/mlnxnics'

_PROFILES_NEEDING_IFNAME = ('ib', 'roce', 'azure_ib', 'oci_rdma')
_PROFILES_NEEDING_DEVICES = ('aws_efa', 'azure_ib', 'oci_rdma')

# Names that only make sense on the rank that carries them; mpirun must not copy the leader's
# values to the workers. OMPI_MCA_* are mpirun's own settings, which it propagates itself.
_RANK_IDENTITY = frozenset(('NIM_NODE_RANK', 'NIM_LEADER_ROLE'))

# A secret ends in one of these words: RAY_AUTH_TOKEN and NGC_API_KEY are caught, while
# RAY_AUTH_TOKEN_PATH (a file name) and RAY_AUTH_MODE (the word "token") are not.
_SECRET_NAME = re.compile(
    r'(^|_)(TOKEN|SECRET|SECRET_KEY|PASSWORD|PASSWD|API_KEY|APIKEY|AUTH_KEY|ACCESS_KEY|PRIVATE_KEY|'
    r'CREDENTIAL|CREDENTIALS)\Z')
# NGC personal and service keys start with this prefix, whatever variable they are put in.
_NGC_KEY_VALUE = re.compile(r'^nvapi-')

_ENV_NAME = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*\Z')
_HOST = re.compile(r'^[A-Za-z0-9_]([A-Za-z0-9._:\-]*[A-Za-z0-9])?\Z')
_DNS_NAME = re.compile(r'^[A-Za-z0-9]([A-Za-z0-9.\-]*[A-Za-z0-9])?\Z')
_IFNAMES = re.compile(r'^[A-Za-z0-9_.\-]+(,[A-Za-z0-9_.\-]+)*\Z')
_HCA = re.compile(r'^[=^]?[A-Za-z0-9_]+(:[0-9]+)?(,[A-Za-z0-9_]+(:[0-9]+)?)*\Z')
_PROFILE_ID = re.compile(r'^[A-Za-z0-9._:\-]+\Z')
_ABS_PATH = re.compile(r'^/[A-Za-z0-9._/\-]*\Z')


class NimEnvError(ValueError):
    """Raised with every problem of the inputs, each naming the option."""

    def __init__(self, errors):
        self.errors = list(errors)
        super(NimEnvError, self).__init__('; '.join(self.errors))


def _literal(value):
    return {'value': value}


def _field(path):
    return {'valueFrom': {'fieldRef': {'fieldPath': path}}}


def _int_option(name, value, errors, minimum=0, maximum=None, optional=False):
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        errors.append('%s=%r: must be an integer' % (name, value))
        return None
    if value < minimum or (maximum is not None and value > maximum):
        bounds = 'between %d and %d' % (minimum, maximum) if maximum is not None else '>= %d' % minimum
        errors.append('%s=%d: must be %s' % (name, value, bounds))
        return None
    return value


def _str_option(name, value, pattern, what, errors):
    if value is None:
        return None
    if not isinstance(value, str) or not pattern.match(value):
        errors.append('%s=%r: must be %s' % (name, value, what))
        return None
    return value


def _choice(name, value, choices, errors):
    if value not in choices:
        errors.append('%s=%r: must be one of %s' % (name, value, ', '.join(choices)))
        return None
    return value


def _ucx_device(ib_hca):
    """UCX_NET_DEVICES for an NCCL_IB_HCA value: its first HCA, port 1 unless one is named.

    An exclusion list (^...) names no device to use, so UCX is left to pick.
    """
    if ib_hca.startswith('^'):
        return None
    first = ib_hca.lstrip('=').split(',')[0]
    if ':' in first:
        return first
    if not re.search(r'_[0-9]+\Z', first):
        first += '_0'
    return first + ':1'


def _infiniband_env(ib_hca, socket_ifname):
    env = {
        'NCCL_IB_DISABLE': '0',
        'NCCL_NET': 'IB',
        'NCCL_IB_HCA': ib_hca,
        'NCCL_SOCKET_IFNAME': socket_ifname,
        'NCCL_NET_GDR_LEVEL': '5',
        'UCX_TLS': 'rc,cuda_copy,cuda_ipc',
    }
    device = _ucx_device(ib_hca)
    if device:
        env['UCX_NET_DEVICES'] = device
    return env


def _network_profile(network, socket_ifname, ib_hca, gid_index, devices_per_gpu, gpus_per_rank):
    """Return (env, resources) of a network profile (docs/contracts.md, network profiles)."""
    if network == 'tcp':
        env = {'NCCL_IB_DISABLE': '1', 'UCX_TLS': 'tcp,shm'}
        if socket_ifname:
            env.update(NCCL_SOCKET_IFNAME=socket_ifname, GLOO_SOCKET_IFNAME=socket_ifname)
        return env, {}
    if network == 'ib':
        return _infiniband_env(ib_hca, socket_ifname), {RDMA_SHARED_DEVICE_RESOURCE: 1}
    if network == 'roce':
        env = _infiniband_env(ib_hca, socket_ifname)
        env['NCCL_IB_GID_INDEX'] = str(gid_index)
        return env, {RDMA_SHARED_DEVICE_RESOURCE: 1}
    if network == 'aws_efa':
        env = {'FI_PROVIDER': 'efa', 'FI_EFA_USE_DEVICE_RDMA': '1', 'NCCL_IB_DISABLE': '1'}
        if socket_ifname:
            env['NCCL_SOCKET_IFNAME'] = socket_ifname
        return env, {EFA_RESOURCE: devices_per_gpu * gpus_per_rank}
    if network == 'azure_ib':
        # The NDv4/NDv5 images relax PCI ordering for their HCAs (Azure/azhpc-images); the VM
        # size's NCCL_TOPO_FILE has no default that fits every size and comes through extra_env.
        env = _infiniband_env(ib_hca, socket_ifname)
        env['NCCL_IB_PCI_RELAXED_ORDERING'] = '1'
        return env, {AZURE_RDMA_RESOURCE: devices_per_gpu * gpus_per_rank}
    if network == 'oci_rdma':
        # OCI's cluster network is RoCE v2 with its own traffic class and queue-pair tuning.
        env = _infiniband_env(ib_hca, socket_ifname)
        env.update(
            NCCL_IB_GID_INDEX=str(gid_index),
            NCCL_IB_TC='41',
            NCCL_IB_SL='0',
            NCCL_IB_QPS_PER_CONNECTION='4',
            NCCL_IB_SPLIT_DATA_ON_QPS='0',
            NCCL_IB_TIMEOUT='22',
        )
        return env, {OCI_RDMA_RESOURCE: devices_per_gpu * gpus_per_rank}
    # gcp_tcpxo: the node pool brings the NICs and the TCPXO daemon; the pod brings the NCCL
    # FasTrak plugin settings.
    ctrl = socket_ifname or GCP_TCPXO_DEFAULT_CTRL_DEV
    env = {
        'NCCL_SOCKET_IFNAME': ctrl,
        'NCCL_FASTRAK_CTRL_DEV': ctrl,
        'NCCL_FASTRAK_IFNAME': GCP_TCPXO_DATA_NICS,
        'NCCL_CROSS_NIC': '0',
        'NCCL_NET_GDR_LEVEL': 'PIX',
        'NCCL_FASTRAK_USE_SNAP': '1',
        'NCCL_FASTRAK_USE_LLCM': '1',
        'NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY': '/dev/aperture_devices',
        'NCCL_FASTRAK_NUM_FLOWS': '2',
        'NCCL_FASTRAK_ENABLE_CONTROL_CHANNEL': '0',
        'NCCL_FASTRAK_PLUGIN_ACCEPT_TIMEOUT_MS': '600000',
        'NCCL_NVLS_ENABLE': '0',
    }
    return env, {}


def _check_extra_env(extra_env, launch_contract, errors):
    """Return extra_env as {str: str}; record every problem, never echoing a value."""
    if extra_env is None:
        return {}
    if not isinstance(extra_env, dict):
        errors.append('extra_env: must be a dict of variable names to values')
        return {}
    result = {}
    for name in sorted(extra_env, key=str):
        value = extra_env[name]
        label = 'extra_env.%s' % name
        if not isinstance(name, str) or not _ENV_NAME.match(name):
            errors.append('%s: not a valid environment variable name' % label)
            continue
        if _SECRET_NAME.search(name.upper()):
            errors.append('%s: looks like a secret; secrets reach the containers through the env file '
                          '(Docker) or a Secret (Kubernetes), never through nim_env, whose result is '
                          'logged and rendered' % label)
            continue
        if isinstance(value, bool):
            errors.append("%s: a boolean is ambiguous in the environment; quote the value ('1', 'true')" % label)
            continue
        if isinstance(value, (int, float)):
            value = str(value)
        if not isinstance(value, str):
            errors.append('%s: must be a string or a number, got %s' % (label, type(value).__name__))
            continue
        if _NGC_KEY_VALUE.match(value):
            errors.append('%s: the value is an NGC API key; it reaches the containers through the env '
                          'file or a Secret, never through nim_env' % label)
            continue
        if name == 'NIM_JSONL_LOGGING' and launch_contract == 'ray' and value != '0':
            errors.append('%s=%s: JSON logging must stay off under launch_contract=ray, or the workers '
                          'fail to start (NIM for LLMs 2.0 multi-node)' % (label, value))
            continue
        result[name] = value
    return result


def _sh_words(words):
    return ' '.join(words)


def _mpi_leader_command(hostfile, ssh_port, ranks_total, forwarded):
    """bash script of the leader: wait for every worker's sshd, then mpirun the start script.

    The script never contains "$(" or "$$": Kubernetes expands both in a container's args.
    """
    forward = ['-x %s' % name for name in forwarded]
    # The NGC key is in the leader's environment only when the deployment has one (air-gapped
    # installs serve a pre-filled cache); mpirun forwards it by name, so it never appears here.
    forward.append('${NGC_API_KEY+-x NGC_API_KEY}')
    script = '\n'.join((
        'set -eu',
        'hostfile=%s' % hostfile,
        # A config the launcher mounted (pinned known_hosts, StrictHostKeyChecking yes) is kept;
        # without one, trust each worker's host key on first use.
        'if [ ! -e %s/config ]; then' % SSH_DIR,
        "  printf 'Host *\\n  IdentityFile %s\\n  StrictHostKeyChecking accept-new\\n' > %s/config"
        % (SSH_PRIVATE_KEY, SSH_DIR),
        'fi',
        'while read -r host _; do',
        '  case "$host" in ""|"#"*|localhost) continue ;; esac',
        "  until timeout %d bash -c ': < \"/dev/tcp/$1/$2\"' _ \"$host\" %d 2>/dev/null; do"
        % (SSH_PROBE_TIMEOUT_S, ssh_port),
        '    if [ "$SECONDS" -ge "$CLUSTER_START_TIMEOUT" ]; then',
        '      echo "worker $host did not open port %d within CLUSTER_START_TIMEOUT=$CLUSTER_START_TIMEOUT s" >&2'
        % ssh_port,
        '      exit 1',
        '    fi',
        '    sleep %d' % SSH_PROBE_INTERVAL_S,
        '  done',
        '  echo "worker $host is reachable on port %d"' % ssh_port,
        'done < "$hostfile"',
        'exec mpirun --bind-to none --map-by slot -n %d --hostfile "$hostfile" %s %s'
        % (ranks_total, _sh_words(forward), MPI_START_SCRIPT),
    ))
    return ['/bin/bash', '-c', script]


def _mpi_worker_command(ssh_port):
    """bash script of a worker: serve the deployment key over sshd on ssh_port."""
    script = '\n'.join((
        'set -eu',
        # The launcher may mount an authorized_keys that restricts the key (from=, no-pty); only
        # derive a plain one from the deployment key when there is none.
        'if [ ! -s %s/authorized_keys ]; then' % SSH_DIR,
        '  ssh-keygen -y -f %s > %s/authorized_keys' % (SSH_PRIVATE_KEY, SSH_DIR),
        'fi',
        # A host key the leader already trusts may be mounted; otherwise each start makes one.
        'if [ ! -s %s ]; then' % SSH_HOST_KEY,
        "  ssh-keygen -q -t ed25519 -N '' -f %s" % SSH_HOST_KEY,
        'fi',
        'exec /usr/sbin/sshd -D -e -p %d -h %s -o PasswordAuthentication=no' % (ssh_port, SSH_HOST_KEY),
    ))
    return ['/bin/bash', '-c', script]


def _validate(values, errors):
    """Check every option; return the normalised values (None where an option is invalid)."""
    v = dict(values)
    v['backend'] = _choice('backend', v['backend'], BACKENDS, errors)
    v['launch_contract'] = _choice('launch_contract', v['launch_contract'], LAUNCH_CONTRACTS, errors)
    v['network'] = _choice('network', v['network'], NETWORKS, errors)
    v['log_level'] = _choice('log_level', v['log_level'], LOG_LEVELS, errors)
    v['node_rank'] = _int_option('node_rank', v['node_rank'], errors)
    v['tensor_parallel'] = _int_option('tensor_parallel', v['tensor_parallel'], errors, minimum=1)
    v['pipeline_parallel'] = _int_option('pipeline_parallel', v['pipeline_parallel'], errors, minimum=1)
    v['cluster_size'] = _int_option('cluster_size', v['cluster_size'], errors, minimum=1, optional=True)
    v['group_index'] = _int_option('group_index', v['group_index'], errors)
    v['mpi_start_timeout'] = _int_option('mpi_start_timeout', v['mpi_start_timeout'], errors, minimum=1)
    for port in ('api_port', 'ssh_port', 'ray_port', 'master_port'):
        v[port] = _int_option(port, v[port], errors, minimum=1, maximum=65535)
    v['gid_index'] = _int_option('gid_index', v['gid_index'], errors)
    v['devices_per_gpu'] = _int_option('devices_per_gpu', v['devices_per_gpu'], errors, minimum=1, optional=True)
    if v['json_logging'] is not None and not isinstance(v['json_logging'], bool):
        errors.append('json_logging=%r: must be true, false or null' % (v['json_logging'],))
        v['json_logging'] = None
    v['socket_ifname'] = _str_option('socket_ifname', v['socket_ifname'], _IFNAMES,
                                     'one interface name or a comma-separated list of them', errors)
    v['ib_hca'] = _str_option('ib_hca', v['ib_hca'], _HCA,
                              'an NCCL_IB_HCA value such as mlx5, mlx5_0:1,mlx5_1:1 or =mlx5_0', errors)
    v['leader_address'] = _str_option('leader_address', v['leader_address'], _HOST,
                                      'a host name or an IP address', errors)
    for name in ('leader_name', 'namespace', 'lws_name'):
        v[name] = _str_option(name, v[name], _DNS_NAME, 'a DNS name (letters, digits, dots and dashes)', errors)
    v['model_profile'] = _str_option('model_profile', v['model_profile'], _PROFILE_ID,
                                     'a NIM profile id or name', errors)
    if v['cache_path'] is None:
        errors.append('cache_path: must be set (the model store path inside the container)')
    v['cache_path'] = _str_option('cache_path', v['cache_path'], _ABS_PATH,
                                  'an absolute path without spaces or shell characters', errors)
    return v


def _check_layout(v, errors):
    """Check the rank against the group; return (cluster_size, gpus_per_rank) or (None, None)."""
    tp, pp, contract = v['tensor_parallel'], v['pipeline_parallel'], v['launch_contract']
    if tp is None or pp is None or contract is None:
        return None, None
    size = v['cluster_size'] if v['cluster_size'] is not None else pp
    if size < 2:
        errors.append('cluster_size=%d (pipeline_parallel=%d when unset): a multi-node NIM needs at least 2 ranks'
                      % (size, pp))
        return None, None
    if contract == 'mpi' and size != pp:
        errors.append('cluster_size=%d: with launch_contract=mpi one node is one pipeline stage, so cluster_size '
                      'must equal pipeline_parallel=%d' % (size, pp))
        return None, None
    if (tp * pp) % size:
        errors.append('cluster_size=%d: tensor_parallel x pipeline_parallel = %d GPUs cannot be split evenly over '
                      '%d ranks' % (size, tp * pp, size))
        return None, None
    if v['node_rank'] is not None and v['node_rank'] >= size:
        errors.append('node_rank=%d: must be between 0 and %d (cluster_size - 1)' % (v['node_rank'], size - 1))
    return size, tp * pp // size


def _check_requirements(v, errors):
    """Options that become required by the combination of backend, contract, rank and network."""
    network, backend, contract = v['network'], v['backend'], v['launch_contract']
    worker = v['node_rank'] is not None and v['node_rank'] > 0
    if network in _PROFILES_NEEDING_IFNAME and not v['socket_ifname']:
        errors.append('socket_ifname: required with network=%s (NCCL_SOCKET_IFNAME, the control interface)' % network)
    if network in _PROFILES_NEEDING_DEVICES and v['devices_per_gpu'] is None:
        errors.append('devices_per_gpu: required with network=%s (RDMA/EFA devices per GPU of the instance type, '
                      'e.g. 4 on p5.48xlarge); a wrong count leaves pods unschedulable or silently on TCP' % network)
    if contract == 'leader_address' and not v['socket_ifname']:
        errors.append('socket_ifname: required with launch_contract=leader_address (NCCL_SOCKET_IFNAME and '
                      'GLOO_SOCKET_IFNAME of the interface the ranks reach each other on)')
    if backend == 'docker':
        if contract == 'leader_address' and not v['leader_address']:
            errors.append('leader_address: required with backend=docker and launch_contract=leader_address '
                          '(NIM_LEADER_IP_ADDRESS and MASTER_ADDR of every rank)')
        if contract == 'ray' and worker and not v['leader_address']:
            errors.append('leader_address: required for worker ranks with backend=docker and launch_contract=ray '
                          '(nim-serve-ray --head-address)')
        if contract in ('mpi', 'ray') and worker and not (v['leader_name'] or v['leader_address']):
            errors.append('leader_name: required for worker ranks with backend=docker (LEADER_NAME); '
                          'leader_address is used when leader_name is not set')


def _mpi_env(v, size, gpus_per_rank, leader, lws):
    """Common, leader-only and worker-only variables of the operator's multi-node contract."""
    env = {
        'NIM_MPI_ALLOW_RUN_AS_ROOT': _literal('0'),
        'NIM_NUM_COMPUTE_NODES': _literal(str(size)),
        'NIM_MULTI_NODE': _literal('1'),
        'NIM_TENSOR_PARALLEL_SIZE': _literal(str(v['tensor_parallel'])),
        'NIM_PIPELINE_PARALLEL_SIZE': _literal(str(v['pipeline_parallel'])),
        'NIM_NODE_RANK': _field(LWS_WORKER_INDEX_FIELD) if lws else _literal(str(v['node_rank'])),
    }
    if leader:
        rsh_args = OPERATOR_SSH_ARGS
        # The in-container sshd must not take the host's port 22 under --network host, so the
        # agreed port travels with mpirun's ssh options (docs/contracts.md). Ray opens no SSH at all.
        if v['launch_contract'] == 'mpi' and v['ssh_port'] != DEFAULT_SSH_PORT:
            rsh_args += ' -p %d' % v['ssh_port']
        env.update(
            NIM_LEADER_ROLE=_literal('1'),
            OMPI_MCA_orte_keep_fqdn_hostnames=_literal('true'),
            OMPI_MCA_plm_rsh_args=_literal(rsh_args),
            GPUS_PER_NODE=_literal(str(gpus_per_rank)),
            CLUSTER_START_TIMEOUT=_literal(str(v['mpi_start_timeout'])),
            CLUSTER_SIZE=_field(LWS_SIZE_FIELD) if lws else _literal(str(size)),
            GROUP_INDEX=_field(LWS_GROUP_INDEX_FIELD) if lws else _literal(str(v['group_index'])),
        )
        return env
    env['NIM_LEADER_ROLE'] = _literal('0')
    if lws:
        env.update(
            LEADER_NAME=_field(LWS_LEADER_NAME_FIELD),
            NAMESPACE=_field(NAMESPACE_FIELD),
            LWS_NAME=_field(LWS_NAME_FIELD),
        )
        return env
    # Docker has no namespace and no LeaderWorkerSet: NAMESPACE and LWS_NAME carry the names the
    # launcher gives the deployment group, and are left out rather than invented when it gives none.
    env['LEADER_NAME'] = _literal(v['leader_name'] or v['leader_address'])
    if v['namespace']:
        env['NAMESPACE'] = _literal(v['namespace'])
    if v['lws_name']:
        env['LWS_NAME'] = _literal(v['lws_name'])
    return env


def _leader_address_env(v, size, leader, lws):
    leader_ref = LWS_LEADER_ADDRESS_REF if lws else v['leader_address']
    return {
        'NIM_MULTI_NODE': _literal('1'),
        'NIM_LEADER_IP_ADDRESS': _literal(leader_ref),
        'NIM_NUM_COMPUTE_NODES': _literal(str(size)),
        'NIM_NODE_RANK': _field(LWS_WORKER_INDEX_FIELD) if lws else _literal(str(v['node_rank'])),
        'NIM_LEADER_ROLE': _literal('1' if leader else '0'),
        'NIM_TENSOR_PARALLEL_SIZE': _literal(str(v['tensor_parallel'])),
        'NIM_PIPELINE_PARALLEL_SIZE': _literal(str(v['pipeline_parallel'])),
        'MASTER_ADDR': _literal(leader_ref),
        'MASTER_PORT': _literal(str(v['master_port'])),
        'NIM_USE_SGLANG': _literal('1'),
        'NCCL_SOCKET_IFNAME': _literal(v['socket_ifname']),
        'GLOO_SOCKET_IFNAME': _literal(v['socket_ifname']),
    }


# docs/contracts.md, The multi-node environment: what the operator sets on every NIM container.
OUTLINES_CACHE_DIR = '/tmp/outlines'


def _standard_env(v):
    contract = v['launch_contract']
    if contract == 'ray':
        json_logging = '0'
    elif v['json_logging'] is None:
        json_logging = '1'
    else:
        json_logging = '1' if v['json_logging'] else '0'
    return {
        'NIM_CACHE_PATH': _literal(v['cache_path']),
        'NIM_SERVER_PORT': _literal(str(v['api_port'])),
        'NIM_HTTP_API_PORT': _literal(str(v['api_port'])),
        'NIM_JSONL_LOGGING': _literal(json_logging),
        'NIM_LOG_LEVEL': _literal(v['log_level']),
        # The NIM Operator gives every NIM a writable cache for the outlines library (guided
        # decoding), whose default under the home directory may not be writable (GetStandardEnv).
        'OUTLINES_CACHE_DIR': _literal(OUTLINES_CACHE_DIR),
    }


def _command(v, env, leader, lws, size, gpus_per_rank):
    contract = v['launch_contract']
    if contract == 'leader_address':
        return [SGLANG_START_SCRIPT]
    if contract == 'ray':
        port = str(v['ray_port'])
        if leader:
            return [RAY_LAUNCHER, '--head', '--port', port]
        head = LWS_LEADER_ADDRESS_REF if lws else v['leader_address']
        return [RAY_LAUNCHER, '--head-address', '%s:%s' % (head, port)]
    if not leader:
        return _mpi_worker_command(v['ssh_port'])
    forwarded = sorted(name for name in env
                       if name not in _RANK_IDENTITY and not name.startswith('OMPI_MCA_'))
    return _mpi_leader_command(LWS_MPI_HOSTFILE if lws else MPI_HOSTFILE, v['ssh_port'],
                               size * gpus_per_rank, forwarded)


def build_env(node_rank, tensor_parallel, pipeline_parallel=1, backend='docker', launch_contract='mpi',
              mpi_start_timeout=300, api_port=8000, network='tcp', socket_ifname=None, ib_hca='mlx5',
              gid_index=3, devices_per_gpu=None, ssh_port=2222, cluster_size=None, group_index=0,
              leader_name=None, leader_address=None, namespace=None, lws_name=None, ray_port=6379,
              master_port=50000, model_profile=None, json_logging=None, log_level='INFO',
              cache_path=CACHE_PATH, extra_env=None):
    """Return the environment, Kubernetes env list, resources, command and role of one rank.

    Raises NimEnvError listing every problem of the inputs.
    """
    errors = []
    v = _validate(dict(
        node_rank=node_rank, tensor_parallel=tensor_parallel, pipeline_parallel=pipeline_parallel,
        backend=backend, launch_contract=launch_contract, mpi_start_timeout=mpi_start_timeout,
        api_port=api_port, network=network, socket_ifname=socket_ifname, ib_hca=ib_hca, gid_index=gid_index,
        devices_per_gpu=devices_per_gpu, ssh_port=ssh_port, cluster_size=cluster_size, group_index=group_index,
        leader_name=leader_name, leader_address=leader_address, namespace=namespace, lws_name=lws_name,
        ray_port=ray_port, master_port=master_port, model_profile=model_profile, json_logging=json_logging,
        log_level=log_level, cache_path=cache_path), errors)
    size, gpus_per_rank = _check_layout(v, errors)
    _check_requirements(v, errors)
    extra = _check_extra_env(extra_env, v['launch_contract'], errors)
    if json_logging is True and v['launch_contract'] == 'ray':
        errors.append('json_logging=true: JSON logging must be off under launch_contract=ray, or the workers '
                      'fail to start (NIM for LLMs 2.0 multi-node)')
    if errors:
        raise NimEnvError(errors)

    leader = v['node_rank'] == 0
    lws = v['backend'] == 'lws'
    entries = _standard_env(v)
    if v['launch_contract'] == 'leader_address':
        entries.update(_leader_address_env(v, size, leader, lws))
    else:
        entries.update(_mpi_env(v, size, gpus_per_rank, leader, lws))
    if v['launch_contract'] == 'ray':
        # Ray reports usage statistics from the head to usage-stats.ray.io every hour where nothing
        # says otherwise and no console is interactive, as in a container (docs/contracts.md, ray):
        # off, so that no group reaches outside the site; nim_extra_env may turn it on again.
        entries['RAY_USAGE_STATS_ENABLED'] = _literal('0')
    if v['model_profile']:
        entries['NIM_MODEL_PROFILE'] = _literal(v['model_profile'])
    network_env, resources = _network_profile(v['network'], v['socket_ifname'], v['ib_hca'], v['gid_index'],
                                              v['devices_per_gpu'], gpus_per_rank)
    for name, value in network_env.items():
        # The contract's own interface variables (leader_address) already say the same thing.
        entries.setdefault(name, _literal(value))
    for name, value in extra.items():
        entries[name] = _literal(value)

    env_list = []
    for name in sorted(entries):
        item = {'name': name}
        item.update(entries[name])
        env_list.append(item)
    env = dict((item['name'], item['value']) for item in env_list if 'value' in item)
    return {
        'env': env,
        'env_list': env_list,
        'resources': resources,
        'command': _command(v, entries, leader, lws, size, gpus_per_rank),
        'role': 'leader' if leader else 'worker',
    }
