"""The group supervisor's decisions (plugins/module_utils/group_supervisor.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.nimstack.multinode.plugins.module_utils import group_supervisor as gs

HOSTS = ['h1', 'h2', 'h3']
GROUP = 'default'
NOW = 1764000600
OWNER = gs.run_owner('ctl', 4242, 1764000000)


def inspect(cid='c1', running=True, restarting=False, restarts=0, started='2026-01-01T00:00:00Z', code=0,
            labels=None):
    return {'Id': cid, 'RestartCount': restarts,
            'State': {'Running': running, 'Restarting': restarting, 'StartedAt': started, 'ExitCode': code,
                      'Status': 'running' if running else 'exited'},
            'Config': {'Labels': {'nimstack.managed': 'true', 'nimstack.group': GROUP} if labels is None else labels}}


def reports(**ranks):
    out = {}
    for host in HOSTS:
        out[host] = {'maintenance': False, 'rank': gs.observe(inspect(cid=host), GROUP)}
    for host, value in ranks.items():
        out[host] = value
    return out


def baseline(reps):
    return dict((h, gs.baseline_of(r['rank'])) for h, r in reps.items())


def held(content, mtime=None, lease=60):
    """A member's report with one hold file of this content."""
    state = gs.hold_state(content, NOW, NOW - 5 if mtime is None else mtime, lease)
    return {'maintenance': state['state'] == gs.HOLD_LIVE, 'holds': [dict(state, path='/etc/nimstack/maintenance')],
            'rank': gs.observe(inspect(cid='h3', running=False), GROUP)}


def lease(renewed, seconds=60, owner=None):
    return json.dumps(gs.hold_record(owner or OWNER, 'the deployment of group default', seconds, renewed))


def test_observe_a_missing_and_a_foreign_container():
    assert gs.observe(None)['exists'] is False
    foreign = gs.observe(inspect(labels={'nimstack.managed': 'true', 'nimstack.group': 'other'}), GROUP)
    assert foreign['exists'] and not foreign['ours']
    assert gs.rank_problem({}, foreign) == gs.NOT_OURS


def test_a_formed_group_first_takes_its_baseline_then_is_ok():
    reps = reports()
    assert gs.decide(HOSTS, reps, {})['action'] == 'baseline'
    decision = gs.decide(HOSTS, reps, baseline(reps))
    assert decision['action'] == 'ok' and decision['state'] == gs.FORMED


@pytest.mark.parametrize('rank,why', [
    (inspect(cid='h2', running=False, code=137), 'its container is exited (exit code 137)'),
    (inspect(cid='h2', restarting=True), 'its container is'),
    (inspect(cid='h2', restarts=1), 'it died and Docker restarted it 1 time(s)'),
    (inspect(cid='h2', started='2026-01-01T00:05:00Z'), 'it was restarted'),
    (inspect(cid='other'), 'its container was replaced'),
])
def test_a_dead_or_restarted_rank_restarts_the_whole_group(rank, why):
    base = baseline(reports())
    decision = gs.decide(HOSTS, reports(h2={'maintenance': False, 'rank': gs.observe(rank, GROUP)}), base)
    assert decision['action'] == 'restart' and decision['state'] == gs.HEALING
    assert decision['cause'].startswith('rank on h2: ' + why)


def test_a_missing_container_fails_the_group_at_once():
    decision = gs.decide(HOSTS, reports(h3={'maintenance': False, 'rank': gs.observe(None)}), baseline(reports()))
    assert decision['action'] == 'fail'
    assert 'rerun playbooks/deploy_docker.yml' in decision['cause']


def test_maintenance_anywhere_holds_before_anything_else():
    dead = {'maintenance': False, 'rank': gs.observe(inspect(running=False), GROUP)}
    decision = gs.decide(HOSTS, reports(h1=dead, h2=None, h3={'maintenance': True, 'rank': {}}), {})
    assert decision['action'] == 'hold' and 'h3' in decision['cause']


def test_an_unreachable_member_makes_the_leader_isolated_not_act():
    dead = {'maintenance': False, 'rank': gs.observe(inspect(running=False), GROUP)}
    decision = gs.decide(HOSTS, reports(h1=dead, h2=None), baseline(reports()))
    assert decision['action'] == 'isolated' and decision['state'] == gs.ISOLATED
    assert 'h2' in decision['cause'] and 'no rank is restarted' in decision['cause']


