# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The front door's load-aware weights: nimstack-frontend-weights.service.

Usage: nimstack_frontend_weights.py /etc/nimstack/frontend/weights.json

Every interval it reads each leader's /v1/metrics (on the API port the front door already
reaches: no port is opened on a GPU host) and sets the leader's weight in the front door's HAProxy
through its runtime API (the admin socket in haproxy.cfg): `set server <backend>/<server> weight
<n>`. The weights are frontend_weights.py's (the collection's plugins/module_utils/
frontend_weights.py, installed beside this file). A leader whose metrics cannot be read returns to
its static weight; when the service stops, every leader does. The weights it set show in the front
door's own metrics (haproxy_server_weight). Standard library only. Logs go to the journal.

A leader whose group a run restarts is drained first: the run writes a drain mark, a lease of the
run as the group supervisor's holds are (group_supervisor.py's hold_state, installed beside this
file), at <drains_dir>/<group>; while it is live the leader's weight is 0, so the front door sends
it no new request and those it runs go on. A mark whose lease ran out (its run died) is ignored.
"""

import json
import os
import signal
import socket
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frontend_weights as fw  # noqa: E402  pylint: disable=wrong-import-position,import-error
import group_supervisor as gs  # noqa: E402  pylint: disable=wrong-import-position,import-error


def log(message, level=6):
    # systemd reads the <N> prefix as the syslog priority (3 error, 4 warning, 6 info).
    print('<%d>%s' % (level, message), flush=True)


def runtime(socket_path, commands, timeout=2.0):
    """Send commands to HAProxy's runtime API in one connection; its answer (empty when fine)."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(timeout)
    try:
        conn.connect(socket_path)
        conn.sendall(';'.join(c.strip() for c in commands).encode('ascii') + b'\n')
        chunks = []
        while True:
            data = conn.recv(4096)
            if not data:
                break
            chunks.append(data)
        return b''.join(chunks).decode('utf-8', 'replace').strip()
    finally:
        conn.close()


def read_load(url, timeout):
    """load_of() of a leader's metrics, or None when they cannot be read or lack the gauges."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            if response.status != 200:
                return None
            return fw.load_of(fw.parse_metrics(response.read(1 << 20).decode('utf-8', 'replace')))
    except (OSError, ValueError):
        return None


class Service(object):
    def __init__(self, config):
        settings = config.get('settings') or {}
        self.socket = config['socket']
        self.interval = float(settings.get('interval_s') or 1)
        self.servers = fw.servers_of(config.get('pools'))
        self.leaders = dict(((s['backend'], s['server']), fw.LeaderWeight(
            fw.STATIC_WEIGHT, wait_s=settings.get('wait_s'), min_weight=settings.get('min_weight'),
            kv_threshold=settings.get('kv_threshold'), stall_s=settings.get('stall_s'))) for s in self.servers)
        self.min_weight = int(settings.get('min_weight') or fw.DEFAULTS['min_weight'])
        self.out = {}
        self.held = set()
        self.stale = set()
        self.clock = time.monotonic
        self.last_error = None
        self.drains_dir = config.get('drains_dir')
        # A mark that is not a lease counts for this long from its time.
        self.drain_lease = int(settings.get('drain_lease_s') or 3600)
        self.drains = {}

    def read_drains(self):
        """{group: hold_state} of every drain mark, each change of one logged once."""
        drains = {}
        try:
            names = sorted(os.listdir(self.drains_dir)) if self.drains_dir else []
        except OSError:
            names = []
        for name in names:
            path = os.path.join(self.drains_dir, name)
            hold = None if '.tmp.' in name or not os.path.isfile(path) else gs.read_hold(path, time.time(), self.drain_lease)
            if hold:
                drains[name] = hold
        for group in sorted(set(drains) | set(self.drains)):
            was, now = self.drains.get(group, {}).get('state'), drains.get(group, {}).get('state')
            if was != now:
                log('group %s: %s' % (group, 'drain ended' if now is None else 'drain mark: ' + drains[group]['message']),
                    4 if now == gs.HOLD_STALE else 6)
        self.drains = drains
        return drains

    def tick(self):
        weights = {}
        drains = self.read_drains()
        for server in self.servers:
            key = (server['backend'], server['server'])
            # A read gets at least 2 s: on a loaded host a 1 s interval would miss readings.
            load = read_load(server['metrics_url'], min(max(self.interval, 2.0), 5.0))
            leader = self.leaders[key]
            value = leader.observe(self.clock(), load)
            if load is None and key not in self.stale:
                log('%s/%s: its metrics at %s cannot be read; back to its static weight %d' % (
                    key[0], key[1], server['metrics_url'], value), 4)
            if load is None:
                self.stale.add(key)
            else:
                self.stale.discard(key)
            out = leader.last['out']
            if drains.get(server['group'], {}).get('state') == gs.HOLD_LIVE:
                value, out = 0, 'drained for a planned restart of group %s' % server['group']
            if bool(out) != bool(self.out.get(key)):
                log('%s/%s: %s' % (key[0], key[1], 'out, no new request sent to it: ' + out if out
                                   else 'serving again, back in'), 4 if out else 6)
            self.out[key] = out
            weights[key] = value
        kept = fw.keep_one_in(weights, self.min_weight)
        held = set(k for k in kept if kept[k] != weights[k])
        for key in sorted(held - self.held):
            log('%s/%s: kept at weight %d although out: no other leader of its pool is in' % (
                key[0], key[1], kept[key]), 4)
        self.held = held
        self.apply([fw.runtime_command(key[0], key[1], kept[key]) for key in sorted(kept)])

    def apply(self, commands):
        try:
            answer = runtime(self.socket, commands)
            error = answer or None
        except OSError as exc:
            error = 'the runtime API at %s: %s' % (self.socket, exc)
        if error != self.last_error:
            log(error or 'weights set through %s' % self.socket, 4 if error else 6)
            self.last_error = error

    def restore(self):
        """Every leader back to its static weight."""
        self.apply([fw.runtime_command(s['backend'], s['server'], fw.STATIC_WEIGHT) for s in self.servers])


def main():
    if len(sys.argv) != 2:
        sys.exit('usage: nimstack_frontend_weights.py WEIGHTS_JSON')
    with open(sys.argv[1]) as handle:
        service = Service(json.load(handle))
    log('load-aware weights of %d leader(s) every %g s' % (len(service.servers), service.interval))

    def stop(_signum, _frame):
        service.restore()
        log('stopped; every leader back to its static weight %d' % fw.STATIC_WEIGHT)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while True:
        started = time.monotonic()
        service.tick()
        time.sleep(max(0.0, service.interval - (time.monotonic() - started)))


if __name__ == '__main__':
    main()
