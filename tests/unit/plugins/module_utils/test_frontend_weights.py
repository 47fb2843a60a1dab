"""The front door's load-aware weights (plugins/module_utils/frontend_weights.py) and the service
that sets them (roles/nim_frontend/files/nimstack_frontend_weights.py) against a leader's metrics
and a stand-in of HAProxy's runtime API."""

import importlib.util
import json
import os
import socket
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
import yaml

from ansible_collections.nimstack.multinode.plugins.module_utils import frontend_weights as fw

ROLE = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'roles', 'nim_frontend')

NIM_METRICS = '''# HELP num_requests_waiting Number of requests waiting to be processed.
# TYPE num_requests_waiting gauge
num_requests_waiting{model_name="meta/m"} %(waiting)s
num_requests_running{model_name="meta/m"} %(running)s
gpu_cache_usage_perc{model_name="meta/m"} %(kv)s
request_success_total{model_name="meta/m"} %(ok)s
request_failure_total{model_name="meta/m"} 1
time_to_first_token_seconds_bucket{model_name="meta/m",le="+Inf"} 3
'''


def metrics(waiting=0, running=0, kv=0.0, ok=0):
    return NIM_METRICS % dict(waiting=waiting, running=running, kv=kv, ok=ok)


def test_parse_sums_samples_and_skips_comments_and_junk():
    values = fw.parse_metrics(metrics(waiting=3, running=8, kv=0.25, ok=41) + 'num_requests_waiting{model_name="x"} 2\n'
                              'broken line\nnum_requests_running NaN\nup 1 1700000000000\n')
    assert values['num_requests_waiting'] == 5
    assert values['num_requests_running'] == 8
    assert values['up'] == 1
    assert fw.load_of(values) == {'waiting': 5, 'running': 8, 'kv': 0.25, 'completed': 42, 'succeeded': 41, 'failed': 1,
                                  'tokens': None}


def test_metrics_without_the_nim_gauges_give_no_load():
    assert fw.load_of(fw.parse_metrics('# nothing\nprocess_cpu_seconds_total 3\n')) is None
    assert fw.load_of(fw.parse_metrics('')) is None


@pytest.mark.parametrize('waiting, rate, kv, expected', [
    (0, 5.0, 0.0, 100),          # idle: its static weight
    (0, None, 0.5, 100),         # no rate yet, no queue
    (4, None, 0.2, 100),         # first reading: nothing says it is slower
    (4, 2.0, 0.2, 50),           # 2 s expected wait = wait_s: half
    (4, 1.0, 0.2, 33),           # the same queue served at half the rate: less
    (12, 1.0, 0.2, 14),
    (100, 1.0, 0.2, 10),         # bounded below
    (3, 0.0, 0.2, 10),           # a queue and nothing completed: the floor
    (0, 5.0, 0.95, 50),          # KV cache past the threshold
    (0, 5.0, 1.0, 10),           # a full KV cache: the floor
])
def test_weight_from_queue_rate_and_kv(waiting, rate, kv, expected):
    assert fw.weight(waiting, rate, kv) == expected


def test_weight_bounds_follow_the_settings():
    assert fw.weight(1000, 1.0, 1.0, static=100, min_weight=1) == 1
    assert fw.weight(0, 1.0, 0.0, static=100, min_weight=50) == 100
    assert fw.weight(1, 1.0, 0.0, static=100, wait_s=1.0) == 50
    assert fw.weight(1, 1.0, 0.0, static=100, wait_s=9.0) == 90
    # a floor above the static weight cannot raise it
    assert fw.weight(1000, 1.0, 0.0, static=5, min_weight=10) == 5


def load(waiting, completed, kv=0.1):
    return {'waiting': waiting, 'running': 8, 'kv': kv, 'completed': completed}


def test_a_leader_s_rate_comes_from_its_completions_over_the_window():
    leader = fw.LeaderWeight(window_s=10)
    assert leader.observe(0.0, load(4, 100)) == 100   # no rate yet
    assert leader.observe(1.0, load(4, 102)) == 50    # 2/s, 4 waiting: 2 s
    assert leader.last == {'weight': 50, 'waiting': 4, 'kv': 0.1, 'rate': 2.0, 'stale': False, 'out': ''}
    for t in range(2, 30):
        leader.observe(float(t), load(4, 100 + 2 * t))
    assert leader.rate() == 2.0
    assert leader.history[-1][0] - leader.history[0][0] <= 11
    assert leader.observe(30.0, load(4, 160)) == 50