def test_a_member_unreachable_past_lost_after_fails_the_group_until_it_answers_again():
    since = gs.unreachable_since({}, HOSTS, reports(h2=None, h3=None), 100.0)
    assert since == {'h2': 100.0, 'h3': 100.0}
    # A member that answers again is dropped; one still silent keeps its first time.
    since = gs.unreachable_since(since, HOSTS, reports(h3=None), 150.0)
    assert since == {'h3': 100.0}
    ok = baseline(reports())
    isolated = gs.decide(HOSTS, reports(h3=None), ok, {'h3': 119.0}, 120)
    assert isolated['action'] == 'isolated'
    lost = gs.decide(HOSTS, reports(h3=None), ok, {'h3': 120.0}, 120)
    assert lost['action'] == 'lost' and lost['state'] == gs.FAILED
    assert lost['problems'] == {'h3': 'its supervisor has not answered for 120 s or more'}
    assert lost['cause'].startswith('cannot reach the supervisor of h3 for 120 s or more (nim_group_lost_after)')
    # Its words stay the same while the host stays away (a change of cause is logged).
    assert gs.decide(HOSTS, reports(h3=None), ok, {'h3': 500.0}, 120)['cause'] == lost['cause']
    # 0: isolated for as long as it lasts; and a live hold still comes first.
    assert gs.decide(HOSTS, reports(h3=None), ok, {'h3': 9999.0}, 0)['action'] == 'isolated'
    held = reports(h1={'maintenance': True, 'rank': {}}, h3=None)
    assert gs.decide(HOSTS, held, ok, {'h3': 9999.0}, 120)['action'] == 'hold'
    # Back: the group goes on as before.
    assert gs.decide(HOSTS, reports(), ok, {}, 120)['action'] == 'ok'


def test_a_rank_down_before_any_baseline_still_restarts():
    dead = {'maintenance': False, 'rank': gs.observe(inspect(running=False), GROUP)}
    assert gs.decide(HOSTS, reports(h2=dead), {})['action'] == 'restart'


def test_budget_counts_only_the_window():
    allowed, recent = gs.budget([100, 200, 300], 400, 3, 1000)
    assert not allowed and recent == [100, 200, 300]
    allowed, recent = gs.budget([100, 200, 300], 1150, 3, 1000)
    assert allowed and recent == [200, 300]
    assert gs.budget([], 0, 0, 60) == (False, [])
    cause = gs.over_budget_cause('rank on h2: x', [1, 2, 3], 3, 3600)
    assert 'nim_group_max_restarts=3' in cause and 'nim_group_restart_window=3600' in cause


def _config(steps, leader_first, ports):
    members = [{'host': 'h1', 'address': '10.0.0.1', 'role': 'leader', 'rank': 0},
               {'host': 'h2', 'address': '10.0.0.2', 'role': 'worker', 'rank': 1},
               {'host': 'h3', 'address': '10.0.0.3', 'role': 'worker', 'rank': 2}]
    order = ['h1', 'h2', 'h3'] if leader_first else ['h2', 'h3', 'h1']
    return {'leader': 'h1', 'members': members, 'steps': steps, 'start_order': order, 'leader_first': leader_first,
            'ports': ports}


def _ops(actions):
    return [(a['op'], a['host']) + ((a['port'],) if 'port' in a else ()) for a in actions]


def test_restart_order_mpi_workers_first_and_their_sshd_waited_for():
    actions = gs.restart_actions(_config(['workers', 'workers_ready', 'leader', 'ready'], False,
                                         {'api': 8000, 'ssh': 2222}))
    assert _ops(actions) == [('stop', 'h1'), ('stop', 'h2'), ('stop', 'h3'), ('start', 'h2'), ('start', 'h3'),
                             ('wait_port', 'h2', 2222), ('wait_port', 'h3', 2222), ('start', 'h1'),
                             ('wait_ready', 'h1')]


def test_restart_order_ray_leader_first_and_the_head_waited_for():
    actions = gs.restart_actions(_config(['leader', 'workers_reach_leader', 'workers', 'ready'], True,
                                         {'api': 8000, 'ray': 6379}))
    assert _ops(actions) == [('stop', 'h1'), ('stop', 'h2'), ('stop', 'h3'), ('start', 'h1'),
                             ('wait_port', 'h1', 6379), ('start', 'h2'), ('start', 'h3'), ('wait_ready', 'h1')]


def test_restart_order_without_steps_follows_leader_first():
    config = _config([], True, {'api': 8000, 'master': 50000})
    assert [a['op'] for a in gs.restart_actions(config)][3:] == ['start', 'start', 'start', 'wait_ready']
    config = _config([], False, {'api': 8000})
    assert _ops(gs.restart_actions(config))[3:6] == [('start', 'h2'), ('start', 'h3'), ('start', 'h1')]


