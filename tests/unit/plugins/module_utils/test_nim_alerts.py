# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The alert rules as data; what they do on series is promtool's test (tests/monitoring)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.nimstack.multinode.plugins.module_utils import nim_alerts
from ansible_collections.nimstack.multinode.plugins.module_utils.group_supervisor import STATES
from ansible_collections.nimstack.multinode.plugins.module_utils.frontend import backend_name, frontend_pools


def _rules(groups):
    return dict((rule['alert'], rule) for group in groups for rule in group['rules'])


def test_the_nine_alerts_of_the_contract_in_order():
    groups = nim_alerts.rule_groups()
    assert nim_alerts.alert_names(groups) == list(nim_alerts.ALERTS)
    assert [g['name'] for g in groups] == ['nimstack-nim', 'nimstack-gpu']
    assert len(nim_alerts.ALERTS) == 9


@pytest.mark.parametrize('name', nim_alerts.ALERTS)
def test_every_rule_has_severity_summary_description_and_runbook(name):
    rule = _rules(nim_alerts.rule_groups())[name]
    assert rule['labels']['severity'] in ('critical', 'warning')
    assert rule['annotations']['summary'] and rule['annotations']['description']
    assert rule['annotations']['runbook_url'] == nim_alerts.DEFAULT_RUNBOOK_BASE + '#' + name.lower()


def test_defaults_are_in_the_rules():
    rules = _rules(nim_alerts.rule_groups())
    assert rules['NIMGroupNotServing']['for'] == '1m'
    assert 'for' not in rules['NIMGroupFailed']
    assert rules['NIMKVCacheHigh']['expr'].endswith('> 0.9')
    assert rules['NIMRequestsWaitingHigh']['expr'].endswith('> 10')
    assert rules['NIMTimeToFirstTokenHigh']['expr'].startswith('histogram_quantile(0.95, ')
    assert '[5m]' in rules['NIMTimeToFirstTokenHigh']['expr']
    assert rules['GPUTooHot']['expr'] == 'DCGM_FI_DEV_GPU_TEMP{job="dcgm"} > 85'
    assert 'offset 1h' in rules['GPUXidError']['expr']


def test_every_threshold_and_duration_reaches_its_rule():
    overrides = {'not_serving_for': '45s', 'failed_for': '2m', 'restart_budget_fraction': 0.75,
                 'restart_budget_for': '30s', 'front_door_for': '3m', 'kv_cache_fraction': 0.8, 'kv_cache_for': '7m',
                 'requests_waiting': 4, 'requests_waiting_for': '11m', 'ttft_quantile': 0.99, 'ttft_seconds': 1.5,
                 'ttft_window': '10m', 'ttft_for': '15m', 'xid_window': '30m', 'gpu_temp_celsius': 90,
                 'gpu_temp_for': '2m', 'runbook_base': 'https://wiki.example.com/nim'}
    rules = _rules(nim_alerts.rule_groups(overrides))
    assert rules['NIMGroupNotServing']['for'] == '45s'
    assert rules['NIMGroupFailed']['for'] == '2m'
    assert rules['NIMRestartBudgetBurning']['for'] == '30s' and rules['NIMRestartBudgetBurning']['expr'].endswith('>= 0.75')
    assert rules['NIMLeaderOutOfFrontDoor']['for'] == '3m'
    assert rules['NIMKVCacheHigh']['for'] == '7m' and rules['NIMKVCacheHigh']['expr'].endswith('> 0.8')
    assert rules['NIMRequestsWaitingHigh']['for'] == '11m' and rules['NIMRequestsWaitingHigh']['expr'].endswith('> 4')
    ttft = rules['NIMTimeToFirstTokenHigh']
    assert ttft['for'] == '15m' and ttft['expr'].startswith('histogram_quantile(0.99, ') and '[10m]' in ttft['expr']
    assert ttft['expr'].endswith('> 1.5')
    assert 'offset 30m' in rules['GPUXidError']['expr'] and '[30m]' in rules['GPUXidError']['expr']
    assert rules['GPUTooHot']['for'] == '2m' and rules['GPUTooHot']['expr'].endswith('> 90')
    assert rules['GPUTooHot']['annotations']['runbook_url'] == 'https://wiki.example.com/nim#gputoohot'
    assert set(overrides) | {'not_serving_in_maintenance'} == set(nim_alerts.DEFAULTS)


