# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The group supervisor of one Docker deployment group: nimstack-supervisor@<group>.service.

Usage: nimstack_supervisor.py /etc/nimstack/nim/<group>/supervisor.json

One runs on every member. Each reports its own rank (the container of the group's name, labelled
nimstack.managed=true and nimstack.group=<group>) and the maintenance holds of its host; the
leader's supervisor collects every report over the group's network (HTTP on the supervisor port,
each request signed with the group's secret) and decides: when a rank died or restarted, it
restarts the WHOLE group in the contract's start order (docker stop, then docker start of the
existing containers), at most max_restarts times within window seconds; beyond that the group is
failed: every rank's last log is saved next to the state file and the ranks are stopped. A member
whose peers cannot be reached does nothing on its own: it reports isolated. A live maintenance hold
(a run re-forming the group or restarting its hosts) holds the whole group; one whose lease expired
(the run died) is logged and ignored. The leader also checks that the group serves (a short
completion against its own API when idle, the progress of the generated tokens in its /v1/metrics
when busy): a group that runs but does not serve for serving_timeout seconds is restarted like
one whose rank died, within the same budget. The decisions are
group_supervisor.py's (the collection's plugins/module_utils/group_supervisor.py, installed
beside this file). Standard library only. Logs go to the journal.
"""

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import group_supervisor as gs  # noqa: E402  pylint: disable=wrong-import-position,import-error

DOCKER = os.environ.get('NIMSTACK_SUPERVISOR_DOCKER', 'docker')
# The engine's API, asked directly for the look every interval: the CLI costs a process of
# about 20 ms of CPU per look on every member; the socket about 1 ms. With the CLI replaced
# (NIMSTACK_SUPERVISOR_DOCKER, as the unit tests do) every look goes through it.
DOCKER_SOCKET = '/var/run/docker.sock' if 'NIMSTACK_SUPERVISOR_DOCKER' not in os.environ else ''


def log(message, level=6):
    # systemd reads the <N> prefix as the syslog priority (3 error, 4 warning, 6 info).
    print('<%d>%s' % (level, message), flush=True)


def write_json(path, value, mode=0o644):
    tmp = '%s.tmp.%d.%d' % (path, os.getpid(), threading.get_ident())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, 'w') as handle:
        json.dump(value, handle, indent=1, sort_keys=True)
        handle.write('\n')
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def write_text(path, text, mode=0o644):
    # The temporary name does not end in .prom: node exporter never reads a half-written file.
    tmp = '%s.tmp.%d.%d' % (path, os.getpid(), threading.get_ident())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, 'w') as handle:
        handle.write(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def read_json(path, default=None):
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return default


def docker(*args, timeout=60):
    try:
        proc = subprocess.run([DOCKER] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 1, '', str(exc)
    return proc.returncode, proc.stdout.decode('utf-8', 'replace'), proc.stderr.decode('utf-8', 'replace')


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        http.client.HTTPConnection.__init__(self, 'localhost', timeout=timeout)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


def engine_inspect(path, name, timeout=30):
    """GET /containers/<name>/json from the engine at the socket path: (found, the container's JSON).

    The body is what `docker inspect --type container` prints for it, one object instead of a list
    of one. found is False when the engine says there is no such container, None when the engine
    could not be asked or answered anything else (the caller asks the CLI instead).
    """
    connection = UnixHTTPConnection(path, timeout)
    try:
        connection.request('GET', '/containers/%s/json' % urllib.parse.quote(name, safe=''))
        response = connection.getresponse()
        body = response.read()
    except (OSError, http.client.HTTPException):
        return None, None
    finally:
        connection.close()
    if response.status == 404:
        return False, None
    data = gs.load_json(body.decode('utf-8', 'replace'), None) if response.status == 200 else None
    return (True, data) if isinstance(data, dict) else (None, None)


class Supervisor(object):
    def __init__(self, config):
        self.config = config
        self.group = config['group']
        self.me = config['self']
        self.leader = config['leader']
        self.is_leader = self.me == self.leader
        self.members = config['members']
        self.hosts = [m['host'] for m in self.members]
        self.by_host = dict((m['host'], m) for m in self.members)
        self.container = config['container']
        self.interval = int(config.get('interval', 2))
        self.max_restarts = int(config.get('max_restarts', 3))
        self.window = int(config.get('window', 3600))
        self.ready_timeout = int(config.get('ready_timeout', 300))
        self.worker_timeout = int(config.get('worker_timeout', 120))
        self.stop_timeout = int(config.get('stop_timeout', 10))
        self.request_timeout = float(config.get('request_timeout', 5))
        self.log_lines = int(config.get('log_lines', 200))
        self.state_file = config['state_file']
        self.logs_dir = config['logs_dir']
        self.maintenance_files = config.get('maintenance_files', [])
        self.hold_lease = int(config['hold_lease'])
        # 0: no serving check.
        self.serving_timeout = int(config.get('serving_timeout', 0))
        # Seconds a member may not answer before it is taken as lost (the group failed until it
        # answers again); 0: isolated for as long as it lasts.
        self.lost_after = int(config.get('lost_after', 0))
        self.unreachable = {}
        self.serving_every = float(config.get('serving_every', gs.SERVING_EVERY))
        self.serving = {'armed': False, 'track': {}, 'verdict': gs.SERVING_OK, 'cause': '', 'at': 0.0,
                        'generated': None, 'model': ''}
        # The leader's series for node exporter's textfile collector, where that directory exists.
        self.metrics_dir = config.get('metrics_dir', gs.METRICS_DIR)
        self.metrics_path = gs.metrics_file(self.group, self.metrics_dir) if self.is_leader and self.metrics_dir else ''
        with open(config['secret_file'], 'rb') as handle:
            self.secret = handle.read().strip()
        saved = read_json(self.state_file, {}) or {}
        self.history = [t for t in saved.get('restarts', []) if isinstance(t, (int, float))]
        # A failed state waits for Ansible, except one of lost members: it ends when they answer again.
        self.state = gs.FAILED if saved.get('state') == gs.FAILED and not saved.get('lost') else gs.STARTING
        self.cause = saved.get('cause', '') if self.state == gs.FAILED else ''
        self.problems = saved.get('problems', {}) if self.state == gs.FAILED else {}
        self.lost = []
        self.baseline = {}
        self.pending = ''
        self.ignored = []
        # A follower's view of the leader.
        self.told = {}
        self.last_contact = None
        self.lock = threading.Lock()
        self.written = None

    # ---- this host --------------------------------------------------------------------------
    def holds(self):
        """The hold files of this host, each read as a lease (group_supervisor.hold_state)."""
        holds = (gs.read_hold(path, time.time(), self.hold_lease) for path in self.maintenance_files)
        return [hold for hold in holds if hold]

    def inspect(self):
        if DOCKER_SOCKET:
            found, data = engine_inspect(DOCKER_SOCKET, self.container)
            if found is not None:
                return data
        rc, out, _err = docker('inspect', '--type', 'container', self.container, timeout=30)
        if rc != 0:
            return None
        data = gs.load_json(out, [])
        return data[0] if data else None

    def report(self):
        holds = self.holds()
        # 'maintenance' too: a leader of an earlier release, while the members are updated, reads only that.
        return {'host': self.me, 'maintenance': any(h['state'] == gs.HOLD_LIVE for h in holds), 'holds': holds,
                'rank': gs.observe(self.inspect(), self.group)}

    def act(self, op, cause=''):
        """Carry out one order on this host's rank; (ok, error)."""
        obs = gs.observe(self.inspect(), self.group)
        if op in ('stop', 'start', 'fail') and obs['exists'] and not obs['ours']:
            return False, '%s: %s' % (self.container, gs.NOT_OURS)
        if op == 'stop':
            if not obs['exists']:
                return True, ''
            rc, _out, err = docker('stop', '--time', str(self.stop_timeout), self.container,
                                   timeout=self.stop_timeout + 30)
            return rc == 0, err.strip()
        if op == 'start':
            rc, _out, err = docker('start', self.container, timeout=60)
            return rc == 0, err.strip()
        if op == 'fail':
            self.save_logs()
            if obs['exists']:
                docker('stop', '--time', str(self.stop_timeout), self.container, timeout=self.stop_timeout + 30)
            with self.lock:
                self.state, self.cause = gs.FAILED, cause
            self.write_state()
            log('group %s failed: %s; the last log of this rank is in %s' % (self.group, cause, self.logs_dir), 3)
            return True, ''
        return False, 'unknown order %s' % op

    def save_logs(self):
        try:
            os.makedirs(self.logs_dir, mode=0o750, exist_ok=True)
        except OSError as exc:
            log('cannot create %s: %s' % (self.logs_dir, exc), 4)
            return
        rc, out, err = docker('logs', '--timestamps', '--tail', str(self.log_lines), self.container, timeout=60)
        path = os.path.join(self.logs_dir, '%s-%s.log' % (self.container, self.me))
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640)
        with os.fdopen(fd, 'w') as handle:
            handle.write(out + err if rc == 0 else 'docker logs failed: %s\n' % err)

    def write_state(self):
        with self.lock:
            serving = {'verdict': self.serving['verdict'], 'cause': self.serving['cause']} if self.is_leader else {}
            record = gs.state_record(self.state, self.cause, 'leader' if self.is_leader else 'member', self.leader,
                                     self.history, time.time(), self.problems, self.ignored, serving, self.lost)
        key = json.dumps(dict(record, updated=0), sort_keys=True)
        # Rewritten on a change, and every minute so that status.yml sees a live supervisor.
        if self.written and self.written[0] == key and time.time() - self.written[1] < 60:
            return
        write_json(self.state_file, record)
        self.written = (key, time.time())
        self.write_metrics(record)

    def write_metrics(self, record):
        if not self.metrics_path or not os.path.isdir(self.metrics_dir):
            return
        try:
            write_text(self.metrics_path, gs.metrics_text(self.group, record['state'], record['restarts'], time.time(),
                                                          self.max_restarts, self.window, self.serving['verdict']))
        except OSError as exc:
            log('cannot write %s: %s' % (self.metrics_path, exc), 4)

    def remove_metrics(self):
        """A stopped supervisor leaves no series behind: no state is better than a stale one."""
        if self.metrics_path:
            try:
                os.remove(self.metrics_path)
            except OSError:
                pass

    # ---- the group's network ----------------------------------------------------------------
    def call(self, host, path, payload, timeout=None):
        member = self.by_host[host]
        body = json.dumps(payload).encode('utf-8')
        now = int(time.time())
        request = urllib.request.Request(
            'http://%s:%d%s' % (member['address'], int(self.config['port']), path), data=body, method='POST',
            headers={'Content-Type': 'application/json', 'X-Nimstack-Time': str(now),
                     'X-Nimstack-Signature': gs.sign(self.secret, now, 'POST', path, body)})
        try:
            with urllib.request.urlopen(request, timeout=timeout or self.request_timeout) as response:
                return json.loads(response.read().decode('utf-8'))
        except (OSError, ValueError, urllib.error.URLError) as exc:
            log('no answer from the supervisor of %s (%s): %s' % (host, path, exc), 4)
            return None

    def collect(self):
        """Every member's report: this one's own, the peers' over the network (in parallel)."""
        reports = {self.me: self.report()}
        told = {'state': self.state, 'cause': self.cause, 'leader': self.me}
        results = {}

        def ask(host):
            results[host] = self.call(host, '/report', told)

        threads = [threading.Thread(target=ask, args=(h,)) for h in self.hosts if h != self.me]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        reports.update(results)
        return reports

    def order(self, host, op, cause=''):
        if host == self.me:
            return self.act(op, cause)
        answer = self.call(host, '/act', {'op': op, 'cause': cause}, timeout=self.stop_timeout + 60)
        if answer is None:
            return False, 'the supervisor of %s did not answer' % host
        return bool(answer.get('ok')), answer.get('error', '')

    # ---- the leader's work ------------------------------------------------------------------
    def set_state(self, state, cause='', problems=None):
        with self.lock:
            changed = (state, cause) != (self.state, self.cause)
            self.state, self.cause, self.problems = state, cause, dict(problems or {})
        if changed:
            log('group %s: %s%s' % (self.group, state, ': ' + cause if cause else ''), 3 if state == gs.FAILED else 5)
        self.write_state()

    def fail(self, cause, problems):
        self.set_state(gs.FAILED, cause, problems)
        for host in self.hosts:
            ok, error = self.order(host, 'fail', cause)
            if not ok:
                log('could not mark %s failed: %s' % (host, error), 4)

    def api(self, method, path, payload=None, timeout=3):
        """One request to the leader's own NIM API on this host: (status, body), or (None, why)."""
        data = None if payload is None else json.dumps(payload).encode('utf-8')
        request = urllib.request.Request('http://127.0.0.1:%d%s' % (int(self.config['api_port']), path), data=data,
                                         method=method, headers={'Content-Type': 'application/json'})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, response.read(1 << 20).decode('utf-8', 'replace')
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read(2048).decode('utf-8', 'replace')
        except (OSError, urllib.error.URLError) as exc:
            # A read past the deadline is a socket.timeout (an OSError), not a URLError.
            return None, str(getattr(exc, 'reason', exc))

    def ready(self):
        return self.api('GET', '/v1/health/ready')[0] == 200

    def complete_once(self):
        """The idle probe: one completion of one token within the deadline; (ok, why)."""
        if not self.serving['model']:
            status, body = self.api('GET', '/v1/models')
            models = (gs.load_json(body, {}) or {}).get('data') if status == 200 else None
            if not models or not isinstance(models, list) or not isinstance(models[0], dict):
                return False, 'GET /v1/models answered %s' % (status if status is not None else body)
            self.serving['model'] = str(models[0].get('id', ''))
        began = time.time()
        status, body = self.api('POST', '/v1/chat/completions',
                                {'model': self.serving['model'], 'max_tokens': 1,
                                 'messages': [{'role': 'user', 'content': 'nimstack supervisor serving check'}]},
                                timeout=gs.SERVING_DEADLINE)
        if status == 200:
            return True, ''
        if status is None:
            return False, 'a completion of one token did not come back within %d s (%s)' % (gs.SERVING_DEADLINE, body)
        return False, 'a completion of one token answered %d after %.1f s: %s' % (
            status, time.time() - began, ' '.join(body.split())[:200])

    def disarm(self):
        """Until the group formed again and the leader answered ready: no probe, and no failure kept."""
        self.serving.update(armed=False, track={}, verdict=gs.SERVING_OK, cause='', generated=None, model='')

    def check_serving(self, action):
        """The serving check after a decision: the cause of a restart once the group has not served
        for serving_timeout seconds, else ''."""
        serving = self.serving
        armed = self.serving_timeout > 0 and gs.serving_armed(
            serving['armed'], action, action == 'ok' and not serving['armed'] and self.ready())
        if not armed:
            self.disarm()
            return ''
        if not serving['armed']:
            serving.update(armed=True, at=0.0)
            log('group %s: the serving check is armed (a probe every %g s; a restart after %d s without serving)'
                % (self.group, self.serving_every, self.serving_timeout), 6)
        now = time.time()
        if now - serving['at'] < self.serving_every:
            return ''
        serving['at'] = now
        status, text = self.api('GET', '/v1/metrics')
        metrics = gs.serving_metrics(text) if status == 200 else None
        what, ok, why = gs.serving_sample(metrics, serving['generated'])
        serving['generated'] = metrics[1] if metrics else None
        if what == 'idle':
            ok, why = self.complete_once()
        track, verdict, cause = gs.serving_track(serving['track'], now, ok, why, self.serving_timeout)
        if verdict != serving['verdict']:
            log('group %s: serving check %s%s' % (self.group, verdict, ': ' + cause if cause else ''),
                6 if verdict == gs.SERVING_OK else 4)
        serving.update(track=track, verdict=verdict, cause=cause)
        return cause if verdict == gs.SERVING_NOT else ''

    def port_open(self, address, port):
        try:
            with socket.create_connection((address, port), timeout=2):
                return True
        except OSError:
            return False

    def wait(self, done, seconds, what, started, snapshot):
        """Wait (bounded) until done(); meanwhile every started rank must keep running."""
        deadline = time.time() + seconds
        while time.time() < deadline:
            if done():
                return True, ''
            reports = self.collect()
            for host in started:
                if host not in snapshot and reports.get(host):
                    snapshot[host] = gs.baseline_of(reports[host]['rank'])
            verdict, cause = gs.check_started(self.hosts, started, reports, snapshot)
            if verdict != 'ok':
                return False, 'while it started again: ' + cause
            time.sleep(1)
        return False, '%s within %d s' % (what, seconds)

    def heal(self, cause, problems):
        """One restart of the whole group; (ok, why it failed)."""
        began = time.time()
        self.history.append(int(began))
        self.disarm()
        self.set_state(gs.HEALING, cause, problems)
        log('group %s: restarting the whole group (restart %d of at most %d within %d s): %s'
            % (self.group, len(gs.budget(self.history, began, 10 ** 9, self.window)[1]), self.max_restarts,
               self.window, cause), 4)
        started, snapshot = [], {}
        for action in gs.restart_actions(self.config):
            op = action['op']
            if op in ('stop', 'start'):
                ok, error = self.order(action['host'], op)
                if not ok:
                    return False, 'could not %s the rank on %s: %s' % (op, action['host'], error)
                if op == 'start':
                    started.append(action['host'])
            elif op == 'wait_port':
                address, port = action['address'], action['port']
                ok, why = self.wait(lambda: self.port_open(address, port), self.worker_timeout,
                                    '%s:%d did not answer' % (address, port), started, snapshot)
                if not ok:
                    return False, why
            elif op == 'wait_ready':
                ok, why = self.wait(self.ready, self.ready_timeout, '/v1/health/ready did not answer 200',
                                    started, snapshot)
                if not ok:
                    return False, why
        reports = self.collect()
        if not all(reports.get(h) for h in self.hosts):
            return False, 'a member stopped answering while the group started again'
        self.baseline = dict((h, gs.baseline_of(reports[h]['rank'])) for h in self.hosts)
        log('group %s: serves again %.1f s after the restart began' % (self.group, time.time() - began), 5)
        self.set_state(gs.FORMED, '')
        return True, ''

    def lead_once(self):
        reports = self.collect()
        if self.state == gs.FAILED and not self.lost:
            self.write_state()
            return
        now = time.time()
        self.unreachable = gs.unreachable_since(self.unreachable, self.hosts, reports, now)
        decision = gs.decide(self.hosts, reports, self.baseline,
                             dict((h, now - t) for h, t in self.unreachable.items()), self.lost_after)
        self.lost = list(decision['problems']) if decision['action'] == 'lost' else []
        for ignored in decision['ignored']:
            if ignored not in self.ignored:
                log('group %s: %s' % (self.group, ignored), 4)
        self.ignored = decision['ignored']
        action = decision['action']
        not_serving = self.check_serving(action) if not self.pending else ''
        if action == 'ok' and not_serving:
            action, decision = 'restart', dict(decision, cause=not_serving, problems={self.leader: not_serving})
        if action in ('ok', 'baseline') and self.pending:
            action, decision = 'restart', dict(decision, cause=self.pending, problems={})
        elif action == 'restart' and self.pending:
            # What broke the last attempt comes first: the ranks that attempt stopped are its effect.
            decision = dict(decision, cause='%s; now %s' % (self.pending, decision['cause']))
        if action == 'hold':
            self.baseline, self.pending = {}, ''
            self.set_state(gs.MAINTENANCE, decision['cause'])
        elif action == 'isolated':
            self.set_state(gs.ISOLATED, decision['cause'])
        elif action == 'lost':
            # No order to the members: the ones that answer keep their ranks for the host's return.
            self.set_state(gs.FAILED, decision['cause'], decision['problems'])
        elif action == 'baseline':
            self.baseline = dict((h, gs.baseline_of(reports[h]['rank'])) for h in self.hosts)
            self.set_state(gs.FORMED, '')
        elif action == 'ok':
            self.set_state(gs.FORMED, '')
        elif action == 'fail':
            self.fail(decision['cause'], decision['problems'])
        elif action == 'restart':
            allowed, recent = gs.budget(self.history, time.time(), self.max_restarts, self.window)
            self.history = recent
            if not allowed:
                self.fail(gs.over_budget_cause(decision['cause'], recent, self.max_restarts, self.window),
                          decision['problems'])
                return
            ok, why = self.heal(decision['cause'], decision['problems'])
            self.pending = '' if ok else 'the last restart failed: %s' % why
            if not ok:
                log('group %s: %s' % (self.group, self.pending), 4)
                self.baseline = {}

    def follow_once(self):
        timeout = max(3 * self.interval + 2 * self.request_timeout, 15)
        with self.lock:
            told, last = dict(self.told), self.last_contact
        if self.state == gs.FAILED and told.get('state') in (None, gs.FAILED):
            self.write_state()
            return
        state, cause = gs.follower_state(told, last, time.time(), timeout)
        with self.lock:
            if (state, cause) != (self.state, self.cause):
                log('group %s: %s%s' % (self.group, state, ': ' + cause if cause else ''), 5)
            self.state, self.cause = state, cause
        self.write_state()

    def run(self):
        role = 'leader' if self.is_leader else 'member'
        log('group %s: supervisor of %s (%s) on port %s; members %s; budget %d restart(s) within %d s'
            % (self.group, self.me, role, self.config['port'], ', '.join(self.hosts), self.max_restarts, self.window))
        if self.state == gs.FAILED:
            log('group %s stays failed: %s (rerun playbooks/deploy_docker.yml to clear it)' % (self.group, self.cause), 3)
        self.write_state()
        while True:
            try:
                self.lead_once() if self.is_leader else self.follow_once()
            except Exception as exc:  # pylint: disable=broad-except
                log('group %s: supervisor error: %r' % (self.group, exc), 3)
            time.sleep(self.interval)


