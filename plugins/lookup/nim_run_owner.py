# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
name: nim_run_owner
short_description: The owner of this ansible-playbook run's maintenance holds
version_added: 0.5.0
description:
  - Names the run that writes a maintenance hold for the group supervisors (roles nim_docker and common), as
    Kubernetes' Lease objects name their holder. The run id joins the controller's host name, the pid of the
    ansible-playbook process and the time that process started, so no two runs share one, and every task of one
    run gets the same value (the workers ask their parent, the ansible-playbook process).
  - Reads C(/proc) on a Linux controller and C(ps) elsewhere; takes no terms.
author:
  - nimstack maintainers (@nimstack)
'''

EXAMPLES = r'''
- name: Hold the group supervisor
  nimstack.multinode.nim_supervisor_hold:
    paths: [/etc/nimstack/maintenance]
    owner: "{{ lookup('nimstack.multinode.nim_run_owner') }}"
    holder: a restart wave
    lease: 3600
'''

RETURN = r'''
_raw:
  description: One dictionary.
  type: list
  elements: dict
  contains:
    run:
      description: The run id, C(<controller>-<pid>-<start epoch seconds>).
      type: str
      sample: awx-task-1-41234-1764351000
    controller:
      description: The controller's host name.
      type: str
    pid:
      description: The pid of the ansible-playbook process.
      type: int
    alive:
      description:
        - The run ids of every ansible-playbook process alive on this controller now (Linux only; absent
          elsewhere). A live hold of a run of this controller that started before C(alive_at) and is not among them
          is one whose run ended (it failed, or was killed), which M(nimstack.multinode.nim_supervisor_hold) clears at
          once instead of refusing until its lease expires. Not written into a hold.
      type: list
      elements: str
    alive_at:
      description: When C(alive) was read, in epoch seconds.
      type: int
'''

import multiprocessing
import os
import socket
import subprocess
import time

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.nimstack.multinode.plugins.module_utils.group_supervisor import run_owner


def _started(pid):
    """When the process started, in epoch seconds."""
    try:
        with open('/proc/%d/stat' % pid) as handle:
            # The field after the command (which may hold spaces) is the state; starttime is the 22nd.
            ticks = int(handle.read().rsplit(')', 1)[1].split()[19])
        with open('/proc/stat') as handle:
            boot = int(next(line.split()[1] for line in handle if line.startswith('btime ')))
        return boot + ticks // os.sysconf('SC_CLK_TCK')
    except (OSError, ValueError, IndexError, StopIteration):
        pass
    try:
        out = subprocess.run(['ps', '-o', 'lstart=', '-p', str(pid)], stdout=subprocess.PIPE, check=True,
                             timeout=10).stdout.decode().strip()
        return int(time.mktime(time.strptime(out, '%a %b %d %H:%M:%S %Y')))
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        raise AnsibleLookupError('nim_run_owner: cannot read when process %d started: %s' % (pid, exc))


def _alive(controller):
    """The run ids of the ansible-playbook processes alive on this controller, or None without /proc.
    A process whose first or second argument is ansible-playbook counts (its forked workers too: their
    ids never name a hold)."""
    try:
        pids = [int(name) for name in os.listdir('/proc') if name.isdigit()]
    except OSError:
        return None
    runs = []
    for pid in pids:
        try:
            with open('/proc/%d/cmdline' % pid, 'rb') as handle:
                args = handle.read(4096).split(b'\0')[:2]
            if any(os.path.basename(arg) == b'ansible-playbook' for arg in args):
                runs.append(run_owner(controller, pid, _started(pid))['run'])
        except (OSError, AnsibleLookupError):
            continue
    return sorted(runs)


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        parent = multiprocessing.parent_process()
        pid = parent.pid if parent is not None else os.getpid()
        controller = socket.gethostname()
        owner = run_owner(controller, pid, _started(pid))
        now = int(time.time())
        alive = _alive(controller)
        if alive is not None:
            owner.update(alive=alive, alive_at=now)
        return [owner]