def test_a_slower_leader_with_the_same_queue_gets_less():
    fast, slow = fw.LeaderWeight(), fw.LeaderWeight()
    for t in range(6):
        fast.observe(float(t), load(6, 4 * t))
        slow.observe(float(t), load(6, 2 * t))
    assert slow.last['weight'] < fast.last['weight'] < 100


def test_unreadable_metrics_return_a_leader_to_its_static_weight_and_restart_its_rate():
    leader = fw.LeaderWeight()
    leader.observe(0.0, load(20, 0))
    assert leader.observe(1.0, load(20, 1)) == 10
    assert leader.observe(2.0, None) == 100
    assert leader.last['stale'] is True
    assert leader.observe(3.0, load(20, 5)) == 100       # a fresh window: no rate yet
    assert leader.observe(4.0, load(20, 6)) == 10


def test_a_restarted_leader_s_counters_start_a_new_window():
    leader = fw.LeaderWeight()
    leader.observe(0.0, load(0, 500))
    leader.observe(1.0, load(0, 510))
    assert leader.observe(2.0, load(5, 3)) == 100        # counters went back: no rate from across the restart
    assert leader.rate() is None


def test_the_static_weight_is_the_role_s():
    with open(os.path.join(ROLE, 'vars', 'main.yml')) as handle:
        assert yaml.safe_load(handle)['_nim_frontend_static_weight'] == fw.STATIC_WEIGHT
    with open(os.path.join(ROLE, 'defaults', 'main.yml')) as handle:
        defaults = yaml.safe_load(handle)
    assert defaults['nim_frontend_load_wait_s'] == fw.DEFAULTS['wait_s']
    assert defaults['nim_frontend_load_min_weight'] == fw.DEFAULTS['min_weight']
    assert defaults['nim_frontend_load_kv_threshold'] == fw.DEFAULTS['kv_threshold']


def test_runtime_command_and_names():
    assert fw.runtime_command('model_meta_m', 'group_a', 37.6) == 'set server model_meta_m/group_a weight 37\n'
    for bad in ('a b', 'x;shutdown', 'a/b', ''):
        with pytest.raises(ValueError):
            fw.runtime_command(bad, 'group_a', 1)


def test_servers_of_the_pools():
    pools = [{'model': 'meta/m', 'backend': 'model_meta_m', 'servers': [
        {'name': 'group_a', 'group': 'a', 'address': '10.0.0.1', 'port': 8000},
        {'name': 'group_b', 'group': 'b', 'address': 'fd00::2', 'port': '8001'}]}]
    assert fw.servers_of(pools) == [
        {'backend': 'model_meta_m', 'server': 'group_a', 'group': 'a', 'metrics_url': 'http://10.0.0.1:8000/v1/metrics'},
        {'backend': 'model_meta_m', 'server': 'group_b', 'group': 'b', 'metrics_url': 'http://[fd00::2]:8001/v1/metrics'}]
    assert fw.servers_of(None) == []


# ---- the service, one tick against two leaders and a stand-in runtime API

