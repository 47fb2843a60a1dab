# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Stream chat completions without pause through one endpoint until a stop file appears; count failures.

    python3 tests/lab/stream_load.py BASE_URL MODEL STOP_FILE [--bound S] [--max-tokens N]

Each request is POST BASE_URL/chat/completions with "stream": true; it counts as served when the
reply is HTTP 200 with at least one content chunk and ends with `data: [DONE]`, failed otherwise
(a refused connection, an error status, a stream cut short). The next request starts as soon as
one ends. Stops when STOP_FILE exists, or after --bound seconds (bounded either way). Prints one
JSON line: requests, served, failed, the first failures' reasons, seconds. Exit status 1 when any
request failed.
"""

import argparse
import http.client
import json
import os
import sys
import time
import urllib.parse


def one(url, model, max_tokens, timeout):
    parts = urllib.parse.urlsplit(url)
    body = json.dumps({'model': model, 'stream': True, 'max_tokens': max_tokens,
                       'messages': [{'role': 'user', 'content': 'Count to ten.'}]})
    conn = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=timeout)
    try:
        conn.request('POST', parts.path.rstrip('/') + '/chat/completions', body, {'Content-Type': 'application/json'})
        reply = conn.getresponse()
        data = reply.read().decode('utf-8', 'replace')
        if reply.status != 200:
            return 'HTTP %d: %s' % (reply.status, data[:120])
        events = [line[len('data: '):] for line in data.splitlines() if line.startswith('data: ')]
        chunks = [e for e in events if e != '[DONE]']
        if not chunks or not events or events[-1] != '[DONE]':
            return 'a stream cut short (%d chunks, no [DONE])' % len(chunks)
        return None
    except (OSError, http.client.HTTPException) as exc:
        return '%s: %s' % (type(exc).__name__, exc)
    finally:
        conn.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('base_url')
    parser.add_argument('model')
    parser.add_argument('stop_file')
    parser.add_argument('--bound', type=float, default=600)
    parser.add_argument('--max-tokens', type=int, default=8)
    parser.add_argument('--timeout', type=float, default=30)
    args = parser.parse_args()
    start = time.monotonic()
    served = 0
    failures = []
    while not os.path.exists(args.stop_file) and time.monotonic() - start < args.bound:
        problem = one(args.base_url, args.model, args.max_tokens, args.timeout)
        if problem:
            failures.append('t=%.1f %s' % (time.monotonic() - start, problem))
        else:
            served += 1
    print(json.dumps({'requests': served + len(failures), 'served': served, 'failed': len(failures),
                      'failures': failures[:10], 'seconds': round(time.monotonic() - start, 1)}))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
