"""Launch contract `mpi` (NIM for LLMs 1.x): one process per MPI rank under mpirun.

Every operation is a barrier of all ranks, a broadcast of the operation from rank 0 and a gather
of every rank's result; idle heartbeats are a barrier and an empty broadcast. Rank 0 polls its
barrier and gives up after the collective timeout; it then aborts the MPI job: mpirun exits, the
leader container with it.
"""

import os
import subprocess
import time

from mpi4py import MPI

import node
from node import GroupBroken, log

# Test() drives progress; sleeping between calls keeps idle ranks off the CPU (a blocking
# collective spins).
POLL_S = 0.02
# How long MPI_Abort gets to end the job before mpirun is told to terminate forcibly.
ABORT_GRACE_S = 10


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


class MpiGroup(node.Group):
    contract = 'mpi'

    def __init__(self, collective_timeout, start_timeout):
        self.comm = MPI.COMM_WORLD
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        self.collective_timeout = collective_timeout
        self.start_timeout = start_timeout
        node.configure('mpi', rank=self.rank, size=self.size, host=MPI.Get_processor_name())

    def _sync(self, timeout):
        """Barrier of all ranks, polled; GroupBroken at the deadline (None: wait for rank 0 forever)."""
        request = self.comm.Ibarrier()
        deadline = None if timeout is None else time.monotonic() + timeout
        while not request.Test():
            if deadline is not None and time.monotonic() > deadline:
                raise GroupBroken('not every rank reached the barrier within %.0f s' % timeout)
            time.sleep(POLL_S)

    def join(self):
        # Workers wait for rank 0 as long as it lives; rank 0 bounds the wait.
        self._sync(self.start_timeout)
        joined = self.comm.gather(node.whoami(), root=0)
        for info in joined:
            log('rank %d joined from host %s (pid %d)' % (info['rank'], info['host'], info['pid']))
        return joined

    def call(self, op, payload, timeout):
        # The barrier is bounded; a rank that dies after it leaves the gather to the server's
        # operation watchdog.
        self._sync(timeout)
        self.comm.bcast((op, payload), root=0)
        return self.comm.gather(node.safe_work(op, payload), root=0)

    def heartbeat(self):
        self._sync(self.collective_timeout)
        self.comm.bcast(None, root=0)

    def abort(self, reason, code=1):
        log('%s; aborting the MPI job' % reason, 'ERROR')
        arm_abort_watchdog()
        self.comm.Abort(code)

    def serve_worker(self):
        self._sync(None)
        self.comm.gather(node.whoami(), root=0)
        while True:
            self._sync(None)
            message = self.comm.bcast(None, root=0)
            if message is None:
                continue
            self.comm.gather(node.safe_work(*message), root=0)
