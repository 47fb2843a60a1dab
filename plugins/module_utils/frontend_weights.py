# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The front door's load-aware weights: how much new traffic each leader should get, from what its
own /v1/metrics says.

HAProxy balances a pool with ``leastconn`` and checks every leader's health; it cannot see a
leader's queue. A leader whose slots are all taken queues a new request inside the engine, and
its time to first token grows with that queue, while HAProxy still counts it as one connection
like any other. The weights service of the front door (roles/nim_frontend/files/
nimstack_frontend_weights.py, installed beside a copy of this file) reads each leader's metrics
every interval and sets the leader's weight through HAProxy's runtime API; leastconn then sends a
new request where connections / weight is least.

A leader's weight is its static weight (the one in haproxy.cfg) scaled down by two pressures:

- the **expected queue wait**: ``num_requests_waiting`` / the rate at which it completes requests
  (the increase of ``request_success_total`` + ``request_failure_total`` over a sliding window),
  which is Little's law for the queue; a group that serves at half the rate with the same queue
  makes a new request wait twice as long. The weight is divided by ``1 + wait / wait_s``; a
  queue at a leader that completed nothing in the window counts as the longest wait.
- the **KV cache**: above ``kv_threshold`` of ``gpu_cache_usage_perc`` the weight falls linearly
  to the floor at 1.0 (a full cache preempts running sequences).

The result is bounded by ``min_weight`` (a saturated leader still gets some traffic, so its
numbers keep moving) and the static weight (an idle leader gets no more than the configuration
gives it). A leader whose metrics cannot be read, or lack the gauges, returns to its static
weight: the health checks, not the weights, decide whether it serves (a stall it showed goes on
being timed across the missed readings).

Two states take a leader out (weight 0: HAProxy sends it no new request, the running ones go on)
before its group's supervisor re-forms it, since HAProxy's readiness check cannot see them:

