# -*- coding: utf-8 -*-
"""The doctor's verdicts: each fault named by check and host, every check judged, the report rendered.

Groups come from the real planner (nim_plan.build_plan); GPU inventories from the real H100
captures through the nvidia_smi parser, so a fixture change reaches these tests.
"""

import copy
import os

import pytest

from ansible_collections.nimstack.multinode.plugins.module_utils import doctor
from ansible_collections.nimstack.multinode.plugins.module_utils.nim_plan import build_plan
from ansible_collections.nimstack.multinode.plugins.module_utils.nvidia_smi import build_facts, parse_query_csv

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'nvidia_smi')
HOSTS = ['gpu-1', 'gpu-2', 'gpu-3']
SETTINGS = {
    'nim_image': 'nvcr.io/nim/meta/llama-3.1-8b-instruct',
    'nim_image_tag': '1.3.0',
    'nim_model': 'llama-3.1-8b',
    'nim_tensor_parallel': 1,
    'nim_pipeline_parallel': 3,
    'nim_gpus_per_node': 1,
    'nim_gpu_memory_gb': 80,
    'nim_mpi_start_timeout': 600,
    'nim_shm_size_gb': 1,
    'nim_cache_path': '/mnt/cache',
}
OPTIONS = {'memlock_min_kb': -1, 'disk_margin': 1.1, 'clock_skew_max_s': 2.0, 'clock_require_sync': True,
           'require_gpus': True, 'port_range': [32768, 60999], 'port_sample': 2}
FP = 'SHA256:groupkey'


def _fixture(name):
    with open(os.path.join(FIXTURES, name), newline='') as handle:
        return handle.read()


def gpu(name='query-gpu.csv', driver=None):
    """A parsed capture; ``driver`` rewrites the driver column as another driver would report it."""
    text = _fixture(name)
    if driver:
        text = text.replace('580.159.04', driver)
    return build_facts(parse_query_csv(text), cuda_version='13.0')


def plan_group(**overrides):
    settings = dict(SETTINGS, **overrides)
    nodes = [{'host': h, 'address': '10.0.0.%d' % (11 + i), 'settings': dict(settings)} for i, h in enumerate(HOSTS)]
    return build_plan(nodes, 'docker')['groups']['default']


def healthy(group):
    """What three healthy hosts report: every connect works, the key everywhere, the cache shared."""
    ports = [p['port'] for p in doctor.group_ports(group, OPTIONS['port_range'], OPTIONS['port_sample'])]
    facts = {}
    for host in HOSTS:
        peers = [r for r in group['ranks'] if r['host'] != host]
        facts[host] = {
            'gpu': gpu(),
            'rdma': None,
            'probe': {'memlock_kb': -1, 'memlock_source': 'dockerd (pid 1)', 'docker_installed': True,
                      'shm_bytes': 64 * doctor.GIB, 'cache_path': '/mnt/cache', 'cache_exists': True,
                      'cache_fs_path': '/mnt/cache', 'cache_free_bytes': 500 * doctor.GIB, 'clock_synced': True,
                      'mesh': {'dir': '/etc/nimstack/mesh/default', 'present': True, 'missing': [],
                               'key_fingerprint': FP, 'authorized': [FP], 'error': None}},
            'cache_write': {'ok': True, 'error': '', 'path': '/mnt/cache/.nimstack-doctor-default'}
            if host == 'gpu-1' else None,
            'connect': [{'host': r['host'], 'address': r['address'], 'port': p, 'ok': True, 'error': '',
                         'clock_offset_s': 0.01} for r in peers for p in ports],
            'ssh': [{'host': r['host'], 'ok': True, 'error': ''} for r in peers] if host == 'gpu-1' else None,
            'cache_read': {'ok': True, 'error': ''} if host != 'gpu-1' else None,
        }
    return facts


def failed(results):
    return sorted((r['check'], r['host']) for r in results if r['status'] == 'fail')


