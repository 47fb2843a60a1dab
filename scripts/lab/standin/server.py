"""The lab stand-in's OpenAI server: one process per MPI rank, started by start-mpi-cluster.sh.

Rank 0 serves HTTP on NIM_HTTP_API_PORT. Every chat completion crosses the whole group through
MPI collectives (a barrier, a broadcast of the request, a gather of each rank's part and an
allreduce of the partial sums), so a dead or hung rank really breaks the endpoint. A collective
that does not finish within NIM_STANDIN_COLLECTIVE_TIMEOUT seconds fails the request and aborts
the MPI job: mpirun exits, the leader container with it, and its restart policy restarts it, as
the group of a real multi-node NIM has to be restarted as a whole.
"""

import hashlib
import json
import os
import queue
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from mpi4py import MPI

COMM = MPI.COMM_WORLD
RANK = COMM.Get_rank()
SIZE = COMM.Get_size()
HOST = MPI.Get_processor_name()

CACHE_PATH = os.environ.get('NIM_CACHE_PATH', '/model-store')
MODEL_DIR = os.path.join(CACHE_PATH, 'nimstack-standin')
PORT = int(os.environ.get('NIM_HTTP_API_PORT') or os.environ.get('NIM_SERVER_PORT') or '8000')
JSONL = os.environ.get('NIM_JSONL_LOGGING') == '1'
START_TIMEOUT = float(os.environ.get('CLUSTER_START_TIMEOUT') or '300')
COLLECTIVE_TIMEOUT = float(os.environ.get('NIM_STANDIN_COLLECTIVE_TIMEOUT') or '15')
HEARTBEAT = float(os.environ.get('NIM_STANDIN_HEARTBEAT_S') or '5')
DOWNLOAD_TIMEOUT = float(os.environ.get('NIM_STANDIN_DOWNLOAD_TIMEOUT') or '600')
# How long a worker waits for the leader's download to show up in its view of the shared cache
# (NFS caches attributes for a few seconds).
CACHE_VISIBLE_TIMEOUT = 30.0
# Test() drives progress; sleeping between calls keeps idle ranks off the CPU (a blocking
# collective spins).
POLL_S = 0.02
# How long MPI_Abort gets to end the job before mpirun is told to terminate forcibly.
ABORT_GRACE_S = 10


def log(message, level='INFO'):
    if JSONL:
        line = json.dumps({'level': level, 'rank': RANK, 'host': HOST, 'message': message})
    else:
        line = '%s [standin rank %d on %s] %s: %s' % (time.strftime('%H:%M:%S'), RANK, HOST, level, message)
    print(line, flush=True)


class GroupBroken(Exception):
    """A collective did not complete in time: some rank is gone or hung."""


def arm_abort_watchdog():
    """Make sure the job ends even when mpirun cannot reach a frozen rank's daemon.

    MPI_Abort asks mpirun to kill every daemon and waits for them; a daemon that is alive but
    frozen never answers, and mpirun (the container's main process) would wait forever. A second
    SIGINT makes mpirun terminate at once. The watchdog runs in its own session so the job's
    teardown does not take it along, and is only armed when rank 0 is mpirun's own child.
    """
    parent = os.getppid()
    try:
        with open('/proc/%d/comm' % parent) as handle:
            name = handle.read().strip()
    except OSError:
        return
    if name not in ('mpirun', 'mpiexec', 'orterun'):
        return
    subprocess.Popen(['/bin/sh', '-c', 'sleep "$1"; kill -INT "$2" && sleep 1 && kill -INT "$2"',
                      'abort-watchdog', str(ABORT_GRACE_S), str(parent)],
                     start_new_session=True, stdin=subprocess.DEVNULL, close_fds=True)


def abort_group(reason, code=1):
    """Rank 0: end the whole MPI job, so the leader container exits and is restarted."""
    log('%s; aborting the MPI job' % reason, 'ERROR')
    arm_abort_watchdog()
    COMM.Abort(code)


def sync(timeout):
    """Barrier of all ranks, polled; GroupBroken at the deadline (None: wait for rank 0 forever)."""
    request = COMM.Ibarrier()
    deadline = None if timeout is None else time.monotonic() + timeout
    while not request.Test():
        if deadline is not None and time.monotonic() > deadline:
            raise GroupBroken('not every rank reached the barrier within %.0f s' % timeout)
        time.sleep(POLL_S)


class State(object):
    def __init__(self):
        self.lock = threading.Lock()
        self.ready = False
        self.broken = None
        self.model = None
        self.ranks = []
        self.counts = {'ok': 0, 'error': 0}
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


class Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    server_version = 'nimstack-standin/1'

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
        lines = [
            '# HELP nim_standin_ready 1 when the model is loaded and every rank joined.',
            '# TYPE nim_standin_ready gauge',
            'nim_standin_ready %d' % (1 if STATE.ready and not STATE.broken else 0),
            '# HELP nim_standin_ranks MPI ranks in the group.',
            '# TYPE nim_standin_ranks gauge',
            'nim_standin_ranks %d' % SIZE,
            '# HELP nim_standin_requests_total Chat completions answered, by outcome.',
            '# TYPE nim_standin_requests_total counter',
        ]
        with STATE.lock:
            for outcome in sorted(STATE.counts):
                lines.append('nim_standin_requests_total{outcome="%s"} %d' % (outcome, STATE.counts[outcome]))
        data = ('\n'.join(lines) + '\n').encode('utf-8')
        self.send_response(200)
        self.send_header('Content-Type', 'text/plain; version=0.0.4')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def count(self, outcome):
        with STATE.lock:
            STATE.counts[outcome] += 1

    def do_POST(self):
        path = self.path.split('?', 1)[0]
        length = int(self.headers.get('Content-Length') or 0)
        raw = self.rfile.read(length) if length else b''
        if path != '/v1/chat/completions':
            send_json(self, 404, error_body('no route %s' % path, 'NotFound', 404))
            return
        if not STATE.ready or STATE.broken:
            self.count('error')
            send_json(self, 503, error_body(STATE.broken or 'the model is not ready', 'ServiceUnavailable', 503))
            return
        try:
            body = json.loads(raw.decode('utf-8') or '{}')
            messages = body['messages']
            if not isinstance(messages, list) or not messages:
                raise ValueError('messages must be a non-empty list')
        except (ValueError, KeyError, TypeError) as exc:
            self.count('error')
            send_json(self, 400, error_body('invalid request: %s' % exc, 'BadRequestError', 400))
            return
        model = body.get('model', STATE.model['served_name'])
        if model != STATE.model['served_name']:
            self.count('error')
            send_json(self, 404, error_body('The model `%s` does not exist.' % model, 'NotFoundError', 404))
            return
        prompt = ' '.join(str(m.get('content', '')) for m in messages if isinstance(m, dict))
        job = Job({'prompt': prompt, 'max_tokens': body.get('max_tokens')})
        STATE.requests.put(job)
        if not job.done.wait(COLLECTIVE_TIMEOUT + HEARTBEAT + 5):
            # The main thread is stuck inside a collective: a rank died between the barrier and
            # the gather. Answer, then end this rank so that mpirun aborts the whole job.
            STATE.broken = 'a collective did not complete within %.0f s' % COLLECTIVE_TIMEOUT
            self.count('error')
            send_json(self, 504, error_body('the MPI group did not answer: %s; aborting the group' % STATE.broken,
                                            'GatewayTimeout', 504))
            threading.Timer(0.5, abort_group, (STATE.broken, 70)).start()
            return
        if job.error:
            self.count('error')
            send_json(self, 503, error_body(job.error, 'ServiceUnavailable', 503))
            return
        self.count('ok')
        send_json(self, 200, job.result)


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


def load_slice():
    """Every rank: read its pipeline stage's slice of the weights from its view of the cache."""
    deadline = time.monotonic() + CACHE_VISIBLE_TIMEOUT
    while True:
        try:
            with open(os.path.join(MODEL_DIR, 'manifest.json'), 'rb') as handle:
                raw = handle.read()
            manifest = json.loads(raw.decode('utf-8'))
            weights = os.path.join(MODEL_DIR, manifest['files'][0]['name'])
            total = os.path.getsize(weights)
            if total != manifest['files'][0]['size']:
                raise ValueError('%s has %d bytes, the manifest says %d' % (weights, total, manifest['files'][0]['size']))
            begin, end = total * RANK // SIZE, total * (RANK + 1) // SIZE
            with open(weights, 'rb') as handle:
                handle.seek(begin)
                data = handle.read(end - begin)
            return {'rank': RANK, 'host': HOST, 'manifest_sha256': hashlib.sha256(raw).hexdigest(),
                    'name': manifest.get('name'), 'slice': [begin, end], 'partial': sum(data) % (1 << 32),
                    'error': None}
        except (OSError, ValueError, KeyError, IndexError) as exc:
            if time.monotonic() > deadline:
                return {'rank': RANK, 'host': HOST, 'error': 'cannot read the model in %s: %s' % (MODEL_DIR, exc)}
            time.sleep(1)


