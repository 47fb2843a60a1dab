# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The front door under a load, as its clients see it: bench-frontdoor-load.sh's driver.

    python3 benchmarks/bench_frontdoor_load.py run --door URL --model M --leader GROUP=URL... \
        --mode NAME --clients N --seconds S --warmup S --max-tokens T --out DIR
    python3 benchmarks/bench_frontdoor_load.py report --out DIR MODE...

run: N clients, each streaming one chat completion after the other through the front door (a closed
loop: the next request starts when the last one ended), for warmup + S seconds; only the requests
that start after the warmup count. For each request: which group answered (the stand-in's answer
names its hosts, --host HOST=GROUP), the time to the first content chunk (TTFT as the client sees
it), the time to [DONE], and whether it failed. Meanwhile, once a second, every leader's
/v1/metrics (num_requests_waiting, num_requests_running, gpu_cache_usage_perc) and the front door's
own metrics (haproxy_server_weight by server) are read into the series. Writes DIR/MODE.json.

report: the modes side by side as one JSON document (share of requests per group, p50/p95 TTFT,
errors), and DIR/series.json and DIR/series.csv (time, mode, group, waiting, running, kv cache,
weight) for a picture.
"""

import argparse
import csv
import http.client
import json
import os
import re
import sys
import threading
import time
import urllib.parse
import urllib.request

GAUGE = re.compile(r'^(num_requests_waiting|num_requests_running|gpu_cache_usage_perc)(?:\{[^}]*\})?\s+(\S+)', re.M)
WEIGHT = re.compile(r'^haproxy_server_weight\{proxy="([^"]+)",server="([^"]+)"\}\s+(\S+)', re.M)


def percentile(values, q):
    """The q-th percentile (0..100) by linear interpolation; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def stream_once(door, model, max_tokens, timeout):
    """One streamed chat completion: (ttft, total, text, problem)."""
    parts = urllib.parse.urlsplit(door)
    body = json.dumps({'model': model, 'stream': True, 'max_tokens': max_tokens,
                       'messages': [{'role': 'user', 'content': 'benchmark'}]})
    start = time.monotonic()
    ttft = None
    pieces = []
    conn = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=timeout)
    try:
        conn.request('POST', parts.path.rstrip('/') + '/v1/chat/completions', body,
                     {'Content-Type': 'application/json'})
        reply = conn.getresponse()
        if reply.status != 200:
            return None, None, '', 'HTTP %d' % reply.status
        done = False
        for raw in reply:
            line = raw.decode('utf-8', 'replace').strip()
            if not line.startswith('data: '):
                continue
            data = line[len('data: '):]
            if data == '[DONE]':
                done = True
                break
            choices = json.loads(data).get('choices') or [{}]
            content = (choices[0].get('delta') or {}).get('content')
            if content:
                if ttft is None:
                    ttft = time.monotonic() - start
                pieces.append(content)
        if not done:
            return ttft, None, ''.join(pieces), 'a stream cut short'
        return ttft, time.monotonic() - start, ''.join(pieces), None
    except (OSError, http.client.HTTPException, ValueError) as exc:
        return ttft, None, ''.join(pieces), '%s: %s' % (type(exc).__name__, exc)
    finally:
        conn.close()


def read(url, timeout=2.0):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as reply:
            return reply.read().decode('utf-8', 'replace')
    except (OSError, ValueError):
        return None


def sample(args, leaders, t0):
    """One row per group: its leader's gauges and its weight in the front door."""
    weights = {}
    text = read(args.door_metrics) if args.door_metrics else None
    for _proxy, server, value in WEIGHT.findall(text or ''):
        weights[server] = float(value)
    rows = []
    for group, url in leaders:
        gauges = dict((name, float(value)) for name, value in GAUGE.findall(read(url) or ''))
        rows.append({'t': round(time.monotonic() - t0, 2), 'mode': args.mode, 'group': group,
                     'waiting': gauges.get('num_requests_waiting'), 'running': gauges.get('num_requests_running'),
                     'kv_cache': gauges.get('gpu_cache_usage_perc'), 'weight': weights.get('group_%s' % group)})
    return rows


