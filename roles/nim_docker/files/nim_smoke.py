# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Smoke test of an OpenAI-compatible NIM endpoint, run on the leader with the standard library.

Lists /v1/models, sends one chat completion to the first model and prints one JSON object:
the model ids, the reply, the time to the first byte of the completion's response and its total
time. Exits 1 with the reason in the JSON when a step fails.
"""

from __future__ import absolute_import, division, print_function

import json
import sys
import time

try:
    from http.client import HTTPConnection
except ImportError:  # pragma: no cover - Python 2 has no http.client; NIM hosts run Python 3
    from httplib import HTTPConnection


def request(host, port, method, path, body, timeout):
    conn = HTTPConnection(host, port, timeout=timeout)
    try:
        headers = {'Content-Type': 'application/json'} if body is not None else {}
        start = time.time()
        conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
        # getresponse() returns once the status line has arrived: the first byte of the answer.
        response = conn.getresponse()
        first_byte = time.time() - start
        data = response.read()
        total = time.time() - start
        return response.status, data, first_byte, total
    finally:
        conn.close()


def main(argv):
    host, port, prompt, max_tokens, timeout = argv[1], int(argv[2]), argv[3], int(argv[4]), float(argv[5])
    result = {'ok': False}
    status, data, _first, _total = request(host, port, 'GET', '/v1/models', None, timeout)
    if status != 200:
        result['error'] = 'GET /v1/models answered %d: %s' % (status, data[:200].decode('utf-8', 'replace'))
        return result
    models = [m.get('id') for m in json.loads(data.decode('utf-8')).get('data', [])]
    result['models'] = models
    if not models:
        result['error'] = 'GET /v1/models listed no model'
        return result
    body = {'model': models[0], 'messages': [{'role': 'user', 'content': prompt}], 'max_tokens': max_tokens}
    status, data, first_byte, total = request(host, port, 'POST', '/v1/chat/completions', body, timeout)
    result['ttfb_s'] = round(first_byte, 3)
    result['total_s'] = round(total, 3)
    if status != 200:
        result['error'] = 'POST /v1/chat/completions answered %d: %s' % (status, data[:200].decode('utf-8', 'replace'))
        return result
    answer = json.loads(data.decode('utf-8'))
    choices = answer.get('choices') or [{}]
    result['reply'] = (choices[0].get('message') or {}).get('content')
    result['usage'] = answer.get('usage')
    result['ok'] = bool(result['reply'])
    if not result['ok']:
        result['error'] = 'the completion has no message content'
    return result


if __name__ == '__main__':
    try:
        outcome = main(sys.argv)
    except Exception as exc:  # any failure is the smoke test's answer, printed as JSON
        outcome = {'ok': False, 'error': '%s: %s' % (type(exc).__name__, exc)}
    print(json.dumps(outcome, sort_keys=True))
    sys.exit(0 if outcome['ok'] else 1)
