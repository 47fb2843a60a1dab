# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The arithmetic of the fault benchmark's rows (benchmarks/bench_faults.py report)."""

import importlib.util
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, 'benchmarks'))
_SPEC = importlib.util.spec_from_file_location('bench_faults', os.path.join(REPO, 'benchmarks', 'bench_faults.py'))
faults = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(faults)

T = 1_800_000_000.0


def _request(start, end, via='door', group='fa', error=None, cut=False):
    return {'start': T + start, 'end': T + end, 'via': via, 'group': group, 'error': error, 'cut': cut}


def test_a_fault_row_counts_what_the_clients_and_the_front_door_saw():
    fault = {'fault': 'rank-killed', 'group': 'fa', 'other': 'fb', 'struck': T + 100, 'ended': T + 100,
             'served': T + 130, 'state': 'formed', 'alert_fired_s': 14.0, 'alert_cleared_s': 40.0}
    requests = [
        _request(90, 99),                                        # before the fault: not counted
        _request(98, 101, error='a stream cut short', cut=True),  # in flight when it struck
        _request(99, 105),                                       # in flight, answered by the other path
        _request(101, 102, group=None, error='HTTP 503'),        # after it, failed
        _request(103, 110, group='fb'),                          # after it, answered by the other group
        _request(99, 104, via='direct', group='fb'),             # the other group, straight: fine
        _request(120, 121, via='direct', group='fb', error='HTTP 500'),
        _request(200, 201, via='direct', group='fb', error='HTTP 500'),  # past the window: not counted
    ]
    series = [{'t': T + t, 'group': g, 'weight': w, 'state': s} for t, g, w, s in (
        (99, 'fa', 100.0, 'UP'), (104, 'fa', 100.0, 'UP'), (108, 'fa', 0.0, 'UP'), (112, 'fa', 0.0, 'DOWN'),
        (131, 'fa', 100.0, 'UP'), (108, 'fb', 100.0, 'UP'))]
    row = faults.fault_row(fault, requests, series)
    assert row['door_failed_in_flight'] == 1 and row['door_failed_after'] == 1 and row['door_requests_after'] == 2
    assert row['door_streams_cut'] == 1
    assert row['other_group_failed'] == 1 and row['other_group_requests'] == 2
    assert row['door_out_s'] == 8.0 and row['door_back_s'] == 31.0
    assert row['served_again_after_end_s'] == 30.0 and row['served_again_after_fault_s'] == 30.0
    assert row['door_errors'] == ['HTTP 503', 'a stream cut short']


def test_a_fault_that_lasts_and_a_group_that_never_serves_again_read_as_none():
    fault = {'fault': 'host-lost', 'group': 'fb', 'other': 'fa', 'struck': T, 'ended': None, 'served': None,
             'state': 'failed', 'alert_fired_s': 20.0, 'alert_cleared_s': None}
    # The front door's weight going to 0 for a later fault, past this one's window, is not this one's.
    later = [{'t': T + 200, 'group': 'fb', 'weight': 0.0, 'state': 'UP'}]
    row = faults.fault_row(fault, [_request(30, 31, group=None, error='HTTP 503')], later)
    assert row['fault_lasted_s'] is None and row['served_again_after_fault_s'] is None
    assert row['door_out_s'] is None and row['door_failed_after'] == 1