def test_a_follower_is_isolated_when_the_leader_is_silent():
    assert gs.follower_state({'state': 'healing', 'cause': 'x'}, 100, 110, 15) == ('healing', 'x')
    state, cause = gs.follower_state({'state': 'formed'}, 100, 200, 15)
    assert state == gs.ISOLATED and '15 s' in cause
    assert gs.follower_state({}, None, 0, 15)[0] == gs.ISOLATED
    assert gs.follower_state({'state': 'bogus'}, 100, 101, 15)[0] == gs.STARTING


def test_requests_are_signed_with_the_group_secret_and_recent():
    sig = gs.sign('s3cret', 1000, 'POST', '/report', b'{}')
    assert gs.verify('s3cret', '1000', 'POST', '/report', b'{}', sig, 1010) == (True, '')
    assert gs.verify(b's3cret', 1000, 'post', '/report', '{}', sig, 1000)[0]
    assert gs.verify('other', 1000, 'POST', '/report', b'{}', sig, 1000) == (False, 'bad signature')
    assert not gs.verify('s3cret', 1000, 'POST', '/act', b'{}', sig, 1000)[0]
    assert not gs.verify('s3cret', 1000, 'POST', '/report', b'{"op":"stop"}', sig, 1000)[0]
    assert 'clock' in gs.verify('s3cret', 1000, 'POST', '/report', b'{}', sig, 1100)[1]
    assert gs.verify('s3cret', None, 'POST', '/report', b'{}', sig, 1000) == (False, 'no timestamp')


def test_config_problems():
    good = {'group': 'g', 'self': 'h1', 'leader': 'h1', 'members': [{'host': 'h1'}], 'container': 'nim-g',
            'port': 8479, 'max_restarts': 0, 'window': 60, 'interval': 2, 'hold_lease': 3600}
    assert gs.config_problems(good) == []
    assert gs.config_problems(dict(good, self='h9')) == ['self h9 is not a member']
    assert gs.config_problems(dict(good, window=0)) == ['window must be a whole number of at least 1']
    assert gs.config_problems(dict(good, hold_lease='1h')) == ['hold_lease must be a whole number of at least 1']
    assert gs.config_problems({'group': 'g'})[0] == 'self is missing'


def test_state_record_is_what_status_reads():
    record = gs.state_record(gs.FAILED, 'why', 'leader', 'h1', [1, 2], 5.5, {'h2': 'dead'})
    assert record == {'state': 'failed', 'cause': 'why', 'role': 'leader', 'leader': 'h1', 'restarts': [1, 2],
                      'problems': {'h2': 'dead'}, 'ignored_holds': [], 'serving': {}, 'lost': [], 'updated': 5}


def test_the_shipped_program_is_valid_python_and_refuses_a_bad_config(tmp_path):
    program = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'roles', 'nim_docker', 'files',
                           'nimstack_supervisor.py')
    bad = tmp_path / 'supervisor.json'
    bad.write_text('{"group": "g"}')
    env = dict(os.environ, PYTHONPATH=os.path.dirname(gs.__file__))
    proc = subprocess.run([sys.executable, program, str(bad)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          env=env, timeout=30, check=False)
    assert proc.returncode == 1
    assert b'self is missing' in proc.stdout


def test_the_program_asks_the_engine_over_its_socket_and_tells_missing_from_unreachable(tmp_path):
    import importlib.util
    import socketserver
    import threading
    from http.server import BaseHTTPRequestHandler
    path = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'roles', 'nim_docker', 'files',
                        'nimstack_supervisor.py')
    sys.path.insert(0, os.path.dirname(gs.__file__))
    try:
        spec = importlib.util.spec_from_file_location('nimstack_supervisor_under_test', path)
        program = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(program)
    finally:
        sys.path.remove(os.path.dirname(gs.__file__))
    asked = []

    class Engine(BaseHTTPRequestHandler):
        def log_message(self, fmt, *args):
            return

        def do_GET(self):  # noqa: N802
            asked.append(self.path)
            codes = {'/containers/nim-default/json': 200, '/containers/broken/json': 500}
            code = codes.get(self.path, 404)
            body = json.dumps(inspect(cid='h1') if code == 200 else {'message': 'no such container'}).encode()
            self.send_response(code)
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    sock = str(tmp_path / 'docker.sock')
    server = socketserver.ThreadingUnixStreamServer(sock, Engine)
    # BaseHTTPRequestHandler logs the client address, which a unix socket gives as ''.
    server.RequestHandlerClass.address_string = lambda self: 'engine'
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        found, data = program.engine_inspect(sock, 'nim-default')
        assert found is True and gs.observe(data, GROUP)['running'] and data['Id'] == 'h1'
        # Gone: the supervisor's "missing", not a reason to ask the CLI.
        assert program.engine_inspect(sock, 'nim-gone') == (False, None)
        # Anything else: ask the CLI instead.
        assert program.engine_inspect(sock, 'broken') == (None, None)
        # The name is one path segment, whatever it holds.
        assert program.engine_inspect(sock, '../images/x') == (False, None)
        assert asked[-1] == '/containers/..%2Fimages%2Fx/json'
    finally:
        server.shutdown()
        server.server_close()
    assert program.engine_inspect(str(tmp_path / 'no.sock'), 'nim-default') == (None, None)