def _program():
    # As on the front door's host: frontend_weights.py beside the program, imported by its name.
    sys.path.insert(0, os.path.dirname(fw.__file__))
    spec = importlib.util.spec_from_file_location('nimstack_frontend_weights',
                                                  os.path.join(ROLE, 'files', 'nimstack_frontend_weights.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Leader(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        data = self.server.text.encode()
        self.send_response(200 if self.path == '/v1/metrics' else 404)
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class Runtime(object):
    """HAProxy's runtime API as far as the service uses it: one line of commands, an empty answer."""

    def __init__(self, path):
        self.lines = []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(4)
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                conn = self.sock.accept()[0]
            except OSError:
                return
            with conn:
                data = b''
                while not data.endswith(b'\n'):
                    data += conn.recv(4096)
                self.lines.append(data.decode())


@pytest.fixture
def leaders():
    servers = []
    for text in (metrics(waiting=0, ok=10), metrics(waiting=30, ok=10)):
        server = HTTPServer(('127.0.0.1', 0), Leader)
        server.text = text
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
    yield servers
    for server in servers:
        server.shutdown()
        server.server_close()


def test_the_service_sets_weights_and_restores_them(leaders):
    program = _program()
    with tempfile.TemporaryDirectory() as tmp:
        runtime = Runtime(os.path.join(tmp, 'admin.sock'))
        pools = [{'model': 'meta/m', 'backend': 'model_meta_m', 'servers': [
            {'name': 'group_%s' % g, 'group': g, 'address': '127.0.0.1', 'port': s.server_address[1]}
            for g, s in zip(('a', 'b'), leaders)] + [
            {'name': 'group_c', 'group': 'c', 'address': '127.0.0.1', 'port': 9}]}]
        service = program.Service({'socket': os.path.join(tmp, 'admin.sock'), 'pools': pools,
                                   'settings': {'interval_s': 1, 'wait_s': 2, 'min_weight': 10, 'kv_threshold': 0.9}})
        clock = iter(range(100))
        service.clock = lambda: float(next(clock))
        service.tick()
        leaders[1].text = metrics(waiting=30, ok=11)
        service.tick()
        service.restore()
        runtime.sock.close()
    assert runtime.lines[0] == ('set server model_meta_m/group_a weight 100;set server model_meta_m/group_b weight 100;'
                                'set server model_meta_m/group_c weight 100\n')
    # b completed 1 request while 30 waited: the floor; c's metrics cannot be read: static.
    assert runtime.lines[1].startswith('set server model_meta_m/group_a weight 100;set server model_meta_m/group_b weight 10;')
    assert runtime.lines[1].endswith('set server model_meta_m/group_c weight 100\n')
    assert runtime.lines[2].count('weight 100') == 3
    assert service.stale == {('model_meta_m', 'group_c')}


def reading(running=1, generated=0.0, ok=0.0, failed=0.0, waiting=0):
    return {'waiting': waiting, 'running': running, 'kv': 0.1, 'completed': ok + failed, 'succeeded': ok,
            'failed': failed, 'tokens': generated}


def test_a_leader_whose_tokens_stop_while_requests_run_is_taken_out_after_stall_s_and_back_when_they_move():
    leader = fw.LeaderWeight(stall_s=15)
    generated = 0.0
    for t in range(10):
        generated += 20
        assert leader.observe(float(t), reading(generated=generated)) > 0
    # Hung: one request runs, no token comes out.
    for t in range(10, 24):
        assert leader.observe(float(t), reading(generated=generated)) > 0, t
    assert leader.observe(24.0, reading(generated=generated)) == 0
    assert leader.last['out'] == '1 request(s) running and no token served for 15 s'
    assert leader.observe(40.0, reading(generated=generated)) == 0
    # The re-formed group: its counters start again; it is back.
    assert leader.observe(41.0, reading(running=0, generated=0.0)) == 100
    assert leader.last['out'] == ''


def test_a_missed_reading_does_not_restart_the_stall_clock():
    leader = fw.LeaderWeight(stall_s=10)
    assert leader.observe(0.0, reading(generated=20.0)) > 0
    for t in range(1, 6):
        assert leader.observe(float(t), reading(generated=40.0)) > 0
    # Hung since t=1; the metrics miss two readings (a busy host): static weight meanwhile.
    assert leader.observe(6.0, None) == 100
    assert leader.observe(7.0, None) == 100
    assert leader.observe(10.0, reading(generated=40.0)) > 0
    # Out 10 s after the last token, as without the missed readings.
    assert leader.observe(11.0, reading(generated=40.0)) == 0
    assert leader.last['out'] == '1 request(s) running and no token served for 10 s'


def test_an_idle_leader_or_one_without_the_token_counter_is_never_stalled():
    idle, blind = fw.LeaderWeight(stall_s=5), fw.LeaderWeight(stall_s=5)
    for t in range(60):
        assert idle.observe(float(t), reading(running=0, generated=100.0)) == 100
        assert blind.observe(float(t), reading(running=2, generated=None)) > 0


def test_a_leader_whose_completions_fail_in_a_row_is_out_for_stall_s_then_tried_again():
    leader = fw.LeaderWeight(stall_s=10)
    assert leader.observe(0.0, reading(running=0, ok=5)) > 0
    assert leader.observe(1.0, reading(running=0, ok=5, failed=2)) > 0
    assert leader.observe(2.0, reading(running=0, ok=5, failed=3)) == 0
    assert leader.last['out'] == '3 completions failed in a row'
    assert leader.observe(11.0, reading(running=0, ok=5, failed=3)) == 0
    # The trial: traffic again; one success keeps it in, three more failures take it out.
    assert leader.observe(12.0, reading(running=0, ok=5, failed=3)) > 0
    assert leader.observe(13.0, reading(running=0, ok=5, failed=5)) > 0
    assert leader.observe(14.0, reading(running=0, ok=6, failed=5)) > 0
    assert leader.observe(15.0, reading(running=0, ok=6, failed=8)) == 0


def test_stall_s_zero_never_takes_a_leader_out():
    leader = fw.LeaderWeight(stall_s=0)
    for t in range(100):
        assert leader.observe(float(t), reading(generated=5.0, failed=float(t))) > 0


def test_a_pool_is_never_emptied():
    weights = {('llama', 'alpha'): 0, ('llama', 'beta'): 80, ('mistral', 'gamma'): 0, ('mistral', 'delta'): 0}
    assert fw.keep_one_in(weights, 10) == {('llama', 'alpha'): 0, ('llama', 'beta'): 80,
                                           ('mistral', 'gamma'): 10, ('mistral', 'delta'): 10}


def test_a_long_prefill_is_progress_and_both_token_counters_count():
    values = fw.parse_metrics(metrics(running=1) + 'prompt_tokens_total 300\ngeneration_tokens_total 20\n')
    assert fw.load_of(values)['tokens'] == 320
    leader = fw.LeaderWeight(stall_s=10)
    for t in range(0, 30, 2):
        # No token generated, but the prompt's prefill advances: not stalled.
        assert leader.observe(float(t), dict(reading(generated=None), tokens=100.0 * t + 1)) > 0, t
    assert leader.last['out'] == ''


def test_a_live_drain_mark_takes_its_group_s_leader_out_and_a_stale_one_is_ignored(leaders):
    program = _program()
    gs = program.gs
    owner = gs.run_owner('ctl', 42, 1)
    with tempfile.TemporaryDirectory() as tmp:
        drains = os.path.join(tmp, 'drains')
        os.mkdir(drains)
        runtime = Runtime(os.path.join(tmp, 'admin.sock'))
        pools = [{'model': 'meta/m', 'backend': 'model_meta_m', 'servers': [
            {'name': 'group_%s' % g, 'group': g, 'address': '127.0.0.1', 'port': s.server_address[1]}
            for g, s in zip(('a', 'b'), leaders)]}]
        leaders[1].text = metrics(waiting=0, ok=10)
        service = program.Service({'socket': os.path.join(tmp, 'admin.sock'), 'pools': pools, 'drains_dir': drains,
                                   'settings': {'interval_s': 1, 'drain_lease_s': 60}})

        def mark(group, expires_in):
            record = gs.hold_record(owner, 'the restart of group %s (drained)' % group, 60, time.time())
            record['expires'] = int(time.time()) + expires_in
            with open(os.path.join(drains, group), 'w') as handle:
                json.dump(record, handle)

        mark('a', 60)
        service.tick()
        mark('a', -5)
        service.tick()
        os.remove(os.path.join(drains, 'a'))
        mark('b', 60)
        mark('a', 60)
        service.tick()
        runtime.sock.close()
    assert runtime.lines[0] == 'set server model_meta_m/group_a weight 0;set server model_meta_m/group_b weight 100\n'
    assert runtime.lines[1] == 'set server model_meta_m/group_a weight 100;set server model_meta_m/group_b weight 100\n'
    # Both drained: the pool is never emptied, each keeps the floor.
    assert runtime.lines[2] == 'set server model_meta_m/group_a weight 10;set server model_meta_m/group_b weight 10\n'
    assert service.out[('model_meta_m', 'group_a')] == 'drained for a planned restart of group a'


def test_requests_in_flight_of_a_leader_s_metrics():
    from ansible_collections.nimstack.multinode.plugins.filter.frontend_pools import requests_in_flight
    assert requests_in_flight(metrics(waiting=2, running=3)) == 5
    assert requests_in_flight('') is None
    assert requests_in_flight(None) is None
