"""The stand-in's service capacity and the metrics it serves at /v1/metrics, apart from any group.

A NIM for LLMs 1.x (vLLM engine) runs at most `num_request_max` sequences at once; a request past
that waits in the engine's queue until one finishes, and its time to first token includes that
wait. The stand-in models the same: NIM_STANDIN_MAX_RUNNING slots, each generating
NIM_STANDIN_TOKENS_PER_S tokens a second, and a KV cache of NIM_STANDIN_KV_TOKENS tokens that a
running request fills with its prompt and the tokens it generated so far. So its metrics move with
the load the way a real NIM's do: `num_requests_waiting` grows when requests arrive faster than
the slots free up, `gpu_cache_usage_perc` follows the tokens held, TTFT includes the queue wait,
TPOT is 1 / the rate.

The metric names, types and the `model_name` label are NIM 1.x's (docs/lab-standin.md gives the
source). Standard library only; no threads of its own: the HTTP handler's thread of each request
calls admit() (which blocks while every slot is taken), then Request.token() per generated token
and Request.finish(). tests/unit/test_standin_serving.py drives it directly.
"""

import threading
import time

# Upper bounds of the histograms' buckets, in seconds (le="+Inf" is added).
TTFT_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
TPOT_BUCKETS = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
E2E_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)

GAUGES = (
    ('num_requests_running', 'Number of requests currently running on GPU.'),
    ('num_requests_waiting', 'Number of requests waiting to be processed.'),
    ('num_request_max', 'Max number of concurrently running requests.'),
    ('gpu_cache_usage_perc', 'GPU KV-cache usage. 1 means 100 percent usage.'),
)
COUNTERS = (
    ('prompt_tokens_total', 'Number of prefill tokens processed.'),
    ('generation_tokens_total', 'Number of generation tokens processed.'),
    ('request_success_total', 'Count of successfully processed requests.'),
    ('request_failure_total', 'Count of failed requests.'),
)
HISTOGRAMS = (
    ('time_to_first_token_seconds', 'Histogram of time to first token in seconds.', TTFT_BUCKETS),
    ('time_per_output_token_seconds', 'Histogram of time per output token in seconds.', TPOT_BUCKETS),
    ('e2e_request_latency_seconds', 'Histogram of end to end request latency in seconds.', E2E_BUCKETS),
)


def env_number(environ, name, default, low):
    """A positive setting from the environment; the default when unset or empty, ValueError when
    it is not a number of at least `low`."""
    raw = (environ.get(name) or '').strip()
    if not raw:
        return default
    value = float(raw)
    if not value >= low:
        raise ValueError('%s=%s: must be a number >= %g' % (name, raw, low))
    return value


def settings_from(environ):
    """(max_running, tokens_per_s, kv_tokens) from the stand-in's environment. The older
    NIM_STANDIN_TOKEN_DELAY_S (seconds between two streamed chunks) still sets the rate where
    NIM_STANDIN_TOKENS_PER_S is not set."""
    max_running = int(env_number(environ, 'NIM_STANDIN_MAX_RUNNING', 8, 1))
    delay = env_number(environ, 'NIM_STANDIN_TOKEN_DELAY_S', 0.0, 0.0)
    rate = env_number(environ, 'NIM_STANDIN_TOKENS_PER_S', (1.0 / delay) if delay > 0 else 50.0, 0.001)
    kv_tokens = int(env_number(environ, 'NIM_STANDIN_KV_TOKENS', 4096, 1))
    return max_running, rate, kv_tokens


class Histogram(object):
    def __init__(self, bounds):
        self.bounds = tuple(bounds)
        self.counts = [0] * len(self.bounds)
        self.total = 0
        self.sum = 0.0

    def observe(self, value):
        for index, bound in enumerate(self.bounds):
            if value <= bound:
                self.counts[index] += 1
                break
        self.total += 1
        self.sum += value

    def cumulative(self):
        """[(le, count of observations <= le)], ending with +Inf."""
        out, running = [], 0
        for bound, count in zip(self.bounds, self.counts):
            running += count
            out.append((bound, running))
        out.append((float('inf'), self.total))
        return out


class Request(object):
    """One admitted request: holds a slot from admit() until finish()."""

    def __init__(self, serving, prompt_tokens, arrived):
        self.serving = serving
        self.prompt_tokens = prompt_tokens
        self.arrived = arrived
        self.started = None
        self.generated = 0
        self.first_token = None
        self.last_token = None
        self.prefilled_at = None
        self.done = False

    def prefilled(self):
        """The prompt went through the model (the group's forward pass returned)."""
        self.serving.record_prefill(self)

    def token(self, count=1):
        """count tokens generated now."""
        self.serving.record_tokens(self, count)

    def finish(self, ok):
        self.serving.release(self, ok)