def test_during_a_restart_only_the_started_ranks_must_run():
    stopped = {'maintenance': False, 'rank': gs.observe(inspect(cid='h1', running=False), GROUP)}
    reps = reports(h1=stopped)
    snapshot = {'h2': gs.baseline_of(reps['h2']['rank'])}
    # The leader (h1) is not started yet under mpi: its stopped container is no problem.
    assert gs.check_started(HOSTS, ['h2'], reps, snapshot) == ('ok', '')
    crashed = {'maintenance': False, 'rank': gs.observe(inspect(cid='h2', restarts=1), GROUP)}
    verdict, cause = gs.check_started(HOSTS, ['h2'], reports(h1=stopped, h2=crashed), snapshot)
    assert verdict == 'broken' and cause.startswith('rank on h2: it died')
    looping = {'maintenance': False, 'rank': gs.observe(inspect(cid='h2', restarting=True), GROUP)}
    assert gs.check_started(HOSTS, ['h2'], reports(h2=looping), {})[0] == 'broken'
    assert gs.check_started(HOSTS, ['h2'], reports(h3=None), snapshot)[0] == 'isolated'
    held = {'maintenance': True, 'rank': reps['h3']['rank']}
    assert gs.check_started(HOSTS, ['h2'], reports(h3=held), snapshot)[0] == 'hold'
    stale = {'holds': [gs.hold_state(json.dumps(gs.hold_record(OWNER, 'x', 30, NOW - 60)), NOW, NOW - 60, 30)],
             'rank': reps['h3']['rank']}
    assert gs.check_started(HOSTS, ['h2'], reports(h3=stale), snapshot) == ('ok', '')


def _samples(text):
    """{(name, labels): value} of Prometheus text; every sample line must parse."""
    import re
    samples = {}
    for line in text.splitlines():
        if line.startswith('#'):
            assert re.match(r'^# (HELP|TYPE) nimstack_group_[a-z_]+ \S', line), line
            continue
        match = re.match(r'^([a-z_]+)\{((?:[a-z_]+="(?:[^"\\]|\\.)*",?)*)\} (\d+)$', line)
        assert match, line
        labels = tuple(re.findall(r'([a-z_]+)="((?:[^"\\]|\\.)*)"', match.group(2)))
        samples[(match.group(1), labels)] = int(match.group(3))
    return samples


def test_metrics_one_state_set_restarts_inside_the_window_and_the_budget():
    now = 10000
    text = gs.metrics_text('llama', gs.HEALING, [now - 4000, now - 100, now - 5], now, 3, 3600)
    samples = _samples(text)
    states = dict((dict(labels)['state'], value) for (name, labels), value in samples.items()
                  if name == 'nimstack_group_state')
    assert states == {'starting': 0, 'formed': 0, 'healing': 1, 'failed': 0, 'isolated': 0, 'maintenance': 0}
    assert samples[('nimstack_group_restarts', (('group', 'llama'),))] == 2
    assert samples[('nimstack_group_restart_budget', (('group', 'llama'),))] == 3
    assert text.count('# TYPE nimstack_group_state gauge') == 1 and text.endswith('\n')
    # An unknown state sets none: nothing claims the group is formed.
    assert sum(v for (n, _l), v in _samples(gs.metrics_text('g', 'odd', [], now, 1, 60)).items()
               if n == 'nimstack_group_state') == 0


def test_metrics_labels_are_escaped_and_the_file_is_per_group():
    text = gs.metrics_text('a"b\\c', gs.FORMED, [], 0, 1, 60)
    assert 'group="a\\"b\\\\c"' in text
    assert gs.metrics_file('g1') == '/var/lib/prometheus/node-exporter/nimstack_group_g1.prom'
    assert gs.metrics_file('g1', '/x/') == '/x/nimstack_group_g1.prom'


