# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Faults under load, as the clients see them: bench-faults.sh's driver.

    python3 benchmarks/bench_faults.py load --door URL --model M --group G=URL... --host HOST=G... \
        --clients N --max-tokens T --out DIR
    python3 benchmarks/bench_faults.py report --out DIR
    python3 benchmarks/bench_faults.py plot --out DIR PNG

load: until DIR/stop exists, N clients stream chat completions through the front door one after
the other (a closed loop), and one client per group streams straight to its leader (--group
G=http://LEADER:PORT): what the group itself answers, whatever the front door does. Each request is
one line of DIR/requests.jsonl: start and end (epoch seconds), door or direct, the group that
answered (the stand-in's answer names its hosts, --host HOST=G), the error and whether the stream
was cut after its first token. Once a second, the front door's weight and state of each group's
server go to DIR/series.jsonl.

report: one row per fault of DIR/faults.jsonl (written by bench-faults.sh: the fault, its group,
when it struck and ended, when the group served again, its supervisor's state, the alert), with the
requests failed through the front door (in flight when the fault struck, and started after it), the
streams cut mid-way, the requests the other group failed, how long until the front door stopped
sending to the group and until the group served again. Prints the rows as JSON and writes
DIR/result.json.

plot: the picture of a run: requests answered and failed per second through the front door, and
each group's weight in it, the faults marked.
"""

import argparse
import json
import os
import re
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_frontdoor_load import WEIGHT, read, stream_once  # noqa: E402  pylint: disable=wrong-import-position

# HAProxy's server state, one series per state with the value 1 for the current one.
STATUS = re.compile(r'^haproxy_server_status\{proxy="([^"]+)",server="([^"]+)",state="([^"]+)"\}\s+1(?:\.0)?\s*$', re.M)
# Where a fault's window ends when the group never served again: this long after the fault's end.
OPEN_WINDOW_S = 60
# The other group's requests are read over the fault's window and this long after it.
SETTLE_S = 5


def _append(path, lock, row):
    with lock:
        with open(path, 'a') as handle:
            handle.write(json.dumps(row) + '\n')


def load(args):
    groups = [tuple(item.split('=', 1)) for item in args.group]
    hosts = dict(tuple(item.split('=', 1)) for item in args.host)
    stop_file = os.path.join(args.out, 'stop')
    requests_path = os.path.join(args.out, 'requests.jsonl')
    series_path = os.path.join(args.out, 'series.jsonl')
    lock = threading.Lock()

    def stopped():
        return os.path.exists(stop_file)

    def client(url, via, group):
        while not stopped():
            started = time.time()
            ttft, _total, text, problem = stream_once(url, args.model, args.max_tokens, args.timeout)
            named = sorted(set(hosts[h] for h in re.findall(r'(\S+) \(rank \d+\)', text) if h in hosts))
            answered = group or (named[0] if len(named) == 1 else None)
            _append(requests_path, lock, {'start': round(started, 3), 'end': round(time.time(), 3), 'via': via,
                                          'group': answered, 'error': problem,
                                          'cut': bool(problem and ttft is not None)})
            time.sleep(0.5 if problem else args.pause)

    def sampler():
        while not stopped():
            tick = time.time()
            text = read(args.door_metrics) or ''
            weights = dict((server, float(value)) for _proxy, server, value in WEIGHT.findall(text))
            states = dict((server, state) for _proxy, server, state in STATUS.findall(text))
            for group, _url in groups:
                server = 'group_%s' % group
                _append(series_path, lock, {'t': round(tick, 3), 'group': group, 'weight': weights.get(server),
                                            'state': states.get(server)})
            time.sleep(max(0.0, 1.0 - (time.time() - tick)))

    threads = [threading.Thread(target=client, args=(args.door, 'door', None), daemon=True)
               for _client in range(args.clients)]
    threads.extend(threading.Thread(target=client, args=(url, 'direct', group), daemon=True) for group, url in groups)
    threads.append(threading.Thread(target=sampler, daemon=True))
    for thread in threads:
        thread.start()
    while not stopped():
        time.sleep(0.5)
    for thread in threads:
        thread.join(args.timeout + 5)
    return 0


def _jsonl(path):
    if not os.path.exists(path):
        return []
    with open(path) as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _since(t, base):
    return None if t is None or base is None else round(t - base, 1)


def fault_row(fault, requests, series):
    """What the clients and the front door saw of one fault (see the module's doc)."""
    struck, ended, served = fault['struck'], fault['ended'], fault.get('served')
    window_end = (served if served is not None else (ended or struck) + OPEN_WINDOW_S) + SETTLE_S
    door = [r for r in requests if r['via'] == 'door']
    in_flight = [r for r in door if r['start'] < struck < r['end']]
    after = [r for r in door if struck <= r['start'] < window_end]
    other = [r for r in requests if r['via'] == 'direct' and r['group'] == fault['other']
             and r['end'] > struck and r['start'] < window_end]
    mine = [s for s in series if s['group'] == fault['group'] and struck <= s['t'] <= window_end]
    out = next((s['t'] for s in mine if s['weight'] == 0 or (s['state'] not in (None, 'UP'))), None)
    back = next((s['t'] for s in mine if out is not None and s['t'] > out and s['weight'] and s['state'] in (None, 'UP')),
                None)
    row = {
        'fault': fault['fault'], 'group': fault['group'], 'other_group': fault['other'],
        'fault_lasted_s': _since(ended, struck),
        'door_failed_in_flight': sum(1 for r in in_flight if r['error']),
        'door_failed_after': sum(1 for r in after if r['error']),
        'door_requests_after': len(after),
        'door_streams_cut': sum(1 for r in in_flight + after if r['cut']),
        'other_group_failed': sum(1 for r in other if r['error']),
        'other_group_requests': len(other),
        'door_out_s': _since(out, struck),
        'door_back_s': _since(back, struck),
        'served_again_after_end_s': _since(served, ended),
        'served_again_after_fault_s': _since(served, struck),
        'state': fault.get('state'),
        'alert_fired_s': fault.get('alert_fired_s'),
        'alert_cleared_s': fault.get('alert_cleared_s'),
        'rerun': fault.get('rerun'),
        'note': fault.get('note', ''),
    }
    errors = sorted(set(r['error'] for r in in_flight + after if r['error']))[:3]
    if errors:
        row['door_errors'] = errors
    return row


def report(args):
    requests = _jsonl(os.path.join(args.out, 'requests.jsonl'))
    series = _jsonl(os.path.join(args.out, 'series.jsonl'))
    rows = [fault_row(fault, requests, series) for fault in _jsonl(os.path.join(args.out, 'faults.jsonl'))]
    doc = {'benchmark': 'faults', 'requests': len(requests),
           'requests_failed': sum(1 for r in requests if r['error']), 'faults': rows}
    with open(os.path.join(args.out, 'result.json'), 'w') as handle:
        json.dump(doc, handle, indent=2, sort_keys=True)
    print(json.dumps(doc, indent=2, sort_keys=True))
    return 0


def plot(args):
    import matplotlib  # pylint: disable=import-outside-toplevel
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel

    requests = [r for r in _jsonl(os.path.join(args.out, 'requests.jsonl')) if r['via'] == 'door']
    series = _jsonl(os.path.join(args.out, 'series.jsonl'))
    faults = _jsonl(os.path.join(args.out, 'faults.jsonl'))
    if not requests:
        sys.exit('no request in %s' % args.out)
    t0 = min(r['start'] for r in requests)
    last = int(max(r['end'] for r in requests) - t0) + 1
    answered, failed = [0] * last, [0] * last
    for r in requests:
        second = min(int(r['end'] - t0), last - 1)
        (failed if r['error'] else answered)[second] += 1
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(14, 6), sharex=True)
    top.plot(range(last), answered, label='answered / s', linewidth=0.8)
    top.plot(range(last), failed, label='failed / s', color='red', linewidth=0.8)
    top.set_ylabel('front door requests')
    for group in sorted(set(s['group'] for s in series)):
        mine = [s for s in series if s['group'] == group]
        bottom.plot([s['t'] - t0 for s in mine], [s['weight'] if s['weight'] is not None else 0 for s in mine],
                    label='group %s' % group, linewidth=0.8)
    bottom.set_ylabel('weight in the front door')
    bottom.set_xlabel('seconds')
    for fault in faults:
        for axis in (top, bottom):
            axis.axvspan(fault['struck'] - t0, (fault['ended'] or fault['struck']) - t0 + 0.5, color='orange', alpha=0.3)
        top.annotate('%s (%s)' % (fault['fault'], fault['group']), (fault['struck'] - t0, max(answered) * 0.95),
                     rotation=90, fontsize=7, va='top')
    top.legend(loc='lower right')
    bottom.legend(loc='lower right')
    fig.tight_layout()
    fig.savefig(args.png, dpi=90)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest='command', required=True)
    one = sub.add_parser('load')
    one.add_argument('--door', required=True, help='the front door, http://HOST:PORT')
    one.add_argument('--door-metrics', required=True, help="the front door's metrics URL")
    one.add_argument('--model', required=True)
    one.add_argument('--group', action='append', default=[], help="GROUP=http://LEADER:PORT, its leader's API")
    one.add_argument('--host', action='append', default=[], help='HOST=GROUP: a host an answer names')
    one.add_argument('--clients', type=int, default=4)
    one.add_argument('--max-tokens', type=int, default=16)
    one.add_argument('--pause', type=float, default=0.2, help='seconds between two requests of a client')
    one.add_argument('--timeout', type=float, default=60)
    one.add_argument('--out', required=True)
    for name in ('report', 'plot'):
        each = sub.add_parser(name)
        each.add_argument('--out', required=True)
        if name == 'plot':
            each.add_argument('png')
    args = parser.parse_args()
    return {'load': load, 'report': report, 'plot': plot}[args.command](args)


if __name__ == '__main__':
    sys.exit(main())
