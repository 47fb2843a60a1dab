"""Launch contract `ray` (NIM for LLMs 2.x, vLLM on Ray): rank 0 is a Ray driver on the head.

nim-serve-ray --head started the Ray head and execs the server with --transport ray; every worker
runs nim-serve-ray --head-address, which joins the head as a Ray node. The group is the set of
alive Ray nodes, one per rank (a node's rank is the NIM_NODE_RANK its `ray start` ran with). Every
operation is one Ray task pinned to every member node (NodeAffinitySchedulingStrategy, soft=False,
no retries); a node that dies or a pinned task that fails or does not come back in time breaks
the group, and rank 0 exits non-zero, as a vLLM-on-Ray engine dies with any of its nodes.
"""

import logging
import os
import sys
import time

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

import node
from node import GroupBroken, log

POLL_S = 1.0


class RayGroup(node.Group):
    contract = 'ray'

    def __init__(self, collective_timeout, start_timeout, address):
        node.configure('ray')
        self.rank = node.IDENTITY['rank']
        self.size = node.IDENTITY['size']
        self.collective_timeout = collective_timeout
        self.start_timeout = start_timeout
        self.address = address
        self.members = []
        self._task = None

    def _connect(self):
        # RAY_AUTH_MODE / RAY_AUTH_TOKEN(_PATH) come from the environment, as for `ray start`.
        ray.init(address=self.address, logging_level=logging.WARNING, log_to_driver=False,
                 configure_logging=False)
        # By reference: node is importable in Ray's worker processes (PYTHONPATH).
        self._task = ray.remote(max_retries=0, num_cpus=0)(node.safe_work)

    def _alive(self):
        return dict((n['NodeID'], n) for n in ray.nodes() if n.get('Alive'))

    def _pinned(self, node_id, op, payload):
        strategy = NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)
        return self._task.options(scheduling_strategy=strategy).remote(op, payload)

    def _gather(self, targets, op, payload, timeout):
        """Run op on every (label, node id) target; results in order, or GroupBroken."""
        refs = [self._pinned(node_id, op, payload) for _label, node_id in targets]
        _ready, pending = ray.wait(refs, num_returns=len(refs), timeout=timeout)
        if pending:
            late = [label for (label, _node_id), ref in zip(targets, refs) if ref in pending]
            for ref in pending:
                try:
                    ray.cancel(ref, force=True)
                except Exception:  # a task on a dead node may not be cancellable; it is abandoned
                    pass
            raise GroupBroken('the Ray tasks pinned to %s did not come back within %.0f s'
                              % (', '.join(late), timeout))
        results = []
        for (label, _node_id), ref in zip(targets, refs):
            try:
                results.append(ray.get(ref))
            except ray.exceptions.RayError as exc:
                raise GroupBroken('the Ray task pinned to %s failed: %s'
                                  % (label, str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__))
        return results

    def join(self):
        log('connecting to the Ray head at %s' % self.address)
        self._connect()
        deadline = time.monotonic() + self.start_timeout
        seen, ranks = set(), {}
        while True:
            alive = self._alive()
            for node_id, info in sorted(alive.items()):
                if node_id not in seen:
                    seen.add(node_id)
                    log('ray node %s joined from host %s (address %s)' % (
                        node_id[:12], info.get('NodeManagerHostname'), info.get('NodeManagerAddress')))
            unknown = [i for i in alive if i not in ranks]
            if unknown:
                # Which rank is each new node: ask it (its own NIM_NODE_RANK and host name).
                try:
                    found = self._gather([('ray node %s' % i[:12], i) for i in unknown], 'ping', None,
                                         self.collective_timeout)
                except GroupBroken as exc:
                    log('cannot identify new Ray nodes yet: %s' % exc, 'WARNING')
                    found = []
                for node_id, who in zip(unknown, found):
                    ranks[node_id] = who
            by_rank = {}
            for node_id in alive:
                who = ranks.get(node_id)
                if who is None:
                    continue
                if not 0 <= who['rank'] < self.size:
                    log('refusing ray node %s on host %s: rank %d is outside 0-%d' % (
                        node_id[:12], who['host'], who['rank'], self.size - 1), 'WARNING')
                elif who['rank'] in by_rank:
                    log('refusing ray node %s on host %s: rank %d is taken by host %s' % (
                        node_id[:12], who['host'], who['rank'], by_rank[who['rank']][1]['host']), 'WARNING')
                else:
                    by_rank[who['rank']] = (node_id, who)
            if len(by_rank) == self.size:
                break
            if time.monotonic() > deadline:
                raise GroupBroken('%d of %d ranks joined the Ray cluster within %.0f s (missing ranks %s)' % (
                    len(by_rank), self.size, self.start_timeout,
                    ', '.join(str(r) for r in range(self.size) if r not in by_rank)))
            # Refused nodes are looked at again only if they leave and come back.
            time.sleep(POLL_S)
        self.members = []
        for rank in range(self.size):
            node_id, who = by_rank[rank]
            address = alive[node_id].get('NodeManagerAddress')
            log('rank %d joined from host %s (ray node %s, address %s)' % (rank, who['host'], node_id[:12], address))
            self.members.append({'rank': rank, 'host': who['host'], 'node_id': node_id, 'address': address,
                                 'pid': who['pid']})
        return self.members

    def _targets(self):
        return [('rank %d on %s' % (m['rank'], m['host']), m['node_id']) for m in self.members]

    def call(self, op, payload, timeout):
        return self._gather(self._targets(), op, payload, timeout)

    def heartbeat(self):
        alive = self._alive()
        gone = [m for m in self.members if m['node_id'] not in alive]
        if gone:
            raise GroupBroken('%s left the Ray cluster (%d of %d nodes alive)' % (
                ', '.join('rank %d on %s (ray node %s)' % (m['rank'], m['host'], m['node_id'][:12]) for m in gone),
                len(alive), self.size))
        self._gather(self._targets(), 'ping', None, self.collective_timeout)

    def abort(self, reason, code=1):
        log('%s; ending the Ray group' % reason, 'ERROR')
        sys.stdout.flush()
        # The head (this container's Ray processes) goes with the container; the workers see it
        # gone and end too.
        os._exit(code)

    def serve_worker(self):
        raise SystemExit('a Ray worker runs nim-serve-ray --head-address, not the server')