def test_the_leader_writes_its_series_for_node_exporter_and_removes_them_when_stopped(tmp_path):
    import json
    import signal
    import socket
    import time
    program = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'roles', 'nim_docker', 'files',
                           'nimstack_supervisor.py')
    # A docker that shows one running rank of this group.
    fake = tmp_path / 'docker'
    fake.write_text('#!/bin/sh\necho \'%s\'\n' % json.dumps([inspect(cid='h1')]))
    fake.chmod(0o755)
    (tmp_path / 'secret').write_text('s3cret\n')
    metrics = tmp_path / 'textfile'
    metrics.mkdir()
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        port = sock.getsockname()[1]
    config = {'group': GROUP, 'self': 'h1', 'leader': 'h1', 'members': [{'host': 'h1', 'address': '127.0.0.1'}],
              'container': 'nim-default', 'port': port, 'bind': '127.0.0.1', 'api_port': 1, 'interval': 1,
              'max_restarts': 4, 'state_file': str(tmp_path / 'state.json'), 'logs_dir': str(tmp_path / 'logs'),
              'secret_file': str(tmp_path / 'secret'), 'metrics_dir': str(metrics), 'hold_lease': 60,
              'maintenance_files': [str(tmp_path / 'maintenance')]}
    # A hold its run left behind when it died, its lease long expired: the supervisor ignores it.
    (tmp_path / 'maintenance').write_text(json.dumps(gs.hold_record(OWNER, 'a restart wave', 60, time.time() - 600)))
    (tmp_path / 'supervisor.json').write_text(json.dumps(config))
    env = dict(os.environ, PYTHONPATH=os.path.dirname(gs.__file__), NIMSTACK_SUPERVISOR_DOCKER=str(fake))
    proc = subprocess.Popen([sys.executable, program, str(tmp_path / 'supervisor.json')], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    path = metrics / ('nimstack_group_%s.prom' % GROUP)
    try:
        deadline = time.time() + 20
        formed = None
        while time.time() < deadline and not formed:
            text = path.read_text() if path.exists() else ''
            formed = _samples(text).get(('nimstack_group_state', (('group', GROUP), ('state', 'formed'))))
            time.sleep(0.2)
        assert formed == 1, text
        assert _samples(text)[('nimstack_group_restart_budget', (('group', GROUP),))] == 4
        assert oct(path.stat().st_mode & 0o777) == '0o644'
        assert [p.name for p in metrics.iterdir()] == [path.name]
        state = json.loads((tmp_path / 'state.json').read_text())
        assert state['state'] == 'formed'
        assert state['ignored_holds'][0].startswith('h1: hold by run ctl-4242-1764000000 of controller ctl (a restart '
                                                    'wave) expired at ')
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
    assert not path.exists()


def test_a_hold_is_a_lease_that_names_its_run():
    record = gs.hold_record(OWNER, 'the deployment of group default', 60, NOW, acquired=NOW - 100)
    assert record == {'owner': {'run': 'ctl-4242-1764000000', 'controller': 'ctl', 'pid': 4242},
                      'holder': 'the deployment of group default', 'acquired': NOW - 100, 'renewed': NOW,
                      'lease': 60, 'expires': NOW + 60}
    state = gs.hold_state(json.dumps(record), NOW + 20, NOW - 999, 5)
    assert (state['state'], state['remaining'], state['legacy']) == (gs.HOLD_LIVE, 40, False)
    assert state['message'] == ('hold by run ctl-4242-1764000000 of controller ctl (the deployment of group default) '
                                'expires in 40 s (at 2025-11-24T16:11:00Z)')


def test_an_expired_hold_is_stale_and_says_when_it_expired():
    state = gs.hold_state(lease(NOW - 100), NOW, NOW - 100, 3600)
    assert (state['state'], state['remaining']) == (gs.HOLD_STALE, -40)
    assert state['message'] == ('hold by run ctl-4242-1764000000 of controller ctl (the deployment of group default) '
                                'expired 40 s ago (at 2025-11-24T16:09:20Z), ignored by the supervisors')


@pytest.mark.parametrize('content', [
    'held by a deployment (nimstack.multinode.nim_docker)\n', '', '{"owner": "x"', '[1, 2]', '{"expires": "soon"}',
    '{"expires": true}', '{"expires": Infinity}', '{"expires": NaN}', '{"expires": 1e300}', '{"expires": -5}', None,
    '\x00\xff'])
def test_a_plain_or_garbled_hold_counts_from_its_mtime(content):
    live = gs.hold_state(content, NOW, NOW - 30, 60)
    assert (live['state'], live['legacy'], live['remaining'], live['owner']) == (gs.HOLD_LIVE, True, 30, {})
    assert live['message'].startswith('hold without an owner (not a lease')
    stale = gs.hold_state(content, NOW, NOW - 61, 60)
    assert stale['state'] == gs.HOLD_STALE
    assert stale['message'].endswith('expired 1 s ago (at 2025-11-24T16:09:59Z), ignored by the supervisors')


def test_the_decision_ignores_an_expired_hold_and_names_it():
    dead = held(lease(NOW - 100))
    decision = gs.decide(HOSTS, reports(h3=dead), baseline(reports()))
    assert decision['action'] == 'restart' and decision['problems'] == {'h3': 'its container is exited'}
    assert decision['ignored'] == ['h3: hold by run ctl-4242-1764000000 of controller ctl (the deployment of group '
                                   'default) expired at 2025-11-24T16:09:20Z, ignored']


def test_a_live_hold_still_holds_and_its_cause_stays_until_renewed():
    decision = gs.decide(HOSTS, reports(h3=held(lease(NOW - 10))), baseline(reports()))
    assert (decision['action'], decision['state'], decision['ignored']) == ('hold', gs.MAINTENANCE, [])
    assert decision['cause'] == ('h3: hold by run ctl-4242-1764000000 of controller ctl (the deployment of group '
                                 'default) until 2025-11-24T16:10:50Z')
    # The seconds left are not in the cause, so the supervisor logs a hold once, not every look.
    later = dict(held(lease(NOW - 10)), holds=[gs.hold_state(lease(NOW - 10), NOW + 30, NOW, 60)])
    assert gs.decide(HOSTS, reports(h3=later), {})['cause'] == decision['cause']
    # A member of an earlier release reports only the flag, which holds.
    assert gs.decide(HOSTS, reports(h2={'maintenance': True, 'rank': {}}), {})['action'] == 'hold'


def test_a_garbled_hold_never_breaks_the_decision():
    assert gs.decide(HOSTS, reports(h3=held('garbage', mtime=NOW - 10)), {})['action'] == 'hold'
    decision = gs.decide(HOSTS, reports(h3=held('garbage', mtime=NOW - 61)), baseline(reports()))
    assert decision['action'] == 'restart' and 'hold without an owner' in decision['ignored'][0]


@pytest.mark.parametrize('found,want,action', [
    (None, 'present', 'write'), (None, 'absent', 'keep'),
    (lease(NOW - 10), 'present', 'write'), (lease(NOW - 10), 'absent', 'remove'),
    (lease(NOW - 100), 'present', 'write'), (lease(NOW - 100), 'absent', 'remove'),
    ('plain text', 'present', 'write'), ('plain text', 'absent', 'remove'),
])
def test_a_run_renews_its_own_hold_and_clears_stale_ones(found, want, action):
    state = None if found is None else gs.hold_state(found, NOW, NOW - 30, 60)
    got, note = gs.hold_action(state, OWNER, want)
    assert got == action
    # This run's own hold, live or expired, is renewed or released without a note.
    assert (note == '') == (found != 'plain text')
    if note:
        assert note.startswith('cleared: hold ')


@pytest.mark.parametrize('want', ['present', 'absent'])
def test_a_live_hold_of_another_run_is_refused_and_named(want):
    other = gs.run_owner('ctl2', 7, 1764000500)
    action, note = gs.hold_action(gs.hold_state(lease(NOW - 10, owner=other), NOW, NOW, 60), OWNER, want)
    assert action == 'refuse'
    assert note.startswith('hold by run ctl2-7-1764000500 of controller ctl2 (the deployment of group default) '
                           'expires in 50 s (at 2025-11-24T16:10:50Z): another run (controller ctl2, pid 7) is working '
                           'on this host')
    # Once it expired, the next run clears it whoever held it.
    assert gs.hold_action(gs.hold_state(lease(NOW - 100, owner=other), NOW, NOW, 60), OWNER, want)[0] != 'refuse'


@pytest.mark.parametrize('want', ['present', 'absent'])
def test_a_live_hold_of_a_run_of_this_controller_that_ended_is_cleared_at_once(want):
    gone = gs.run_owner('ctl', 7, 1764000500)
    seen = dict(OWNER, alive=[OWNER['run'], 'ctl-8-1764000550'], alive_at=NOW)
    action, note = gs.hold_action(gs.hold_state(lease(NOW - 10, owner=gone), NOW, NOW, 60), seen, want)
    assert action == ('write' if want == 'present' else 'remove')
    assert note.startswith('cleared: hold by run ctl-7-1764000500 of controller ctl')
    assert note.endswith('but its run ended (ansible-playbook pid 7 on ctl is gone)')
    # It may live: it is alive, it started after the reading, it is of another controller, or the
    # processes could not be read.
    for holder, owner in ((gs.run_owner('ctl', 8, 1764000550), seen), (gs.run_owner('ctl', 9, NOW), seen),
                          (gs.run_owner('ctl2', 7, 1764000500), seen), (gone, OWNER)):
        assert gs.hold_action(gs.hold_state(lease(NOW - 10, owner=holder), NOW, NOW, 60), owner, want)[0] == 'refuse'


def test_a_hold_keeps_only_the_owner_s_name():
    record = json.loads(lease(NOW, owner=dict(OWNER, alive=['ctl-1-2'], alive_at=NOW)))
    assert record['owner'] == {'run': 'ctl-4242-1764000000', 'controller': 'ctl', 'pid': 4242}


METRICS = """# HELP num_requests_running Number of requests currently running on GPU.
# TYPE num_requests_running gauge
num_requests_running{model_name="m"} %s
# TYPE generation_tokens_total counter
generation_tokens_total{model_name="m"} %s
prompt_tokens_total{model_name="m"} 99
"""


def test_serving_metrics_reads_the_running_requests_and_the_tokens_served():
    # Generated and prefilled (99): a long prompt's prefill is progress too.
    assert gs.serving_metrics(METRICS % (2, 1234)) == (2.0, 1333.0)
    assert gs.serving_metrics(METRICS.replace('prompt_tokens_total{model_name="m"} 99\n', '') % (2, 1234)) == (2.0, 1234.0)
    # Summed over series (a NIM serving two names of one model, or LoRA adapters).
    assert gs.serving_metrics(METRICS % (1, 10) + 'num_requests_running{model_name="l"} 3\n'
                              'generation_tokens_total{model_name="l"} 5\n') == (4.0, 114.0)
    for text in ('', None, 'num_requests_running 1\n', METRICS % ('x', 1), METRICS % (1, 'NaN'), '<html>'):
        assert gs.serving_metrics(text) is None, text


def test_serving_sample_idle_asks_for_a_completion_busy_needs_progress():
    assert gs.serving_sample(None, 5) == ('idle', None, None)
    assert gs.serving_sample((0, 100), 100) == ('idle', None, None)
    assert gs.serving_sample((2, 150), 100) == ('busy', True, '')
    what, ok, why = gs.serving_sample((2, 100), 100)
    assert (what, ok) == ('busy', False) and why == '2 request(s) running and no token served since the last probe'
    # No earlier look, or the counter went back (the NIM restarted): no verdict yet.
    assert gs.serving_sample((2, 100), None) == ('busy', None, None)
    assert gs.serving_sample((2, 10), 100) == ('busy', None, None)


def test_serving_track_needs_failures_for_the_whole_timeout_without_a_success():
    track, verdict, cause = gs.serving_track({}, 100, True, '', 20)
    assert verdict == gs.SERVING_OK and cause == ''
    track, verdict, cause = gs.serving_track(track, 105, False, 'a completion answered 500', 20)
    assert verdict == gs.SERVING_SUSPECT and cause == 'a completion answered 500'
    # No verdict (a busy look without an earlier one) keeps the failure running.
    track, verdict, _cause = gs.serving_track(track, 115, None, None, 20)
    assert verdict == gs.SERVING_SUSPECT
    track, verdict, _cause = gs.serving_track(track, 124, False, 'hung', 20)
    assert verdict == gs.SERVING_SUSPECT
    track, verdict, cause = gs.serving_track(track, 125, False, 'hung', 20)
    assert verdict == gs.SERVING_NOT
    assert cause == ('the group runs but does not serve: hung (every probe failed for 20 s, '
                     'nim_group_serving_timeout=20)')
    # One success in between starts the count again.
    track, verdict, _cause = gs.serving_track(track, 126, True, '', 20)
    assert verdict == gs.SERVING_OK and track['failing_since'] is None
    track, verdict, _cause = gs.serving_track(track, 130, False, 'x', 20)
    assert gs.serving_track(track, 149, False, 'x', 20)[1] == gs.SERVING_SUSPECT
    assert gs.serving_track({}, 1, None, None, 20)[1] == gs.SERVING_OK


@pytest.mark.parametrize('action', ['hold', 'baseline', 'isolated', 'restart', 'fail'])
def test_the_serving_check_never_probes_a_loading_or_held_group(action):
    assert gs.serving_armed(True, action, True) is False
    assert gs.serving_armed(False, action, True) is False


def test_the_serving_check_arms_once_the_formed_leader_answered_ready():
    # Formed, the model still loading (ready 503): no probe.
    assert gs.serving_armed(False, 'ok', False) is False
    assert gs.serving_armed(False, 'ok', True) is True
    # Once armed, a leader that turns unready is probed (its completions fail): it stays armed.
    assert gs.serving_armed(True, 'ok', False) is True


def test_metrics_carry_the_serving_verdict():
    ok = _samples(gs.metrics_text('g', gs.FORMED, [], 0, 1, 60))
    assert ok[('nimstack_group_serving', (('group', 'g'),))] == 1
    for verdict in (gs.SERVING_SUSPECT, gs.SERVING_NOT):
        bad = _samples(gs.metrics_text('g', gs.FORMED, [], 0, 1, 60, verdict))
        assert bad[('nimstack_group_serving', (('group', 'g'),))] == 0


def test_config_serving_timeout_is_a_whole_number():
    good = {'group': 'g', 'self': 'h1', 'leader': 'h1', 'members': [{'host': 'h1'}], 'container': 'c', 'port': 1,
            'hold_lease': 60}
    assert gs.config_problems(dict(good, serving_timeout=0)) == []
    assert gs.config_problems(dict(good, serving_timeout='2m')) == [
        'serving_timeout must be a whole number of at least 0']


def test_a_leader_that_runs_but_never_serves_is_restarted_then_failed_over_budget(tmp_path):
    """The shipped program against a NIM whose every completion fails while /v1/health/ready says
    200: one restart of the whole group, then, failing again, the budget (1) ends it failed."""
    import signal
    import socket
    import threading
    import time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    program = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'roles', 'nim_docker', 'files',
                           'nimstack_supervisor.py')
    asked = []

    class Nim(BaseHTTPRequestHandler):
        def log_message(self, *_args):
            return

        def answer(self, code, body):
            data = json.dumps(body).encode('utf-8')
            self.send_response(code)
            self.send_header('Content-Length', str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):  # noqa: N802
            if self.path == '/v1/health/ready':
                self.answer(200, {'message': 'ready'})
            elif self.path == '/v1/models':
                self.answer(200, {'data': [{'id': 'served-name'}]})
            else:
                self.answer(404, {})

        def do_POST(self):  # noqa: N802
            asked.append(json.loads(self.rfile.read(int(self.headers['Content-Length']))))
            self.answer(500, {'error': {'message': 'every completion fails'}})

    nim = ThreadingHTTPServer(('127.0.0.1', 0), Nim)
    threading.Thread(target=nim.serve_forever, daemon=True).start()
    fake = tmp_path / 'docker'
    fake.write_text('#!/bin/sh\necho "$1" >>%s\necho \'%s\'\n'
                    % (tmp_path / 'docker.log', json.dumps([inspect(cid='h1')])))
    fake.chmod(0o755)
    (tmp_path / 'secret').write_text('s3cret\n')
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        port = sock.getsockname()[1]
    config = {'group': GROUP, 'self': 'h1', 'leader': 'h1', 'members': [{'host': 'h1', 'address': '127.0.0.1'}],
              'container': 'nim-default', 'port': port, 'bind': '127.0.0.1', 'api_port': nim.server_address[1],
              'interval': 1, 'max_restarts': 1, 'state_file': str(tmp_path / 'state.json'),
              'logs_dir': str(tmp_path / 'logs'), 'secret_file': str(tmp_path / 'secret'), 'metrics_dir': '',
              'hold_lease': 60, 'serving_timeout': 1, 'serving_every': 0.5, 'maintenance_files': []}
    (tmp_path / 'supervisor.json').write_text(json.dumps(config))
    env = dict(os.environ, PYTHONPATH=os.path.dirname(gs.__file__), NIMSTACK_SUPERVISOR_DOCKER=str(fake))
    proc = subprocess.Popen([sys.executable, program, str(tmp_path / 'supervisor.json')], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    state = {}
    try:
        deadline = time.time() + 40
        while time.time() < deadline and state.get('state') != 'failed':
            time.sleep(0.3)
            if (tmp_path / 'state.json').exists():
                state = gs.load_json((tmp_path / 'state.json').read_text(), {})
    finally:
        proc.send_signal(signal.SIGTERM)
        out = proc.communicate(timeout=20)[0].decode('utf-8', 'replace')
        nim.shutdown()
    assert state.get('state') == 'failed', out
    assert 'the group runs but does not serve: a completion of one token answered 500' in state['cause']
    assert 'nim_group_max_restarts=1' in state['cause']
    assert len(state['restarts']) == 1
    assert 'restarting the whole group (restart 1 of at most 1' in out
    docker_ops = (tmp_path / 'docker.log').read_text().split()
    assert docker_ops.count('start') == 1 and 'stop' in docker_ops
    assert asked[0]['max_tokens'] == 1 and asked[0]['model'] == 'served-name'
