"""The per-rank environment generator against docs/contracts.md.

Expected values are written out here from docs/contracts.md and the NIM Operator v3.1.2 source, not taken
from the module under test, so that a change in the generator shows up as a failing test.
"""

import json
import os
import shutil
import socket
import subprocess

import pytest

from ansible_collections.nimstack.multinode.plugins.module_utils.nim_env import (
    NimEnvError,
    build_env,
)

# docs/contracts.md, TP 8 / PP 2, Docker backend, default options.
COMMON = {
    'NIM_MPI_ALLOW_RUN_AS_ROOT': '0',
    'NIM_NUM_COMPUTE_NODES': '2',
    'NIM_MULTI_NODE': '1',
    'NIM_TENSOR_PARALLEL_SIZE': '8',
    'NIM_PIPELINE_PARALLEL_SIZE': '2',
}
LEADER_ONLY = {
    'NIM_NODE_RANK': '0',
    'NIM_LEADER_ROLE': '1',
    'OMPI_MCA_orte_keep_fqdn_hostnames': 'true',
    'OMPI_MCA_plm_rsh_args': '-o ConnectionAttempts=20 -p 2222',
    'GPUS_PER_NODE': '8',
    'CLUSTER_START_TIMEOUT': '300',
    'CLUSTER_SIZE': '2',
    'GROUP_INDEX': '0',
}
WORKER_ONLY = {
    'NIM_NODE_RANK': '1',
    'NIM_LEADER_ROLE': '0',
    'LEADER_NAME': 'gpu-a',
    'NAMESPACE': 'nim',
    'LWS_NAME': 'llama-405b',
}
STANDARD = {
    'NIM_CACHE_PATH': '/model-store',
    'NIM_SERVER_PORT': '8000',
    'NIM_HTTP_API_PORT': '8000',
    'NIM_JSONL_LOGGING': '1',
    'NIM_LOG_LEVEL': 'INFO',
    'OUTLINES_CACHE_DIR': '/tmp/outlines',
}
TCP = {'NCCL_IB_DISABLE': '1', 'UCX_TLS': 'tcp,shm'}

WORKER_NAMES = dict(leader_name='gpu-a', namespace='nim', lws_name='llama-405b')

# The operator's fieldRef paths (api/apps/v1alpha1/nimservice_types.go).
FIELD = {
    'NIM_NODE_RANK': "metadata.labels['leaderworkerset.sigs.k8s.io/worker-index']",
    'CLUSTER_SIZE': "metadata.annotations['leaderworkerset.sigs.k8s.io/size']",
    'GROUP_INDEX': "metadata.labels['leaderworkerset.sigs.k8s.io/group-index']",
    'LEADER_NAME': "metadata.annotations['leaderworkerset.sigs.k8s.io/leader-name']",
    'NAMESPACE': 'metadata.namespace',
    'LWS_NAME': "metadata.labels['leaderworkerset.sigs.k8s.io/name']",
}


def merged(*parts):
    result = {}
    for part in parts:
        result.update(part)
    return result


def env_list_as_dict(env_list):
    return dict((item['name'], item.get('value', item.get('valueFrom'))) for item in env_list)


def fieldref(path):
    return {'fieldRef': {'fieldPath': path}}


def errors_of(**kwargs):
    with pytest.raises(NimEnvError) as caught:
        build_env(**kwargs)
    return caught.value.errors


# --- acceptance: docs/contracts.md, exactly -------------------------------------------------------

def test_rank0_of_tp8_pp2_is_exactly_the_leader_set():
    result = build_env(0, 8, 2)
    assert result['env'] == merged(COMMON, LEADER_ONLY, STANDARD, TCP)
    assert result['role'] == 'leader'
    assert result['resources'] == {}


def test_rank1_of_tp8_pp2_is_exactly_the_worker_set():
    result = build_env(1, 8, 2, **WORKER_NAMES)
    assert result['env'] == merged(COMMON, WORKER_ONLY, STANDARD, TCP)
    assert result['role'] == 'worker'


@pytest.mark.parametrize('network, extra, profile_env', [
    ('ib', {'socket_ifname': 'eth0'}, {
        'NCCL_IB_DISABLE': '0', 'NCCL_NET': 'IB', 'NCCL_IB_HCA': 'mlx5', 'NCCL_SOCKET_IFNAME': 'eth0',
        'NCCL_NET_GDR_LEVEL': '5', 'UCX_TLS': 'rc,cuda_copy,cuda_ipc', 'UCX_NET_DEVICES': 'mlx5_0:1'}),
    ('roce', {'socket_ifname': 'eth0'}, {
        'NCCL_IB_DISABLE': '0', 'NCCL_NET': 'IB', 'NCCL_IB_HCA': 'mlx5', 'NCCL_SOCKET_IFNAME': 'eth0',
        'NCCL_NET_GDR_LEVEL': '5', 'UCX_TLS': 'rc,cuda_copy,cuda_ipc', 'UCX_NET_DEVICES': 'mlx5_0:1',
        'NCCL_IB_GID_INDEX': '3'}),
])
@pytest.mark.parametrize('rank', [0, 1])
def test_both_roles_are_exact_with_the_rdma_profiles(network, extra, profile_env, rank):
    result = build_env(rank, 8, 2, network=network, **dict(extra, **WORKER_NAMES))
    role_env = LEADER_ONLY if rank == 0 else WORKER_ONLY
    assert result['env'] == merged(COMMON, role_env, STANDARD, profile_env)
    assert result['resources'] == {'rdma/rdma_shared_device_a': 1}


