# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The decisions of the bare-metal group supervisor (roles/nim_docker/files/nimstack_supervisor.py),
as pure functions: what one rank's container looks like, whether the group must restart as a
whole, whether the restart budget allows it, in which order a restart runs, and how the members'
supervisors authenticate each other, whether a run's maintenance hold still holds, and whether a
group that runs also serves.

One supervisor runs on every member of a Docker group (nimstack-supervisor@<group>.service). The
leader's decides; the others report their rank and carry out the leader's orders. Nothing here
touches a host: the program feeds observations in and runs the actions that come out, so every
rule is unit-tested. Standard library only: the program runs with the host's python3.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import hashlib
import hmac
import json
import math
import os
import time

# The states a supervisor reports (its state file, playbooks/status.yml).
FORMED = 'formed'
HEALING = 'healing'
FAILED = 'failed'
ISOLATED = 'isolated'
MAINTENANCE = 'maintenance'
STARTING = 'starting'
STATES = (FORMED, HEALING, FAILED, ISOLATED, MAINTENANCE, STARTING)

# Problems only Ansible can repair: the supervisor starts and stops existing containers, it never
# creates one or touches one it did not make.
MISSING = 'its container is missing'
NOT_OURS = 'a container of its name lacks the labels nimstack.managed=true and nimstack.group of this group'

# How far a signed request's clock may be from the receiver's (seconds).
MAX_CLOCK_SKEW = 30

# The start orders of the launch contracts when the configuration names no steps.
DEFAULT_STEPS_LEADER_FIRST = ('leader', 'workers', 'ready')
DEFAULT_STEPS_WORKERS_FIRST = ('workers', 'workers_ready', 'leader', 'ready')


def observe(inspect, group=None):
    """One rank as `docker inspect` shows it (a dict of its JSON, or None when it does not exist).

    With group, a container that lacks the labels nimstack.managed=true and nimstack.group=<group>
    is not ours ('ours': False): the supervisor never starts or stops it.
    """
    if not inspect:
        return {'exists': False, 'ours': False, 'running': False, 'restarting': False, 'id': '', 'restart_count': 0,
                'started_at': '', 'exit_code': None, 'status': 'missing'}
    state = inspect.get('State') or {}
    labels = (inspect.get('Config') or {}).get('Labels') or {}
    return {
        'exists': True,
        'ours': group is None or (labels.get('nimstack.managed') == 'true' and labels.get('nimstack.group') == group),
        'running': bool(state.get('Running')) and not bool(state.get('Restarting')),
        'restarting': bool(state.get('Restarting')),
        'id': inspect.get('Id') or '',
        'restart_count': int(inspect.get('RestartCount') or 0),
        'started_at': state.get('StartedAt') or '',
        'exit_code': state.get('ExitCode'),
        'status': state.get('Status') or '',
    }


def baseline_of(obs):
    """What a rank's observation is compared against later: the container, its restarts, its start."""
    return {'id': obs.get('id', ''), 'restart_count': obs.get('restart_count', 0),
            'started_at': obs.get('started_at', '')}


def rank_problem(baseline, obs):
    """Why one rank is not the one that formed with the group, or None when it is.

    baseline: baseline_of() the rank when the group last formed (None: not known yet).
    """
    if not obs.get('exists'):
        return MISSING
    if not obs.get('ours', True):
        return NOT_OURS
    if obs.get('restarting') or not obs.get('running'):
        code = obs.get('exit_code')
        exit_code = '' if code in (None, 0) else ' (exit code %s)' % code
        return 'its container is %s%s' % (obs.get('status') or 'stopped', exit_code)
    if not baseline:
        return None
    if baseline.get('id') and obs.get('id') != baseline.get('id'):
        return 'its container was replaced'
    if obs.get('restart_count', 0) > baseline.get('restart_count', 0):
        return 'it died and Docker restarted it %d time(s)' % (obs['restart_count'] - baseline.get('restart_count', 0))
    if baseline.get('started_at') and obs.get('started_at') != baseline.get('started_at'):
        return 'it was restarted (started at %s)' % obs.get('started_at')
    return None