def make_handler(supervisor):
    class Handler(BaseHTTPRequestHandler):
        server_version = 'nimstack-supervisor'

        def log_message(self, fmt, *args):  # no access log in the journal
            return

        def reply(self, code, value):
            body = json.dumps(value).encode('utf-8')
            self.send_response(code)
            self.send_header('Content-Type', 'application/json')
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):  # noqa: N802
            length = int(self.headers.get('Content-Length') or 0)
            if length > 65536:
                self.reply(413, {'error': 'too large'})
                return
            body = self.rfile.read(length)
            ok, why = gs.verify(supervisor.secret, self.headers.get('X-Nimstack-Time'), 'POST', self.path, body,
                                self.headers.get('X-Nimstack-Signature'), time.time())
            if not ok:
                log('refused a request from %s: %s' % (self.client_address[0], why), 4)
                self.reply(403, {'error': 'refused'})
                return
            payload = gs.load_json(body.decode('utf-8', 'replace'), {}) or {}
            if self.path == '/report':
                with supervisor.lock:
                    supervisor.told, supervisor.last_contact = payload, time.time()
                self.reply(200, supervisor.report())
            elif self.path == '/act':
                with supervisor.lock:
                    supervisor.last_contact = time.time()
                done, error = supervisor.act(payload.get('op', ''), payload.get('cause', ''))
                self.reply(200, {'ok': done, 'error': error})
            else:
                self.reply(404, {'error': 'no such path'})

    return Handler


def main(argv):
    if len(argv) != 2:
        sys.stderr.write('usage: nimstack_supervisor.py SUPERVISOR_JSON\n')
        return 2
    config = read_json(argv[1])
    if not isinstance(config, dict):
        log('cannot read the configuration %s' % argv[1], 3)
        return 1
    problems = gs.config_problems(config)
    if problems:
        log('configuration %s: %s' % (argv[1], '; '.join(problems)), 3)
        return 1
    supervisor = Supervisor(config)

    def stop(_signum, _frame):
        supervisor.remove_metrics()
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    bind = config.get('bind') or '0.0.0.0'
    server = ThreadingHTTPServer((bind, int(config['port'])), make_handler(supervisor))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    supervisor.run()
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