def test_every_value_is_a_string_and_env_list_matches_env_on_docker():
    result = build_env(1, 8, 2, network='aws_efa', devices_per_gpu=4, mpi_start_timeout=3000, api_port=9000,
                       extra_env={'NCCL_DEBUG': 'WARN', 'NCCL_BUFFSIZE': 8388608}, **WORKER_NAMES)
    assert all(isinstance(value, str) for value in result['env'].values())
    assert all(set(item) == {'name', 'value'} for item in result['env_list'])
    assert env_list_as_dict(result['env_list']) == result['env']
    assert result['env']['NCCL_BUFFSIZE'] == '8388608'
    assert result['env']['NIM_SERVER_PORT'] == result['env']['NIM_HTTP_API_PORT'] == '9000'


def test_env_list_is_sorted_and_identical_across_runs():
    kwargs = dict(node_rank=0, tensor_parallel=8, pipeline_parallel=2, backend='lws', network='roce',
                  socket_ifname='eth0', extra_env={'ZZ_LAST': '1', 'AA_FIRST': '1'})
    first = build_env(**kwargs)
    names = [item['name'] for item in first['env_list']]
    assert names == sorted(names)
    assert json.dumps(first, sort_keys=False) == json.dumps(build_env(**kwargs), sort_keys=False)


# --- docker-specific worker identity --------------------------------------------------------

def test_docker_worker_without_namespace_or_lws_name_leaves_them_out():
    env = build_env(1, 8, 2, leader_name='gpu-a')['env']
    assert env == merged(COMMON, STANDARD, TCP, {'NIM_NODE_RANK': '1', 'NIM_LEADER_ROLE': '0', 'LEADER_NAME': 'gpu-a'})


def test_docker_leader_name_defaults_to_the_leader_address():
    assert build_env(1, 8, 2, leader_address='10.0.0.11')['env']['LEADER_NAME'] == '10.0.0.11'


def test_docker_group_index_and_timeout_are_literal():
    env = build_env(0, 8, 2, group_index=3, mpi_start_timeout=4200)['env']
    assert (env['GROUP_INDEX'], env['CLUSTER_START_TIMEOUT']) == ('3', '4200')


@pytest.mark.parametrize('ssh_port, rsh_args', [
    (22, '-o ConnectionAttempts=20'),
    (2222, '-o ConnectionAttempts=20 -p 2222'),
    (2022, '-o ConnectionAttempts=20 -p 2022'),
])
def test_a_non_default_ssh_port_travels_in_the_rsh_args(ssh_port, rsh_args):
    assert build_env(0, 8, 2, ssh_port=ssh_port)['env']['OMPI_MCA_plm_rsh_args'] == rsh_args


# --- lws: the operator's valueFrom forms ----------------------------------------------------

def test_lws_leader_reads_rank_size_and_group_from_the_pod():
    result = build_env(0, 8, 2, backend='lws', group_index=5, cluster_size=2)
    listed = env_list_as_dict(result['env_list'])
    expected = merged(COMMON, LEADER_ONLY, STANDARD, TCP)
    for name in ('NIM_NODE_RANK', 'CLUSTER_SIZE', 'GROUP_INDEX'):
        expected[name] = fieldref(FIELD[name])
    assert listed == expected
    assert result['env'] == dict((k, v) for k, v in expected.items() if isinstance(v, str))
    assert 'GROUP_INDEX' not in result['env']


def test_lws_worker_reads_its_identity_from_the_pod_and_ignores_docker_names():
    result = build_env(1, 8, 2, backend='lws', **WORKER_NAMES)
    listed = env_list_as_dict(result['env_list'])
    expected = merged(COMMON, WORKER_ONLY, STANDARD, TCP)
    for name in ('NIM_NODE_RANK', 'LEADER_NAME', 'NAMESPACE', 'LWS_NAME'):
        expected[name] = fieldref(FIELD[name])
    assert listed == expected
    assert {'name': 'NAMESPACE', 'valueFrom': {'fieldRef': {'fieldPath': 'metadata.namespace'}}} in result['env_list']