# A maintenance hold (a file the run writes on a host while it re-forms a group or runs a restart
# or reboot wave) is a lease, as Kubernetes' Lease objects are: it names the run that holds it and
# expires unless that run renews it. A run that dies leaves a hold that expires by itself.
HOLD_LIVE = 'live'
HOLD_STALE = 'stale'
# An expiry past this (the year 10000) is garbled: time.gmtime cannot show it.
_HOLD_MAX_EXPIRY = 253402300800


def hold_record(owner, holder, lease, now, acquired=None):
    """The content of a hold file (JSON): its owner (run, controller, pid: run_owner()), what holds
    (holder: 'the deployment of group g1'), when it was acquired and last renewed, the lease in
    seconds and the time it expires (epoch seconds)."""
    now = int(now)
    named = dict((k, owner[k]) for k in ('run', 'controller', 'pid') if k in owner)
    return {'owner': named, 'holder': holder, 'acquired': int(acquired or now), 'renewed': now,
            'lease': int(lease), 'expires': now + int(lease)}


def run_owner(controller, pid, started):
    """The owner of the holds of one ansible-playbook run: its controller, its pid, and a run id that
    no other run shares (the pid and the start time of the process on that controller)."""
    return {'run': '%s-%d-%d' % (controller, int(pid), int(started)), 'controller': controller, 'pid': int(pid)}


def _when(epoch):
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(epoch))


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _hold_text(owner, holder, legacy):
    if legacy:
        who = 'hold without an owner (not a lease: counted from the file\'s time)'
    else:
        who = 'hold by run %s of controller %s' % (owner.get('run', '?'), owner.get('controller', '?'))
    return who + (' (%s)' % holder if holder else '')


def hold_state(content, now, mtime, lease):
    """One hold file as the supervisor, status.yml and the next run read it.

    content: the file's text; mtime: its modification time; lease: the lease in seconds that counts
    for a file without one. A hold that is not a lease (the plain text of an earlier release, a hand
    'touch', a half-written or garbled file) is counted from its mtime: it holds for lease seconds
    after it was last written, then is stale like any other. Never raises.

    Returns {'state': 'live' | 'stale', 'owner': {run, controller, pid} ({} when unnamed),
    'holder', 'acquired' (None when unknown), 'expires', 'remaining' (seconds, negative once expired),
    'legacy', 'message'}.
    """
    record = load_json(content) if isinstance(content, str) else None
    legacy = not (isinstance(record, dict) and _number(record.get('expires'))
                  and 0 <= record['expires'] < _HOLD_MAX_EXPIRY)
    if legacy:
        record = {}
    owner = record.get('owner') if isinstance(record.get('owner'), dict) else {}
    expires = (float(mtime or 0) + int(lease)) if legacy else float(record['expires'])
    remaining = int(round(expires - now))
    holder = str(record.get('holder') or '')
    what = _hold_text(owner, holder, legacy)
    if now < expires:
        state, message = HOLD_LIVE, '%s expires in %d s (at %s)' % (what, max(remaining, 0), _when(expires))
    else:
        state, message = HOLD_STALE, '%s expired %d s ago (at %s), ignored by the supervisors' % (
            what, -remaining, _when(expires))
    acquired = record.get('acquired') if _number(record.get('acquired')) else None
    return {'state': state, 'owner': owner, 'holder': holder, 'acquired': acquired, 'expires': int(expires),
            'remaining': remaining, 'legacy': legacy, 'message': message}


def run_ended(holder, owner):
    """Why the run that wrote a hold (its owner: holder) has ended, as this run (owner: run_owner() with
    'alive', the run ids of the ansible-playbook processes alive on its controller, read at 'alive_at')
    sees it, or '' when it may live. Only a run of the same controller that started before that reading
    can be known to have ended: one of another controller (an AWX job's pod) holds until its lease
    expires."""
    alive, alive_at = owner.get('alive'), owner.get('alive_at')
    run, controller = str(holder.get('run') or ''), holder.get('controller')
    if alive is None or not _number(alive_at) or not controller or controller != owner.get('controller'):
        return ''
    if not run.startswith('%s-' % controller) or run in alive:
        return ''
    try:
        started = int(run.rsplit('-', 1)[1])
    except ValueError:
        return ''
    if started >= alive_at:
        return ''
    return 'ansible-playbook pid %s on %s is gone' % (holder.get('pid', '?'), controller)


