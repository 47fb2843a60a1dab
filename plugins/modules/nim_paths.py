# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: nim_paths
short_description: Find out which of many paths exist, in one call
version_added: 0.3.0
description:
  - A converged host is read with few module calls. Where a role would stat several paths one by
    one (a loop of M(ansible.builtin.stat)) or run a removal per path to learn that nothing was
    there, it reads them all with this module once and runs the tasks that change something only
    for the paths that exist.
  - It reads, and changes nothing. A symbolic link counts as existing, whether or not its target
    does.
author:
  - nimstack maintainers (@nimstack)
options:
  paths:
    description: The paths to look at. Each must be absolute.
    type: list
    elements: path
    required: true
attributes:
  check_mode:
    support: full
    description: Reads only, so it runs in check mode as it does otherwise.
  diff_mode:
    support: none
    description: Nothing is changed, so there is nothing to compare.
  platform:
    support: full
    platforms: posix
    description: Reads the file system of the host it runs on.
'''

EXAMPLES = r'''
- name: Find what the group supervisor left on this host
  nimstack.multinode.nim_paths:
    paths:
      - /etc/systemd/system/nimstack-supervisor-default.service
      - /etc/nimstack/nim-docker/default/supervisor.json
  register: __leftovers

- name: Remove the leftovers
  ansible.builtin.include_tasks: remove.yml
  when: __leftovers.existing | length > 0
'''

RETURN = r'''
existing:
  description: The paths that exist, in the order given.
  returned: always
  type: list
  elements: str
  sample: [/etc/nimstack/nim-docker/default/supervisor.json]
missing:
  description: The paths that do not exist, in the order given.
  returned: always
  type: list
  elements: str
  sample: [/etc/systemd/system/nimstack-supervisor-default.service]
kinds:
  description: Each existing path and what it is (V(file), V(directory), V(link) or V(other)).
  returned: always
  type: dict
  sample: {/etc/nimstack/nim-docker/default/supervisor.json: file}
'''

import os
import stat

from ansible.module_utils.basic import AnsibleModule


def _kind(mode):
    if stat.S_ISLNK(mode):
        return 'link'
    if stat.S_ISDIR(mode):
        return 'directory'
    if stat.S_ISREG(mode):
        return 'file'
    return 'other'


def main():
    module = AnsibleModule(
        argument_spec=dict(paths=dict(type='list', elements='path', required=True)),
        supports_check_mode=True,
    )
    relative = [p for p in module.params['paths'] if not os.path.isabs(p)]
    if relative:
        module.fail_json(msg='paths must be absolute: %s' % ', '.join(relative))
    existing, missing, kinds = [], [], {}
    for path in module.params['paths']:
        try:
            mode = os.lstat(path).st_mode
        except (FileNotFoundError, NotADirectoryError):
            # A path below a file is as missing as one below nothing.
            missing.append(path)
            continue
        except OSError as exc:
            module.fail_json(msg='%s: %s' % (path, exc))
        existing.append(path)
        kinds[path] = _kind(mode)
    module.exit_json(changed=False, existing=existing, missing=missing, kinds=kinds)


if __name__ == '__main__':
    main()
