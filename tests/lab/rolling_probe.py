#!/usr/bin/env python
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Probe every group's leader once a second while a command runs; say whether any second had no group serving.

    tests/lab/rolling_probe.py [--settle S] [--bound S] NAME=URL ... -- COMMAND ...

Every second (one tick) each URL is asked once (GET, 1 s timeout, answered = HTTP 200), all in
parallel; the command (ansible-playbook) runs meanwhile. After it ends the probes go on until
every group answered S seconds in a row (--settle), at most --bound seconds. Prints one line per
group: the seconds without service and the longest outage, then the seconds in which no group
answered, and the total time; with --timeline, one line per tick.

Exit status: 0 when at every tick at least one group answered, every group answers at the end
and the command succeeded; 1 otherwise (the reason is printed).
"""

import argparse
import subprocess
import sys
import threading
import time
import urllib.request


def answered(url):
    try:
        with urllib.request.urlopen(url, timeout=1) as reply:
            return reply.status == 200
    except Exception:  # pylint: disable=broad-except
        return False


def tick(groups):
    results = {}

    def one(name, url):
        results[name] = answered(url)

    threads = [threading.Thread(target=one, args=item) for item in groups]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--settle', type=int, default=5)
    parser.add_argument('--bound', type=int, default=300)
    parser.add_argument('--log', help='where the command writes its output (default: inherited)')
    parser.add_argument('--timeline', action='store_true')
    parser.add_argument('groups', nargs='+', help='NAME=URL of each group')
    argv = sys.argv[1:]
    if '--' not in argv:
        parser.error('give the command after --')
    split = argv.index('--')
    args = parser.parse_args(argv[:split])
    command = argv[split + 1:]
    groups = [tuple(g.split('=', 1)) for g in args.groups]
    if any(len(g) != 2 for g in groups) or not command:
        parser.error('need NAME=URL for every group and a command')
    names = [group[0] for group in groups]

    before = tick(groups)
    if not all(before.values()):
        print('rolling_probe: not every group serves before the command: %s'
              % ', '.join(n for n in names if not before[n]))
        return 1

    out = open(args.log, 'w') if args.log else None
    start = time.monotonic()
    proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT if out else None)
    timeline = []
    ended = None
    streak = dict((n, 0) for n in names)
    n = 0
    while True:
        due = start + n
        now = time.monotonic()
        if due > now:
            time.sleep(due - now)
        results = tick(groups)
        timeline.append(results)
        for name in names:
            streak[name] = streak[name] + 1 if results[name] else 0
        n += 1
        if ended is None and proc.poll() is not None:
            ended = n
        if ended is not None and all(streak[name] >= args.settle for name in names):
            break
        if ended is not None and n - ended >= args.bound:
            break
        if n >= 4 * args.bound + 1800:
            proc.kill()
            break
    rc = proc.wait()
    if out:
        out.close()

    problems = []
    if args.timeline:
        for second, results in enumerate(timeline):
            print('  t=%4d %s' % (second, ' '.join('%s:%s' % (name, 'up' if results[name] else 'DOWN') for name in names)))
    for name in names:
        down = [i for i, r in enumerate(timeline) if not r[name]]
        longest = run = 0
        for r in timeline:
            run = run + 1 if not r[name] else 0
            longest = max(longest, run)
        print('group %s: %d s without service (longest outage %d s)%s'
              % (name, len(down), longest, ', from t=%d to t=%d' % (down[0], down[-1]) if down else ''))
        if streak[name] < args.settle:
            problems.append('group %s does not serve again within %d s after the command' % (name, args.bound))
    none_serving = [i for i, r in enumerate(timeline) if not any(r.values())]
    print('seconds with no group serving: %d%s' % (len(none_serving), (' (t=' + ','.join(str(i) for i in none_serving[:20])
                                                                       + (',...' if len(none_serving) > 20 else '') + ')')
                                                   if none_serving else ''))
    print('total: %d s (command %d s, rc=%d)' % (len(timeline), ended or len(timeline), rc))
    if none_serving:
        problems.append('%d second(s) with no group serving' % len(none_serving))
    if rc != 0:
        problems.append('the command failed (rc=%d)' % rc)
    for problem in problems:
        print('rolling_probe: %s' % problem)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
