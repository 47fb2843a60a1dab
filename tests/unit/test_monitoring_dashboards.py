# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The dashboard check (tests/monitoring/check_dashboards.py): metric names out of PromQL, and a
panel naming a metric no target serves named with its dashboard, panel and metric."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy
import glob
import importlib.util
import json
import os

import pytest

from ansible_collections.nimstack.multinode.plugins.module_utils.nim_alerts import rule_groups

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_SPEC = importlib.util.spec_from_file_location('check_dashboards',
                                               os.path.join(REPO, 'tests', 'monitoring', 'check_dashboards.py'))
check = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(check)

SERVED = check.read_served(sorted(glob.glob(os.path.join(REPO, 'tests', 'monitoring', 'served', '*.txt'))))


def _boards():
    boards = []
    for path in sorted(glob.glob(os.path.join(REPO, 'dashboards', '*.json'))):
        with open(path) as handle:
            boards.append((os.path.basename(path), json.load(handle)))
    return boards


@pytest.mark.parametrize('expr, names', [
    ('up', ['up']),
    ('rate(foo_total{job="nim", x=~"a|b"}[5m])', ['foo_total']),
    ('sum by (group, le) (rate(h_bucket{group=~"$group"}[$__rate_interval]))', ['h_bucket']),
    ('histogram_quantile(0.95, sum(rate(h_bucket[5m])) by (le))', ['h_bucket']),
    ('a / on (group) group_left (model) b', ['a', 'b']),
    ('a and ignoring (instance) b or c unless d', ['a', 'b', 'c', 'd']),
    ('x offset 1h == bool 2.5e3', ['x']),
    ('label_replace(m == 0, "group", "$1", "server", "group_(.+)")', ['m']),
    ('max_over_time(m[1h:5m]) > Inf', ['m']),
    ('time() - process_start_time_seconds', ['process_start_time_seconds']),
    ('DCGM_FI_DEV_GPU_UTIL{instance=~"${node}"}', ['DCGM_FI_DEV_GPU_UTIL']),
    ('label_values(up{job="nim", model="$model"}, group)', ['up']),
    ('label_values(model)', []),
    ('vector(1)', []),
    ('"a string" ', []),
])
def test_metric_names(expr, names):
    assert check.metric_names(expr) == names


def test_the_committed_dashboards_read_served_metrics_only():
    boards = _boards()
    assert [board[0] for board in boards] == ['nimstack-nim-model.json']
    assert check.problems(boards, SERVED) == []


def test_the_alert_rules_read_served_metrics_only():
    assert check.problems([('rules', {'rules': check.rule_queries({'groups': rule_groups()})})], SERVED) == []


def test_a_panel_naming_an_unserved_metric_is_named_with_its_panel():
    name, board = _boards()[0]
    board = copy.deepcopy(board)
    panel = [p for p in board['panels'] if p.get('targets')][0]
    panel['targets'][0]['expr'] = 'sum(rate(vllm:num_requests_swapped{job="nim"}[5m]))'
    assert check.problems([(name, board)], SERVED) == [
        '%s: panel "%s" (A): metric vllm:num_requests_swapped is not served by any target' % (name, panel['title'])]


def test_a_panel_inside_a_collapsed_row_is_checked():
    board = {'panels': [{'type': 'row', 'title': 'r', 'panels': [
        {'title': 'hidden', 'targets': [{'refId': 'B', 'expr': 'nope_total'}]}]}]}
    assert check.problems([('b.json', board)], {'up'}) == [
        'b.json: panel "hidden" (B): metric nope_total is not served by any target']


def test_a_variable_naming_an_unserved_metric_is_named():
    board = {'templating': {'list': [{'type': 'query', 'name': 'node',
                                      'query': {'query': 'label_values(DCGM_FI_DEV_GPU_UTILIZATION, instance)'}}]}}
    assert check.problems([('b.json', board)], SERVED) == [
        'b.json: variable $node: metric DCGM_FI_DEV_GPU_UTILIZATION is not served by any target']


def test_main_fails_and_names_the_panel(tmp_path, capsys):
    served = tmp_path / 'served.txt'
    served.write_text('# a comment\nup\n')
    board = tmp_path / 'b.json'
    board.write_text(json.dumps({'panels': [{'title': 'P', 'targets': [{'refId': 'A', 'expr': 'up + down_total'}]}]}))
    assert check.main(['--served', str(served), str(board)]) == 1
    assert 'panel "P" (A): metric down_total is not served' in capsys.readouterr().err
    served.write_text('up\ndown_total\n')
    assert check.main(['--served', str(served), str(board)]) == 0


def test_the_model_dashboard_shows_what_an_operator_needs():
    board = dict(_boards())['nimstack-nim-model.json']
    exprs = [expr for _where, expr in check.queries(board)]
    names = set(name for expr in exprs for name in check.metric_names(expr))
    assert names >= {
        'request_success_total', 'request_failure_total', 'time_to_first_token_seconds_bucket',
        'time_per_output_token_seconds_bucket', 'gpu_cache_usage_perc', 'num_requests_running', 'num_requests_waiting',
        'nimstack_group_state', 'nimstack_group_restarts', 'nimstack_group_restart_budget', 'haproxy_server_status',
        'DCGM_FI_DEV_GPU_UTIL', 'DCGM_FI_DEV_FB_USED', 'DCGM_FI_DEV_GPU_TEMP'}
    for histogram in ('time_to_first_token_seconds_bucket', 'time_per_output_token_seconds_bucket'):
        quantiles = sorted(expr.split('(', 2)[1].split(',')[0] for expr in exprs
                           if histogram in expr and expr.startswith('histogram_quantile('))
        assert quantiles == ['0.5', '0.95', '0.99'], histogram
    variables = dict((var['name'], var) for var in board['templating']['list'])
    assert variables['model']['query']['query'] == 'label_values(up{job="nim"}, model)'
    # every NIM panel is scoped to the model picked
    assert all('model="$model"' in expr for expr in exprs if 'job="nim"' in expr and not expr.startswith('label_values'))