@pytest.fixture
def group():
    g = plan_group()
    assert g['valid'], g['errors']
    return g


def test_healthy_group_passes_every_check(group):
    results = doctor.evaluate([group], healthy(group), options=OPTIONS)
    assert failed(results) == []
    checks = set(r['check'] for r in results if r['status'] == 'pass')
    assert checks >= {'plan', 'reachable', 'gpu', 'memlock', 'shm', 'disk', 'clock_skew', 'clock_sync', 'port',
                      'mesh_key', 'ssh_key', 'shared_cache'}
    rdma = [r for r in results if r['check'] == 'rdma']
    assert rdma[0]['status'] == 'skip' and 'tcp needs no RDMA' in rdma[0]['found']


def test_group_ports_follow_the_contract():
    mpi = plan_group()
    assert [p['port'] for p in doctor.group_ports(mpi, [32768, 60999], 2)] == [2222, 8000, 32768, 60999]
    ray = plan_group(nim_launch_contract='ray')
    ports = [p['port'] for p in doctor.group_ports(ray, [], 0)]
    assert ports == sorted([6379, 8000] + list(doctor.RAY_PORT_SAMPLE))
    leader_address = plan_group(nim_launch_contract='leader_address', nim_socket_ifname='eth0')
    assert leader_address['valid'], leader_address['errors']
    assert [p['port'] for p in doctor.group_ports(leader_address, [], 0)] == [8000, 50000]


def test_port_sample_spreads_over_the_range():
    assert doctor.port_sample(32768, 60999, 4) == [32768, 42178, 51589, 60999]
    assert doctor.port_sample(1000, 1000, 3) == [1000]
    assert doctor.port_sample(1000, 2000, 0) == []
    with pytest.raises(doctor.DoctorError):
        doctor.port_sample(2000, 1000, 2)


def test_worker_with_other_gpu_inventory_is_named(group):
    facts = healthy(group)
    facts['gpu-3']['gpu'] = gpu('query-gpu-8x-synthetic.csv')
    results = doctor.evaluate([group], facts, options=OPTIONS)
    assert failed(results) == [('gpu', 'gpu-3')]
    row = [r for r in results if r['check'] == 'gpu' and r['host'] == 'gpu-3'][0]
    assert '8 GPU(s)' in row['found'] and 'x 1 (at least 1)' in row['expected']


def test_fewer_gpus_than_planned_fail_everywhere():
    g = plan_group(nim_tensor_parallel=8, nim_gpus_per_node=8)
    facts = healthy(g)
    assert failed(doctor.evaluate([g], facts, options=OPTIONS)) == [('gpu', h) for h in HOSTS]
    for host in HOSTS:
        facts[host]['gpu'] = gpu('query-gpu-8x-synthetic.csv')
    assert failed(doctor.evaluate([g], facts, options=OPTIONS)) == []


def test_other_driver_is_named(group):
    facts = healthy(group)
    facts['gpu-2']['gpu'] = gpu(driver='570.86.15')
    assert failed(doctor.evaluate([group], facts, options=OPTIONS)) == [('gpu', 'gpu-2')]


def test_no_gpu_anywhere_is_skipped_when_not_required(group):
    facts = healthy(group)
    for host in HOSTS:
        facts[host]['gpu'] = build_facts([], reason='nvidia-smi not found in PATH')
    results = doctor.evaluate([group], facts, options=dict(OPTIONS, require_gpus=False))
    row = [r for r in results if r['check'] == 'gpu']
    assert len(row) == 1 and row[0]['status'] == 'skip' and 'no GPU' in row[0]['found']
    required = doctor.evaluate([group], facts, options=OPTIONS)
    assert failed(required) == [('gpu', h) for h in HOSTS]


def test_no_gpu_before_preparation_is_skipped_even_when_required(group):
    facts = healthy(group)
    for host in HOSTS:
        facts[host]['gpu'] = build_facts([], reason='nvidia-smi not found in PATH')
        facts[host]['probe']['docker_installed'] = False
    row = [r for r in doctor.evaluate([group], facts, options=OPTIONS) if r['check'] == 'gpu']
    assert row[0]['status'] == 'skip' and 'not prepared' in row[0]['found']