def read_hold(path, now, lease):
    """hold_state() of the hold file at path, with its path, or None when there is none. A file that
    cannot be read counts as garbled: it holds for one lease after it was written."""
    try:
        mtime = os.stat(path).st_mtime
    except OSError:
        return None
    try:
        with open(path, errors='replace') as handle:
            content = handle.read(65536)
    except OSError:
        content = ''
    return dict(hold_state(content, now, mtime, lease), path=path)


def hold_action(state, owner, want):
    """What a run does with a hold it finds on a host: (action, note).

    state: hold_state() of the file (None: there is none); owner: this run's run_owner(); want:
    'present' (hold or renew) or 'absent' (release). Actions: 'write' (acquire, renew, or replace
    a stale hold), 'remove', 'keep' (nothing to do) and 'refuse': the live hold of another run, a
    concurrent run, which this one neither replaces nor releases. note says what happened to a hold
    that was not this run's.
    """
    if state is None:
        return ('write' if want == 'present' else 'keep'), ''
    ours = state['owner'].get('run') == owner.get('run') and not state['legacy']
    ended = not ours and not state['legacy'] and run_ended(state['owner'], owner)
    if state['state'] == HOLD_LIVE and ended:
        return ('write' if want == 'present' else 'remove'), 'cleared: %s, but its run ended (%s)' % (
            state['message'], ended)
    if state['state'] == HOLD_LIVE and not ours and not state['legacy']:
        owner = state['owner']
        return 'refuse', ('%s: another run (controller %s, pid %s) is working on this host; let it finish, or '
                          'remove the file once that run is gone' % (state['message'], owner.get('controller', '?'),
                                                                     owner.get('pid', '?')))
    note = '' if ours else 'cleared: %s' % state['message']
    return ('write' if want == 'present' else 'remove'), note


def holds_of(hosts, reports):
    """(held, ignored) of the members' reports: held, the causes of the live holds ('' for none);
    ignored, the stale holds the supervisor acts as if absent, each as 'h2: hold by run R of
    controller C expired at T, ignored'.

    A report carries the hold_state() of each hold file on its host under 'holds'. One from a
    supervisor of an earlier release (a group whose members are being updated) carries only the
    boolean 'maintenance', which holds.
    """
    held, ignored = [], []
    # Times, not the seconds left: the causes stay the same from one look to the next.
    for host in hosts:
        report = reports.get(host) or {}
        if 'holds' not in report:
            if report.get('maintenance'):
                held.append('maintenance flag set on %s (a deploy or a restart wave is running)' % host)
            continue
        for hold in report['holds']:
            what = '%s: %s' % (host, _hold_text(hold.get('owner') or {}, hold.get('holder'), hold.get('legacy')))
            expires = _when(hold.get('expires', 0))
            if hold.get('state') == HOLD_LIVE:
                held.append('%s until %s' % (what, expires))
            else:
                ignored.append('%s expired at %s, ignored' % (what, expires))
    return '; '.join(held), ignored


def unreachable_since(since, hosts, reports, now):
    """{host: since when its supervisor has not answered} of the members that do not answer now,
    from the last look's (since) and this look's reports; a member that answers is dropped."""
    return dict((h, (since or {}).get(h, now)) for h in hosts if not reports.get(h))


