"""Launch contract `leader_address` (SGLang-based NIMs): a rendezvous on MASTER_ADDR:MASTER_PORT.

Rank 0 listens on MASTER_ADDR:MASTER_PORT; every other rank connects (retrying until
CLUSTER_START_TIMEOUT, default 300 s) and registers its rank and host. Rank 0 refuses a rank
outside 1..NIM_NUM_COMPUTE_NODES-1, a rank already taken, a different group size and any join
once the group is complete, each with a log line. Every operation goes to every worker over its
connection and must come back from all of them in time; a lost connection breaks the group and
rank 0 exits non-zero, and a worker exits non-zero when the leader's connection is gone.

The protocol is JSON, one object a line:
  worker -> leader  {"type": "join", "rank": R, "size": N, "host": H, "pid": P}
  leader -> worker  {"type": "welcome"} or {"type": "refused", "reason": "..."}
  leader -> worker  {"type": "call", "id": I, "op": OP, "payload": ...}
  worker -> leader  {"type": "result", "id": I, "result": ...}
"""

import json
import os
import socket
import sys
import threading
import time

import node
from node import GroupBroken, log

HANDSHAKE_TIMEOUT_S = 10.0
RETRY_S = 1.0


def keepalive(sock):
    """Find a peer whose host went away (no FIN ever comes) within about half a minute."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in (('TCP_KEEPIDLE', 10), ('TCP_KEEPINTVL', 5), ('TCP_KEEPCNT', 3)):
        if hasattr(socket, name):
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)


def send(sock, lock, message):
    data = (json.dumps(message) + '\n').encode('utf-8')
    with lock:
        sock.sendall(data)


class Peer(object):
    def __init__(self, sock, stream, rank, host, address):
        self.sock = sock
        self.stream = stream
        self.rank = rank
        self.host = host
        self.address = address
        self.send_lock = threading.Lock()
        self.results = {}

    def label(self):
        return 'rank %d on %s' % (self.rank, self.host)


class TcpGroup(node.Group):
    contract = 'leader_address'

    def __init__(self, collective_timeout, start_timeout):
        node.configure('leader_address')
        self.rank = node.IDENTITY['rank']
        self.size = node.IDENTITY['size']
        self.collective_timeout = collective_timeout
        self.start_timeout = start_timeout
        self.master = (os.environ.get('MASTER_ADDR') or os.environ.get('NIM_LEADER_IP_ADDRESS') or '127.0.0.1',
                       int(os.environ.get('MASTER_PORT') or '50000'))
        self.cond = threading.Condition()
        self.peers = {}
        self.complete = False
        self.lost = None
        self.closing = False
        self.seq = 0

    # ---- rank 0

    def _listen(self):
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind(self.master)
            where = '%s:%d' % self.master
        except OSError as exc:
            # MASTER_ADDR is a name or address this rank cannot bind (a service address):
            # listen on every address at the same port.
            listener.bind(('0.0.0.0', self.master[1]))
            where = '0.0.0.0:%d (cannot bind %s: %s)' % (self.master[1], self.master[0], exc)
        listener.listen(64)
        log('rendezvous listening on %s for %d workers' % (where, self.size - 1))
        return listener

    def _accept(self, listener):
        while True:
            sock, address = listener.accept()
            threading.Thread(target=self._handshake, args=(sock, address), daemon=True).start()

    def _refuse(self, sock, stream, address, reason):
        log('refused a join from %s:%d: %s' % (address[0], address[1], reason), 'WARNING')
        try:
            send(sock, threading.Lock(), {'type': 'refused', 'reason': reason})
        except OSError:
            pass
        stream.close()
        sock.close()

    def _handshake(self, sock, address):
        stream = sock.makefile('r', encoding='utf-8')
        try:
            sock.settimeout(HANDSHAKE_TIMEOUT_S)
            hello = json.loads(stream.readline() or 'null')
            sock.settimeout(None)
            if not isinstance(hello, dict) or hello.get('type') != 'join':
                raise ValueError('not a join message: %r' % (hello,))
            rank, size, host = int(hello['rank']), int(hello['size']), str(hello['host'])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            self._refuse(sock, stream, address, 'bad join: %s' % exc)
            return
        peer = None
        with self.cond:
            if size != self.size:
                reason = 'rank %d on %s says the group has %d ranks, the leader has %d' % (rank, host, size, self.size)
            elif not 1 <= rank < self.size:
                reason = 'rank %d of %s is outside 1-%d' % (rank, host, self.size - 1)
            elif rank in self.peers:
                reason = 'rank %d of %s is taken by %s' % (rank, host, self.peers[rank].host)
            elif self.complete:
                reason = 'the group is complete; rank %d of %s comes too late' % (rank, host)
            else:
                reason = None
                peer = self.peers[rank] = Peer(sock, stream, rank, host, address)
            if peer is not None:
                keepalive(sock)
                send(sock, peer.send_lock, {'type': 'welcome'})
                log('rank %d joined from host %s (address %s:%d, pid %s)' % (
                    rank, host, address[0], address[1], hello.get('pid')))
                self.cond.notify_all()
        if peer is None:
            self._refuse(sock, stream, address, reason)
            return
        self._read(peer)

    def _read(self, peer):
        while True:
            try:
                line = peer.stream.readline()
                message = json.loads(line) if line else None
            except (OSError, ValueError):
                message = None
            if message is None:
                with self.cond:
                    if not self.closing and self.lost is None:
                        self.lost = 'lost the connection of %s' % peer.label()
                        log(self.lost, 'ERROR')
                    if not self.complete and self.peers.get(peer.rank) is peer:
                        self.peers.pop(peer.rank)
                    self.cond.notify_all()
                return
            if message.get('type') == 'result':
                with self.cond:
                    peer.results[message.get('id')] = message.get('result')
                    self.cond.notify_all()

    def join(self):
        listener = self._listen()
        threading.Thread(target=self._accept, args=(listener,), name='rendezvous', daemon=True).start()
        deadline = time.monotonic() + self.start_timeout
        with self.cond:
            while len(self.peers) < self.size - 1:
                # A worker lost before the group is complete only leaves a gap to fill again.
                self.lost = None
                left = deadline - time.monotonic()
                if left <= 0:
                    raise GroupBroken('%d of %d workers joined the rendezvous within %.0f s (missing ranks %s)' % (
                        len(self.peers), self.size - 1, self.start_timeout,
                        ', '.join(str(r) for r in range(1, self.size) if r not in self.peers)))
                self.cond.wait(left)
            self.lost = None
            self.complete = True
            peers = [self.peers[r] for r in range(1, self.size)]
        return [node.whoami()] + [{'rank': p.rank, 'host': p.host, 'address': p.address[0]} for p in peers]

    def call(self, op, payload, timeout):
        with self.cond:
            if self.lost:
                raise GroupBroken(self.lost)
            self.seq += 1
            seq = self.seq
            peers = [self.peers[r] for r in range(1, self.size)]
        for peer in peers:
            try:
                send(peer.sock, peer.send_lock, {'type': 'call', 'id': seq, 'op': op, 'payload': payload})
            except OSError as exc:
                raise GroupBroken('cannot reach %s: %s' % (peer.label(), exc))
        results = [node.safe_work(op, payload)]
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                if self.lost:
                    raise GroupBroken(self.lost)
                late = [p for p in peers if seq not in p.results]
                if not late:
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    raise GroupBroken('%s did not answer within %.0f s' % (', '.join(p.label() for p in late), timeout))
                self.cond.wait(left)
            results.extend(p.results.pop(seq) for p in peers)
        return results

    def heartbeat(self):
        self.call('ping', None, self.collective_timeout)

    def abort(self, reason, code=1):
        log('%s; ending the group' % reason, 'ERROR')
        with self.cond:
            self.closing = True
            peers = list(self.peers.values())
        for peer in peers:
            try:
                peer.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        sys.stdout.flush()
        os._exit(code)

    # ---- every other rank

    def _connect(self):
        deadline = time.monotonic() + self.start_timeout
        attempts = 0
        while True:
            attempts += 1
            try:
                return socket.create_connection(self.master, timeout=5)
            except OSError as exc:
                if time.monotonic() > deadline:
                    log('the leader at %s:%d did not answer within %.0f s (%d attempts, last: %s)' % (
                        self.master[0], self.master[1], self.start_timeout, attempts, exc), 'ERROR')
                    return None
                time.sleep(RETRY_S)

    def serve_worker(self):
        sock = self._connect()
        if sock is None:
            return 1
        keepalive(sock)
        lock = threading.Lock()
        stream = sock.makefile('r', encoding='utf-8')
        send(sock, lock, {'type': 'join', 'rank': self.rank, 'size': self.size, 'host': node.IDENTITY['host'],
                          'pid': os.getpid()})
        sock.settimeout(HANDSHAKE_TIMEOUT_S)
        try:
            reply = json.loads(stream.readline() or 'null')
        except (OSError, ValueError) as exc:
            reply = {'type': 'refused', 'reason': 'no answer to the join: %s' % exc}
        if not isinstance(reply, dict) or reply.get('type') != 'welcome':
            log('the leader refused this rank: %s' % ((reply or {}).get('reason') or 'connection closed'), 'ERROR')
            return 1
        sock.settimeout(None)
        log('joined the rendezvous at %s:%d as rank %d of %d' % (self.master[0], self.master[1], self.rank, self.size))
        while True:
            try:
                line = stream.readline()
                message = json.loads(line) if line else None
            except (OSError, ValueError):
                message = None
            if message is None:
                log("the leader's connection is gone; exiting", 'ERROR')
                return 1
            if message.get('type') == 'call':
                result = node.safe_work(message.get('op'), message.get('payload'))
                try:
                    send(sock, lock, {'type': 'result', 'id': message.get('id'), 'result': result})
                except OSError:
                    log("the leader's connection is gone; exiting", 'ERROR')
                    return 1