def test_blocked_port_names_the_target_and_the_port(group):
    facts = healthy(group)
    for source in ('gpu-1', 'gpu-3'):
        for attempt in facts[source]['connect']:
            if attempt['host'] == 'gpu-2' and attempt['port'] == 8000:
                attempt.update(ok=False, error='timed out (no answer: dropped by a firewall?)', clock_offset_s=None)
    results = doctor.evaluate([group], facts, options=OPTIONS)
    assert failed(results) == [('port', 'gpu-2')]
    row = [r for r in results if r['status'] == 'fail'][0]
    assert 'TCP 8000 ' in row['expected'] and 'gpu-1: timed out' in row['found'] and 'gpu-3: timed out' in row['found']


def _refuse(facts, target, port):
    for source in facts:
        for attempt in facts[source]['connect']:
            if attempt['host'] == target and attempt['port'] == port:
                attempt.update(ok=False, error='refused (nothing listens, or a firewall rejects)', clock_offset_s=None)


def test_a_port_held_by_an_outgoing_connection_is_not_judged(group):
    # The target's own outgoing connection had the port as its local end: no listener could bind
    # it, so the refusals say nothing about the path.
    facts = healthy(group)
    port = doctor.group_ports(group, [32768, 60999], 2)[-1]['port']
    _refuse(facts, 'gpu-2', port)
    facts['gpu-2']['listeners'] = {str(port): {'state': 'in_use', 'held_by': 'connection', 'seen': []}}
    results = doctor.evaluate([group], facts, options=OPTIONS)
    assert failed(results) == []
    row = [r for r in results if r['check'] == 'port' and r['host'] == 'gpu-2' and 'TCP %d ' % port in r['expected']][0]
    assert row['status'] == 'skip' and 'local end of one of its outgoing connections' in row['found']
    # Held by a listener (a rank), or refused on a port the listener held: a finding.
    facts['gpu-2']['listeners'] = {str(port): {'state': 'in_use', 'held_by': 'listener', 'seen': []}}
    assert failed(doctor.evaluate([group], facts, options=OPTIONS)) == [('port', 'gpu-2')]
    facts['gpu-2']['listeners'] = {str(port): {'state': 'listening', 'seen': []}}
    assert failed(doctor.evaluate([group], facts, options=OPTIONS)) == [('port', 'gpu-2')]


def test_missing_key_is_named_by_mesh_and_ssh(group):
    facts = healthy(group)
    facts['gpu-3']['probe']['mesh'].update(missing=['private.key', 'authorized_keys'], key_fingerprint=None,
                                           authorized=[])
    facts['gpu-1']['ssh'][1].update(ok=False, error='root@10.0.0.13: Permission denied (publickey).')
    results = doctor.evaluate([group], facts, options=OPTIONS)
    assert failed(results) == [('mesh_key', 'gpu-3'), ('ssh_key', 'gpu-3')]


def test_other_key_is_named(group):
    facts = healthy(group)
    facts['gpu-2']['probe']['mesh']['key_fingerprint'] = 'SHA256:other'
    assert failed(doctor.evaluate([group], facts, options=OPTIONS)) == [('mesh_key', 'gpu-2')]


def test_no_mesh_anywhere_is_skipped(group):
    facts = healthy(group)
    for host in HOSTS:
        facts[host]['probe']['mesh'] = {'dir': '/etc/nimstack/mesh/default', 'present': False}
    facts['gpu-1']['ssh'] = None
    results = doctor.evaluate([group], facts, options=OPTIONS)
    assert failed(results) == []
    skipped = dict((r['check'], r['found']) for r in results if r['status'] == 'skip')
    assert 'not set up yet' in skipped['mesh_key'] and 'not set up' in skipped['ssh_key']


