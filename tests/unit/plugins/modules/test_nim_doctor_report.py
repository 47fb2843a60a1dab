# -*- coding: utf-8 -*-
"""nim_doctor_report: judges the collected results, writes JSON + Markdown, never fails on findings."""

import json
import os

from ansible_collections.nimstack.multinode.plugins.modules import nim_doctor_report
from ansible_collections.nimstack.multinode.tests.unit.plugins.module_utils.test_doctor import (
    HOSTS, OPTIONS, gpu, healthy, plan_group)
from ansible_collections.nimstack.multinode.tests.unit.plugins.modules.utils import run_module


def _raw(facts):
    """The evaluate-shaped facts back in the shape the role hands the module."""
    raw = {}
    for host, f in facts.items():
        probe = dict(f['probe'], cache_write=f['cache_write'])
        peers = {'connects': f['connect']}
        if f['ssh'] is not None:
            peers['ssh'] = f['ssh']
        if f['cache_read'] is not None:
            peers['cache_read'] = f['cache_read']
        raw[host] = {'gpu': {'ansible_facts': {'nvidia_gpu': f['gpu']}}, 'rdma': {'skipped': True},
                     'probe': {'probe': probe}, 'peers': peers, 'ssh_skipped': ''}
    return raw


def test_healthy_report_written(tmp_path):
    group = plan_group()
    result, failed = run_module(nim_doctor_report.main, {
        'groups': [group], 'facts': _raw(healthy(group)), 'options': OPTIONS, 'report_dir': str(tmp_path / 'r')})
    assert not failed and not result['changed']
    assert result['report']['ok'] and result['failures'] == []
    with open(result['json_path']) as handle:
        assert json.load(handle)['summary'] == result['report']['summary']
    with open(result['markdown_path']) as handle:
        assert handle.read().startswith('# nimstack preflight doctor\n\nPASSED')


def test_fault_and_unreachable_host_named(tmp_path):
    group = plan_group()
    facts = healthy(group)
    facts['gpu-3']['gpu'] = gpu('query-gpu-8x-synthetic.csv')
    raw = _raw(facts)
    del raw['gpu-2']
    result, failed = run_module(nim_doctor_report.main, {
        'groups': [group], 'facts': raw, 'unreachable': {'gpu-2': 'unreachable'}, 'options': OPTIONS,
        'report_dir': str(tmp_path)}, check_mode=True)
    assert not failed
    named = set((f['check'], f['host']) for f in result['report']['failures'])
    assert ('gpu', 'gpu-3') in named and ('reachable', 'gpu-2') in named
    assert all(name[1] in ('gpu-2', 'gpu-3') for name in named)
    assert os.path.isfile(os.path.join(str(tmp_path), 'doctor-report.md'))
    assert any(line.startswith('reachable [default] gpu-2') for line in result['failures'])


def test_unwritable_report_dir_fails_naming_it(tmp_path):
    blocker = tmp_path / 'file'
    blocker.write_text('x')
    group = plan_group()
    result, failed = run_module(nim_doctor_report.main, {
        'groups': [group], 'facts': _raw(healthy(group)), 'report_dir': str(blocker / 'sub')})
    assert failed and 'report_dir=' in result['msg']


def test_hosts_listed_in_order():
    assert HOSTS == ['gpu-1', 'gpu-2', 'gpu-3']
