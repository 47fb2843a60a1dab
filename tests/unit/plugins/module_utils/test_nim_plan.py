# -*- coding: utf-8 -*-
"""The deployment plan: group rules, layout, ranks, env, hostfile, ports, and no secret in it."""

import json
import os

import pytest
import yaml

from ansible_collections.nimstack.multinode.plugins.module_utils import nim_plan
from ansible_collections.nimstack.multinode.plugins.module_utils.nim_plan import build_plan
from ansible_collections.nimstack.multinode.tests.unit.models import LLAMA_405B

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))


def _nodes(count, settings=None, group=None, **per_host):
    nodes = []
    for index in range(count):
        node = {'host': 'gpu-%d' % (index + 1), 'address': '10.0.0.%d' % (11 + index),
                'settings': dict(settings or LLAMA_405B)}
        if group:
            node['group'] = group
        for key, values in per_host.items():
            if values[index] is not None:
                node[key] = values[index]
        nodes.append(node)
    return nodes


def _group(result, name='default'):
    return result['groups'][name]


def test_docker_mpi_plan_of_two_nodes():
    result = build_plan(_nodes(2))
    assert result['valid'] is True
    assert result['errors'] == []
    group = _group(result)
    assert group['mode'] == 'docker'
    assert group['contract'] == 'mpi'
    assert group['size'] == 2
    assert group['leader'] == {'host': 'gpu-1', 'address': '10.0.0.11'}
    assert [(r['host'], r['rank'], r['role']) for r in group['ranks']] == [('gpu-1', 0, 'leader'), ('gpu-2', 1, 'worker')]
    assert group['hostfile'] == ['localhost slots=8', '10.0.0.12 slots=8']
    assert group['ports'] == {'api': 8000, 'ssh': 2222}
    assert group['k8s'] is None
    leader, worker = group['ranks'][0]['env'], group['ranks'][1]['env']
    # docs/contracts.md: common, leader-only and worker-only env of the multi-node contract.
    for env in (leader, worker):
        assert env['NIM_MULTI_NODE'] == '1'
        assert env['NIM_NUM_COMPUTE_NODES'] == '2'
        assert env['NIM_TENSOR_PARALLEL_SIZE'] == '8'
        assert env['NIM_PIPELINE_PARALLEL_SIZE'] == '2'
        assert env['NIM_MPI_ALLOW_RUN_AS_ROOT'] == '0'
        assert env['NIM_CACHE_PATH'] == '/model-store'
    assert leader['NIM_NODE_RANK'] == '0' and worker['NIM_NODE_RANK'] == '1'
    assert leader['NIM_LEADER_ROLE'] == '1' and worker['NIM_LEADER_ROLE'] == '0'
    assert leader['GPUS_PER_NODE'] == '8'
    assert leader['CLUSTER_START_TIMEOUT'] == '3000'
    assert leader['CLUSTER_SIZE'] == '2'
    assert worker['LEADER_NAME'] == 'gpu-1'
    assert group['layout']['weights_gb_per_gpu'] == pytest.approx(25.37, abs=0.01)
    assert group['settings']['nim_api_port'] == 8000


def test_kubernetes_plan_names_the_lws_pods():
    result = build_plan(_nodes(2), deployment_mode='kubernetes')
    group = _group(result)
    assert result['valid'] is True
    assert group['mode'] == 'kubernetes'
    assert [r['host'] for r in group['ranks']] == [
        'nim-default-0-0.nim-default.nim.svc', 'nim-default-0-1.nim-default.nim.svc']
    assert group['k8s'] == {
        'name': 'nim-default', 'namespace': 'nim', 'replicas': 1,
        'hostfiles': {'hostfile-0': ['localhost slots=8', 'nim-default-0-1.nim-default.nim.svc slots=8']}}
    env_list = group['ranks'][0]['env_list']
    rank = [item for item in env_list if item['name'] == 'NIM_NODE_RANK'][0]
    assert rank['valueFrom'] == {'fieldRef': {'fieldPath': "metadata.labels['leaderworkerset.sigs.k8s.io/worker-index']"}}


def test_kubernetes_ranks_follow_pipeline_parallel_not_the_inventory():
    result = build_plan(_nodes(2, dict(LLAMA_405B, nim_pipeline_parallel=4)), deployment_mode='kubernetes')
    group = _group(result)
    assert result['valid'] is True, result['errors']
    assert group['size'] == 4
    assert group['k8s']['hostfiles']['hostfile-0'][1:] == [
        'nim-default-0-%d.nim-default.nim.svc slots=8' % rank for rank in (1, 2, 3)]