def startup():
    """All ranks: join, get the model into the cache, load it. Returns this rank's slice info."""
    # Join: workers wait for rank 0 as long as it lives; rank 0 bounds the wait.
    sync(START_TIMEOUT if RANK == 0 else None)
    joined = COMM.gather({'rank': RANK, 'host': HOST, 'pid': os.getpid(),
                          'node_rank': os.environ.get('NIM_NODE_RANK')}, root=0)
    if RANK == 0:
        for info in joined:
            log('rank %d joined from host %s (pid %d)' % (info['rank'], info['host'], info['pid']))
        log('all %d ranks joined: %s' % (SIZE, ', '.join(i['host'] for i in joined)))
        have_model = ensure_model()
        sync(COLLECTIVE_TIMEOUT)
    else:
        have_model = None
        sync(None)
    if not COMM.bcast(have_model, root=0):
        if RANK == 0:
            log('the model is not in the cache; ending the group', 'ERROR')
        sys.exit(1)
    mine = load_slice()
    loaded = COMM.gather(mine, root=0)
    if RANK == 0:
        failed = [i for i in loaded if i['error']]
        shas = set(i.get('manifest_sha256') for i in loaded)
        if failed or len(shas) != 1:
            for info in failed:
                log('rank %d on %s: %s' % (info['rank'], info['host'], info['error']), 'ERROR')
            abort_group('ranks failed to load the model' if failed
                        else 'ranks see different manifests in their caches (is the cache shared?)')
        for info in loaded:
            log('rank %d on %s loaded bytes %d-%d of the weights' % (info['rank'], info['host'], info['slice'][0],
                                                                     info['slice'][1]))
        STATE.ranks = [i['host'] for i in loaded]
        STATE.model = {'name': mine['name'], 'created': int(time.time()),
                       'served_name': os.environ.get('NIM_SERVED_MODEL_NAME') or mine['name']}
    return mine


def contribute(mine, payload):
    words = len(payload['prompt'].split())
    return {'rank': RANK, 'host': HOST, 'partial': (mine['partial'] + words * (RANK + 1)) % (1 << 32)}


def answer(payload, parts, total):
    hosts = [p['host'] for p in parts]
    content = 'nimstack stand-in: %d ranks answered: %s; allreduce checksum %d' % (
        len(parts), ', '.join('%s (rank %d)' % (p['host'], p['rank']) for p in parts), total)
    prompt_tokens = len(payload['prompt'].split())
    completion_tokens = len(content.split())
    return {
        'id': 'chatcmpl-standin-%d' % int(time.time() * 1000),
        'object': 'chat.completion',
        'created': int(time.time()),
        'model': STATE.model['served_name'],
        'choices': [{'index': 0, 'message': {'role': 'assistant', 'content': content},
                     'logprobs': None, 'finish_reason': 'stop'}],
        'usage': {'prompt_tokens': prompt_tokens, 'completion_tokens': completion_tokens,
                  'total_tokens': prompt_tokens + completion_tokens},
        'nimstack_standin': {'ranks': parts, 'hosts': hosts, 'allreduce': total},
    }


def serve_leader(mine):
    while True:
        try:
            job = STATE.requests.get(timeout=HEARTBEAT)
        except queue.Empty:
            job = None
        try:
            # Heartbeats too: a rank that hangs breaks the group within a bound, not at the next request.
            sync(COLLECTIVE_TIMEOUT)
        except GroupBroken as exc:
            STATE.broken = str(exc)
            if job is not None:
                job.error = 'the MPI group is broken: %s' % exc
                job.done.set()
                time.sleep(0.5)
            abort_group(str(exc))
        payload = COMM.bcast(job.payload if job else None, root=0)
        if payload is None:
            continue
        part = contribute(mine, payload)
        parts = COMM.gather(part, root=0)
        total = COMM.allreduce(part['partial'], op=MPI.SUM)
        job.result = answer(payload, parts, total)
        job.done.set()


def serve_worker(mine):
    while True:
        sync(None)
        payload = COMM.bcast(None, root=0)
        if payload is None:
            continue
        part = contribute(mine, payload)
        COMM.gather(part, root=0)
        COMM.allreduce(part['partial'], op=MPI.SUM)


def main():
    log('rank %d of %d starting (NIM_NODE_RANK=%s)' % (RANK, SIZE, os.environ.get('NIM_NODE_RANK')))
    if RANK == 0:
        server = ThreadingHTTPServer(('0.0.0.0', PORT), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, name='http', daemon=True).start()
        log('listening on 0.0.0.0:%d' % PORT)
    mine = startup()
    if RANK == 0:
        STATE.ready = True
        log('ready: model %s served by %d ranks on %s' % (STATE.model['served_name'], SIZE, ', '.join(STATE.ranks)))
        serve_leader(mine)
    else:
        serve_worker(mine)


if __name__ == '__main__':
    main()