def test_lws_worker_needs_no_leader_name():
    assert build_env(3, 8, 4, backend='lws')['role'] == 'worker'


# --- network profiles (docs/contracts.md, network profiles) ----------------------------------------------------------

EFA = {'FI_PROVIDER': 'efa', 'FI_EFA_USE_DEVICE_RDMA': '1', 'NCCL_IB_DISABLE': '1'}
IB_BASE = {'NCCL_IB_DISABLE': '0', 'NCCL_NET': 'IB', 'NCCL_IB_HCA': 'mlx5', 'NCCL_SOCKET_IFNAME': 'ib0',
           'NCCL_NET_GDR_LEVEL': '5', 'UCX_TLS': 'rc,cuda_copy,cuda_ipc', 'UCX_NET_DEVICES': 'mlx5_0:1'}
NETWORK_CASES = {
    'tcp': (dict(socket_ifname='ib0'),
            {'NCCL_IB_DISABLE': '1', 'UCX_TLS': 'tcp,shm', 'NCCL_SOCKET_IFNAME': 'ib0', 'GLOO_SOCKET_IFNAME': 'ib0'},
            {}),
    'ib': (dict(socket_ifname='ib0'), IB_BASE, {'rdma/rdma_shared_device_a': 1}),
    'roce': (dict(socket_ifname='ib0', gid_index=1), merged(IB_BASE, {'NCCL_IB_GID_INDEX': '1'}),
             {'rdma/rdma_shared_device_a': 1}),
    'aws_efa': (dict(devices_per_gpu=4), EFA, {'vpc.amazonaws.com/efa': 32}),
    'azure_ib': (dict(socket_ifname='ib0', devices_per_gpu=1),
                 merged(IB_BASE, {'NCCL_IB_PCI_RELAXED_ORDERING': '1'}), {'rdma/hca_shared_devices_a': 8}),
    'oci_rdma': (dict(socket_ifname='ib0', devices_per_gpu=2),
                 merged(IB_BASE, {'NCCL_IB_GID_INDEX': '3', 'NCCL_IB_TC': '41', 'NCCL_IB_SL': '0',
                                  'NCCL_IB_QPS_PER_CONNECTION': '4', 'NCCL_IB_SPLIT_DATA_ON_QPS': '0',
                                  'NCCL_IB_TIMEOUT': '22'}),
                 {'nvidia.com/mlnxnics': 16}),
    'gcp_tcpxo': (dict(),
                  {'NCCL_SOCKET_IFNAME': 'eth0', 'NCCL_FASTRAK_CTRL_DEV': 'eth0',
                   'NCCL_FASTRAK_IFNAME': 'eth1,eth2,eth3,eth4,eth5,eth6,eth7,eth8', 'NCCL_CROSS_NIC': '0',
                   'NCCL_NET_GDR_LEVEL': 'PIX', 'NCCL_FASTRAK_USE_SNAP': '1', 'NCCL_FASTRAK_USE_LLCM': '1',
                   'NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY': '/dev/aperture_devices', 'NCCL_FASTRAK_NUM_FLOWS': '2',
                   'NCCL_FASTRAK_ENABLE_CONTROL_CHANNEL': '0', 'NCCL_FASTRAK_PLUGIN_ACCEPT_TIMEOUT_MS': '600000',
                   'NCCL_NVLS_ENABLE': '0'},
                  {}),
}


@pytest.mark.parametrize('network', sorted(NETWORK_CASES))
def test_every_network_profile_adds_exactly_its_env_and_resources(network):
    options, profile_env, resources = NETWORK_CASES[network]
    result = build_env(0, 8, 2, network=network, **options)
    assert result['env'] == merged(COMMON, LEADER_ONLY, STANDARD, profile_env)
    assert result['resources'] == resources


def test_tcp_without_an_interface_lets_nccl_and_gloo_choose():
    env = build_env(0, 8, 2)['env']
    assert 'NCCL_SOCKET_IFNAME' not in env and 'GLOO_SOCKET_IFNAME' not in env


def test_gcp_tcpxo_control_device_follows_socket_ifname():
    env = build_env(0, 8, 2, network='gcp_tcpxo', socket_ifname='enp0s12')['env']
    assert env['NCCL_FASTRAK_CTRL_DEV'] == env['NCCL_SOCKET_IFNAME'] == 'enp0s12'


@pytest.mark.parametrize('ib_hca, device', [
    ('mlx5', 'mlx5_0:1'),
    ('mlx5_2', 'mlx5_2:1'),
    ('mlx5_3:2,mlx5_4:1', 'mlx5_3:2'),
    ('=mlx5_1', 'mlx5_1:1'),
    ('^mlx5_9', None),
])
def test_ucx_device_comes_from_the_first_hca(ib_hca, device):
    env = build_env(0, 8, 2, network='ib', socket_ifname='eth0', ib_hca=ib_hca)['env']
    assert env['NCCL_IB_HCA'] == ib_hca
    assert env.get('UCX_NET_DEVICES') == device


