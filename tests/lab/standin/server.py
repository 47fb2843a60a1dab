"""The lab stand-in's OpenAI server, the same for the three launch contracts.

Every rank runs this; rank 0 serves HTTP on NIM_HTTP_API_PORT. How the ranks find each other and
how a request reaches every rank is the group transport's business (--transport):

  mpi             group_mpi: one process per MPI rank under mpirun (start-mpi-cluster.sh);
                  barriers, broadcasts and gathers
  ray             group_ray: rank 0 is a Ray driver on the head (nim-serve-ray --head); one Ray
                  task pinned to every node per operation
  leader_address  group_tcp: a rendezvous on MASTER_ADDR:MASTER_PORT (start_server.sh); every
                  operation crosses each worker's connection

Whatever the transport, rank 0 waits (bounded) until the whole group joined, makes the model cache
complete (download-to-cache), has every rank load its slice of the weights, turns ready, and then
sends every completion to every rank and a heartbeat when idle. An operation that does not come
back from every rank within NIM_STANDIN_COLLECTIVE_TIMEOUT seconds breaks the group: rank 0 turns
unready and ends the group with a non-zero exit, so the launcher restarts it as a whole, as the
group of a real multi-node NIM has to be restarted.
"""

import argparse
import json
import os
import queue
import signal
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import node
import serving
from node import GroupBroken, log

PORT = int(os.environ.get('NIM_HTTP_API_PORT') or os.environ.get('NIM_SERVER_PORT') or '8000')
START_TIMEOUT = float(os.environ.get('CLUSTER_START_TIMEOUT') or os.environ.get('NIM_STANDIN_START_TIMEOUT') or '300')
COLLECTIVE_TIMEOUT = float(os.environ.get('NIM_STANDIN_COLLECTIVE_TIMEOUT') or '15')
HEARTBEAT = float(os.environ.get('NIM_STANDIN_HEARTBEAT_S') or '5')
DOWNLOAD_TIMEOUT = float(os.environ.get('NIM_STANDIN_DOWNLOAD_TIMEOUT') or '600')
# The service capacity (serving.py): NIM_STANDIN_MAX_RUNNING requests at once, each generating
# NIM_STANDIN_TOKENS_PER_S tokens a second (one streamed chunk per token), the others queued.
SERVING = serving.Serving(*serving.settings_from(os.environ))
# How long a request may wait in the queue for a slot before it is answered 503.
QUEUE_TIMEOUT_S = 300
# A fault to test against: every completion answers 500 while /v1/health/ready stays 200 (a
# release that loads but cannot answer, which only a smoke test catches).
FAIL_COMPLETIONS = (os.environ.get('NIM_STANDIN_FAIL_COMPLETIONS') or '').lower() in ('1', 'true', 'yes')
# The same fault from a running group on: a completion whose prompt holds this mark fails, and so
# does every completion after it until the process ends, health still ready.
FAIL_MARK = 'nimstack-standin: fail every completion'
# A fault to test against on rank 0: a streamed answer whose prompt holds this mark stops after its
# first token and holds its slot and connection for ever, the rest of the group serving on.
STALL_MARK = 'nimstack-standin: stall this stream'
# How far past its own bound a group operation may run before the watchdog ends the group.
WATCHDOG_GRACE_S = 10


class State(object):
    def __init__(self):
        self.lock = threading.Lock()
        self.group = None
        self.ready = False
        self.broken = None
        self.model = None
        self.ranks = []
        self.load_seconds = None
        # (operation, deadline) of the group operation in progress, for the watchdog.
        self.op = None
        # Why the group hangs (a worker's hang, node.HANG_MARK): every completion then waits for
        # ever and nothing ends the group.
        self.hung = None
        # Why every completion fails (server.FAIL_MARK seen), or None.
        self.failing = None
        self.requests = queue.Queue()


STATE = State()


class Job(object):
    def __init__(self, payload):
        self.payload = payload
        self.done = threading.Event()
        self.result = None
        self.error = None