def test_ray_group_skips_the_ssh_checks():
    g = plan_group(nim_launch_contract='ray')
    facts = healthy(g)
    facts['gpu-1']['ssh'] = None
    results = doctor.evaluate([g], facts, options=OPTIONS)
    assert failed(results) == []
    assert [r['status'] for r in results if r['check'] in ('mesh_key', 'ssh_key')] == ['skip', 'skip']


def test_unshared_cache_is_named(group):
    facts = healthy(group)
    facts['gpu-2']['cache_read'] = {'ok': False, 'error': 'the file is not there'}
    results = doctor.evaluate([group], facts, options=OPTIONS)
    assert failed(results) == [('shared_cache', 'gpu-2')]


def test_cache_path_missing_on_the_leader_is_skipped(group):
    facts = healthy(group)
    facts['gpu-1']['probe']['cache_exists'] = False
    facts['gpu-1']['cache_write'] = None
    row = [r for r in doctor.evaluate([group], facts, options=OPTIONS) if r['check'] == 'shared_cache']
    assert row[0]['status'] == 'skip' and 'does not exist' in row[0]['found']


def test_limits_shm_and_disk_against_the_plan(group):
    facts = healthy(group)
    facts['gpu-1']['probe'].update(memlock_kb=8192, memlock_source='this SSH session')
    facts['gpu-2']['probe']['shm_bytes'] = 64 * 1024 * 1024
    facts['gpu-3']['probe']['cache_free_bytes'] = 10 * doctor.GIB
    results = doctor.evaluate([group], facts, options=OPTIONS)
    assert failed(results) == [('disk', 'gpu-3'), ('memlock', 'gpu-1'), ('shm', 'gpu-2')]
    # llama-3.1-8b bf16: 8.0e9 x 2 bytes = 14.9 GiB of weights, x 1.1
    disk = [r for r in results if r['check'] == 'disk' and r['host'] == 'gpu-3'][0]
    assert disk['expected'].startswith('16.39 GiB')
    assert failed(doctor.evaluate([group], facts, options=dict(OPTIONS, memlock_min_kb=8192, shm_min_gb=0.0625,
                                                               disk_margin=0.5))) == []


def test_clock_skew_is_measured_from_the_leaders_connects(group):
    facts = healthy(group)
    for attempt in facts['gpu-1']['connect']:
        if attempt['host'] == 'gpu-3':
            attempt['clock_offset_s'] = 7.5
    results = doctor.evaluate([group], facts, options=OPTIONS)
    assert failed(results) == [('clock_skew', 'gpu-3')]
    assert doctor.clock_offsets(group, facts) == {'gpu-1': 0.0, 'gpu-2': 0.01, 'gpu-3': 7.5}


def test_unsynchronised_clock_fails_only_when_required(group):
    facts = healthy(group)
    facts['gpu-2']['probe']['clock_synced'] = False
    assert failed(doctor.evaluate([group], facts, options=OPTIONS)) == [('clock_sync', 'gpu-2')]
    assert failed(doctor.evaluate([group], facts, options=dict(OPTIONS, clock_require_sync=False))) == []


def test_rdma_ports_active_at_one_rate():
    g = plan_group(nim_network_profile='ib', nim_socket_ifname='eth0')
    assert g['valid'], g['errors']
    facts = healthy(g)

    def rdma(*rates):
        return {'present': True, 'devices': [{'name': 'mlx5_%d' % i, 'ports': [
            {'port': 1, 'state': 'ACTIVE' if r else 'DOWN', 'rate_gbps': r}]} for i, r in enumerate(rates)]}

    facts['gpu-1']['rdma'] = rdma(400.0, 400.0)
    facts['gpu-2']['rdma'] = rdma(400.0, 200.0)
    facts['gpu-3']['rdma'] = {'present': False, 'reason': 'no RDMA devices', 'devices': []}
    results = doctor.evaluate([g], facts, options=OPTIONS)
    assert failed(results) == [('rdma', 'gpu-2'), ('rdma', 'gpu-3')]
    slow = [r for r in results if r['check'] == 'rdma' and r['host'] == 'gpu-2'][0]
    assert '200.0' in slow['found'] and '400.0' in slow['expected']