def decide(hosts, reports, baseline, unreachable_for=None, lost_after=0):
    """What the leader's supervisor does next, from every member's report.

    hosts: the members, in the group's order. reports: {host: report or None (unreachable)}, a
    report being {'holds': [hold_state(...) of each hold file on the host], 'rank': observe(...)}.
    baseline: {host: baseline_of(...)} of the last formation, or {} before the first.
    unreachable_for: {host: seconds its supervisor has not answered}; lost_after: the seconds after
    which such a member is taken as lost (0: never).

    Returns {'action': 'hold' | 'isolated' | 'lost' | 'fail' | 'restart' | 'baseline' | 'ok', 'state',
    'cause', 'problems': {host: why}, 'ignored': [stale holds]}. A live hold on any member holds
    everything; a stale one (its run died) is ignored and named in 'ignored'; an unreachable member
    makes the leader isolated (it never restarts on a guess), and failed once it has not answered for
    lost_after seconds ('lost': the group waits for the host, and re-forms when it answers again); a
    missing container cannot be recreated without Ansible, so the group fails at once.
    """
    held, ignored = holds_of(hosts, reports)
    decision = _decide(hosts, reports, baseline, held, unreachable_for or {}, lost_after)
    decision['ignored'] = ignored
    return decision


def _decide(hosts, reports, baseline, held, unreachable_for, lost_after):
    if held:
        return {'action': 'hold', 'state': MAINTENANCE, 'problems': {}, 'cause': held}
    unreachable = [h for h in hosts if not reports.get(h)]
    lost = [h for h in unreachable if lost_after > 0 and unreachable_for.get(h, 0) >= lost_after]
    if lost:
        # The same words from one look to the next: a change of cause is logged.
        return {'action': 'lost', 'state': FAILED,
                'problems': dict((h, 'its supervisor has not answered for %d s or more' % lost_after) for h in lost),
                'cause': ('cannot reach the supervisor of %s for %d s or more (nim_group_lost_after): taken as lost; '
                          'no rank is restarted on a guess. Bring the host back (the group then re-forms by itself) '
                          'or take it out of the inventory and rerun playbooks/deploy_docker.yml'
                          % (', '.join(lost), lost_after))}
    if unreachable:
        return {'action': 'isolated', 'state': ISOLATED, 'problems': {},
                'cause': 'cannot reach the supervisor of %s; no rank is restarted on a guess' % ', '.join(unreachable)}
    problems = {}
    for host in hosts:
        why = rank_problem(baseline.get(host), reports[host].get('rank') or {})
        if why:
            problems[host] = why
    if not problems:
        if not baseline or any(h not in baseline for h in hosts):
            return {'action': 'baseline', 'state': FORMED, 'problems': {}, 'cause': ''}
        return {'action': 'ok', 'state': FORMED, 'problems': {}, 'cause': ''}
    cause = describe(problems, hosts)
    missing = [h for h, why in problems.items() if why in (MISSING, NOT_OURS)]
    if missing:
        return {'action': 'fail', 'state': FAILED, 'problems': problems,
                'cause': cause + '; the supervisor does not recreate containers: rerun playbooks/deploy_docker.yml'}
    return {'action': 'restart', 'state': HEALING, 'problems': problems, 'cause': cause}


# The serving check (the leader's supervisor only). Containers that run are not a group that
# serves: a collective that hangs after an NCCL or network fault, a rank stuck on a GPU error or a
# leader that answers /v1/health/ready and fails every completion leave every process running. So
# the leader also probes its own API on the host: when no request runs, one short completion
# (max_tokens 1, SERVING_DEADLINE seconds); while requests run, the NIM's own counter of generated
# tokens (/v1/metrics) must advance between two probes. A group that fails every probe for the
# serving timeout (nim_group_serving_timeout) is re-formed like a group whose rank died.
SERVING_OK = 'ok'
SERVING_SUSPECT = 'suspect'
SERVING_NOT = 'not serving'
# Seconds between two probes, and the deadline of the idle probe's completion.
SERVING_EVERY = 5
SERVING_DEADLINE = 5
# The series of a NIM for LLMs' /v1/metrics the check reads (vLLM's names, NIM 1.x): the requests
# running, and the tokens served (generated, and prefilled: a long prompt's prefill is progress too).
_RUNNING = 'num_requests_running'
_GENERATED = 'generation_tokens_total'
_PROMPT = 'prompt_tokens_total'