def run(args):
    leaders = [tuple(item.split('=', 1)) for item in args.leader]
    hosts = dict(tuple(item.split('=', 1)) for item in args.host)
    stop = threading.Event()
    results, series = [], []
    lock = threading.Lock()
    t0 = time.monotonic()
    measure_from = t0 + args.warmup

    def client():
        while not stop.is_set():
            started = time.monotonic()
            ttft, total, text, problem = stream_once(args.door, args.model, args.max_tokens, args.timeout)
            named = sorted(set(hosts[h] for h in re.findall(r'(\S+) \(rank \d+\)', text) if h in hosts))
            if started >= measure_from and not stop.is_set():
                with lock:
                    results.append({'t': round(started - t0, 3), 'group': named[0] if len(named) == 1 else None,
                                    'ttft': ttft, 'total': total, 'error': problem})
            if problem:
                time.sleep(0.2)

    def sampler():
        while not stop.is_set():
            tick = time.monotonic()
            rows = sample(args, leaders, t0)
            with lock:
                series.extend(rows)
            stop.wait(max(0.0, 1.0 - (time.monotonic() - tick)))

    threads = [threading.Thread(target=client, daemon=True) for _client in range(args.clients)]
    threads.append(threading.Thread(target=sampler, daemon=True))
    for thread in threads:
        thread.start()
    time.sleep(args.warmup + args.seconds)
    stop.set()
    for thread in threads:
        thread.join(args.timeout + 5)
    # Requests still in flight at the stop are left out (they started in the window but would
    # bias towards short ones if counted only when fast).
    with open(os.path.join(args.out, '%s.json' % args.mode), 'w') as handle:
        json.dump({'mode': args.mode, 'clients': args.clients, 'seconds': args.seconds, 'warmup': args.warmup,
                   'max_tokens': args.max_tokens, 'requests': results, 'series': series}, handle)
    summary = summarize(results)
    print(json.dumps(dict(mode=args.mode, **summary)))
    return 0


def summarize(results):
    ok = [r for r in results if not r['error'] and r['ttft'] is not None]
    groups = sorted(set(r['group'] for r in results if r['group']))
    out = {'requests': len(results), 'errors': len(results) - len(ok),
           'ttft_p50_s': _round(percentile([r['ttft'] for r in ok], 50)),
           'ttft_p95_s': _round(percentile([r['ttft'] for r in ok], 95)),
           'e2e_p95_s': _round(percentile([r['total'] for r in ok], 95)),
           'groups': {}}
    for group in groups:
        mine = [r for r in ok if r['group'] == group]
        out['groups'][group] = {'requests': len(mine), 'share': _round(len(mine) / float(len(ok) or 1)),
                                'ttft_p50_s': _round(percentile([r['ttft'] for r in mine], 50)),
                                'ttft_p95_s': _round(percentile([r['ttft'] for r in mine], 95))}
    first = [r['error'] for r in results if r['error']][:3]
    if first:
        out['first_errors'] = first
    return out


def _round(value):
    return None if value is None else round(value, 3)


def report(args):
    modes, rows = {}, []
    for mode in args.modes:
        with open(os.path.join(args.out, '%s.json' % mode)) as handle:
            data = json.load(handle)
        modes[mode] = dict(summarize(data['requests']), clients=data['clients'], seconds=data['seconds'],
                           max_tokens=data['max_tokens'])
        rows.extend(data['series'])
    doc = {'benchmark': 'frontdoor-load', 'modes': modes}
    if len(args.modes) == 2:
        base, aware = (modes[m]['ttft_p95_s'] for m in args.modes)
        doc['ttft_p95_lower_with_%s' % args.modes[1]] = bool(base and aware and aware < base)
    with open(os.path.join(args.out, 'series.json'), 'w') as handle:
        json.dump(rows, handle)
    with open(os.path.join(args.out, 'series.csv'), 'w', newline='') as handle:
        writer = csv.DictWriter(handle, fieldnames=['t', 'mode', 'group', 'waiting', 'running', 'kv_cache', 'weight'])
        writer.writeheader()
        writer.writerows(rows)
    print(json.dumps(doc, indent=2, sort_keys=True))
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest='command', required=True)
    one = sub.add_parser('run')
    one.add_argument('--door', required=True, help='the front door, http://HOST:PORT')
    one.add_argument('--door-metrics', help="the front door's metrics URL (haproxy_server_weight)")
    one.add_argument('--model', required=True)
    one.add_argument('--leader', action='append', default=[], help='GROUP=URL of its /v1/metrics')
    one.add_argument('--host', action='append', default=[], help='HOST=GROUP: a host an answer names')
    one.add_argument('--mode', required=True)
    one.add_argument('--clients', type=int, default=16)
    one.add_argument('--seconds', type=float, default=60)
    one.add_argument('--warmup', type=float, default=10)
    one.add_argument('--max-tokens', type=int, default=40)
    one.add_argument('--timeout', type=float, default=120)
    one.add_argument('--out', required=True)
    both = sub.add_parser('report')
    both.add_argument('--out', required=True)
    both.add_argument('modes', nargs='+')
    args = parser.parse_args()
    return run(args) if args.command == 'run' else report(args)


if __name__ == '__main__':
    sys.exit(main())
