"""The lab stand-in's service capacity and /v1/metrics (tests/lab/standin/serving.py), without a
group: requests past the slots wait, the gauges follow the load, the text is NIM 1.x's."""

import os
import re
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'lab', 'standin'))
import serving  # noqa: E402  pylint: disable=wrong-import-position,import-error


class Clock(object):
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def sample(text, name, **labels):
    """The value of one series of a Prometheus text exposition."""
    for line in text.splitlines():
        if line.startswith('#'):
            continue
        match = re.match(r'^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})? (\S+)$', line)
        assert match, 'not a sample line: %r' % line
        found = dict(re.findall(r'([A-Za-z_]+)="((?:[^"\\]|\\.)*)"', match.group(2) or ''))
        if match.group(1) == name and all(found.get(k) == v for k, v in labels.items()):
            return float(match.group(3))
    raise AssertionError('%s %s not in the metrics' % (name, labels))


def wait_until(predicate, bound=5.0):
    deadline = time.monotonic() + bound
    while not predicate():
        assert time.monotonic() < deadline, 'not reached within %s s' % bound
        time.sleep(0.01)


def test_requests_past_the_slots_wait_and_go_in_as_slots_free():
    serve = serving.Serving(max_running=2, tokens_per_s=10, kv_tokens=100)
    first, second = serve.admit(5), serve.admit(5)
    admitted = []
    threads = [threading.Thread(target=lambda: admitted.append(serve.admit(3))) for _client in range(3)]
    for thread in threads:
        thread.start()
    wait_until(lambda: serve.snapshot()['num_requests_waiting'] == 3)
    assert serve.snapshot()['num_requests_running'] == 2
    assert admitted == []
    first.finish(True)
    wait_until(lambda: len(admitted) == 1)
    assert serve.snapshot()['num_requests_waiting'] == 2
    assert serve.snapshot()['num_requests_running'] == 2
    second.finish(True)
    admitted[0].finish(False)
    wait_until(lambda: len(admitted) == 3)
    for thread in threads:
        thread.join(5)
    assert serve.snapshot() == {'num_requests_running': 2, 'num_requests_waiting': 0, 'num_request_max': 2,
                                'gpu_cache_usage_perc': 0.06}
    assert serve.counters['request_success_total'] == 2
    assert serve.counters['request_failure_total'] == 1
    # A prompt counts once it went through the model, not when it was admitted.
    assert serve.counters['prompt_tokens_total'] == 0
    for request in [second] + admitted:
        if request is not None:
            request.prefilled()
            request.prefilled()
    assert serve.counters['prompt_tokens_total'] == 5 + 3 + 3 + 3


def test_a_request_that_finds_no_slot_in_time_fails():
    serve = serving.Serving(max_running=1)
    held = serve.admit(1)
    assert serve.admit(1, timeout=0.05) is None
    assert serve.snapshot()['num_requests_waiting'] == 0
    assert serve.counters['request_failure_total'] == 1
    held.finish(True)
    assert serve.admit(1, timeout=0.05) is not None


def test_kv_cache_follows_the_tokens_held_and_is_capped():
    serve = serving.Serving(max_running=4, kv_tokens=100)
    one = serve.admit(30)
    assert serve.snapshot()['gpu_cache_usage_perc'] == 0.3
    one.token(20)
    assert serve.snapshot()['gpu_cache_usage_perc'] == 0.5
    two = serve.admit(80)
    assert serve.snapshot()['gpu_cache_usage_perc'] == 1.0
    one.finish(True)
    assert serve.snapshot()['gpu_cache_usage_perc'] == 0.8
    two.finish(True)
    assert serve.snapshot()['gpu_cache_usage_perc'] == 0.0