def test_maintenance_is_left_out_unless_asked():
    assert 'unless on (group)' in _rules(nim_alerts.rule_groups())['NIMGroupNotServing']['expr']
    expr = _rules(nim_alerts.rule_groups({'not_serving_in_maintenance': True}))['NIMGroupNotServing']['expr']
    assert 'maintenance' not in expr


def test_the_states_and_names_the_rules_read_are_the_supervisors_and_the_front_doors():
    rules = _rules(nim_alerts.rule_groups())
    for state in ('formed', 'failed', 'maintenance'):
        assert state in STATES
    assert 'state="formed"' in rules['NIMGroupNotServing']['expr']
    assert 'state="failed"' in rules['NIMGroupFailed']['expr']
    # The backend and server names the front door writes match the rule's regexes.
    pools = frontend_pools({'g1': {'mode': 'docker', 'valid': True, 'leader': {'address': '10.0.0.1'},
                                   'ports': {'api': 8000}, 'image': 'nvcr.io/nim/meta/llama-3.1-8b-instruct:1.0'}})
    assert pools[0]['backend'] == backend_name(pools[0]['model'])
    assert pools[0]['backend'].startswith('model_')
    assert pools[0]['servers'][0]['name'] == nim_alerts.FRONT_DOOR_SERVER_PREFIX + 'g1'


@pytest.mark.parametrize('overrides, message', [
    ({'kv_cache_fraction': 1.5}, 'kv_cache_fraction=1.5 is out of range'),
    ({'kv_cache_fraction': 0}, 'kv_cache_fraction=0 is out of range'),
    ({'kv_cache_fraction': '0.9'}, "kv_cache_fraction='0.9' is not a number"),
    ({'restart_budget_fraction': True}, 'restart_budget_fraction=True is not a number'),
    ({'ttft_quantile': 1}, 'ttft_quantile=1 is out of range'),
    ({'ttft_seconds': -1}, 'ttft_seconds=-1 is out of range'),
    ({'requests_waiting': -1}, 'requests_waiting=-1 is out of range'),
    ({'gpu_temp_celsius': 400}, 'gpu_temp_celsius=400 is out of range'),
    ({'gpu_temp_celsius': float('nan')}, 'gpu_temp_celsius=nan is not a number'),
    ({'not_serving_for': '1 minute'}, "not_serving_for='1 minute' is not a Prometheus duration"),
    ({'not_serving_for': 60}, 'not_serving_for=60 is not a Prometheus duration'),
    ({'not_serving_for': ''}, "not_serving_for='' is not a Prometheus duration"),
    ({'ttft_window': '0s'}, "ttft_window='0s' must be longer than 0s"),
    ({'not_serving_in_maintenance': 'yes'}, "not_serving_in_maintenance='yes' must be true or false"),
    ({'runbook_base': 'docs/operations.md'}, 'must be an http(s) URL'),
    ({'runbook_base': 'https://x/ops#top'}, 'must be an http(s) URL'),
    ({'kv_cache': 0.9}, "alert threshold 'kv_cache' is unknown; known: failed_for, front_door_for"),
])
def test_bad_thresholds_are_refused_naming_the_key(overrides, message):
    assert any(message in p for p in nim_alerts.threshold_problems(overrides))
    with pytest.raises(nim_alerts.AlertConfigError) as exc:
        nim_alerts.rule_groups(overrides)
    assert message in str(exc.value)


def test_every_problem_is_named_at_once():
    problems = nim_alerts.threshold_problems({'kv_cache_fraction': 2, 'gpu_temp_for': 'soon', 'nope': 1})
    assert len(problems) == 3


def test_not_a_mapping():
    assert nim_alerts.threshold_problems(['x']) == ['the alert thresholds must be a mapping of names to values, got list']
    assert nim_alerts.threshold_problems(None) == []
    assert nim_alerts.threshold_problems({}) == []


@pytest.mark.parametrize('text, seconds', [('0s', 0), ('90s', 90), ('5m', 300), ('1h30m', 5400), ('1d', 86400),
                                           ('500ms', 0.5), ('1w', 604800)])
def test_duration_seconds(text, seconds):
    assert nim_alerts.duration_seconds(text) == seconds


def test_duration_seconds_refuses_garbage():
    with pytest.raises(ValueError):
        nim_alerts.duration_seconds('5 m')
    with pytest.raises(ValueError):
        nim_alerts.duration_seconds('')


def test_the_rules_are_new_each_call():
    first = nim_alerts.rule_groups()
    first[0]['rules'][0]['labels']['severity'] = 'changed'
    assert nim_alerts.rule_groups()[0]['rules'][0]['labels']['severity'] == 'critical'
