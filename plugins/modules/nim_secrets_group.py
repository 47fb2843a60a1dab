# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: nim_secrets_group
short_description: Ensure the collection's secrets group exists with its fixed gid, or refuse
version_added: 0.1.0
description:
  - The group whose gid owns the SSH mesh's keys, the Ray token and the supervisor's files is the
    collection's own, for the NIM containers alone (they get it as a supplementary group; no host
    account has it).
  - A group of that name with another gid, another group holding the gid, or a member added to it
    would let someone else read those files. The module then fails naming every conflict and
    O(variable), and changes nothing. Otherwise it creates the group as a system group when it is
    missing.
author:
  - nimstack maintainers (@nimstack)
options:
  name:
    description: The group's name.
    type: str
    default: nimstack-secrets
  gid:
    description: Its fixed gid.
    type: int
    required: true
  variable:
    description: The setting that chose O(gid), named in a refusal.
    type: str
    required: true
attributes:
  check_mode:
    support: full
    description: Reports the group it would create, and creates nothing.
  diff_mode:
    support: none
    description: The group is created or refused; there is no file to compare.
notes:
  - The checks are in plugins/module_utils/secrets_group.py.
'''

EXAMPLES = r'''
- name: Ensure the secrets group exists with its fixed gid
  nimstack.multinode.nim_secrets_group:
    gid: 64990
    variable: nim_secrets_gid
'''

RETURN = r'''
created:
  description: Whether the group was made (would be, in check mode).
  returned: success
  type: bool
'''

import grp

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.nimstack.multinode.plugins.module_utils import secrets_group


def _groups():
    return [(entry.gr_name, entry.gr_gid, list(entry.gr_mem)) for entry in grp.getgrall()]


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type='str', default='nimstack-secrets'),
            gid=dict(type='int', required=True),
            variable=dict(type='str', required=True),
        ),
        supports_check_mode=True,
    )
    name, gid = module.params['name'], module.params['gid']
    groups = _groups()
    found = secrets_group.problems(name, gid, groups)
    if found:
        module.fail_json(msg='%s; the secrets group is the collection\'s own (%s, gid %s), for the NIM '
                             'containers only: choose a free gid or remove the conflicting group or member.'
                             % ('; '.join(found), name, module.params['variable']))
    if secrets_group.exists(name, groups):
        module.exit_json(changed=False, created=False)
    if not module.check_mode:
        module.run_command([module.get_bin_path('groupadd', required=True), '--system', '--gid', str(gid), name],
                           check_rc=True)
    module.exit_json(changed=True, created=True)


if __name__ == '__main__':
    main()