def test_kubernetes_replicas_get_one_hostfile_each():
    result = build_plan(_nodes(2, dict(LLAMA_405B, nim_k8s_replicas='2')), deployment_mode='kubernetes')
    hostfiles = _group(result)['k8s']['hostfiles']
    assert sorted(hostfiles) == ['hostfile-0', 'hostfile-1']
    assert hostfiles['hostfile-1'][1] == 'nim-default-1-1.nim-default.nim.svc slots=8'


def test_explicit_leader_rank_reorders_the_group():
    result = build_plan(_nodes(2, rank=[None, 0]))
    group = _group(result)
    assert group['leader']['host'] == 'gpu-2'
    assert group['hostfile'] == ['localhost slots=8', '10.0.0.11 slots=8']


def test_two_leaders_are_refused_naming_the_hosts():
    # The validator's rank rules (inventory_checks.assign_ranks), so both report the same words.
    result = build_plan(_nodes(2, rank=[0, '0']))
    assert result['valid'] is False
    assert result['errors'] == [
        'group default: nim_node_rank=0 is set on gpu-1, gpu-2; each rank must be unique in a group']


def test_duplicate_and_gapped_ranks_are_refused():
    duplicate = build_plan(_nodes(3, dict(LLAMA_405B, nim_pipeline_parallel=3), rank=[None, 1, 1]))
    assert 'group default: nim_node_rank=1 is set on gpu-2, gpu-3; each rank must be unique in a group' \
        in duplicate['errors']
    gap = build_plan(_nodes(2, rank=[None, 3]))
    assert gap['errors'] == [
        'group default: host gpu-2 has nim_node_rank=3 but the group has 2 hosts; ranks must be 0 to 1']
    negative = build_plan(_nodes(2, rank=[None, 'first']))
    assert negative['errors'] == [
        "host gpu-2: nim_node_rank='first' is not a non-negative whole number (0 is the leader; leave it "
        "unset to rank hosts in inventory order)"]


def test_planner_and_validator_share_the_rank_rules():
    from ansible_collections.nimstack.multinode.plugins.module_utils.inventory_checks import check_host_vars
    for ranks in ([0, '0'], [None, 3], [None, 'first'], [1, None], ['1', '0']):
        nodes = _nodes(2, rank=ranks)
        host_vars = dict((n['host'], {'nim_node_rank': n['rank']} if 'rank' in n else {}) for n in nodes)
        validator = check_host_vars([n['host'] for n in nodes], host_vars, 'default')
        planner = [e for e in build_plan(nodes)['errors'] if 'nim_node_rank' in e]
        assert planner == validator, ranks


def test_group_size_must_equal_pipeline_parallel_under_mpi():
    result = build_plan(_nodes(3))
    assert result['errors'] == [
        "group 'default' has 3 hosts (gpu-1, gpu-2, gpu-3) but nim_pipeline_parallel=2: under the mpi launch "
        "contract each host runs one pipeline stage, so the group needs exactly 2 hosts"]


def test_planner_errors_name_the_inventory_variable():
    result = build_plan(_nodes(2, dict(LLAMA_405B, nim_tensor_parallel='6')))
    assert result['errors'] == [
        "group 'default': nim_tensor_parallel=6: the model's 128 attention heads are not divisible by 6 "
        "(model llama-3.1-405b)",
        "group 'default': nim_tensor_parallel=6: the model's 8 KV heads are neither divisible by 6 nor a divisor "
        "of it (model llama-3.1-405b)"]


def test_autoscaling_with_multinode_is_refused_on_kubernetes():
    result = build_plan(_nodes(2, dict(LLAMA_405B, nim_k8s_autoscaling='true')), deployment_mode='kubernetes')
    assert len(result['errors']) == 1
    assert result['errors'][0].startswith(
        "group 'default': nim_k8s_autoscaling=true, nodes=2: a multi-node deployment cannot autoscale")


def test_missing_settings_and_unknown_contract_are_all_reported():
    settings = {'nim_tensor_parallel': 8, 'nim_pipeline_parallel': 2, 'nim_launch_contract': 'slurm'}
    result = build_plan(_nodes(2, settings))
    assert result['errors'] == [
        "group 'default': nim_image is not set; it is required for every deployment group",
        "group 'default': nim_image_tag is not set; it is required for every deployment group",
        "group 'default': nim_launch_contract='slurm' must be one of auto, mpi, ray, leader_address"]