def send_json(handler, status, body):
    data = json.dumps(body).encode('utf-8')
    handler.send_response(status)
    handler.send_header('Content-Type', 'application/json')
    handler.send_header('Content-Length', str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def error_body(message, kind, code):
    return {'error': {'message': message, 'type': kind, 'code': code}}


def prompt_of(path, body):
    """The request's prompt text; ValueError/KeyError/TypeError when the body is not valid."""
    if path == '/v1/chat/completions':
        messages = body['messages']
        if not isinstance(messages, list) or not messages:
            raise ValueError('messages must be a non-empty list')
        return ' '.join(str(m.get('content', '')) for m in messages if isinstance(m, dict))
    prompt = body['prompt']
    if isinstance(prompt, list):
        prompt = ' '.join(str(p) for p in prompt)
    if not isinstance(prompt, str):
        raise TypeError('prompt must be a string or a list of strings')
    return prompt


class Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    server_version = 'nimstack-standin/2'

    def log_message(self, fmt, *args):
        if not self.path.startswith('/v1/health'):
            log('http %s %s' % (self.address_string(), fmt % args))

    def do_GET(self):
        path = self.path.split('?', 1)[0]
        if path == '/v1/health/live':
            send_json(self, 200, {'object': 'health.response', 'message': 'live'})
        elif path == '/v1/health/ready':
            if STATE.ready and not STATE.broken:
                send_json(self, 200, {'object': 'health.response', 'message': 'ready'})
            else:
                send_json(self, 503, {'object': 'health.response', 'message': STATE.broken or 'not ready'})
        elif path == '/v1/models':
            if STATE.model is None:
                send_json(self, 503, error_body('the model is not loaded yet', 'ServiceUnavailable', 503))
                return
            send_json(self, 200, {'object': 'list', 'data': [{
                'id': STATE.model['served_name'], 'object': 'model', 'created': STATE.model['created'],
                'owned_by': 'nimstack-standin', 'root': STATE.model['name'], 'parent': None,
            }]})
        elif path == '/v1/metrics':
            self.send_metrics()
        else:
            send_json(self, 404, error_body('no route %s' % path, 'NotFound', 404))

    def send_metrics(self):
        model = STATE.model['served_name'] if STATE.model else os.environ.get('NIM_SERVED_MODEL_NAME', '')
        data = SERVING.render(model).encode('utf-8')
        self.send_response(200)
        self.send_header('Content-Type', 'text/plain; version=0.0.4')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def refuse(self, status, body):
        SERVING.fail()
        send_json(self, status, body)

    def do_POST(self):
        path = self.path.split('?', 1)[0]
        length = int(self.headers.get('Content-Length') or 0)
        raw = self.rfile.read(length) if length else b''
        if path not in ('/v1/chat/completions', '/v1/completions'):
            send_json(self, 404, error_body('no route %s' % path, 'NotFound', 404))
            return
        if not STATE.ready or STATE.broken:
            self.refuse(503, error_body(STATE.broken or 'the model is not ready', 'ServiceUnavailable', 503))
            return
        if FAIL_COMPLETIONS:
            self.refuse(500, error_body('NIM_STANDIN_FAIL_COMPLETIONS is set: every completion fails',
                                        'InternalServerError', 500))
            return
        try:
            body = json.loads(raw.decode('utf-8') or '{}')
            prompt = prompt_of(path, body)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            self.refuse(400, error_body('invalid request: %s' % exc, 'BadRequestError', 400))
            return
        if FAIL_MARK in prompt and not STATE.failing:
            STATE.failing = 'a completion held %r: every completion fails from then on' % FAIL_MARK
            log(STATE.failing, 'ERROR')
        if STATE.failing:
            self.refuse(500, error_body(STATE.failing, 'InternalServerError', 500))
            return
        model = body.get('model', STATE.model['served_name'])
        if model != STATE.model['served_name']:
            self.refuse(404, error_body('The model `%s` does not exist.' % model, 'NotFoundError', 404))
            return
        request = SERVING.admit(len(prompt.split()), QUEUE_TIMEOUT_S)
        if request is None:
            send_json(self, 503, error_body('no slot freed up within %d s (NIM_STANDIN_MAX_RUNNING=%d)' % (
                QUEUE_TIMEOUT_S, SERVING.max_running), 'ServiceUnavailable', 503))
            return
        ok = False
        try:
            ok = self.complete(path, body, prompt, request)
        finally:
            request.finish(ok)

    def complete(self, path, body, prompt, request):
        """The group's answer to an admitted request, generated at the slot's token rate. True
        when it was answered in full."""
        job = Job({'prompt': prompt, 'max_tokens': body.get('max_tokens')})
        STATE.requests.put(job)
        while not job.done.wait(COLLECTIVE_TIMEOUT + HEARTBEAT + WATCHDOG_GRACE_S + 5):
            if STATE.hung:
                # A hung group: the request waits as long as its client does.
                continue
            # The main thread is stuck and even the watchdog did not end the group: answer, then
            # end it from here.
            STATE.broken = 'a group operation did not complete within %.0f s' % COLLECTIVE_TIMEOUT
            send_json(self, 504, error_body('the group did not answer: %s; ending the group' % STATE.broken,
                                            'GatewayTimeout', 504))
            threading.Timer(0.5, STATE.group.abort, (STATE.broken, 70)).start()
            return False
        if job.error:
            send_json(self, 503, error_body(job.error, 'ServiceUnavailable', 503))
            return False
        request.prefilled()
        whole = answer(path, job.payload, job.result)
        if body.get('stream') is True:
            self.send_stream(path, whole, bool((body.get('stream_options') or {}).get('include_usage')), request,
                             STALL_MARK in prompt)
        else:
            # Generated token by token at the slot's rate, sent whole.
            for _token in range(whole['usage']['completion_tokens']):
                time.sleep(SERVING.token_interval)
                request.token()
            send_json(self, 200, whole)
        return True

    def send_stream(self, path, whole, include_usage, request, stall=False):
        """The answer as server-sent events, one chunk per word (a token, sent as it is generated,
        at the slot's rate), then `data: [DONE]`: the OpenAI streaming format (chat.completion.chunk
        / text_completion), sent chunked, unbuffered. stall: stop after the first token, for ever."""
        self.send_response(200)
        self.send_header('Content-Type', 'text/event-stream')
        self.send_header('Cache-Control', 'no-cache')
        self.send_header('Transfer-Encoding', 'chunked')
        self.end_headers()
        for chunk in stream_chunks(path, whole, include_usage):
            data = ('data: %s\n\n' % (chunk if isinstance(chunk, str) else json.dumps(chunk))).encode('utf-8')
            self.wfile.write(b'%x\r\n%s\r\n' % (len(data), data))
            self.wfile.flush()
            if is_token(chunk):
                request.token()
                if stall:
                    log('the prompt holds %r: this stream stalls here for as long as its client waits' % STALL_MARK,
                        'ERROR')
                    threading.Event().wait()
                time.sleep(SERVING.token_interval)
        self.wfile.write(b'0\r\n\r\n')
        self.wfile.flush()


def is_token(chunk):
    """Whether a streamed chunk carries a generated word (not the role, the finish or the usage)."""
    if not isinstance(chunk, dict) or not chunk.get('choices'):
        return False
    choice = chunk['choices'][0]
    return bool(choice.get('text') or (choice.get('delta') or {}).get('content'))


def stream_chunks(path, whole, include_usage):
    """The chunks of a streamed answer: the role first (chat), then one per word, a last one with
    finish_reason, the usage when asked for, and the literal [DONE]."""
    chat = path == '/v1/chat/completions'
    content = whole['choices'][0]['message']['content'] if chat else whole['choices'][0]['text']
    base = {'id': whole['id'], 'object': 'chat.completion.chunk' if chat else 'text_completion',
            'created': whole['created'], 'model': whole['model']}

    def chunk(piece, finish=None, role=False):
        if chat:
            delta = {'role': 'assistant', 'content': ''} if role else ({'content': piece} if piece else {})
            choice = {'index': 0, 'delta': delta, 'logprobs': None, 'finish_reason': finish}
        else:
            choice = {'index': 0, 'text': piece, 'logprobs': None, 'finish_reason': finish}
        return dict(base, choices=[choice])

    if chat:
        yield chunk('', role=True)
    words = content.split(' ')
    for index, word in enumerate(words):
        yield chunk(word if index == 0 else ' ' + word)
    yield chunk('', finish='stop')
    if include_usage:
        yield dict(base, choices=[], usage=whole['usage'])
    yield '[DONE]'


def answer(path, payload, parts):
    total = sum(p['partial'] for p in parts)
    content = 'nimstack stand-in: %d ranks answered: %s; checksum %d (%s)' % (
        len(parts), ', '.join('%s (rank %d)' % (p['host'], p['rank']) for p in parts), total,
        STATE.group.contract)
    # A longer generation when max_tokens asks for more words than the answer has (a load test).
    wanted = payload.get('max_tokens')
    if isinstance(wanted, int) and not isinstance(wanted, bool) and wanted > len(content.split()):
        content += ' ...' * min(wanted - len(content.split()), 4096)
    prompt_tokens = len(payload['prompt'].split())
    completion_tokens = len(content.split())
    now = time.time()
    if path == '/v1/chat/completions':
        kind, choice = 'chat.completion', {'index': 0, 'message': {'role': 'assistant', 'content': content},
                                           'logprobs': None, 'finish_reason': 'stop'}
    else:
        kind, choice = 'text_completion', {'index': 0, 'text': content, 'logprobs': None, 'finish_reason': 'stop'}
    return {
        'id': '%s-standin-%d' % ('chatcmpl' if kind == 'chat.completion' else 'cmpl', int(now * 1000)),
        'object': kind,
        'created': int(now),
        'model': STATE.model['served_name'],
        'choices': [choice],
        'usage': {'prompt_tokens': prompt_tokens, 'completion_tokens': completion_tokens,
                  'total_tokens': prompt_tokens + completion_tokens},
        'nimstack_standin': {'contract': STATE.group.contract, 'ranks': parts,
                             'hosts': [p['host'] for p in parts], 'checksum': total},
    }


def ensure_model():
    """Rank 0: make the cache complete (download-to-cache is a no-op when it is). True when it is."""
    started = time.monotonic()
    try:
        done = subprocess.run(['download-to-cache'], timeout=DOWNLOAD_TIMEOUT + 30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log('download-to-cache failed: %s' % exc, 'ERROR')
        return False
    if done.returncode != 0:
        log('download-to-cache exited with %d' % done.returncode, 'ERROR')
        return False
    log('model cache ready in %.1f s' % (time.monotonic() - started))
    return True


def run(group, op, payload=None, timeout=None):
    """One group operation from rank 0's main thread, watched by the operation watchdog."""
    timeout = COLLECTIVE_TIMEOUT if timeout is None else timeout
    STATE.op = (op, time.monotonic() + timeout + WATCHDOG_GRACE_S)
    try:
        results = group.call(op, payload, timeout) if op != 'heartbeat' else group.heartbeat()
    finally:
        STATE.op = None
    return results


def watchdog(group):
    """End the group when an operation outlives its bound (a transport stuck where it cannot
    bound the wait itself, e.g. an MPI gather after a rank died past the barrier)."""
    while True:
        time.sleep(1)
        current = STATE.op
        if current is not None and time.monotonic() > current[1]:
            STATE.broken = 'the group operation %s did not complete within its bound' % current[0]
            group.abort(STATE.broken, 70)


def start_up(group):
    """Rank 0: the whole group joins, the cache is complete, every rank loads its slice."""
    joined = group.join()
    started = time.monotonic()
    log('all %d ranks joined: %s' % (group.size, ', '.join(i['host'] for i in joined)))
    if not ensure_model():
        group.abort('the model is not in the cache')
    # Loading waits for the cache to show the leader's download on every rank.
    loaded = run(group, 'load', timeout=COLLECTIVE_TIMEOUT + node.CACHE_VISIBLE_TIMEOUT + node.LOAD_S)
    failed = [i for i in loaded if i['error']]
    if failed:
        for info in failed:
            log('rank %d on %s: %s' % (info['rank'], info['host'], info['error']), 'ERROR')
        group.abort('ranks failed to load the model')
    if len(set(i['manifest_sha256'] for i in loaded)) != 1:
        group.abort('ranks see different manifests in their caches (is the cache shared?)')
    for info in loaded:
        log('rank %d on %s loaded bytes %d-%d of the weights' % (info['rank'], info['host'], info['slice'][0],
                                                                 info['slice'][1]))
    STATE.ranks = [i['host'] for i in loaded]
    STATE.load_seconds = time.monotonic() - started
    log('model downloaded and loaded in %.1f s (NIM_STANDIN_LOAD_S=%g)' % (STATE.load_seconds, node.LOAD_S))
    STATE.model = {'name': loaded[0]['name'], 'created': int(time.time()),
                   'served_name': os.environ.get('NIM_SERVED_MODEL_NAME') or loaded[0]['name']}


def hang(why):
    """Rank 0's main thread stops for ever, outside any group operation: the watchdog has nothing
    to end, the workers wait for the next operation, ready stays 200 and no completion returns."""
    STATE.hung = '; '.join(why)
    log('the group hangs: %s; no process exits, ready stays 200, completions wait for ever' % STATE.hung, 'ERROR')
    threading.Event().wait()


def lead(group):
    """Rank 0's main thread: every group operation runs here, one at a time."""
    threading.Thread(target=watchdog, args=(group,), name='watchdog', daemon=True).start()
    try:
        start_up(group)
    except GroupBroken as exc:
        STATE.broken = str(exc)
        group.abort('the group did not form: %s' % exc)
    STATE.ready = True
    log('ready: model %s served by %d ranks on %s' % (STATE.model['served_name'], group.size, ', '.join(STATE.ranks)))
    served = 0
    while True:
        try:
            job = STATE.requests.get(timeout=HEARTBEAT)
        except queue.Empty:
            job = None
        try:
            if job is None:
                # Heartbeats: a rank that dies or hangs breaks the group within a bound, not at
                # the next request.
                run(group, 'heartbeat')
                continue
            parts = run(group, 'complete', job.payload)
            hung = [p['hang'] for p in parts if p.get('hang')]
            if hung:
                hang(hung)
            failed = [p for p in parts if p.get('error')]
            if failed:
                raise GroupBroken('; '.join('rank %d on %s failed: %s' % (p['rank'], p['host'], p['error'])
                                            for p in failed))
        except GroupBroken as exc:
            STATE.broken = str(exc)
            if job is not None:
                job.error = 'the group is broken: %s' % exc
                job.done.set()
                time.sleep(0.5)
            group.abort(str(exc))
        served += 1
        log('completion %d: ranks %s took part' % (served, ', '.join('%d (%s)' % (p['rank'], p['host'])
                                                                     for p in parts)))
        job.result = parts
        job.done.set()


def make_group(contract, args):
    if contract == 'mpi':
        import group_mpi
        return group_mpi.MpiGroup(COLLECTIVE_TIMEOUT, START_TIMEOUT)
    if contract == 'ray':
        import group_ray
        return group_ray.RayGroup(COLLECTIVE_TIMEOUT, START_TIMEOUT, args.ray_address)
    import group_tcp
    return group_tcp.TcpGroup(COLLECTIVE_TIMEOUT, START_TIMEOUT)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--transport', choices=('mpi', 'ray', 'leader_address'), default='mpi')
    parser.add_argument('--ray-address', help='HOST:PORT of the Ray head (ray)')
    args = parser.parse_args()
    # The container's main process under leader_address and ray (PID 1 ignores signals it has no
    # handler for): `docker stop` ends the rank at once, with the status SIGTERM would give.
    signal.signal(signal.SIGTERM, lambda _signum, _frame: os._exit(143))
    group = make_group(args.transport, args)
    STATE.group = group
    log('rank %d of %d starting (launch contract %s, NIM_NODE_RANK=%s)' % (
        group.rank, group.size, args.transport, os.environ.get('NIM_NODE_RANK')))
    if group.rank != 0:
        raise SystemExit(group.serve_worker())
    server = ThreadingHTTPServer(('0.0.0.0', PORT), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name='http', daemon=True).start()
    log('listening on 0.0.0.0:%d' % PORT)
    lead(group)


if __name__ == '__main__':
    main()