def test_efa_devices_count_the_gpus_of_the_rank_when_tp_spans_nodes():
    result = build_env(1, 16, 1, launch_contract='ray', cluster_size=2, network='aws_efa', devices_per_gpu=4,
                       leader_address='10.0.0.11')
    assert result['resources'] == {'vpc.amazonaws.com/efa': 32}


# --- the mpi contract's commands ------------------------------------------------------------

def test_mpi_leader_runs_mpirun_over_the_docker_hostfile():
    command = build_env(0, 8, 2, extra_env={'NCCL_DEBUG': 'WARN'})['command']
    assert command[:2] == ['/bin/bash', '-c'] and len(command) == 3
    script = command[2]
    assert 'hostfile=/etc/mpi/hostfile\n' in script
    mpirun = script.splitlines()[-1]
    assert mpirun.startswith('exec mpirun --bind-to none --map-by slot -n 16 --hostfile "$hostfile" ')
    assert mpirun.endswith(' ${NGC_API_KEY+-x NGC_API_KEY} /opt/nim/start-mpi-cluster.sh')
    forwarded = [word for word in mpirun.split() if word.isupper() or '_' in word]
    for name in ('NIM_CACHE_PATH', 'NIM_SERVER_PORT', 'NIM_TENSOR_PARALLEL_SIZE', 'NCCL_DEBUG', 'UCX_TLS'):
        assert '-x %s ' % name in mpirun
    for name in ('NIM_NODE_RANK', 'NIM_LEADER_ROLE', 'OMPI_MCA_plm_rsh_args', 'OMPI_MCA_orte_keep_fqdn_hostnames'):
        assert name not in forwarded
    assert '/dev/tcp/$1/$2' in script and '_ "$host" 2222' in script
    assert '$CLUSTER_START_TIMEOUT' in script


def test_mpi_leader_on_lws_reads_its_groups_hostfile():
    script = build_env(0, 8, 2, backend='lws')['command'][2]
    assert 'hostfile=/etc/mpi/hostfile-${GROUP_INDEX}\n' in script


def test_mpi_worker_serves_sshd_on_the_agreed_port():
    command = build_env(1, 8, 2, ssh_port=2022, **WORKER_NAMES)['command']
    assert command[:2] == ['/bin/bash', '-c']
    last = command[2].splitlines()[-1]
    assert last == ('exec /usr/sbin/sshd -D -e -p 2022 -h /ssh-confs/ssh_host_ed25519_key '
                    '-o PasswordAuthentication=no')


@pytest.mark.parametrize('backend', ['docker', 'lws'])
@pytest.mark.parametrize('rank', [0, 1])
def test_mpi_scripts_are_valid_bash_and_survive_kubernetes_expansion(backend, rank):
    script = build_env(rank, 8, 2, backend=backend, **WORKER_NAMES)['command'][2]
    # Kubernetes expands $(VAR) and turns $$ into $ in a container's args.
    assert '$(' not in script and '$$' not in script
    checked = subprocess.run(['bash', '-n', '-c', script], capture_output=True, text=True, check=False, timeout=30)
    assert checked.returncode == 0, checked.stderr


def _free_port():
    probe = socket.socket()
    probe.bind(('127.0.0.1', 0))
    port = probe.getsockname()[1]
    probe.close()
    return port


def _runnable_leader_script(tmp_path, port):
    """The real leader script, pointed at temporary files and a fake mpirun."""
    script = build_env(0, 8, 2, ssh_port=port)['command'][2]
    ssh_dir = tmp_path / 'ssh'
    ssh_dir.mkdir()
    hostfile = tmp_path / 'hostfile'
    hostfile.write_text('localhost slots=8\n127.0.0.1 slots=8\n')
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    fake = bindir / 'mpirun'
    fake.write_text('#!/bin/sh\necho "mpirun $*"\n')
    fake.chmod(0o755)
    script = script.replace('/etc/mpi/hostfile', str(hostfile)).replace('/opt/nim/llm/.ssh', str(ssh_dir))
    return script, bindir, ssh_dir


