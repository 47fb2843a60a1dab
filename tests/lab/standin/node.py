"""What every rank of the lab stand-in does, whatever the launch contract: who it is, logging,
its slice of the model, and its part of each request.

The group transports (group_mpi, group_ray, group_tcp) carry `work(op, payload)` to every rank
and bring the results back to rank 0; server.py serves HTTP on rank 0 and turns the results into
answers. Ray runs `work` in its own worker processes, so this module is importable on its own
(the image puts /opt/nim/standin on PYTHONPATH) and reads its identity from the rank's env.
"""

import hashlib
import json
import os
import socket
import time

CACHE_PATH = os.environ.get('NIM_CACHE_PATH', '/model-store')
MODEL_DIR = os.path.join(CACHE_PATH, 'nimstack-standin')
JSONL = os.environ.get('NIM_JSONL_LOGGING') == '1'
# How long a rank waits for the leader's download to show up in its view of the shared cache
# (NFS caches attributes for a few seconds).
CACHE_VISIBLE_TIMEOUT = 30.0
# How long loading a slice of the weights takes on every rank (NIM_STANDIN_LOAD_S, default 0): a
# real multi-node NIM spends minutes there, which is what group-level timing tests need to see.
LOAD_S = max(0.0, float(os.environ.get('NIM_STANDIN_LOAD_S') or 0))
# A fault to test against: a completion whose prompt holds this mark makes every worker rank hang
# the group, as a collective stuck after an NCCL or network fault with the watchdog off (or longer
# than anyone waits) does: no process exits, /v1/health/ready stays 200, and every completion from
# then on waits for ever. Only a restart of the group ends it; the restarted group serves. A client
# sends it (the lab test, through the leader's API): nothing needs to enter a rank's container.
HANG_MARK = 'nimstack-standin: hang the group'


def _env_int(name, default):
    try:
        return int(os.environ.get(name) or default)
    except ValueError:
        return default


class GroupBroken(Exception):
    """A group operation did not come back from every rank in time: some rank is gone or hung."""


class Group(object):
    """What a transport provides. Rank 0 calls join, call, heartbeat and abort; every other rank
    calls serve_worker, which runs work() for rank 0 until the group ends.

    join()             wait until every rank joined (bounded); list of whoami() by rank
    call(op, payload, timeout)
                       safe_work(op, payload) on every rank; results by rank, or GroupBroken
                       when not all came back within timeout seconds
    heartbeat()        prove every rank is still there, or GroupBroken
    abort(reason)      end the whole group with a non-zero exit; does not return
    serve_worker()     a worker's life; returns the exit status
    """

    contract = None
    rank = 0
    size = 1


# This rank's identity; the MPI transport replaces it with MPI's own view (configure()).
IDENTITY = {
    'contract': 'standalone',
    'rank': _env_int('NIM_NODE_RANK', 0),
    'size': _env_int('NIM_NUM_COMPUTE_NODES', 1),
    'host': socket.gethostname(),
}
# This process's slice of the weights, once loaded.
_LOADED = {}


def configure(contract, rank=None, size=None, host=None):
    IDENTITY['contract'] = contract
    if rank is not None:
        IDENTITY['rank'] = rank
    if size is not None:
        IDENTITY['size'] = size
    if host is not None:
        IDENTITY['host'] = host


def log(message, level='INFO'):
    if JSONL:
        line = json.dumps({'level': level, 'contract': IDENTITY['contract'], 'rank': IDENTITY['rank'],
                           'host': IDENTITY['host'], 'message': message})
    else:
        line = '%s [standin %s rank %d on %s] %s: %s' % (time.strftime('%H:%M:%S'), IDENTITY['contract'],
                                                         IDENTITY['rank'], IDENTITY['host'], level, message)
    print(line, flush=True)


def whoami():
    return {'rank': IDENTITY['rank'], 'host': IDENTITY['host'], 'pid': os.getpid(),
            'node_rank': os.environ.get('NIM_NODE_RANK')}


def load_slice():
    """Read this rank's pipeline stage's slice of the weights from its own view of the cache."""
    rank, size, host = IDENTITY['rank'], IDENTITY['size'], IDENTITY['host']
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
            begin, end = total * rank // size, total * (rank + 1) // size
            with open(weights, 'rb') as handle:
                handle.seek(begin)
                data = handle.read(end - begin)
            if LOAD_S:
                time.sleep(LOAD_S)
            return {'rank': rank, 'host': host, 'manifest_sha256': hashlib.sha256(raw).hexdigest(),
                    'name': manifest.get('name'), 'slice': [begin, end], 'partial': sum(data) % (1 << 32),
                    'error': None}
        except (OSError, ValueError, KeyError, IndexError) as exc:
            if time.monotonic() > deadline:
                return {'rank': rank, 'host': host, 'error': 'cannot read the model in %s: %s' % (MODEL_DIR, exc)}
            time.sleep(1)


def hangs(payload):
    """Whether this rank hangs the group at this completion: a worker rank, and the mark in its prompt."""
    return IDENTITY.get('rank', 0) != 0 and HANG_MARK in str((payload or {}).get('prompt') or '')


def work(op, payload):
    """One rank's part of a group operation; every transport runs this on every rank.

    ping: proves the rank is alive and reachable; load: reads the rank's slice of the weights;
    complete: the rank's part of a completion, computed from its slice and the prompt.
    """
    if op == 'ping':
        return whoami()
    if op == 'load':
        _LOADED['mine'] = load_slice()
        return _LOADED['mine']
    if op == 'complete':
        if hangs(payload):
            log('the prompt holds %r: this rank hangs the group from this completion on' % HANG_MARK, 'ERROR')
            return {'rank': IDENTITY['rank'], 'host': IDENTITY['host'], 'partial': 0,
                    'hang': 'rank %d on %s hangs (%r)' % (IDENTITY['rank'], IDENTITY['host'], HANG_MARK)}
        mine = _LOADED.get('mine')
        if mine is None or mine.get('error'):
            # Ray may run this in a fresh worker process: load the slice there first.
            mine = _LOADED['mine'] = load_slice()
            if mine.get('error'):
                raise RuntimeError(mine['error'])
        words = len(payload['prompt'].split())
        return {'rank': IDENTITY['rank'], 'host': IDENTITY['host'],
                'partial': (mine['partial'] + words * (IDENTITY['rank'] + 1)) % (1 << 32)}
    raise ValueError('unknown group operation %r' % (op,))


def safe_work(op, payload):
    """work(), with a failure turned into the rank's answer (rank 0 judges it)."""
    try:
        return work(op, payload)
    except Exception as exc:  # any failure of the rank's part is reported, not raised
        return {'rank': IDENTITY['rank'], 'host': IDENTITY['host'], 'error': '%s: %s' % (type(exc).__name__, exc),
                'partial': 0}