- **stalled**: requests run and no token was served for ``stall_s`` seconds (neither
  ``generation_tokens_total`` nor ``prompt_tokens_total`` moved: a long prefill is progress too),
  as in a group whose collective hangs while every process runs and /v1/health/ready says 200. It
  stays out until tokens move again or nothing runs (the re-formed group's counters start again).
- **failing**: ``FAIL_RUN`` completions failed in a row (``request_failure_total`` grew and
  ``request_success_total`` did not), as in a group that answers ready and fails every completion.
  It stays out ``stall_s`` seconds, then gets traffic again as a trial; the next failures take it
  out again.

Standard library only and no Ansible imports: the service runs with the host's python3 and the
unit tests use this directly.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math
import re

# The weight each leader has in haproxy.cfg (HAProxy's range is 0..256): room to go down.
STATIC_WEIGHT = 100
DEFAULTS = {'wait_s': 2.0, 'min_weight': 10, 'kv_threshold': 0.9, 'window_s': 10.0, 'stall_s': 10.0}
# Completions failed in a row that take a leader out.
FAIL_RUN = 3
# The expected wait given to a queue at a leader that completed nothing in the window.
STALLED_WAIT_S = 3600.0

_SAMPLE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?\s+(\S+)(\s+-?\d+)?\s*\Z')
GAUGES = ('num_requests_waiting', 'num_requests_running', 'gpu_cache_usage_perc')
COUNTERS = ('request_success_total', 'request_failure_total')
GENERATED = 'generation_tokens_total'
# The tokens a leader serves: prefilled and generated (vLLM counts both per engine step).
SERVED = ('prompt_tokens_total', GENERATED)


def parse_metrics(text):
    """{metric name: sum of its samples} of a Prometheus text exposition (a leader serves one
    model, so the model_name label adds nothing). Comments, and samples whose value is not a
    number, are skipped."""
    values = {}
    for line in (text or '').splitlines():
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        match = _SAMPLE.match(line)
        if not match:
            continue
        try:
            value = float(match.group(3))
        except ValueError:
            continue
        if math.isnan(value):
            continue
        values[match.group(1)] = values.get(match.group(1), 0.0) + value
    return values


def load_of(values):
    """The numbers the weight needs, from parse_metrics; None when a gauge is missing (not a NIM
    for LLMs 1.x, or not yet serving)."""
    if any(name not in values for name in GAUGES):
        return None
    return {'waiting': max(0.0, values['num_requests_waiting']),
            'running': max(0.0, values['num_requests_running']),
            'kv': min(1.0, max(0.0, values['gpu_cache_usage_perc'])),
            'completed': sum(values.get(name, 0.0) for name in COUNTERS),
            'succeeded': values.get(COUNTERS[0], 0.0), 'failed': values.get(COUNTERS[1], 0.0),
            'tokens': sum(values.get(name, 0.0) for name in SERVED) if GENERATED in values else None}


def weight(waiting, rate, kv, static=STATIC_WEIGHT, wait_s=DEFAULTS['wait_s'], min_weight=DEFAULTS['min_weight'],
           kv_threshold=DEFAULTS['kv_threshold']):
    """The weight of a leader with `waiting` requests queued, completing `rate` requests a second
    (None when not known yet), its KV cache `kv` full (0..1). An int in [min(min_weight, static), static]."""
    if waiting <= 0 or rate is None:
        # No queue, or no rate yet (the first reading): nothing says this leader is slower.
        wait = 0.0
    elif rate > 0:
        wait = waiting / rate
    else:
        wait = STALLED_WAIT_S
    scale = 1.0 / (1.0 + wait / wait_s)
    if kv > kv_threshold:
        scale *= max(0.0, (1.0 - kv) / (1.0 - kv_threshold))
    floor = min(min_weight, static)
    return int(max(floor, min(static, round(static * scale))))


class LeaderWeight(object):
    """One leader's weight over time: feed it every reading (or None when its metrics could not be
    read) with the time it was taken; it keeps the window of completions the rate comes from."""

    def __init__(self, static=STATIC_WEIGHT, **settings):
        self.static = static
        self.settings = dict(DEFAULTS)
        self.settings.update((k, v) for k, v in settings.items() if v is not None)
        self.history = []
        self.last = None
        self.health = _Health()

    def rate(self):
        """Requests completed a second over the window; None until it spans a reading apart."""
        if len(self.history) < 2:
            return None
        (t0, c0), (t1, c1) = self.history[0], self.history[-1]
        return (c1 - c0) / (t1 - t0) if t1 > t0 else None

    def observe(self, now, load):
        """The weight to set after a reading taken at `now` (seconds, monotonic): load_of's dict,
        or None when the metrics could not be read. Also kept as .last (with the inputs) for the
        service's log and the benchmark's series."""
        if load is None:
            # The rate starts again, the stall clock does not: a reading missed on a busy host (or
            # from a leader too hung to answer its metrics in time) must not give a stalled leader
            # another stall_s in the pool.
            self.history = []
            self.last = {'weight': self.static, 'waiting': None, 'kv': None, 'rate': None, 'stale': True, 'out': ''}
            return self.static
        if self.history and (load['completed'] < self.history[-1][1] or now <= self.history[-1][0]):
            # A restarted leader (its counters began again) or a clock that did not move.
            self.history = []
        self.history.append((now, load['completed']))
        while len(self.history) > 2 and now - self.history[1][0] >= self.settings['window_s']:
            self.history.pop(0)
        rate = self.rate()
        value = weight(load['waiting'], rate, load['kv'], self.static, self.settings['wait_s'],
                       self.settings['min_weight'], self.settings['kv_threshold'])
        out = self.health.observe(now, load, self.settings['stall_s'])
        if out:
            value = 0
        self.last = {'weight': value, 'waiting': load['waiting'], 'kv': load['kv'], 'rate': rate, 'stale': False,
                     'out': out}
        return value


class _Health(object):
    """Whether a leader is stalled or failing (the module's docstring), from its readings."""

    def __init__(self):
        self.previous = None
        self.progress_at = None
        self.fail_run = 0
        self.out_until = None

    def observe(self, now, load, stall_s):
        """Why the leader is out now ('' when it is not)."""
        load = dict(load, succeeded=load.get('succeeded') or 0.0, failed=load.get('failed') or 0.0,
                    tokens=load.get('tokens'))
        previous, self.previous = self.previous, load
        if not stall_s or stall_s <= 0:
            return ''
        restarted = previous is not None and (
            load['succeeded'] < previous['succeeded'] or load['failed'] < previous['failed']
            or (load['tokens'] or 0) < (previous['tokens'] or 0))
        if previous is None or restarted:
            # The first reading, or a restarted leader (its counters began again).
            self.progress_at, self.fail_run, self.out_until = now, 0, None
            return ''
        if load['running'] <= 0 or load['tokens'] is None or load['tokens'] > (previous['tokens'] or 0):
            self.progress_at = now
        if load['succeeded'] > previous['succeeded']:
            self.fail_run, self.out_until = 0, None
        else:
            self.fail_run += int(load['failed'] - previous['failed'])
        if self.out_until is not None and now >= self.out_until:
            # A trial after stall_s out: traffic again; FAIL_RUN more failures take it out again.
            self.fail_run, self.out_until = 0, None
        elif self.out_until is None and self.fail_run >= FAIL_RUN:
            self.out_until = now + stall_s
        if self.out_until is not None:
            return '%d completions failed in a row' % self.fail_run
        if now - self.progress_at >= stall_s:
            return '%d request(s) running and no token served for %d s' % (load['running'], now - self.progress_at)
        return ''


def keep_one_in(weights, min_weight=DEFAULTS['min_weight']):
    """The weights ({(backend, server): weight}) with no pool emptied: where every leader of a backend
    is out (weight 0), each gets min_weight instead, since HAProxy would answer 503 to every request
    of a pool without a server, and a stalled or failing leader may still answer some."""
    backends = {}
    for (backend, _server), value in weights.items():
        backends.setdefault(backend, []).append(value)
    return dict((key, min_weight if value == 0 and not any(backends[key[0]]) else value)
                for key, value in weights.items())


def runtime_command(backend, server, value):
    """The HAProxy runtime API command that sets a server's weight."""
    for name in (backend, server):
        if not re.match(r'^[A-Za-z0-9_.:-]+\Z', str(name)):
            raise ValueError('not a HAProxy backend or server name: %r' % (name,))
    return 'set server %s/%s weight %d\n' % (backend, server, int(value))


def servers_of(pools):
    """Every leader of every pool (frontend.frontend_pools(), as the role writes them into the
    service's configuration) with the URL of its metrics, on the API port the front door already
    reaches."""
    servers = []
    for pool in pools or []:
        for server in pool['servers']:
            address = str(server['address'])
            host = '[%s]' % address if ':' in address else address
            servers.append({'backend': pool['backend'], 'server': server['name'], 'group': server['group'],
                            'metrics_url': 'http://%s:%d/v1/metrics' % (host, int(server['port']))})
    return servers