def test_unreachable_host_is_reported_and_the_rest_still_judged(group):
    facts = healthy(group)
    del facts['gpu-3']
    for host in ('gpu-1', 'gpu-2'):
        facts[host]['connect'] = [a for a in facts[host]['connect'] if a['host'] != 'gpu-3']
    facts['gpu-1']['ssh'] = facts['gpu-1']['ssh'][:1]
    results = doctor.evaluate([group], facts, unreachable={'gpu-3': 'unreachable'}, options=OPTIONS)
    names = failed(results)
    assert ('reachable', 'gpu-3') in names and ('ssh_key', 'gpu-3') in names
    assert all(name[1] == 'gpu-3' for name in names)
    assert any(r['check'] == 'port' and r['status'] == 'pass' for r in results)


def test_kubernetes_groups_are_left_out(group):
    k8s = copy.deepcopy(group)
    k8s['mode'] = 'kubernetes'
    assert doctor.evaluate([k8s], {}, options=OPTIONS) == []


def test_planner_errors_and_warnings_are_folded_in():
    g = plan_group(nim_tensor_parallel=3)
    assert not g['valid']
    results = doctor.evaluate([g], {}, options=OPTIONS)
    assert any(r['check'] == 'plan' and r['status'] == 'fail' and 'nim_tensor_parallel' in r['found'] for r in results)
    assert set(r['check'] for r in results) == {'plan', 'reachable'}


def test_normalize_host_reads_the_registered_results():
    raw = {'gpu': {'ansible_facts': {'nvidia_gpu': gpu()}, 'changed': False},
           'rdma': {'skipped': True},
           'probe': {'probe': {'cache_write': {'ok': True, 'error': '', 'path': '/x'}}},
           'peers': {'connects': [{'host': 'b'}], 'ssh': [{'host': 'b', 'ok': True}], 'cache_read': {'ok': True}},
           'listeners': {'finished': 1, 'listeners': {'60999': {'state': 'in_use', 'held_by': 'connection'}}},
           'ssh_skipped': ''}
    facts = doctor.normalize_host(raw)
    assert facts['listeners'] == {'60999': {'state': 'in_use', 'held_by': 'connection'}}
    assert facts['gpu']['count'] == 1 and facts['rdma'] is None and facts['errors'] == []
    assert facts['connect'] == [{'host': 'b'}] and facts['ssh'][0]['ok'] and facts['cache_read']['ok']
    assert facts['cache_write']['path'] == '/x' and facts['ssh_skipped'] is None


def test_a_failed_probe_is_a_finding_not_a_lost_host(group):
    raw = {'gpu': {'failed': False, 'failed_when_result': False, 'msg': 'Error executing command.', 'rc': 8},
           'probe': {'probe': healthy(group)['gpu-2']['probe']},
           'peers': {'connects': healthy(group)['gpu-2']['connect'], 'cache_read': {'ok': True, 'error': ''}}}
    facts = healthy(group)
    facts['gpu-2'] = doctor.normalize_host(raw)
    results = doctor.evaluate([group], facts, options=OPTIONS)
    assert failed(results) == [('gpu', 'gpu-2'), ('probe', 'gpu-2')]
    row = [r for r in results if r['check'] == 'probe'][0]
    assert row['found'] == 'nvidia_gpu_facts: Error executing command.'


def test_report_and_markdown(group):
    facts = healthy(group)
    facts['gpu-3']['gpu'] = gpu('query-gpu-8x-synthetic.csv')
    report = doctor.build_report(doctor.evaluate([group], facts, options=OPTIONS), '2026-01-01T00:00:00Z')
    assert not report['ok'] and report['summary']['fail'] == 1
    text = doctor.render_markdown(report)
    assert text.startswith('# nimstack preflight doctor')
    assert 'FAILED: 1 failed' in text
    assert '| gpu | default | gpu-3 |' in text
    assert '|---|---|---|---|---|---|' in text
    lines = doctor.summary_lines(report)
    assert len(lines) == 1 and lines[0].startswith('gpu [default] gpu-3: expected')


