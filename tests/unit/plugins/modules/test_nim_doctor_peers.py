# -*- coding: utf-8 -*-
"""nim_doctor_peers on 127.0.0.1: a listener run in a thread, the check against it, a closed port."""

import socket
import threading

from ansible_collections.nimstack.multinode.plugins.module_utils import doctor_probe
from ansible_collections.nimstack.multinode.plugins.modules import nim_doctor_peers
from ansible_collections.nimstack.multinode.tests.unit.plugins.modules.utils import run_module


def _free_port():
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def _group(api, other):
    return {'name': 'default', 'contract': 'leader_address', 'ports': {'api': api, 'master': other},
            'ranks': [{'host': 'a', 'address': '127.0.0.1', 'rank': 0}, {'host': 'b', 'address': '127.0.0.1', 'rank': 1}]}


def test_check_connects_to_a_listener(tmp_path):
    group = _group(_free_port(), _free_port())
    token = tmp_path / 'token'
    token.write_text('t0ken\n')
    out = {}
    ports = sorted(group['ports'].values())
    # The module's own listen state is run below; here the listener runs in a thread beside it.
    thread = threading.Thread(target=lambda: out.update(doctor_probe.listen(ports, ['127.0.0.1'], 10, '127.0.0.1')))
    thread.start()
    result, failed = run_module(nim_doctor_peers.main, {
        'state': 'check', 'group': group, 'host': 'a', 'port_range': [], 'timeout': 5,
        'cache_file': str(token), 'cache_token': 't0ken'})
    thread.join(15)
    assert not failed, result
    assert [c['ok'] for c in result['connects']] == [True, True]
    assert all(c['clock_offset_s'] is not None for c in result['connects'])
    assert result['cache_read'] == {'ok': True, 'error': ''}
    assert all(out[p]['seen'] == ['127.0.0.1'] for p in ports)


def test_listen_state_gives_up_after_its_window():
    group = _group(_free_port(), _free_port())
    result, failed = run_module(nim_doctor_peers.main, {
        'state': 'listen', 'group': group, 'host': 'a', 'port_range': [], 'window': 0.5})
    assert not failed
    assert sorted(result['listeners']) == sorted(str(p) for p in group['ports'].values())
    assert all(v['state'] == 'listening' and v['seen'] == [] for v in result['listeners'].values())


def test_closed_ports_and_foreign_cache_reported():
    group = _group(_free_port(), _free_port())
    result, failed = run_module(nim_doctor_peers.main, {
        'state': 'check', 'group': group, 'host': 'a', 'port_range': [], 'timeout': 1,
        'cache_file': '/nonexistent/.nimstack-doctor-default', 'cache_token': 'x'})
    assert not failed
    assert all(not c['ok'] and 'refused' in c['error'] for c in result['connects'])
    assert not result['cache_read']['ok'] and 'not there' in result['cache_read']['error']


def test_bad_port_range_fails():
    result, failed = run_module(nim_doctor_peers.main, {
        'state': 'check', 'group': _group(1, 2), 'host': 'a', 'port_range': [5]})
    assert failed and 'port_range' in result['msg']