@pytest.mark.parametrize('with_key', [True, False])
def test_mpi_leader_script_waits_for_workers_then_execs_mpirun(tmp_path, with_key):
    listener = socket.socket()
    listener.bind(('127.0.0.1', 0))
    listener.listen(4)
    port = listener.getsockname()[1]
    try:
        script, bindir, ssh_dir = _runnable_leader_script(tmp_path, port)
        env = {'PATH': '%s:%s' % (bindir, os.environ['PATH']), 'CLUSTER_START_TIMEOUT': '20'}
        if with_key:
            env['NGC_API_KEY'] = 'not-a-real-key'
        done = subprocess.run(['bash', '-c', script], env=env, capture_output=True, text=True, check=False, timeout=60)
    finally:
        listener.close()
    assert done.returncode == 0, done.stderr
    assert 'worker 127.0.0.1 is reachable on port %d' % port in done.stdout
    mpirun = [line for line in done.stdout.splitlines() if line.startswith('mpirun ')]
    assert len(mpirun) == 1
    assert '-n 16 --hostfile %s' % (tmp_path / 'hostfile') in mpirun[0]
    assert mpirun[0].endswith('/opt/nim/start-mpi-cluster.sh')
    assert ('-x NGC_API_KEY' in mpirun[0]) is with_key
    assert 'not-a-real-key' not in done.stdout
    assert 'IdentityFile /opt/nim/llm/pk/private.key' in (ssh_dir / 'config').read_text()