def serving_metrics(text):
    """(running, tokens) of a NIM's /v1/metrics text: the requests running now and the tokens
    served so far (generated and prefilled), each summed over its series; None when the running or
    the generated series is absent or the text is not Prometheus' (a NIM of a release without them:
    the probe then sends a completion)."""
    sums = {}
    for line in (text or '').splitlines():
        if not line or line.startswith('#'):
            continue
        name = line.split('{', 1)[0].split(' ', 1)[0]
        if name not in (_RUNNING, _GENERATED, _PROMPT):
            continue
        try:
            value = float(line.rsplit(' ', 1)[1])
        except (IndexError, ValueError):
            return None
        if not math.isfinite(value):
            return None
        sums[name] = sums.get(name, 0.0) + value
    if _RUNNING not in sums or _GENERATED not in sums:
        return None
    return sums[_RUNNING], sums[_GENERATED] + sums.get(_PROMPT, 0.0)


def serving_sample(metrics, last_generated):
    """One look at the leader while the check is armed: (what, ok, why).

    metrics: serving_metrics() now (None: unreadable); last_generated: the tokens generated at the
    previous look (None: no earlier look). what is 'idle' when no request runs or the metrics are
    unreadable: the caller sends the probe's completion and judges by its answer (ok and why are
    None). It is 'busy' when requests run: ok when tokens were generated since the last look, False
    when none was, None (no verdict) without an earlier look or after the counter went back (the
    NIM restarted)."""
    if metrics is None or metrics[0] <= 0:
        return 'idle', None, None
    running, generated = metrics
    if last_generated is None or generated < last_generated:
        return 'busy', None, None
    if generated > last_generated:
        return 'busy', True, ''
    return 'busy', False, '%d request(s) running and no token served since the last probe' % running


def serving_track(track, now, ok, why, timeout):
    """The check's verdict over time: (track, verdict, cause).

    track: what the last call returned ({} at first); ok: the probe's result now (True, False, or
    None for no verdict, which changes nothing); why: what failed. verdict is SERVING_OK while the
    last verdict was a success, SERVING_SUSPECT while the probes fail for less than timeout seconds
    in a row, SERVING_NOT once they failed for timeout seconds without one success; cause then says
    what failed and for how long."""
    track = dict(track or {})
    if ok is None:
        since = track.get('failing_since')
    elif ok:
        return {'failing_since': None, 'why': '', 'ok_at': now}, SERVING_OK, ''
    else:
        since = track.get('failing_since') or now
        track.update(failing_since=since, why=why or 'the probe failed')
    if since is None:
        return track, SERVING_OK, ''
    failing = now - since
    if failing >= timeout:
        return track, SERVING_NOT, ('the group runs but does not serve: %s (every probe failed for %d s, '
                                    'nim_group_serving_timeout=%d)' % (track['why'], failing, timeout))
    return track, SERVING_SUSPECT, track['why']


def serving_armed(armed, action, ready):
    """Whether the serving check probes: only while the group is formed and its baseline known
    (decide() said 'ok': no live hold, every rank runs as it formed), and once the leader answered
    /v1/health/ready since then. So it never fires while the model loads or a run holds the group;
    any other decision disarms it, and a re-formed group loads again before it is probed."""
    if action != 'ok':
        return False
    return bool(armed or ready)


def check_started(hosts, started, reports, snapshot):
    """While a restart runs: whether the ranks started so far still run.

    started: the hosts whose rank this restart started; snapshot: {host: baseline_of()} taken at the
    first look after each start (the caller adds missing hosts). Returns (verdict, cause): 'hold'
    (maintenance), 'isolated', 'broken' (a started rank died or restarted) or 'ok'.
    """
    held = holds_of(hosts, reports)[0]
    if held:
        return 'hold', held
    unreachable = [h for h in hosts if not reports.get(h)]
    if unreachable:
        return 'isolated', 'cannot reach the supervisor of %s' % ', '.join(unreachable)
    problems = {}
    for host in started:
        why = rank_problem(snapshot.get(host), reports[host].get('rank') or {})
        if why:
            problems[host] = why
    if problems:
        return 'broken', describe(problems, hosts)
    return 'ok', ''


def describe(problems, hosts=None):
    """'rank on h2: why; rank on h3: why' in the group's order."""
    order = [h for h in (hosts or []) if h in problems] + sorted(h for h in problems if h not in (hosts or []))
    return '; '.join('rank on %s: %s' % (h, problems[h]) for h in order)