@pytest.mark.parametrize('tag, profile, contract', [
    ('1.3.0', None, 'mpi'),
    ('2.0.1', None, 'ray'),
    ('1.7.3', 'sglang-h100-fp8-tp8-pp2', 'leader_address'),
])
def test_auto_contract_reaches_every_rule_of_the_plan(tag, profile, contract):
    settings = dict(LLAMA_405B, nim_launch_contract='auto', nim_image_tag=tag, nim_model_profile=profile,
                    nim_socket_ifname='eth0')
    result = build_plan(_nodes(2, settings))
    assert result['valid'] is True, result['errors']
    group = _group(result)
    assert (group['contract'], group['contract_requested']) == (contract, 'auto')
    assert group['settings']['nim_launch_contract'] == contract
    assert tag in group['contract_reason'] or profile in group['contract_reason']
    assert bool(group['hostfile']) is (contract == 'mpi')
    assert set(group['ports']) == {'api', {'mpi': 'ssh', 'ray': 'ray', 'leader_address': 'master'}[contract]}


def test_auto_contract_with_an_unreadable_tag_names_the_variable():
    result = build_plan(_nodes(2, dict(LLAMA_405B, nim_launch_contract='auto', nim_image_tag='latest')))
    assert result['valid'] is False
    assert result['errors'] == [
        "group 'default': nim_launch_contract=auto cannot tell the NIM version from nim_image_tag='latest' (expected "
        "a release tag such as 1.8.4 or 2.0.1): set nim_launch_contract to mpi (NIM for LLMs 1.x), ray (2.0 and "
        "later) or leader_address (1.x SGLang-based NIMs)"]


def test_explicit_contract_wins_over_a_digest_pinned_image():
    settings = dict(LLAMA_405B, nim_launch_contract='ray', nim_image_tag='sha256:' + 'a' * 64)
    group = _group(build_plan(_nodes(2, settings)))
    assert group['valid'] is True, group['errors']
    assert (group['contract'], group['contract_reason']) == ('ray', 'nim_launch_contract=ray is set explicitly')


def test_tensor_parallel_spans_nodes_under_ray_but_not_under_mpi():
    # TP 16 / PP 1 on 2 x 8 GPUs (docs/contracts.md, launch contracts), over a slow interconnect.
    settings = dict(LLAMA_405B, nim_tensor_parallel=16, nim_pipeline_parallel=1, nim_interconnect='ethernet-100g')
    ray = build_plan(_nodes(2, dict(settings, nim_launch_contract='ray')))
    assert ray['valid'] is True, ray['errors']
    assert any('tensor_parallel' in w or 'nim_tensor_parallel' in w for w in ray['warnings']), ray['warnings']
    assert _group(ray)['ranks'][1]['env']['NIM_TENSOR_PARALLEL_SIZE'] == '16'
    mpi = build_plan(_nodes(2, dict(settings, nim_launch_contract='mpi')))
    assert mpi['valid'] is False
    assert any('nim_tensor_parallel=16, nim_gpus_per_node=8' in e for e in mpi['errors']), mpi['errors']


def test_settings_must_agree_within_a_group():
    nodes = _nodes(2)
    nodes[1]['settings']['nim_image_tag'] = '1.4.0'
    result = build_plan(nodes)
    assert result['errors'] == [
        "group 'default': nim_image_tag differs between its hosts (gpu-1=\"1.3.0\", gpu-2=\"1.4.0\"): a deployment "
        "group runs one model with one layout, so set it once for the group"]


def test_socket_interface_may_differ_per_host_on_docker_only():
    nodes = _nodes(2, dict(LLAMA_405B, nim_network_profile='ib'))
    nodes[0]['settings']['nim_socket_ifname'] = 'ens1'
    nodes[1]['settings']['nim_socket_ifname'] = 'ens2'
    docker = build_plan(nodes)
    assert docker['valid'] is True, docker['errors']
    assert [r['env']['NCCL_SOCKET_IFNAME'] for r in _group(docker)['ranks']] == ['ens1', 'ens2']
    assert _group(docker)['ranks'][0]['resources'] == {'rdma/rdma_shared_device_a': 1}
    kubernetes = build_plan(nodes, deployment_mode='kubernetes')
    assert kubernetes['errors'] == [
        "group 'default': nim_socket_ifname differs between its hosts (gpu-1, gpu-2): on Kubernetes every pod of "
        "the group gets the same interface name, so set one value for the group"]


