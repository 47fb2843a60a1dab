# -*- coding: utf-8 -*-
"""The run owner's view of the runs alive on its controller."""

import os
import socket
import subprocess
import sys
import tempfile
import time

import pytest

from ansible_collections.nimstack.multinode.plugins.lookup import nim_run_owner as lookup

pytestmark = pytest.mark.skipif(not os.path.isdir('/proc/self'), reason='reads /proc')


def test_a_running_ansible_playbook_is_alive_and_one_that_ended_is_not():
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, 'ansible-playbook')
        with open(script, 'w') as handle:
            handle.write('import time\ntime.sleep(60)\n')
        run = subprocess.Popen([sys.executable, script])
        try:
            controller = socket.gethostname()
            deadline = time.time() + 10
            while True:
                mine = lookup.run_owner(controller, run.pid, lookup._started(run.pid))['run']
                if mine in lookup._alive(controller) or time.time() > deadline:
                    break
                time.sleep(0.1)
            assert mine in lookup._alive(controller)
            # This test's own process is no ansible-playbook.
            assert not [r for r in lookup._alive(controller) if r.startswith('%s-%d-' % (controller, os.getpid()))]
        finally:
            run.kill()
            run.wait()
        assert mine not in lookup._alive(controller)


def test_the_owner_carries_the_runs_alive_and_when_they_were_read():
    owner = lookup.LookupModule().run([])[0]
    assert set(owner) == {'run', 'controller', 'pid', 'alive', 'alive_at'}
    assert abs(owner['alive_at'] - time.time()) < 5