def budget(history, now, max_restarts, window):
    """Whether one more restart fits: at most max_restarts within the last window seconds.

    history: the times (epoch seconds) of the earlier restarts. Returns (allowed, recent), recent
    being the restarts still inside the window (what the state file keeps).
    """
    recent = sorted(t for t in history if now - t < window)
    return len(recent) < max_restarts, recent


def over_budget_cause(cause, recent, max_restarts, window):
    return ('%s; %d restart(s) of the whole group within %d s already (nim_group_max_restarts=%d, '
            'nim_group_restart_window=%d): the supervisor gives up' % (cause, len(recent), window, max_restarts, window))


def restart_actions(config):
    """The ordered actions of one restart of the whole group, from the supervisor's configuration.

    Every rank stops first, the leader before its workers (no worker is left waiting for a leader
    that is going away), then the ranks start in the contract's order (launch.steps): 'leader' and
    'workers' start ranks, 'workers_ready' waits for each worker's port (mpi: the leader's mpirun
    needs every sshd), 'workers_reach_leader' waits for the leader's port (ray: the head), 'ready'
    waits for the leader's /v1/health/ready.
    """
    leader = config['leader']
    members = config['members']
    workers = [m for m in members if m['host'] != leader]
    by_host = dict((m['host'], m) for m in members)
    steps = config.get('steps') or (DEFAULT_STEPS_LEADER_FIRST if config.get('leader_first', True)
                                    else DEFAULT_STEPS_WORKERS_FIRST)
    order = config.get('start_order') or ([leader] + [w['host'] for w in workers])
    start_workers = [h for h in order if h != leader]
    ports = config.get('ports') or {}
    actions = [{'op': 'stop', 'host': leader}] + [{'op': 'stop', 'host': w['host']} for w in workers]
    for step in steps:
        if step == 'leader':
            actions.append({'op': 'start', 'host': leader})
        elif step == 'workers':
            actions.extend({'op': 'start', 'host': h} for h in start_workers)
        elif step == 'workers_ready' and ports.get('ssh'):
            actions.extend({'op': 'wait_port', 'host': h, 'address': by_host[h]['address'], 'port': int(ports['ssh'])}
                           for h in start_workers)
        elif step == 'workers_reach_leader' and ports.get('ray'):
            actions.append({'op': 'wait_port', 'host': leader, 'address': by_host[leader]['address'],
                            'port': int(ports['ray'])})
        elif step == 'ready':
            actions.append({'op': 'wait_ready', 'host': leader})
    return actions


def follower_state(told, last_contact, now, timeout):
    """A follower's state: what the leader last told it, or isolated when the leader has not
    reached it for timeout seconds (a follower never acts on its own)."""
    if last_contact is None or now - last_contact > timeout:
        return ISOLATED, 'the leader\'s supervisor has not reached this member for %d s' % timeout
    state = (told or {}).get('state') or STARTING
    return (state if state in STATES else STARTING), (told or {}).get('cause', '')


def sign(secret, timestamp, method, path, body):
    """HMAC-SHA256 of one request: its time, method, path and body, with the group's secret."""
    if isinstance(secret, str):
        secret = secret.encode('utf-8')
    if isinstance(body, str):
        body = body.encode('utf-8')
    message = ('%d\n%s\n%s\n' % (int(timestamp), method.upper(), path)).encode('utf-8') + (body or b'')
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def verify(secret, timestamp, method, path, body, signature, now):
    """Whether a request is signed with the group's secret and recent; (ok, why not)."""
    try:
        timestamp = int(timestamp)
    except (TypeError, ValueError):
        return False, 'no timestamp'
    if abs(now - timestamp) > MAX_CLOCK_SKEW:
        return False, 'timestamp %d s away from this host\'s clock' % abs(now - timestamp)
    if not signature or not hmac.compare_digest(sign(secret, timestamp, method, path, body), str(signature)):
        return False, 'bad signature'
    return True, ''