# Not a capture: the tail of an all_reduce_perf run in the format nccl-tests prints it
# (src/common.cu: "# Out of bounds values : %d %s", "# Avg bus bandwidth    : %g %s"); the figures
# are made up.
NCCL_TAIL_SYNTHETIC = """#  Rank  0 Group  0 Pid   1234 on     gpu-1 device  0 [0x18] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
  1073741824     268435456     float     sum      -1    24000   44.74   41.23      0    23900   44.93   41.40      0
# Out of bounds values : 0 OK
""" + '# Avg bus bandwidth    : 41.315 \n#\n'


def test_parse_busbw():
    assert doctor.parse_busbw(NCCL_TAIL_SYNTHETIC) == 41.315
    assert doctor.parse_busbw(' Avg bus bandwidth    : 1.5e+02 OK\n') == 150.0
    assert doctor.parse_busbw('no such line') is None


def test_nccl_not_requested_or_without_gpus_is_skipped(group):
    facts = healthy(group)
    row = [r for r in doctor.evaluate([group], facts, options=OPTIONS) if r['check'] == 'nccl'][0]
    assert row['status'] == 'skip' and 'not requested' in row['found']
    facts['gpu-2']['gpu'] = build_facts([], reason='nvidia-smi not found in PATH')
    results = doctor.evaluate([group], facts, options=dict(OPTIONS, nccl_test=True))
    row = [r for r in results if r['check'] == 'nccl'][0]
    assert row['status'] == 'skip' and 'no GPU on gpu-2' in row['found']


def test_nccl_bandwidth_against_the_interconnect():
    g = plan_group(nim_interconnect='ib_ndr')
    assert g['layout']['interconnect_gbps'] == 50
    facts = healthy(g)
    facts['gpu-1']['nccl'] = {'rc': 0, 'stdout': NCCL_TAIL_SYNTHETIC, 'stderr': ''}
    options = dict(OPTIONS, nccl_test=True, nccl_min_fraction=0.5)
    row = [r for r in doctor.evaluate([g], facts, options=options) if r['check'] == 'nccl'][0]
    assert row['status'] == 'pass' and row['found'] == '41.31 GB/s' and 'at least 25.0 GB/s' in row['expected']
    row = [r for r in doctor.evaluate([g], facts, options=dict(options, nccl_min_fraction=0.9))
           if r['check'] == 'nccl'][0]
    assert row['status'] == 'fail' and row['host'] == 'gpu-1'
    facts['gpu-1']['nccl'] = {'rc': 124, 'stdout': '', 'stderr': 'mpirun: command not found'}
    row = [r for r in doctor.evaluate([g], facts, options=options) if r['check'] == 'nccl'][0]
    assert row['status'] == 'fail' and 'rc 124' in row['found'] and 'mpirun' in row['found']


def test_two_real_h100_hosts_of_one_driver_pass_the_gpu_check(group):
    # The second capture (tests/unit/fixtures/h100_host) is another H100 host: another UUID, the same
    # model and driver, so the group's GPU check passes on both and names what it found.
    other = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'h100_host', 'query-gpu.csv')
    with open(other, newline='') as handle:
        second = build_facts(parse_query_csv(handle.read()), cuda_version='13.0')
    assert second['gpus'][0]['uuid'] != gpu()['gpus'][0]['uuid']
    facts = healthy(group)
    facts['gpu-2']['gpu'] = second
    results = [r for r in doctor.evaluate([group], facts, options=OPTIONS) if r['check'] == 'gpu']
    assert [r['status'] for r in results] == ['pass'] * 3
    assert results[1]['found'] == 'NVIDIA H100 80GB HBM3 x 1, driver 580.159.04'
