# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: nim_owned_path
short_description: Create, check or remove a directory or file only while it is the collection's own
version_added: 0.3.0
description:
  - The collection never removes or overwrites what it did not make. This module is the check that
    every role runs before it writes into a directory or removes one, and before it overwrites or
    removes a file it owns.
  - A directory is the collection's while it holds the marker file C(.nimstack-managed) naming the
    role O(owner). V(present) creates a missing directory with its marker, marks an empty one, and
    adopts one that holds only what an earlier version of the role wrote there (O(adopt)); it fails
    on any other directory, naming O(variable), so that a setting pointing at a directory of the site
    (C(/opt), C(/var/tmp), C(/etc/nimstack) of another role) is refused before anything is written.
  - V(absent) removes a directory of the role with everything in it, and leaves any other one as it
    is, with a warning naming O(variable).
  - "A file is the collection's while its first 4 KiB hold the header line
    C(# managed-by: nimstack.multinode (role <owner>)), or one of O(legacy_marks). V(present) only
    checks (the role writes the file itself, after this check); V(absent) removes it if it is ours."
author:
  - nimstack maintainers (@nimstack)
options:
  path:
    description: The directory or file.
    type: path
    required: true
  kind:
    description: Whether O(path) is a directory or a file.
    type: str
    choices: [directory, file]
    default: directory
  owner:
    description: The role that owns the path; its marker or header names it.
    type: str
    required: true
  variable:
    description: The setting that chose O(path), named in every refusal and warning.
    type: str
    required: true
  state:
    description:
      - V(present) makes sure the path is the role's (a directory is created or marked), or fails.
      - V(absent) removes the path if it is the role's, else leaves it and warns.
      - V(query) only reports what the path is.
    type: str
    choices: [present, absent, query]
    default: present
  adopt:
    description:
      - Directory only. Name patterns (fnmatch) of the files an earlier version of the role wrote
        without a marker. A directory holding only such files, in it or in its sub-directories one
        level down, is adopted. Empty adopts nothing but empty directories.
    type: list
    elements: str
    default: []
  legacy_marks:
    description: File only. Line beginnings that mark a file an earlier version of the role wrote.
    type: list
    elements: str
    default: []
  mode:
    description: Directory only. The mode of a directory V(present) creates.
    type: raw
    default: '0755'
  prune_except:
    description:
      - Directory only, with V(present). Removes every sub-directory of the role (marked, or
        adoptable) whose name is not in this list, and leaves the others with a warning.
      - Not set, no sub-directory is touched.
    type: list
    elements: str
  only_if_empty:
    description: Directory only, with V(absent). Removes the directory only when nothing but its marker is in it.
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    description: Reports what it would create, mark or remove, and fails where it would fail, without changing anything.
  diff_mode:
    support: none
    description: Directories and markers only; there is no content to compare.
  platform:
    support: full
    platforms: posix
    description: Reads and changes the file system of the host it runs on.
notes:
  - Labelled containers are checked with the filter P(nimstack.multinode.nim_container_owner#filter).
'''

EXAMPLES = r'''
- name: Ensure the mesh directory is the role's own
  nimstack.multinode.nim_owned_path:
    path: "{{ ssh_mesh_dir }}"
    owner: ssh_mesh
    variable: ssh_mesh_dir
    adopt: [private.key, private.key.pub, ssh_host_ed25519_key, ssh_host_ed25519_key.pub,
            authorized_keys, known_hosts, ssh_config]

- name: Remove the staging directory if the role made it
  nimstack.multinode.nim_owned_path:
    path: /var/tmp/nimstack-images
    owner: nim_docker
    variable: nim_docker_image_staging_dir
    state: absent

- name: Refuse to overwrite a ruleset file the role did not write
  nimstack.multinode.nim_owned_path:
    path: /etc/nimstack/nftables-nimstack.nft
    kind: file
    owner: nim_firewall
    variable: nim_firewall_rules_file
'''

RETURN = r'''
found:
  description: What the path was before the module ran.
  returned: always
  type: str
  choices: [missing, ours, empty, adoptable, foreign]
  sample: ours
action:
  description: What the module did (or would do in check mode).
  returned: always
  type: str
  choices: [none, created, marked, removed, kept]
  sample: created
pruned:
  description: The sub-directories O(prune_except) removed.
  returned: always
  type: list
  elements: str
  sample: [old-group]
kept:
  description: The sub-directories O(prune_except) left because they are not the role's.
  returned: always
  type: list
  elements: str
  sample: [site-notes]
'''

import os
import shutil

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_text

from ansible_collections.nimstack.multinode.plugins.module_utils.nim_ownership import (
    ADOPTABLE, EMPTY, MARKER, OURS, FOREIGN, OwnershipError, apply_claim, claim_directory, inspect_directory,
    inspect_file, refusal, stale_children)


def _mode(module):
    mode = module.params['mode']
    try:
        return int(str(mode), 8)
    except ValueError:
        module.fail_json(msg='mode=%s: an octal mode such as 0755' % mode)


def _directory(module, result):
    params = module.params
    path, owner, variable = params['path'], params['owner'], params['variable']
    if params['state'] == 'query':
        result['found'] = inspect_directory(path, owner, params['adopt'])['state']
        return
    if params['state'] == 'absent':
        info = inspect_directory(path, owner, params['adopt'])
        result['found'] = info['state']
        if info['state'] in (OURS, ADOPTABLE):
            if params['only_if_empty'] and info['entries']:
                return
            result.update(changed=True, action='removed')
            if not module.check_mode:
                shutil.rmtree(path)
        elif info['state'] != 'missing':
            result['action'] = 'kept'
            if info['state'] != EMPTY:
                module.warn(refusal(variable, path, info) + '; left as it is')
        return
    mode = _mode(module)
    try:
        info, action = claim_directory(path, owner, params['adopt'])
    except OwnershipError as exc:
        module.fail_json(msg=refusal(variable, path, exc.args[0]), found=FOREIGN, action='none', pruned=[], kept=[])
    result['found'] = info['state']
    if action:
        result.update(changed=True, action='created' if action == 'create' else 'marked')
        if not module.check_mode:
            apply_claim(path, owner, action, mode)
    if params['prune_except'] is not None and info['state'] != 'missing':
        remove, foreign = stale_children(path, owner, params['prune_except'], params['adopt'])
        result.update(pruned=remove, kept=foreign)
        for name in foreign:
            module.warn('%s: %s has no %s marker of the role %s; left as it is' % (variable, os.path.join(path, name), MARKER, owner))
        if remove:
            result['changed'] = True
            if not module.check_mode:
                for name in remove:
                    shutil.rmtree(os.path.join(path, name))


def _file(module, result):
    params = module.params
    path, owner, variable = params['path'], params['owner'], params['variable']
    info = inspect_file(path, owner, params['legacy_marks'])
    result['found'] = info['state']
    if info['state'] != FOREIGN:
        if params['state'] == 'absent' and info['state'] == OURS:
            result.update(changed=True, action='removed')
            if not module.check_mode:
                os.remove(path)
        return
    if params['state'] == 'present':
        module.fail_json(msg=refusal(variable, path, info, 'file'), **result)
    if params['state'] == 'absent':
        result['action'] = 'kept'
        module.warn(refusal(variable, path, info, 'file') + '; left as it is')


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type='path', required=True),
            kind=dict(type='str', choices=['directory', 'file'], default='directory'),
            owner=dict(type='str', required=True),
            variable=dict(type='str', required=True),
            state=dict(type='str', choices=['present', 'absent', 'query'], default='present'),
            adopt=dict(type='list', elements='str', default=[]),
            legacy_marks=dict(type='list', elements='str', default=[]),
            mode=dict(type='raw', default='0755'),
            prune_except=dict(type='list', elements='str'),
            only_if_empty=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    result = dict(changed=False, found='missing', action='none', pruned=[], kept=[])
    path = module.params['path']
    if not os.path.isabs(path) or os.path.normpath(path) == '/':
        module.fail_json(msg='%s=%s: must be an absolute path below /' % (module.params['variable'], path), **result)
    try:
        if module.params['kind'] == 'file':
            _file(module, result)
        else:
            _directory(module, result)
    except (IOError, OSError) as exc:
        module.fail_json(msg='%s=%s: %s' % (module.params['variable'], path, to_text(exc)), **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