def state_record(state, cause, role, leader, history, now, problems=None, ignored=None, serving=None, lost=None):
    """The state file's content (JSON): what status.yml reads. ignored: the stale holds the
    leader's last decision ignored; serving: the serving check's verdict and what failed
    ({'verdict', 'cause'}; {} on a member); lost: the members taken as lost (a failed state that
    ends by itself when they answer again, where any other failed state waits for Ansible)."""
    return {'state': state, 'cause': cause or '', 'role': role, 'leader': leader,
            'restarts': list(history), 'problems': dict(problems or {}), 'ignored_holds': list(ignored or []),
            'serving': dict(serving or {}), 'lost': list(lost or []), 'updated': int(now)}


# Node exporter's textfile collector reads *.prom files from this directory (Debian's
# prometheus-node-exporter: --collector.textfile.directory=/var/lib/prometheus/node-exporter). The
# leader's supervisor writes its group's series there, so Prometheus reads them through the node
# exporter's port: no new port on a GPU host, and the signed API stays POST-only and members-only.
METRICS_DIR = '/var/lib/prometheus/node-exporter'

_METRICS_HELP = (
    ('nimstack_group_state', 'The state of a Docker deployment group as its leader\'s supervisor sees it: '
                             '1 for the current state, 0 for the others.'),
    ('nimstack_group_restarts', 'Restarts of the whole group inside the supervisor\'s budget window.'),
    ('nimstack_group_restart_budget', 'The most restarts of the whole group the supervisor makes within its '
                                      'budget window (nim_group_max_restarts).'),
    ('nimstack_group_serving', 'The serving check of the group\'s leader: 1 when its last verdict was a success '
                               'or it does not probe now (the model loads, a hold, the check off), 0 while its '
                               'probes fail.'),
)


def metrics_file(group, directory=METRICS_DIR):
    """Where the leader's supervisor of group writes its series (one file per group)."""
    return '%s/nimstack_group_%s.prom' % (directory.rstrip('/'), group)


def _label(value):
    return str(value).replace('\\', '\\\\').replace('\n', '\\n').replace('"', '\\"')


def metrics_text(group, state, history, now, max_restarts, window, serving=SERVING_OK):
    """The Prometheus text of one group: nimstack_group_state{group,state} (1 for state, 0 for the
    other states), nimstack_group_restarts{group} (the restarts of history inside the last window
    seconds), nimstack_group_restart_budget{group} (max_restarts) and nimstack_group_serving{group}
    (0 while the serving check's verdict is not SERVING_OK)."""
    recent = budget(history, now, max_restarts, window)[1]
    group_label = 'group="%s"' % _label(group)
    values = {
        'nimstack_group_state': ['{%s,state="%s"} %d' % (group_label, s, 1 if s == state else 0) for s in STATES],
        'nimstack_group_restarts': ['{%s} %d' % (group_label, len(recent))],
        'nimstack_group_restart_budget': ['{%s} %d' % (group_label, int(max_restarts))],
        'nimstack_group_serving': ['{%s} %d' % (group_label, 1 if serving == SERVING_OK else 0)],
    }
    lines = []
    for name, text in _METRICS_HELP:
        lines.append('# HELP %s %s' % (name, text))
        lines.append('# TYPE %s gauge' % name)
        lines.extend(name + sample for sample in values[name])
    return '\n'.join(lines) + '\n'


def load_json(text, default=None):
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return default
    return value


def config_problems(config):
    """What is wrong with a supervisor configuration (the deploy writes it; a hand edit may break it)."""
    problems = []
    for key in ('group', 'self', 'leader', 'members', 'container', 'port', 'hold_lease'):
        if key not in config:
            problems.append('%s is missing' % key)
    if problems:
        return problems
    hosts = [m.get('host') for m in config['members']]
    if config['self'] not in hosts:
        problems.append('self %s is not a member' % config['self'])
    if config['leader'] not in hosts:
        problems.append('leader %s is not a member' % config['leader'])
    for key, low in (('max_restarts', 0), ('window', 1), ('interval', 1), ('hold_lease', 1), ('serving_timeout', 0),
                     ('lost_after', 0)):
        if key in config and (isinstance(config[key], bool) or not isinstance(config[key], int) or config[key] < low):
            problems.append('%s must be a whole number of at least %d' % (key, low))
    return problems
