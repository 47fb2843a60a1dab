"""The lab stand-in's hang (tests/lab/standin: node.HANG_MARK in a prompt): a group that runs but
does not serve, with no process exiting and the operation watchdog silent; and a stream that
stalls (server.STALL_MARK); a group whose completions fail from a marked one on (server.FAIL_MARK)."""

import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import ThreadingHTTPServer

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'lab', 'standin'))
import node  # noqa: E402  pylint: disable=wrong-import-position,import-error
import serving  # noqa: E402  pylint: disable=wrong-import-position,import-error
import server  # noqa: E402  pylint: disable=wrong-import-position,import-error


def test_a_worker_rank_hangs_at_a_completion_whose_prompt_holds_the_mark(monkeypatch):
    monkeypatch.setitem(node._LOADED, 'mine', {'partial': 7, 'error': None})
    monkeypatch.setitem(node.IDENTITY, 'rank', 1)
    monkeypatch.setitem(node.IDENTITY, 'host', 'h2')
    assert 'hang' not in node.work('complete', {'prompt': 'a b'})
    part = node.safe_work('complete', {'prompt': 'please %s now' % node.HANG_MARK})
    assert part['hang'].startswith('rank 1 on h2 hangs')
    # Rank 0 never hangs by itself: it is the one that waits on the others.
    monkeypatch.setitem(node.IDENTITY, 'rank', 0)
    assert 'hang' not in node.work('complete', {'prompt': node.HANG_MARK})


class FakeGroup(object):
    """A group of two, its worker hanging every completion when hangs; records any abort."""
    contract = 'test'
    size = 2
    rank = 0

    def __init__(self, hangs):
        self.hangs = hangs
        self.aborted = []
        self.beats = 0

    def call(self, op, payload, timeout):
        worker = {'rank': 1, 'host': 'h2', 'partial': 0}
        if self.hangs:
            worker['hang'] = 'rank 1 on h2 hangs (%r)' % node.HANG_MARK
        return [{'rank': 0, 'host': 'h1', 'partial': 1}, worker]

    def heartbeat(self):
        self.beats += 1

    def abort(self, reason, code=1):
        self.aborted.append(reason)


def serve(group, monkeypatch):
    """Rank 0 of group, ready, on a port of its own: its base URL and the HTTP server."""
    # Not restored: the hung threads of a test stay hung on their state until the process ends.
    server.STATE = server.State()
    monkeypatch.setattr(server, 'HEARTBEAT', 0.2)
    monkeypatch.setattr(server, 'SERVING', serving.Serving())
    server.STATE.group = group

    def start_up(_group):
        server.STATE.model = {'name': 'm', 'served_name': 'm', 'created': 0}
        server.STATE.ranks = ['h1', 'h2']

    monkeypatch.setattr(server, 'start_up', start_up)
    http = ThreadingHTTPServer(('127.0.0.1', 0), server.Handler)
    http.daemon_threads = True
    threading.Thread(target=http.serve_forever, daemon=True).start()
    threading.Thread(target=server.lead, args=(group,), daemon=True).start()
    base = 'http://127.0.0.1:%d' % http.server_address[1]
    deadline = time.monotonic() + 10
    while _get(base + '/v1/health/ready') != 200:
        assert time.monotonic() < deadline, 'never ready'
        time.sleep(0.1)
    return base, http


def _completion(base, **extra):
    body = dict({'model': 'm', 'max_tokens': 1, 'messages': [{'role': 'user', 'content': 'hi'}]}, **extra)
    return urllib.request.Request(base + '/v1/chat/completions', method='POST', data=json.dumps(body).encode())


def _get(url, timeout=3):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_a_hung_group_stays_ready_answers_no_completion_and_nothing_ends_it(monkeypatch):
    group = FakeGroup(hangs=True)
    base, http = serve(group, monkeypatch)
    try:
        with pytest.raises(OSError):
            urllib.request.urlopen(_completion(base), timeout=3)
        assert server.STATE.hung == 'rank 1 on h2 hangs (%r)' % node.HANG_MARK
        beats = group.beats
        # Past the watchdog's tick and several heartbeat periods: still ready, nothing aborted, no
        # heartbeat either (rank 0's main thread is stuck, as in a real hang).
        time.sleep(2.5)
        assert _get(base + '/v1/health/ready') == 200
        assert group.aborted == [] and group.beats == beats
        metrics = urllib.request.urlopen(base + '/v1/metrics', timeout=3).read().decode()
        assert 'num_requests_running{model_name="m"} 1' in metrics
        assert 'generation_tokens_total{model_name="m"} 0' in metrics
    finally:
        http.shutdown()


def test_a_stream_whose_prompt_holds_the_stall_mark_stops_after_its_first_token(monkeypatch):
    group = FakeGroup(hangs=False)
    base, http = serve(group, monkeypatch)
    try:
        stalled = _completion(base, stream=True, max_tokens=5, messages=[{'role': 'user', 'content': server.STALL_MARK}])
        response = urllib.request.urlopen(stalled, timeout=3)
        first = b''
        while b'"content": "nimstack"' not in first:
            first += response.read1(4096)
        with pytest.raises(OSError):
            response.read1(4096)
        metrics = urllib.request.urlopen(base + '/v1/metrics', timeout=3).read().decode()
        assert 'num_requests_running{model_name="m"} 1' in metrics
        assert 'generation_tokens_total{model_name="m"} 1' in metrics
        # The rest of the group serves on.
        with urllib.request.urlopen(_completion(base), timeout=5) as answer:
            assert answer.status == 200
        assert group.aborted == [] and server.STATE.hung is None
    finally:
        http.shutdown()


def test_every_completion_fails_from_one_whose_prompt_holds_the_fail_mark_health_still_ready(monkeypatch):
    group = FakeGroup(hangs=False)
    base, http = serve(group, monkeypatch)
    try:
        with urllib.request.urlopen(_completion(base), timeout=5) as answer:
            assert answer.status == 200
        marked = _completion(base, messages=[{'role': 'user', 'content': server.FAIL_MARK}])
        with pytest.raises(urllib.error.HTTPError) as failed:
            urllib.request.urlopen(marked, timeout=5)
        assert failed.value.code == 500
        with pytest.raises(urllib.error.HTTPError) as failed:
            urllib.request.urlopen(_completion(base), timeout=5)
        assert failed.value.code == 500 and server.FAIL_MARK in failed.value.read().decode()
        assert _get(base + '/v1/health/ready') == 200
        assert group.aborted == []
    finally:
        http.shutdown()