def test_build_env_errors_name_the_variable_and_rank():
    result = build_plan(_nodes(2, dict(LLAMA_405B, nim_launch_contract='leader_address')))
    assert result['valid'] is False
    assert result['errors'][0].startswith(
        "group 'default', rank 0 (host gpu-1): nim_socket_ifname: required with nim_launch_contract=leader_address")


def test_ray_contract_has_no_hostfile_and_its_own_ports():
    result = build_plan(_nodes(2, dict(LLAMA_405B, nim_launch_contract='ray')))
    group = _group(result)
    assert group['hostfile'] == []
    assert group['ports'] == {'api': 8000, 'ray': 6379}
    assert group['ranks'][0]['command'] == ['nim-serve-ray', '--head', '--port', '6379']
    assert group['ranks'][1]['command'] == ['nim-serve-ray', '--head-address', '10.0.0.11:6379']


def test_leader_address_contract_ports():
    settings = dict(LLAMA_405B, nim_launch_contract='leader_address', nim_socket_ifname='eth0')
    group = _group(build_plan(_nodes(2, settings)))
    assert group['ports'] == {'api': 8000, 'master': 50000}
    assert group['ranks'][1]['env']['MASTER_ADDR'] == '10.0.0.11'


@pytest.mark.parametrize('contract,port_name', [('mpi', 'ssh'), ('ray', 'ray'), ('leader_address', 'master')])
def test_the_api_port_is_no_other_port_of_the_group(contract, port_name):
    settings = dict(LLAMA_405B, nim_launch_contract=contract, nim_socket_ifname='eth0')
    settings['nim_%s_port' % port_name] = '8000'
    for mode in ('docker', 'kubernetes'):
        result = build_plan(_nodes(2, dict(settings, nim_deployment_mode=mode)))
        assert result['errors'] == [nim_plan.PROBLEM_PORT_CLASH % ('default', 8000, port_name)]
    # A port the contract does not use may be anything.
    other = dict(settings, nim_ssh_port=2222, nim_ray_port=6379, nim_master_port=50000)
    other['nim_%s_port' % ('ray' if contract == 'mpi' else 'ssh')] = 8000
    assert build_plan(_nodes(2, other))['errors'] == []


def test_several_groups_are_planned_independently_and_errors_collected():
    nodes = _nodes(2, group='llama') + _nodes(2, dict(LLAMA_405B, nim_tensor_parallel=6), group='broken')
    for index, node in enumerate(nodes):
        node['host'] = 'host-%d' % index
    result = build_plan(nodes)
    assert list(result['groups']) == ['llama', 'broken']
    assert result['groups']['llama']['valid'] is True
    assert result['groups']['broken']['valid'] is False
    assert result['valid'] is False
    assert all(error.startswith("group 'broken': ") for error in result['errors'])


def test_bad_group_names_and_empty_inventory():
    assert build_plan([])['errors'] == [
        'no hosts in group nim_nodes: the inventory defines the deployment groups through it']
    result = build_plan(_nodes(2, group='Bad_Name'))
    assert result['errors'][0].startswith("host gpu-1: nim_group='Bad_Name' is not a valid group name")


def test_no_secret_reaches_the_plan():
    settings = dict(LLAMA_405B, nim_ngc_api_key='nvapi-SECRET', ansible_password='hunter2')
    result = build_plan(_nodes(2, settings))
    text = json.dumps(result)
    assert 'nvapi-SECRET' not in text and 'hunter2' not in text
    refused = build_plan(_nodes(2, dict(LLAMA_405B, nim_extra_env={'NGC_API_KEY': 'nvapi-SECRET'})))
    assert 'nvapi-SECRET' not in json.dumps(refused)
    assert refused['errors'][0].startswith("group 'default': nim_extra_env sets NGC_API_KEY")


def test_integer_settings_from_extra_vars_are_coerced_or_refused():
    result = build_plan(_nodes(2, dict(LLAMA_405B, nim_api_port='9000', nim_shm_size_gb='32')))
    assert _group(result)['ports']['api'] == 9000
    assert _group(result)['settings']['nim_shm_size_gb'] == 32
    bad = build_plan(_nodes(2, dict(LLAMA_405B, nim_api_port=70000, nim_ssh_port='22x')))
    assert bad['errors'] == ["group 'default': nim_ssh_port='22x' must be an integer >= 1",
                             "group 'default': nim_api_port=70000 is not a TCP port (1-65535)"]


