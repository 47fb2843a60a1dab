"""nim-serve-ray of the lab's stand-in NIM (launch contract `ray`, as NIM for LLMs 2.x).

    nim-serve-ray --head [--port PORT]          rank 0: start the Ray head, then serve
    nim-serve-ray --head-address HOST:PORT      every other rank: join the head as a Ray node

The head execs the stand-in's server (--transport ray), which waits for every rank's node,
downloads the model and serves the OpenAI API. A worker waits until the head's port and the
leader's API port (NIM_HTTP_API_PORT) answer, runs `ray start --block` and ends,
non-zero, when its Ray processes end or when the head stops answering on its port for
NIM_STANDIN_HEAD_LOST_S seconds (default 10).

Ray binds to NIM_STANDIN_NODE_IP when set, else to the address of the interface that routes to
the head (the default route on the head). The environment goes to `ray start` untouched, so
RAY_AUTH_MODE=token with RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH turns on Ray's token
authentication (Ray 2.52 and later), the same token on every rank.
"""

import argparse
import os
import signal
import socket
import subprocess
import sys
import time

import node
from node import log

RAY = os.path.join(os.path.dirname(sys.executable), 'ray')
SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'server.py')
# The lab's hosts have little memory: one CPU's worth of workers and Ray's smallest object store.
NUM_CPUS = os.environ.get('NIM_STANDIN_RAY_NUM_CPUS') or '1'
OBJECT_STORE_BYTES = os.environ.get('NIM_STANDIN_RAY_OBJECT_STORE_BYTES') or str(75 * 1024 * 1024)
HEAD_LOST_S = float(os.environ.get('NIM_STANDIN_HEAD_LOST_S') or '10')
JOIN_TIMEOUT = float(os.environ.get('CLUSTER_START_TIMEOUT') or os.environ.get('NIM_STANDIN_START_TIMEOUT') or '300')
PROBE_S = 2.0
API_PORT = int(os.environ.get('NIM_HTTP_API_PORT') or os.environ.get('NIM_SERVER_PORT') or '8000')


def node_ip(target):
    """The address Ray binds to: NIM_STANDIN_NODE_IP, else the source address towards target."""
    if os.environ.get('NIM_STANDIN_NODE_IP'):
        return os.environ['NIM_STANDIN_NODE_IP']
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        # connect() on UDP sends nothing; it only picks the route and so the source address.
        probe.connect((target, 9))
        return probe.getsockname()[0]
    except OSError:
        return socket.gethostbyname(socket.gethostname())
    finally:
        probe.close()


def reachable(host, port, timeout=3.0):
    try:
        socket.create_connection((host, port), timeout=timeout).close()
        return True
    except OSError:
        return False


def common_args(ip):
    return ['--node-ip-address', ip, '--num-cpus', NUM_CPUS, '--num-gpus', '0',
            '--object-store-memory', OBJECT_STORE_BYTES, '--include-log-monitor', 'false', '--disable-usage-stats']


def stop_ray():
    subprocess.run([RAY, 'stop', '--force'], check=False, timeout=60, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def head(port):
    # The head has no head to route to: the default route's interface.
    ip = node_ip(os.environ.get('NIM_LEADER_IP_ADDRESS') or '192.0.2.1')
    command = [RAY, 'start', '--head', '--port', str(port), '--include-dashboard', 'false'] + common_args(ip)
    deadline = time.monotonic() + JOIN_TIMEOUT
    while True:
        log('starting the Ray head on %s:%d (%s)' % (ip, port, ' '.join(command[1:])))
        code = subprocess.run(command, check=False, stdin=subprocess.DEVNULL).returncode
        if code == 0:
            break
        # A node that misses its time to register with the GCS on a busy machine: start afresh.
        if time.monotonic() > deadline:
            log('ray start --head exited with %d; giving up after %.0f s' % (code, JOIN_TIMEOUT), 'ERROR')
            return 1
        log('ray start --head exited with %d; trying again' % code, 'WARNING')
        stop_ray()
        time.sleep(PROBE_S)
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, '-u', SERVER, '--transport', 'ray',
                              '--ray-address', '%s:%d' % (ip, port)])
    return 1


def supervise(child, host, port):
    """Wait for `ray start --block`: its exit status, or None once the head is gone."""
    lost_since = None
    while True:
        try:
            return child.wait(timeout=PROBE_S)
        except subprocess.TimeoutExpired:
            pass
        if reachable(host, port):
            lost_since = None
            continue
        lost_since = lost_since or time.monotonic()
        if time.monotonic() - lost_since > HEAD_LOST_S:
            log('the Ray head at %s:%d is gone (no answer for %.0f s); stopping this node' % (host, port, HEAD_LOST_S),
                'ERROR')
            # No draining (there is no head to drain to): kill `ray start` and its processes.
            child.kill()
            child.wait()
            stop_ray()
            return None


def worker(address):
    host, _sep, port = address.rpartition(':')
    if not host or not port.isdigit():
        log('--head-address must be HOST:PORT, not %r' % address, 'ERROR')
        return 2
    port = int(port)
    deadline = time.monotonic() + JOIN_TIMEOUT
    children = []

    def stop(signum, _frame):
        log('signal %d: stopping Ray' % signum)
        for child in children[-1:]:
            child.terminate()
            try:
                child.wait(timeout=5)
            except subprocess.TimeoutExpired:
                child.kill()
                stop_ray()
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while True:
        # The head is up once its server listens: its `ray start --head` has returned, and
        # joining now does not slow the head's own start on a busy machine.
        while not (reachable(host, port) and reachable(host, API_PORT)):
            if time.monotonic() > deadline:
                log('the Ray head at %s:%d (API port %d) did not answer within %.0f s' % (
                    host, port, API_PORT, JOIN_TIMEOUT), 'ERROR')
                return 1
            time.sleep(PROBE_S)
        ip = node_ip(host)
        command = [RAY, 'start', '--address', '%s:%d' % (host, port), '--block'] + common_args(ip)
        log('joining the Ray head at %s:%d from %s (rank %d)' % (host, port, ip, node.IDENTITY['rank']))
        children.append(subprocess.Popen(command, stdin=subprocess.DEVNULL))
        code = supervise(children[-1], host, port)
        if code is None:
            return 1
        # A node that misses its time to register on a busy machine: within the start timeout,
        # a failed start is tried again.
        if code != 0 and time.monotonic() < deadline:
            log('ray start --block ended with %d while the group forms; trying again' % code, 'WARNING')
            stop_ray()
            time.sleep(PROBE_S)
            continue
        log('ray start --block ended with %d' % code, 'ERROR' if code else 'INFO')
        return code or 1


def main():
    node.configure('ray')
    parser = argparse.ArgumentParser(prog='nim-serve-ray', description=__doc__.splitlines()[0])
    role = parser.add_mutually_exclusive_group(required=True)
    role.add_argument('--head', action='store_true', help='start the Ray head and serve (rank 0)')
    role.add_argument('--head-address', metavar='HOST:PORT', help='join this Ray head (workers)')
    parser.add_argument('--port', type=int, default=6379, help='the Ray head port (GCS), with --head')
    args = parser.parse_args()
    return head(args.port) if args.head else worker(args.head_address)


if __name__ == '__main__':
    sys.exit(main())
