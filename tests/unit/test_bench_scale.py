# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The arithmetic of the scale benchmarks: benchmarks/bench_overlap_report.py and benchmarks/bench_controller.py."""

import importlib.util
import os

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(REPO, 'benchmarks', name + '.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


report = _load('bench_overlap_report')
controller = _load('bench_controller')

T0 = 1_800_000_000.0


def _iso(offset):
    return report.datetime.datetime.fromtimestamp(T0 + offset, report.datetime.timezone.utc).strftime(
        '%Y-%m-%dT%H:%M:%S.%fZ')


def _task(name, start, end, skipped=False):
    return {'task': {'name': 'nimstack.multinode.nim_docker : ' + name,
                     'duration': {'start': _iso(start), 'end': _iso(end)}},
            'hosts': {'h1': {'skipped': skipped}}}


def _event(kind, action, offset, name=''):
    return {'Type': kind, 'Action': action, 'timeNano': int((T0 + offset) * 1e9),
            'Actor': {'Attributes': {'name': name}}}


def _overlap_run():
    play = {'plays': [{'tasks': [
        _task('Check the inputs', 0, 1),
        _task("Start the group's model download before the image transfers", 10, 12),
        _task('Find out whether the downloader image is already on the leader', 10, 10.5),
        _task('Ensure the image is loaded from the archive, in the background', 12, 13),
        _task('Wait for the image on every node of the group', 13, 70),
        _task('Wait for /v1/health/ready on the leader in group default', 100, 130),
        _task('Wait for /v1/health/ready on the leader in group other', 131, 132, skipped=True),
    ]}]}
    events = {
        'h1': [_event('image', 'load', 11), _event('image', 'load', 60),
               _event('container', 'start', 11.5, 'nim-default-download'),
               _event('container', 'die', 90, 'nim-default-download')],
        'h2': [_event('image', 'load', 65)],
    }
    return play, events


def test_overlap_run_measures_each_phase_from_its_own_start():
    play, events = _overlap_run()
    run = report.analyse(play, events, {'mode': 'overlap', 'playbook_s': 200})
    # First transfer task (10) to the end of the last ready wait that ran (130).
    assert run['time_to_ready_s'] == 120.0
    # The load task started at 12; the slowest node's last load at 65.
    assert run['pull_s'] == 53.0
    # The download starts with the include at 10 and ends when its container dies at 90.
    assert run['download_s'] == 80.0
    assert run['download_container_s'] == 78.5
    assert run['container_start_s'] == 40.0
    assert run['playbook_s'] == 200


def test_verdict_applies_the_15_percent_bound_to_overlapped_runs_only():
    play, events = _overlap_run()
    over = report.analyse(play, events, {'mode': 'overlap'})
    seq = dict(over, mode='sequential', time_to_ready_s=175.0)
    result = report.verdict([seq, over])
    assert over['max_transfer_plus_start_s'] == 120.0
    assert over['within_15_percent'] is True
    assert 'within_15_percent' not in seq
    assert result['saved_s'] == 55.0
    assert result['passed'] is True
    slow = dict(over, time_to_ready_s=139.0)
    assert report.verdict([slow])['passed'] is False


def test_a_run_without_a_download_is_refused():
    play, events = _overlap_run()
    events['h1'] = [e for e in events['h1'] if e['Type'] != 'container']
    with pytest.raises(ValueError, match='end of the download'):
        report.analyse(play, events, {'mode': 'overlap'})


def test_generated_inventory_has_groups_of_hosts_with_unroutable_addresses():
    inventory = controller.inventory(3, 4)
    children = inventory['all']['children']['nim_nodes']['children']
    assert sorted(children) == ['g0000', 'g0001', 'g0002']
    hosts = [h for group in children.values() for h in group['hosts'].values()]
    assert len(hosts) == 12
    assert len({h['ansible_host'] for h in hosts}) == 12
    assert all(h['ansible_host'].startswith('198.18.') for h in hosts)
    assert children['g0001']['vars'] == {'nim_group': 'g0001', 'nim_pipeline_parallel': 4}
    # 1,000 hosts stay within the benchmarking range with valid last octets.
    big = controller.inventory(125, 8)['all']['children']['nim_nodes']['children']
    last = [int(h['ansible_host'].rsplit('.', 1)[1]) for g in big.values() for h in g['hosts'].values()]
    assert len(last) == 1000 and min(last) >= 1 and max(last) <= 250


def test_the_callback_document_is_read_between_warnings_and_the_task_profile():
    text = ('[WARNING]: a warning\nTuesday 24 November 2026  16:01:55 +0000 (0:00:00.015) ****** \n'
            '{"plays": [{"tasks": []}], "stats": {}}\n'
            'TASKS RECAP ****\nstart the group --- 3.02s\n{not json}\n')
    assert report.callback_document(text) == {'plays': [{'tasks': []}], 'stats': {}}


def test_sizes_and_calls():
    assert controller.parse_size('125x8') == (125, 8)
    for bad in ('125', 'x8', '0x8', '12x-1'):
        with pytest.raises(ValueError):
            controller.parse_size(bad)
    document = {'plays': [{'tasks': [
        {'hosts': {'a': {}, 'b': {'skipped': True}}},
        {'hosts': {'localhost': {'changed': True}}},
        {'hosts': {'localhost': {'results': [{}, {'skipped': True}, {}]}}},
    ]}]}
    assert controller.count_calls(document) == (4, 3)


def test_stage_selection():
    assert controller.parse_args([]) == (list(controller.DEFAULT_SIZES), controller.STAGES)
    assert controller.parse_args(['--stages', 'preflight', '125x8']) == (['125x8'], ('preflight',))
    with pytest.raises(ValueError, match='unknown stage'):
        controller.parse_args(['--stages', 'doctor'])