def test_invalid_deployment_mode_is_refused():
    assert build_plan(_nodes(2), deployment_mode='swarm')['errors'][0] == (
        "deployment_mode='swarm' must be one of docker, kubernetes")
    result = build_plan(_nodes(2, dict(LLAMA_405B, nim_deployment_mode='swarm')))
    assert result['errors'] == ["group 'default': nim_deployment_mode='swarm' must be one of docker, kubernetes"]


def test_plan_nodes_take_the_plan_settings_and_nothing_else():
    host_vars = {
        'gpu-1': dict(LLAMA_405B, ansible_host='10.0.0.11', nim_group='llama', nim_node_rank=0,
                      nim_ngc_api_key='nvapi-secret', nim_docker_image_archive='/srv/nim.tar', other='x'),
        'gpu-2': {'nim_image': 'nvcr.io/nim/x', 'nim_socket_ifname': None},
    }
    assert nim_plan.plan_nodes(['gpu-2', 'gpu-1'], host_vars, default_group='pool') == [
        {'host': 'gpu-2', 'address': 'gpu-2', 'group': 'pool', 'rank': None,
         'settings': {'nim_image': 'nvcr.io/nim/x', 'nim_socket_ifname': None}},
        {'host': 'gpu-1', 'address': '10.0.0.11', 'group': 'llama', 'rank': 0, 'settings': dict(LLAMA_405B)},
    ]
    assert 'nim_ngc_api_key' not in nim_plan.SETTING_NAMES


def test_plan_nodes_read_only_the_variables_they_take():
    # hostvars templates a value when it is read: the key and other variables are never read.
    class Recording(dict):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.read = []

        def __getitem__(self, key):
            self.read.append(key)
            return dict.__getitem__(self, key)

    host_vars = Recording(LLAMA_405B, nim_ngc_api_key='nvapi-secret', other='x')
    nim_plan.plan_nodes(['gpu-1'], {'gpu-1': host_vars})
    assert sorted(host_vars.read) == sorted(LLAMA_405B)


def test_the_plan_is_made_in_one_place_from_every_node():
    # playbooks/tasks/plan.yml, which preflight.yml imports, with every host of nim_nodes.
    callers = []
    for base, _dirs, files in os.walk(os.path.join(REPO, 'playbooks')):
        for name in files:
            with open(os.path.join(base, name), encoding='utf-8') as handle:
                if '  nimstack.multinode.nim_plan:\n' in handle.read():
                    callers.append(os.path.relpath(os.path.join(base, name), REPO))
    assert callers == ['playbooks/tasks/plan.yml']
    with open(os.path.join(REPO, 'playbooks', 'tasks', 'plan.yml'), encoding='utf-8') as handle:
        task = yaml.safe_load(handle)[0]
    assert task['nimstack.multinode.nim_plan']['nodes'] == (
        "{{ hostvars | nimstack.multinode.nim_plan_nodes(groups['nim_nodes'] | default([])) }}")


def test_example_inventory_plans_on_both_paths():
    base = os.path.join(REPO, 'inventories', 'example')
    with open(os.path.join(base, 'hosts.yml'), encoding='utf-8') as handle:
        hosts = yaml.safe_load(handle)['all']['children']['nim_nodes']['hosts']
    with open(os.path.join(base, 'group_vars', 'nim_nodes.yml'), encoding='utf-8') as handle:
        group_vars = yaml.safe_load(handle)
    assert '{{' in group_vars['nim_ngc_api_key'] and 'NGC_API_KEY' in group_vars['nim_ngc_api_key']
    settings = dict((k, v) for k, v in group_vars.items() if k in nim_plan.SETTING_NAMES)
    nodes = [{'host': name, 'address': values['ansible_host'], 'settings': settings} for name, values in hosts.items()]
    for mode in ('docker', 'kubernetes'):
        result = build_plan(nodes, deployment_mode=mode)
        assert result['valid'] is True, result['errors']
        assert _group(result)['layout']['tensor_parallel'] == 8
        assert _group(result)['layout']['pipeline_parallel'] == 2


