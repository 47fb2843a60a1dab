"""The nim_env module: options, results, check mode and failures."""

import pytest

from ansible_collections.nimstack.multinode.plugins.modules import nim_env
from ansible_collections.nimstack.multinode.tests.unit.plugins.modules.utils import run_module

LEADER_ENV = {
    'NIM_MPI_ALLOW_RUN_AS_ROOT': '0',
    'NIM_NUM_COMPUTE_NODES': '2',
    'NIM_MULTI_NODE': '1',
    'NIM_TENSOR_PARALLEL_SIZE': '8',
    'NIM_PIPELINE_PARALLEL_SIZE': '2',
    'NIM_NODE_RANK': '0',
    'NIM_LEADER_ROLE': '1',
    'OMPI_MCA_orte_keep_fqdn_hostnames': 'true',
    'OMPI_MCA_plm_rsh_args': '-o ConnectionAttempts=20 -p 2222',
    'GPUS_PER_NODE': '8',
    'CLUSTER_START_TIMEOUT': '300',
    'CLUSTER_SIZE': '2',
    'GROUP_INDEX': '0',
    'NIM_CACHE_PATH': '/model-store',
    'NIM_SERVER_PORT': '8000',
    'NIM_HTTP_API_PORT': '8000',
    'NIM_JSONL_LOGGING': '1',
    'NIM_LOG_LEVEL': 'INFO',
    'OUTLINES_CACHE_DIR': '/tmp/outlines',
    'NCCL_IB_DISABLE': '0',
    'NCCL_NET': 'IB',
    'NCCL_IB_HCA': 'mlx5',
    'NCCL_SOCKET_IFNAME': 'eth0',
    'NCCL_NET_GDR_LEVEL': '5',
    'UCX_TLS': 'rc,cuda_copy,cuda_ipc',
    'UCX_NET_DEVICES': 'mlx5_0:1',
}


@pytest.mark.parametrize('check_mode', [False, True])
def test_leader_result_with_module_defaults(check_mode):
    result, failed = run_module(nim_env.main, dict(node_rank=0, tensor_parallel=8, pipeline_parallel=2,
                                                   network='ib', socket_ifname='eth0'), check_mode=check_mode)
    assert not failed
    assert result['changed'] is False
    assert result['env'] == LEADER_ENV
    assert result['role'] == 'leader'
    assert result['resources'] == {'rdma/rdma_shared_device_a': 1}
    assert [item['name'] for item in result['env_list']] == sorted(LEADER_ENV)
    assert result['command'][:2] == ['/bin/bash', '-c']
    assert result['command'][2].splitlines()[-1].endswith('/opt/nim/start-mpi-cluster.sh')


def test_lws_worker_returns_field_refs():
    result, failed = run_module(nim_env.main, dict(node_rank=1, tensor_parallel=8, pipeline_parallel=2,
                                                   backend='lws', launch_contract='ray'))
    assert not failed
    assert result['role'] == 'worker'
    assert {'name': 'LEADER_NAME', 'valueFrom': {'fieldRef': {
        'fieldPath': "metadata.annotations['leaderworkerset.sigs.k8s.io/leader-name']"}}} in result['env_list']
    assert 'LEADER_NAME' not in result['env']
    assert result['command'] == ['nim-serve-ray', '--head-address', '$(LWS_LEADER_ADDRESS):6379']


def test_extra_env_numbers_become_strings():
    result, failed = run_module(nim_env.main, dict(node_rank=0, tensor_parallel=8, pipeline_parallel=2,
                                                   extra_env={'NIM_MAX_MODEL_LEN': 32768, 'NIM_LOG_LEVEL': 'DEBUG'}))
    assert not failed
    assert result['env']['NIM_MAX_MODEL_LEN'] == '32768'
    assert result['env']['NIM_LOG_LEVEL'] == 'DEBUG'


def test_leader_address_contract_through_the_module():
    result, failed = run_module(nim_env.main, dict(
        node_rank=1, tensor_parallel=8, pipeline_parallel=2, launch_contract='leader_address',
        leader_address='10.0.0.11', socket_ifname='bond0', json_logging=False, log_level='WARNING'))
    assert not failed
    env = result['env']
    assert (env['NIM_LEADER_IP_ADDRESS'], env['MASTER_ADDR'], env['MASTER_PORT']) == ('10.0.0.11', '10.0.0.11', '50000')
    assert (env['NIM_JSONL_LOGGING'], env['NIM_LOG_LEVEL'], env['NIM_LEADER_ROLE']) == ('0', 'WARNING', '0')
    assert result['command'] == ['/opt/nim/start_server.sh']


def test_failure_lists_every_problem_naming_the_options():
    result, failed = run_module(nim_env.main, dict(node_rank=3, tensor_parallel=8, pipeline_parallel=2,
                                                   network='aws_efa', leader_name='gpu-a',
                                                   extra_env={'NGC_API_KEY': 'nvapi-secret'}))
    assert failed
    assert result['msg'].startswith('nim_env: 3 problem(s) with the options:\n1. node_rank=3: ')
    assert result['errors'][1].startswith('devices_per_gpu: required with network=aws_efa')
    assert result['errors'][2].startswith('extra_env.NGC_API_KEY: looks like a secret')
    assert 'nvapi-secret' not in result['msg']
    assert 'env' not in result


@pytest.mark.parametrize('args, fragment', [
    (dict(backend='k8s'), 'backend'),
    (dict(network='eth'), 'network'),
    (dict(log_level='verbose'), 'log_level'),
])
def test_choices_are_enforced_by_the_argument_spec(args, fragment):
    base = dict(node_rank=0, tensor_parallel=8, pipeline_parallel=2)
    base.update(args)
    result, failed = run_module(nim_env.main, base)
    assert failed
    assert fragment in result['msg']


def test_required_options():
    result, failed = run_module(nim_env.main, dict(node_rank=0))
    assert failed
    assert 'tensor_parallel' in result['msg']