class Serving(object):
    """Slots, queue, KV cache and the counters and histograms of one served model."""

    def __init__(self, max_running=8, tokens_per_s=50.0, kv_tokens=4096, clock=time.monotonic):
        if max_running < 1 or tokens_per_s <= 0 or kv_tokens < 1:
            raise ValueError('max_running >= 1, tokens_per_s > 0 and kv_tokens >= 1 are needed')
        self.max_running = int(max_running)
        self.tokens_per_s = float(tokens_per_s)
        self.kv_tokens = int(kv_tokens)
        self.clock = clock
        self.cond = threading.Condition()
        self.running = []
        self.waiting = 0
        self.counters = dict((name, 0) for name, _text in COUNTERS)
        self.histograms = dict((name, Histogram(bounds)) for name, _text, bounds in HISTOGRAMS)

    @property
    def token_interval(self):
        """Seconds between two generated tokens of one sequence."""
        return 1.0 / self.tokens_per_s

    def admit(self, prompt_tokens, timeout=None):
        """Wait (queued) for a free slot; the Request that holds it, or None when none freed up
        within timeout seconds (the request then counts as failed)."""
        arrived = self.clock()
        with self.cond:
            self.waiting += 1
            try:
                if not self.cond.wait_for(lambda: len(self.running) < self.max_running, timeout):
                    self.counters['request_failure_total'] += 1
                    return None
            finally:
                self.waiting -= 1
            request = Request(self, int(prompt_tokens), arrived)
            request.started = self.clock()
            self.running.append(request)
            return request

    def fail(self):
        """A request refused before it was admitted (not ready, bad input, a broken group)."""
        with self.cond:
            self.counters['request_failure_total'] += 1

    def record_prefill(self, request):
        """prompt_tokens_total counts a prompt once it went through the model, as vLLM counts the
        prefill tokens of each engine step: a hung group, which admits requests and runs no step,
        counts none."""
        with self.cond:
            self._prefill(request)

    def _prefill(self, request):
        if request.prefilled_at is None:
            request.prefilled_at = self.clock()
            self.counters['prompt_tokens_total'] += request.prompt_tokens

    def record_tokens(self, request, count):
        now = self.clock()
        with self.cond:
            self._prefill(request)
            if request.first_token is None:
                request.first_token = now
                self.histograms['time_to_first_token_seconds'].observe(now - request.arrived)
            request.last_token = now
            request.generated += count
            self.counters['generation_tokens_total'] += count

    def release(self, request, ok):
        now = self.clock()
        with self.cond:
            if request.done:
                return
            request.done = True
            if request in self.running:
                self.running.remove(request)
            self.counters['request_success_total' if ok else 'request_failure_total'] += 1
            if ok:
                if request.generated > 1:
                    self.histograms['time_per_output_token_seconds'].observe(
                        (request.last_token - request.first_token) / (request.generated - 1))
                self.histograms['e2e_request_latency_seconds'].observe(now - request.arrived)
            self.cond.notify_all()

    def snapshot(self):
        """The gauges now."""
        with self.cond:
            held = sum(r.prompt_tokens + r.generated for r in self.running)
            return {
                'num_requests_running': len(self.running),
                'num_requests_waiting': self.waiting,
                'num_request_max': self.max_running,
                'gpu_cache_usage_perc': min(1.0, float(held) / self.kv_tokens),
            }

    def render(self, model_name):
        """The Prometheus text exposition (version 0.0.4) of every metric, labelled model_name."""
        label = 'model_name="%s"' % str(model_name).replace('\\', '\\\\').replace('"', '\\"')
        gauges = self.snapshot()
        lines = []
        for name, text in GAUGES:
            lines += ['# HELP %s %s' % (name, text), '# TYPE %s gauge' % name,
                      '%s{%s} %s' % (name, label, _number(gauges[name]))]
        with self.cond:
            counters = dict(self.counters)
            histograms = dict((name, (h.cumulative(), h.sum, h.total)) for name, h in self.histograms.items())
        for name, text in COUNTERS:
            lines += ['# HELP %s %s' % (name, text), '# TYPE %s counter' % name,
                      '%s{%s} %s' % (name, label, _number(counters[name]))]
        for name, text, _bounds in HISTOGRAMS:
            buckets, total_sum, count = histograms[name]
            lines += ['# HELP %s %s' % (name, text), '# TYPE %s histogram' % name]
            for bound, cumulative in buckets:
                lines.append('%s_bucket{%s,le="%s"} %d' % (name, label, _le(bound), cumulative))
            lines += ['%s_sum{%s} %s' % (name, label, _number(total_sum)),
                      '%s_count{%s} %d' % (name, label, count)]
        return '\n'.join(lines) + '\n'


def _number(value):
    if isinstance(value, int):
        return '%d' % value
    return repr(float(value))


def _le(bound):
    return '+Inf' if bound == float('inf') else repr(float(bound))