def test_launch_data_of_mpi_starts_the_workers_first_and_needs_the_mesh():
    group = _group(build_plan(_nodes(2, rank=[None, 0])))
    launch = group['launch']
    assert group['leader']['host'] == 'gpu-2'
    assert launch['start_order'] == ['gpu-1', 'gpu-2']
    assert launch['steps'] == ['workers', 'workers_ready', 'leader', 'ready']
    assert (launch['leader_first'], launch['ssh_mesh'], launch['hostfile'], launch['ray_token']) == \
        (False, True, True, False)
    assert launch['member_ports'] == [group['ports']['ssh']]
    assert launch['port_sets'] == ['mpi_btl']
    targets = dict((m['target'], m['ranks']) for m in launch['mounts'])
    assert targets['/etc/mpi/hostfile'] == 'leader'
    assert targets['/ssh-confs/ssh_host_ed25519_key'] == 'worker'
    assert targets['/model-store'] == 'all'


@pytest.mark.parametrize('contract, steps, port', [
    ('ray', ['leader', 'workers_reach_leader', 'workers', 'ready'], 'ray'),
    ('leader_address', ['leader', 'workers', 'ready'], 'master'),
])
def test_launch_data_of_the_other_contracts_start_the_leader_first(contract, steps, port):
    settings = dict(LLAMA_405B, nim_launch_contract=contract, nim_socket_ifname='eth0')
    group = _group(build_plan(_nodes(2, settings)))
    launch = group['launch']
    assert launch['steps'] == steps
    assert launch['start_order'] == ['gpu-1', 'gpu-2']
    assert launch['leader_first'] and not launch['ssh_mesh'] and not launch['hostfile']
    assert launch['member_ports'] == [group['ports'][port]]
    assert not any(m['base'] == 'mesh' for m in launch['mounts'])
    assert launch['ray_token'] == (contract == 'ray')


def test_host_index_names_each_hosts_group_rank_and_role():
    k8s_settings = dict(LLAMA_405B, nim_deployment_mode='kubernetes')
    k8s_nodes = [dict(n, host='k8s-%d' % i, group='k8s', settings=dict(k8s_settings)) for i, n in enumerate(_nodes(2))]
    nodes = _nodes(2, rank=[None, 0]) + k8s_nodes
    result = build_plan(nodes)
    assert result['valid'], result['errors']
    assert result['hosts']['gpu-2'] == {'group': 'default', 'mode': 'docker', 'rank': 0, 'role': 'leader'}
    assert result['hosts']['gpu-1'] == {'group': 'default', 'mode': 'docker', 'rank': 1, 'role': 'worker'}
    assert result['hosts']['k8s-0'] == {'group': 'k8s', 'mode': 'kubernetes', 'rank': None, 'role': None}


def test_a_group_with_errors_has_no_launch_data_but_its_hosts_are_indexed():
    result = build_plan(_nodes(3))
    assert _group(result)['launch'] is None
    assert sorted(result['hosts']) == ['gpu-1', 'gpu-2', 'gpu-3']


def test_the_hosts_by_mode_and_one_summary_line_per_group():
    docker = _nodes(2, dict(LLAMA_405B, nim_pipeline_parallel=2), group='dock')
    kubernetes = [dict(node, host='k8s-%d' % index, group='k8s',
                       settings=dict(LLAMA_405B, nim_pipeline_parallel=2, nim_deployment_mode='kubernetes'))
                  for index, node in enumerate(_nodes(2), 1)]
    result = build_plan(docker + kubernetes)
    assert result['valid'], result['errors']
    assert result['hosts_by_mode'] == {'docker': ['gpu-1', 'gpu-2'], 'kubernetes': ['k8s-1', 'k8s-2']}
    assert result['groups_by_mode'] == {'docker': ['dock'], 'kubernetes': ['k8s']}
    assert result['summary'] == [
        "group 'dock': docker, launch contract mpi: %s" % result['groups']['dock']['contract_reason'],
        "group 'k8s': kubernetes, launch contract mpi: %s" % result['groups']['k8s']['contract_reason']]
    # Planned for one mode, every host is in it.
    assert build_plan(docker + kubernetes, deployment_mode='kubernetes')['hosts_by_mode']['docker'] == []
    assert build_plan(docker + kubernetes, deployment_mode='kubernetes')['groups_by_mode'] == {
        'docker': [], 'kubernetes': ['dock', 'k8s']}