def test_ttft_includes_the_queue_wait_and_tpot_follows_the_rate():
    clock = Clock()
    serve = serving.Serving(max_running=1, tokens_per_s=4, clock=clock)
    assert serve.token_interval == 0.25
    request = serve.admit(2)
    clock.now += 3.0  # queued and prefilled for 3 s
    for _token in range(5):
        request.token()
        clock.now += serve.token_interval
    request.finish(True)
    ttft = serve.histograms['time_to_first_token_seconds']
    assert (ttft.total, ttft.sum) == (1, 3.0)
    tpot = serve.histograms['time_per_output_token_seconds']
    assert tpot.total == 1 and tpot.sum == pytest.approx(0.25)
    e2e = serve.histograms['e2e_request_latency_seconds']
    assert e2e.sum == pytest.approx(4.25)
    assert serve.counters['generation_tokens_total'] == 5
    # finish twice (a handler's finally after an error path) counts once
    request.finish(False)
    assert serve.counters['request_success_total'] == 1 and serve.counters['request_failure_total'] == 0


def test_the_text_has_nim_names_types_and_cumulative_buckets():
    clock = Clock()
    serve = serving.Serving(max_running=3, tokens_per_s=10, kv_tokens=1000, clock=clock)
    for wait in (0.02, 0.7, 40.0):
        request = serve.admit(10)
        clock.now += wait
        request.token()
        request.finish(True)
    serve.fail()
    serve.admit(7).prefilled()
    text = serve.render('meta/llama-3.1-8b-instruct')
    label = {'model_name': 'meta/llama-3.1-8b-instruct'}
    types = dict(re.findall(r'^# TYPE (\S+) (\S+)$', text, re.M))
    assert types == {
        'num_requests_running': 'gauge', 'num_requests_waiting': 'gauge', 'num_request_max': 'gauge',
        'gpu_cache_usage_perc': 'gauge', 'prompt_tokens_total': 'counter', 'generation_tokens_total': 'counter',
        'request_success_total': 'counter', 'request_failure_total': 'counter',
        'time_to_first_token_seconds': 'histogram', 'time_per_output_token_seconds': 'histogram',
        'e2e_request_latency_seconds': 'histogram'}
    assert sample(text, 'num_requests_running', **label) == 1
    assert sample(text, 'num_request_max', **label) == 3
    assert sample(text, 'gpu_cache_usage_perc', **label) == 0.007
    assert sample(text, 'prompt_tokens_total', **label) == 37
    assert sample(text, 'request_success_total', **label) == 3
    assert sample(text, 'request_failure_total', **label) == 1
    assert sample(text, 'time_to_first_token_seconds_bucket', le='0.025', **label) == 1
    assert sample(text, 'time_to_first_token_seconds_bucket', le='1.0', **label) == 2
    assert sample(text, 'time_to_first_token_seconds_bucket', le='30.0', **label) == 2
    assert sample(text, 'time_to_first_token_seconds_bucket', le='+Inf', **label) == 3
    assert sample(text, 'time_to_first_token_seconds_count', **label) == 3
    assert sample(text, 'time_to_first_token_seconds_sum', **label) == pytest.approx(40.72)
    every = [line for line in text.splitlines() if not line.startswith('#')]
    assert all('model_name="meta/llama-3.1-8b-instruct"' in line for line in every)


def test_a_label_value_is_escaped():
    text = serving.Serving().render('a"b\\c')
    assert 'num_requests_running{model_name="a\\"b\\\\c"} 0' in text


@pytest.mark.parametrize('environ, expected', [
    ({}, (8, 50.0, 4096)),
    ({'NIM_STANDIN_TOKEN_DELAY_S': '0.1'}, (8, 10.0, 4096)),
    ({'NIM_STANDIN_TOKEN_DELAY_S': '0.1', 'NIM_STANDIN_TOKENS_PER_S': '25'}, (8, 25.0, 4096)),
    ({'NIM_STANDIN_MAX_RUNNING': '2', 'NIM_STANDIN_KV_TOKENS': '512'}, (2, 50.0, 512)),
])
def test_settings_from_the_environment(environ, expected):
    assert serving.settings_from(environ) == expected


@pytest.mark.parametrize('environ', [{'NIM_STANDIN_MAX_RUNNING': '0'}, {'NIM_STANDIN_TOKENS_PER_S': 'fast'},
                                     {'NIM_STANDIN_KV_TOKENS': '-1'}])
def test_wrong_settings_are_refused(environ):
    with pytest.raises(ValueError):
        serving.settings_from(environ)
