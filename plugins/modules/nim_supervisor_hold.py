# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: nim_supervisor_hold
short_description: Hold, renew, release or read the maintenance holds of the group supervisors
version_added: 0.5.0
description:
  - "The group supervisors (C(nimstack-supervisor@<group>), role nim_docker) do nothing while a live maintenance
    hold is on a member: a file that a run writes while it re-forms the group or restarts its hosts. A hold is a
    lease, as Kubernetes' Lease objects are. It names its owner (the run, its controller and pid, from the lookup
    P(nimstack.multinode.nim_run_owner#lookup)), what holds and when it expires; the run renews it at each step. A
    run that dies leaves a hold that expires by itself: the supervisors then ignore it and the next run clears it."
  - V(present) writes the hold of this run, or renews it (a new expiry, the time it was acquired kept). It
    replaces a stale hold of any run, and a file that is not a lease (the plain text of an earlier release),
    with a warning naming it. It fails on a live hold of another run, naming it, since two runs on one group at
    once would stop each other's ranks.
  - V(absent) removes this run's hold and any stale one; it leaves a live hold of another run and warns.
  - A live hold of a run that has ended counts as stale, that is one of the same controller that started before O(owner)'s
    C(alive_at) and is not among its C(alive) runs (it failed, or was killed). A run of another controller (an AWX
    job's pod) cannot be seen from here; its hold holds until its lease expires.
  - V(query) only reads the holds.
  - A file that is not a lease (plain text, garbled) counts from its modification time; it holds for O(lease)
    seconds after it was last written.
author:
  - nimstack maintainers (@nimstack)
options:
  paths:
    description: The hold files. Each must be absolute; its directory must exist.
    type: list
    elements: path
    required: true
  state:
    description: Hold or renew (V(present)), release (V(absent)) or read (V(query)).
    type: str
    choices: [present, absent, query]
    default: present
  owner:
    description:
      - This run, as the lookup P(nimstack.multinode.nim_run_owner#lookup) names it (keys C(run), C(controller),
        C(pid), and C(alive) and C(alive_at), the runs alive on the controller, which are not written).
        Required unless O(state=query).
    type: dict
  holder:
    description: What holds, in words (C(the deployment of group g1), C(a Docker engine restart wave)).
    type: str
    default: a run of nimstack.multinode
  lease:
    description: Seconds the hold holds after this write; also the life of a file that is not a lease, from its time.
    type: int
    required: true
attributes:
  check_mode:
    support: full
    description:
      - Reads and reports what it would write or remove; a live hold of another run is a warning, not a failure.
  diff_mode:
    support: none
    description: The hold is set and released within one run; its content is in RV(holds).
  platform:
    support: full
    platforms: posix
    description: Reads and writes the file system of the host it runs on.
'''

EXAMPLES = r'''
- name: Hold the group supervisor while the deployment re-forms the group
  nimstack.multinode.nim_supervisor_hold:
    paths: [/etc/nimstack/nim/g1/maintenance]
    owner: "{{ lookup('nimstack.multinode.nim_run_owner') }}"
    holder: the deployment of group g1
    lease: 3600

- name: Read the holds of this host
  nimstack.multinode.nim_supervisor_hold:
    paths: [/etc/nimstack/maintenance, /etc/nimstack/nim/g1/maintenance]
    state: query
    lease: 3600
  register: __holds
'''

RETURN = r'''
holds:
  description: Each hold file found before this call, as the supervisors read it.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The file.
      type: str
    state:
      description: V(live) (it holds) or V(stale) (expired; the supervisors ignore it).
      type: str
    owner:
      description: The run that wrote it (C(run), C(controller), C(pid)); empty for a file that is not a lease.
      type: dict
    holder:
      description: What held.
      type: str
    expires:
      description: When it expires or expired (epoch seconds).
      type: int
    remaining:
      description: Seconds until it expires; negative once it expired.
      type: int
    legacy:
      description: Whether the file is not a lease (plain text, garbled) and counts from its time.
      type: bool
    message:
      description: The hold in words, as the supervisor logs it.
      type: str
  sample:
    - path: /etc/nimstack/maintenance
      state: stale
      owner: {run: ctl-4242-1764000000, controller: ctl, pid: 4242}
      holder: a Docker engine restart wave
      expires: 1764003600
      remaining: -120
      legacy: false
      message: >-
        hold by run ctl-4242-1764000000 of controller ctl (a Docker engine restart wave) expired 120 s ago
        (at 2025-11-24T17:00:00Z), ignored by the supervisors
cleared:
  description: The holds of other runs, or not leases, that this call replaced or removed (V(present), V(absent)).
  returned: always
  type: list
  elements: str
'''

import json
import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.nimstack.multinode.plugins.module_utils import group_supervisor as gs


def _write(path, record):
    tmp = '%s.tmp.%d' % (path, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    with os.fdopen(fd, 'w') as handle:
        json.dump(record, handle, indent=1, sort_keys=True)
        handle.write('\n')
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            paths=dict(type='list', elements='path', required=True),
            state=dict(type='str', choices=['present', 'absent', 'query'], default='present'),
            owner=dict(type='dict'),
            holder=dict(type='str', default='a run of nimstack.multinode'),
            lease=dict(type='int', required=True),
        ),
        required_if=[('state', 'present', ('owner',)), ('state', 'absent', ('owner',))],
        supports_check_mode=True,
    )
    params = module.params
    relative = [p for p in params['paths'] if not os.path.isabs(p)]
    if relative:
        module.fail_json(msg='paths must be absolute: %s' % ', '.join(relative))
    if params['lease'] < 1:
        module.fail_json(msg='lease must be a whole number of seconds of at least 1, not %d' % params['lease'])
    now = time.time()
    holds = [h for h in (gs.read_hold(p, now, params['lease']) for p in params['paths']) if h]
    if params['state'] == 'query':
        module.exit_json(changed=False, holds=holds, cleared=[])
    found = dict((h['path'], h) for h in holds)
    changed, cleared = False, []
    for path in params['paths']:
        action, note = gs.hold_action(found.get(path), params['owner'], params['state'])
        if action == 'refuse':
            if params['state'] == 'present' and not module.check_mode:
                module.fail_json(msg='%s: %s' % (path, note), holds=holds)
            module.warn('%s left as it is: %s' % (path, note))
            continue
        if note:
            cleared.append('%s: %s' % (path, note))
            module.warn('%s: %s' % (path, note))
        if action == 'keep':
            continue
        changed = True
        if module.check_mode:
            continue
        try:
            if action == 'remove':
                os.remove(path)
            else:
                # A renewal keeps the time this run acquired the hold; note is empty only for its own.
                before = found.get(path) if not note else None
                _write(path, gs.hold_record(params['owner'], params['holder'], params['lease'], now,
                                            acquired=(before or {}).get('acquired')))
        except OSError as exc:
            module.fail_json(msg='%s: %s' % (path, exc), holds=holds)
    module.exit_json(changed=changed, holds=holds, cleared=cleared)


if __name__ == '__main__':
    main()
