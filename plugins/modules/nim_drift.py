# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: nim_drift
short_description: Compare the files and units a role would ensure with the host, in one call
version_added: 0.1.0
description:
  - A converged host is verified by this one call instead of one task per file. The role passes
    what its apply tasks would write (each file's content or checksum, owner, group and mode; each
    directory with the collection's marker; paths that must be absent; systemd units that must be
    enabled and active; nftables tables that must be loaded) and runs those tasks only where this
    reports drift.
  - Reads only; never changes the host.
author:
  - nimstack maintainers (@nimstack)
options:
  files:
    description:
      - What the role would ensure of each path.
      - "C(path) (required), C(state) (V(file), the default, V(directory), V(absent), or V(any), a file
        that may be missing, whose text must not match C(refuse_pattern), a regular expression), C(content) (the
        text the file holds) or C(checksum) (its SHA-1), C(owner), C(group), C(mode),
        C(marker_owner) (a directory holds the collection's marker naming this role),
        C(prune_except) (with C(marker_owner): no directory of that role is left in it but these names),
        C(report_checksum) (return the file's SHA-1, never its content), C(report_content) (return
        the text of a file of at most 1 MiB, such as a key's public half; never use it on a secret),
        C(report_exists) (return whether the path exists)."
      - C(owner) and C(group) are names, or numbers as text.
    type: list
    elements: dict
    default: []
  units:
    description:
      - Systemd units with C(name), C(enabled) and C(active) as they must be.
    type: list
    elements: dict
    default: []
  nft_tables:
    description:
      - nftables tables, as C(family name) (C(inet nimstack)), that must be loaded.
    type: list
    elements: str
    default: []
  nft_command:
    description: The nft program that lists the loaded tables.
    type: path
    default: /usr/sbin/nft
  groups:
    description:
      - The collection's secrets group, with C(name) and C(gid). It must exist with that gid, no other
        group may hold the gid, and it has no members (the rules of M(nimstack.multinode.nim_secrets_group)).
    type: list
    elements: dict
    default: []
attributes:
  check_mode:
    support: full
    description: Reads only, so it runs in check mode as it does otherwise.
  diff_mode:
    support: none
    description: Nothing is changed, so there is nothing to compare.
notes:
  - The comparisons are in plugins/module_utils/drift.py.
'''

EXAMPLES = r'''
- name: Compare the supervisor's files and unit with the spec
  nimstack.multinode.nim_drift:
    files:
      - {path: /etc/nimstack/nim/g1/supervisor.json, content: "{}\n", owner: root, group: root, mode: "0600"}
      - {path: /etc/nimstack/nim/g1/maintenance, state: absent}
    units:
      - {name: nimstack-supervisor@g1.service, enabled: true, active: true}
  register: drift
'''

RETURN = r'''
drift:
  description: Why the host differs, one line per difference; empty when it is in sync.
  returned: always
  type: list
  elements: str
in_sync:
  description: Whether nothing differs.
  returned: always
  type: bool
checksums:
  description: The SHA-1 of each file asked for with report_checksum (null where it is missing).
  returned: always
  type: dict
contents:
  description: The text of each file asked for with report_content (null where it is missing).
  returned: always
  type: dict
exists:
  description: Whether each path asked for with report_exists exists.
  returned: always
  type: dict
'''

import grp
import os
import pwd

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.nimstack.multinode.plugins.module_utils import drift as drift_utils


def _name(lookup, number):
    try:
        return lookup(number)[0]
    except KeyError:
        return str(number)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            files=dict(type='list', elements='dict', default=[]),
            units=dict(type='list', elements='dict', default=[]),
            groups=dict(type='list', elements='dict', default=[]),
            nft_tables=dict(type='list', elements='str', default=[]),
            nft_command=dict(type='path', default='/usr/sbin/nft'),
        ),
        supports_check_mode=True,
    )
    bad = [str(entry.get('path')) for entry in module.params['files']
           if not str(entry.get('path') or '').startswith('/')
           or (entry.get('state') or drift_utils.FILE) not in drift_utils.STATES]
    if bad:
        module.fail_json(msg='files need an absolute path and a state of %s: %s'
                         % (', '.join(drift_utils.STATES), ', '.join(bad)))
    systemctl = module.get_bin_path('systemctl')

    def unit_state(name):
        if not systemctl:
            return None, None
        states = []
        for verb in ('is-enabled', 'is-active'):
            _rc, out, _err = module.run_command([systemctl, verb, name])
            states.append(out.strip() or None)
        return states[0], states[1]

    host_groups = ([(entry.gr_name, entry.gr_gid, list(entry.gr_mem)) for entry in grp.getgrall()]
                   if module.params['groups'] else [])
    try:
        reasons, checksums, contents, exists = drift_utils.drift(
            module.params['files'], module.params['units'],
            lambda uid: _name(pwd.getpwuid, uid), lambda gid: _name(grp.getgrgid, gid), unit_state,
            module.params['groups'], host_groups)
    except drift_utils.DriftError as exc:
        module.fail_json(msg=str(exc))
    if module.params['nft_tables']:
        listed = []
        if os.path.exists(module.params['nft_command']):
            _rc, out, _err = module.run_command([module.params['nft_command'], 'list', 'tables'])
            listed = out.splitlines()
        reasons.extend(drift_utils.table_drift(module.params['nft_tables'], listed))
    module.exit_json(changed=False, drift=reasons, in_sync=not reasons, checksums=checksums, contents=contents,
                     exists=exists)


if __name__ == '__main__':
    main()