def test_mpi_leader_script_gives_up_after_the_cluster_start_timeout(tmp_path):
    port = _free_port()
    script, bindir, unused_ssh_dir = _runnable_leader_script(tmp_path, port)
    env = {'PATH': '%s:%s' % (bindir, os.environ['PATH']), 'CLUSTER_START_TIMEOUT': '0'}
    done = subprocess.run(['bash', '-c', script], env=env, capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 1
    assert 'worker 127.0.0.1 did not open port %d within CLUSTER_START_TIMEOUT=0 s' % port in done.stderr
    assert 'mpirun' not in done.stdout


def test_mpi_leader_script_keeps_a_mounted_ssh_config(tmp_path):
    listener = socket.socket()
    listener.bind(('127.0.0.1', 0))
    listener.listen(4)
    port = listener.getsockname()[1]
    try:
        script, bindir, ssh_dir = _runnable_leader_script(tmp_path, port)
        (ssh_dir / 'config').write_text('Host *\n  StrictHostKeyChecking yes\n')
        env = {'PATH': '%s:%s' % (bindir, os.environ['PATH']), 'CLUSTER_START_TIMEOUT': '20'}
        done = subprocess.run(['bash', '-c', script], env=env, capture_output=True, text=True, check=False, timeout=60)
    finally:
        listener.close()
    assert done.returncode == 0, done.stderr
    assert (ssh_dir / 'config').read_text() == 'Host *\n  StrictHostKeyChecking yes\n'


@pytest.mark.skipif(shutil.which('ssh-keygen') is None, reason='needs ssh-keygen')
def test_mpi_worker_script_derives_keys_only_when_none_are_mounted(tmp_path):
    key = tmp_path / 'pk' / 'private.key'
    key.parent.mkdir()
    subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f', str(key)], check=True, timeout=60)
    key.chmod(0o400)
    ssh_dir, confs, bindir = tmp_path / 'ssh', tmp_path / 'confs', tmp_path / 'bin'
    for folder in (ssh_dir, confs, bindir):
        folder.mkdir()
    sshd = bindir / 'sshd'
    sshd.write_text('#!/bin/sh\necho "sshd $*"\n')
    sshd.chmod(0o755)
    script = build_env(1, 8, 2, **WORKER_NAMES)['command'][2]
    script = (script.replace('/opt/nim/llm/pk/private.key', str(key)).replace('/opt/nim/llm/.ssh', str(ssh_dir))
              .replace('/ssh-confs', str(confs)).replace('/usr/sbin/sshd', str(sshd)))

    done = subprocess.run(['bash', '-c', script], capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    public = (tmp_path / 'pk' / 'private.key.pub').read_text().split()[:2]
    assert (ssh_dir / 'authorized_keys').read_text().split()[:2] == public
    host_key = (confs / 'ssh_host_ed25519_key').read_text()
    assert done.stdout.strip() == ('sshd -D -e -p 2222 -h %s -o PasswordAuthentication=no'
                                   % (confs / 'ssh_host_ed25519_key'))

    restricted = 'from="10.0.0.11",no-pty %s\n' % ' '.join(public)
    (ssh_dir / 'authorized_keys').write_text(restricted)
    again = subprocess.run(['bash', '-c', script], capture_output=True, text=True, check=False, timeout=60)
    assert again.returncode == 0, again.stderr
    assert (ssh_dir / 'authorized_keys').read_text() == restricted
    assert (confs / 'ssh_host_ed25519_key').read_text() == host_key


# --- the ray contract (docs/contracts.md, launch contracts) ---------------------------------------------------------

RAY_USAGE_OFF = {'RAY_USAGE_STATS_ENABLED': '0'}


def test_ray_leader_has_the_operator_env_with_json_logging_off_and_no_ssh_port():
    result = build_env(0, 8, 2, launch_contract='ray')
    expected = merged(COMMON, LEADER_ONLY, STANDARD, TCP,
                      {'NIM_JSONL_LOGGING': '0', 'OMPI_MCA_plm_rsh_args': '-o ConnectionAttempts=20'}, RAY_USAGE_OFF)
    assert result['env'] == expected
    assert result['command'] == ['nim-serve-ray', '--head', '--port', '6379']


def test_ray_docker_worker_joins_the_leader_address():
    result = build_env(1, 8, 2, launch_contract='ray', leader_address='10.0.0.11', ray_port=6380,
                       namespace='nim', lws_name='llama-405b')
    assert result['command'] == ['nim-serve-ray', '--head-address', '10.0.0.11:6380']
    assert result['env'] == merged(COMMON, WORKER_ONLY, STANDARD, TCP,
                                   {'NIM_JSONL_LOGGING': '0', 'LEADER_NAME': '10.0.0.11'}, RAY_USAGE_OFF)


def test_ray_lws_worker_joins_through_the_lws_leader_address():
    result = build_env(1, 8, 2, backend='lws', launch_contract='ray')
    assert result['command'] == ['nim-serve-ray', '--head-address', '$(LWS_LEADER_ADDRESS):6379']


def test_ray_reports_no_usage_statistics_unless_the_inventory_asks():
    for rank in (0, 1):
        assert build_env(rank, 8, 2, launch_contract='ray', leader_address='10.0.0.11')['env'][
            'RAY_USAGE_STATS_ENABLED'] == '0'
    assert build_env(0, 8, 2, launch_contract='ray', extra_env={'RAY_USAGE_STATS_ENABLED': '1'})['env'][
        'RAY_USAGE_STATS_ENABLED'] == '1'
    for contract in ('mpi', 'leader_address'):
        assert 'RAY_USAGE_STATS_ENABLED' not in build_env(0, 8, 2, launch_contract=contract, socket_ifname='eth0',
                                                          leader_address='10.0.0.11')['env']


def test_ray_json_logging_stays_off_even_when_asked_for_false():
    assert build_env(0, 8, 2, launch_contract='ray', json_logging=False)['env']['NIM_JSONL_LOGGING'] == '0'


def test_ray_tp_spanning_nodes_counts_nodes_not_stages():
    env = build_env(0, 16, 1, launch_contract='ray', cluster_size=2)['env']
    assert (env['NIM_NUM_COMPUTE_NODES'], env['CLUSTER_SIZE'], env['GPUS_PER_NODE']) == ('2', '2', '8')
    assert (env['NIM_TENSOR_PARALLEL_SIZE'], env['NIM_PIPELINE_PARALLEL_SIZE']) == ('16', '1')


# --- the leader_address contract (docs/contracts.md, launch contracts) ----------------------------------------------

def _leader_address_env(rank, role):
    return merged(STANDARD, TCP, {
        'NIM_MULTI_NODE': '1',
        'NIM_LEADER_IP_ADDRESS': '10.0.0.11',
        'NIM_NUM_COMPUTE_NODES': '2',
        'NIM_NODE_RANK': str(rank),
        'NIM_LEADER_ROLE': role,
        'NIM_TENSOR_PARALLEL_SIZE': '8',
        'NIM_PIPELINE_PARALLEL_SIZE': '2',
        'MASTER_ADDR': '10.0.0.11',
        'MASTER_PORT': '50000',
        'NIM_USE_SGLANG': '1',
        'NIM_MODEL_PROFILE': 'sglang-h100-bf16-tp8-pp2',
        'NCCL_SOCKET_IFNAME': 'bond0',
        'GLOO_SOCKET_IFNAME': 'bond0',
    })


@pytest.mark.parametrize('rank, role', [(0, '1'), (1, '0')])
def test_leader_address_docker_ranks_are_exact(rank, role):
    result = build_env(rank, 8, 2, launch_contract='leader_address', leader_address='10.0.0.11',
                       socket_ifname='bond0', model_profile='sglang-h100-bf16-tp8-pp2')
    assert result['env'] == _leader_address_env(rank, role)
    assert result['command'] == ['/opt/nim/start_server.sh']
    assert result['role'] == ('leader' if rank == 0 else 'worker')


def test_leader_address_on_lws_takes_the_address_from_lws():
    result = build_env(1, 8, 2, backend='lws', launch_contract='leader_address', socket_ifname='eth0',
                       master_port=29500, leader_address='ignored.example')
    listed = env_list_as_dict(result['env_list'])
    assert listed['NIM_LEADER_IP_ADDRESS'] == listed['MASTER_ADDR'] == '$(LWS_LEADER_ADDRESS)'
    assert listed['NIM_NODE_RANK'] == fieldref(FIELD['NIM_NODE_RANK'])
    assert listed['MASTER_PORT'] == '29500'
    assert result['command'] == ['/opt/nim/start_server.sh']


# --- extra_env ------------------------------------------------------------------------------

def test_extra_env_wins_over_generated_values():
    env = build_env(0, 8, 2, extra_env={'NIM_LOG_LEVEL': 'DEBUG', 'UCX_TLS': 'tcp', 'NCCL_DEBUG': 'INFO',
                                        'NIM_MAX_MODEL_LEN': 32768})['env']
    assert env == merged(COMMON, LEADER_ONLY, STANDARD, TCP, {
        'NIM_LOG_LEVEL': 'DEBUG', 'UCX_TLS': 'tcp', 'NCCL_DEBUG': 'INFO', 'NIM_MAX_MODEL_LEN': '32768'})


def test_extra_env_replaces_a_field_ref_with_a_literal_on_lws():
    result = build_env(0, 8, 2, backend='lws', extra_env={'GROUP_INDEX': '7'})
    assert {'name': 'GROUP_INDEX', 'value': '7'} in result['env_list']
    assert result['env']['GROUP_INDEX'] == '7'


@pytest.mark.parametrize('name', ['NGC_API_KEY', 'RAY_AUTH_TOKEN', 'HF_TOKEN', 'AWS_SECRET_ACCESS_KEY',
                                  'NVIDIA_API_KEY', 'DB_PASSWORD', 'ngc_api_key'])
def test_extra_env_refuses_secrets_without_echoing_them(name):
    errors = errors_of(node_rank=0, tensor_parallel=8, pipeline_parallel=2, extra_env={name: 's3cr3t-value'})
    assert len(errors) == 1
    assert errors[0].startswith('extra_env.%s: looks like a secret' % name)
    assert 'env file' in errors[0] and 'Secret' in errors[0]
    assert 's3cr3t-value' not in errors[0]


def test_extra_env_refuses_an_ngc_key_under_any_name():
    errors = errors_of(node_rank=0, tensor_parallel=8, pipeline_parallel=2, extra_env={'MY_VAR': 'nvapi-abc123'})
    assert errors == ['extra_env.MY_VAR: the value is an NGC API key; it reaches the containers through the '
                      'env file or a Secret, never through nim_env']


def test_extra_env_accepts_names_that_only_mention_tokens():
    env = build_env(0, 8, 2, extra_env={'RAY_AUTH_MODE': 'token', 'RAY_AUTH_TOKEN_PATH': '/run/nim/ray-token',
                                        'TOKENIZERS_PARALLELISM': 'false'})['env']
    assert env['RAY_AUTH_MODE'] == 'token' and env['RAY_AUTH_TOKEN_PATH'] == '/run/nim/ray-token'


SECRET_NAMES = ('NGC_API_KEY', 'RAY_AUTH_TOKEN', 'HF_TOKEN', 'NVIDIA_API_KEY')


@pytest.mark.parametrize('backend', ['docker', 'lws'])
@pytest.mark.parametrize('contract', ['mpi', 'ray', 'leader_address'])
@pytest.mark.parametrize('rank', [0, 1])
def test_no_secret_is_ever_generated(backend, contract, rank):
    result = build_env(rank, 8, 2, backend=backend, launch_contract=contract, leader_address='10.0.0.11',
                       socket_ifname='eth0', network='ib', **{'leader_name': 'gpu-a'})
    names = set(item['name'] for item in result['env_list'])
    assert not names.intersection(SECRET_NAMES)
    assert 'nvapi-' not in json.dumps(result)
    # The mpi leader forwards the NGC key by name only; no value of it can be in the command.
    for word in ' '.join(result['command']).split():
        assert not word.startswith('NGC_API_KEY=')


# --- errors ---------------------------------------------------------------------------------

def test_every_problem_is_reported_at_once_each_naming_its_option():
    errors = errors_of(node_rank=4, tensor_parallel=8, pipeline_parallel=2, network='aws_efa',
                       launch_contract='leader_address', mpi_start_timeout=0, api_port=70000,
                       extra_env={'RAY_AUTH_TOKEN': 'x', '1BAD': 'y'})
    assert errors == [
        'mpi_start_timeout=0: must be >= 1',
        'api_port=70000: must be between 1 and 65535',
        'node_rank=4: must be between 0 and 1 (cluster_size - 1)',
        'devices_per_gpu: required with network=aws_efa (RDMA/EFA devices per GPU of the instance type, '
        'e.g. 4 on p5.48xlarge); a wrong count leaves pods unschedulable or silently on TCP',
        'socket_ifname: required with launch_contract=leader_address (NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME '
        'of the interface the ranks reach each other on)',
        'leader_address: required with backend=docker and launch_contract=leader_address (NIM_LEADER_IP_ADDRESS '
        'and MASTER_ADDR of every rank)',
        'extra_env.1BAD: not a valid environment variable name',
        'extra_env.RAY_AUTH_TOKEN: looks like a secret; secrets reach the containers through the env file '
        '(Docker) or a Secret (Kubernetes), never through nim_env, whose result is logged and rendered',
    ]


@pytest.mark.parametrize('kwargs, message', [
    (dict(network='ib'), 'socket_ifname: required with network=ib'),
    (dict(network='roce'), 'socket_ifname: required with network=roce'),
    (dict(network='azure_ib', devices_per_gpu=1), 'socket_ifname: required with network=azure_ib'),
    (dict(network='oci_rdma', socket_ifname='eth0'), 'devices_per_gpu: required with network=oci_rdma'),
    (dict(network='azure_ib', socket_ifname='ib0'), 'devices_per_gpu: required with network=azure_ib'),
    (dict(devices_per_gpu=0), 'devices_per_gpu=0: must be >= 1'),
    (dict(cluster_size=3), 'cluster_size=3: with launch_contract=mpi one node is one pipeline stage'),
    (dict(pipeline_parallel=1), 'cluster_size=1 (pipeline_parallel=1 when unset): a multi-node NIM needs'),
    (dict(launch_contract='ray', cluster_size=3), 'cluster_size=3: tensor_parallel x pipeline_parallel = 16 GPUs'),
    (dict(node_rank=-1), 'node_rank=-1: must be >= 0'),
    (dict(node_rank='0'), "node_rank='0': must be an integer"),
    (dict(tensor_parallel=0), 'tensor_parallel=0: must be >= 1'),
    (dict(backend='k8s'), "backend='k8s': must be one of docker, lws"),
    (dict(launch_contract='slurm'), "launch_contract='slurm': must be one of mpi, ray, leader_address"),
    (dict(network='eth'), "network='eth': must be one of ib, roce, tcp, aws_efa, azure_ib, gcp_tcpxo, oci_rdma"),
    (dict(log_level='info'), "log_level='info': must be one of DEFAULT, TRACE, DEBUG, INFO"),
    (dict(json_logging='yes'), "json_logging='yes': must be true, false or null"),
    (dict(launch_contract='ray', json_logging=True), 'json_logging=true: JSON logging must be off'),
    (dict(launch_contract='ray', extra_env={'NIM_JSONL_LOGGING': '1'}), 'extra_env.NIM_JSONL_LOGGING=1: JSON'),
    (dict(socket_ifname='eth0; rm -rf /'), "socket_ifname='eth0; rm -rf /': must be one interface name"),
    (dict(ib_hca='mlx5 0'), "ib_hca='mlx5 0': must be an NCCL_IB_HCA value"),
    (dict(cache_path='model store'), "cache_path='model store': must be an absolute path"),
    (dict(cache_path=None), 'cache_path: must be set'),
    (dict(model_profile='a b'), "model_profile='a b': must be a NIM profile id or name"),
    (dict(extra_env=['A=1']), 'extra_env: must be a dict'),
    (dict(extra_env={'A': ['x']}), 'extra_env.A: must be a string or a number, got list'),
    (dict(extra_env={'A': True}), 'extra_env.A: a boolean is ambiguous'),
    (dict(ssh_port=0), 'ssh_port=0: must be between 1 and 65535'),
])
def test_invalid_inputs_are_errors_naming_the_option(kwargs, message):
    args = dict(node_rank=0, tensor_parallel=8, pipeline_parallel=2)
    args.update(kwargs)
    errors = errors_of(**args)
    assert any(error.startswith(message) for error in errors), errors


@pytest.mark.parametrize('kwargs, message', [
    (dict(launch_contract='ray'), 'leader_address: required for worker ranks with backend=docker and '
                                  'launch_contract=ray'),
    (dict(), 'leader_name: required for worker ranks with backend=docker (LEADER_NAME)'),
    (dict(leader_address='bad address'), "leader_address='bad address': must be a host name or an IP address"),
    (dict(leader_name='gpu_a!'), "leader_name='gpu_a!': must be a DNS name"),
])
def test_docker_workers_need_to_know_their_leader(kwargs, message):
    errors = errors_of(node_rank=1, tensor_parallel=8, pipeline_parallel=2, **kwargs)
    assert any(error.startswith(message) for error in errors), errors


def test_the_leader_needs_no_leader_name_or_address_under_mpi_and_ray():
    assert build_env(0, 8, 2)['role'] == 'leader'
    assert build_env(0, 8, 2, launch_contract='ray')['role'] == 'leader'


def test_error_message_joins_all_problems():
    with pytest.raises(NimEnvError) as caught:
        build_env(2, 8, 2, network='ib')
    assert str(caught.value) == '; '.join(caught.value.errors)
    assert len(caught.value.errors) == 3
