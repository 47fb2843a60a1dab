# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: nim_render_files
short_description: Write many rendered files under one directory in one call and remove stale ones
version_added: 0.1.0
description:
  - Writes every file of O(files) below O(root) whose content or mode differs, creating the
    directories it needs, each file replaced atomically. Files already as wanted are not touched.
  - Removes, in each directory of O(prune), the files matching O(patterns) that O(files) does not
    list and O(keep) does not name, so objects that no longer exist leave no file behind for a
    GitOps tool to apply. Only files whose first line starts with O(marker) are removed; a file
    the module did not write (a user's own manifest in the directory) is left alone and listed in
    RV(kept). The contents of O(files) should therefore start with that line.
  - Render-only mode of role nim_k8s writes the manifests of every deployment group with one call of
    this module, so the controller's time grows with the number of files, not with tasks per file.
author:
  - nimstack maintainers (@nimstack)
options:
  root:
    description: Directory every path is relative to; created when missing.
    type: path
    required: true
  files:
    description: The files to write.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Path relative to O(root); it may not leave O(root).
        type: str
        required: true
        aliases: [name]
      content:
        description: The whole content of the file.
        type: str
        required: true
      mode:
        description: Permissions of the file, as an octal string.
        type: str
        default: '0644'
      enabled:
        description:
          - Whether the file applies to these settings. A file that does not (one the caller wrote
            for another method or setting) is removed when present, whatever its first line, and
            its O(files[].content) is not written.
        type: bool
        default: true
  prune:
    description: Directories, relative to O(root), whose other files matching O(patterns) are removed.
    type: list
    elements: str
    default: []
  keep:
    description: Paths relative to O(root) that O(prune) never removes (files written by another task).
    type: list
    elements: str
    default: []
  patterns:
    description: Shell patterns of the file names O(prune) may remove.
    type: list
    elements: str
    default: ['*.yaml']
  marker:
    description:
      - The start of the first line of every file this module writes; O(prune) removes no file
        without it.
    type: str
    default: '# Rendered by nimstack.multinode'
attributes:
  check_mode:
    support: full
    description: Reports what would be written and removed without changing anything.
  diff_mode:
    support: full
    description: Returns the before and after content of every file written or removed.
  platform:
    support: full
    platforms: posix
    description: Writes on the host it runs on (the controller, for render-only mode).
'''

EXAMPLES = r'''
- name: Render two manifests and remove the other YAML files of their directory
  nimstack.multinode.nim_render_files:
    root: out
    files:
      - path: default/Service-nim-default.yaml
        content: "# Rendered by nimstack.multinode\n{{ service | ansible.builtin.to_nice_yaml(indent=2, sort_keys=true) }}"
      - path: default/LeaderWorkerSet-nim-default.yaml
        content: "# Rendered by nimstack.multinode\n{{ lws | ansible.builtin.to_nice_yaml(indent=2, sort_keys=true) }}"
    prune:
      - default
'''

RETURN = r'''
written:
  description: Paths (relative to the root) whose content was written, or would be in check mode.
  returned: always
  type: list
  elements: str
  sample: [default/Service-nim-default.yaml]
removed:
  description: >-
    Paths (relative to the root) removed by O(prune) or as not enabled, or that would be in check mode.
  returned: always
  type: list
  elements: str
  sample: [default/ConfigMap-nim-default-mpi-config.yaml]
kept:
  description: Paths (relative to the root) that O(prune) matched but left alone, as they lack O(marker).
  returned: always
  type: list
  elements: str
  sample: [default/my-own-networkpolicy.yaml]
unchanged:
  description: How many files of O(files) were already as wanted.
  returned: always
  type: int
  sample: 5
'''

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_text

from ansible_collections.nimstack.multinode.plugins.module_utils.render_files import (
    DEFAULT_MARKER, RenderFilesError, apply_changes, plan_changes)


def _diffs(root, changes):
    diffs = []
    for relative, data, _mode, before in changes['write']:
        diffs.append(dict(before_header=os.path.join(root, relative), after_header=os.path.join(root, relative),
                          before=to_text(before or b''), after=to_text(data)))
    for relative, before in changes['remove']:
        diffs.append(dict(before_header=os.path.join(root, relative), after_header='(removed)',
                          before=to_text(before or b''), after=''))
    return diffs


def main():
    module = AnsibleModule(
        argument_spec=dict(
            root=dict(type='path', required=True),
            files=dict(type='list', elements='dict', default=[], options=dict(
                path=dict(type='str', required=True, aliases=['name']),
                content=dict(type='str', required=True),
                mode=dict(type='str', default='0644'),
                enabled=dict(type='bool', default=True),
            )),
            prune=dict(type='list', elements='str', default=[]),
            keep=dict(type='list', elements='str', default=[]),
            patterns=dict(type='list', elements='str', default=['*.yaml']),
            marker=dict(type='str', default=DEFAULT_MARKER),
        ),
        supports_check_mode=True,
    )
    root = module.params['root']
    try:
        changes = plan_changes(root, module.params['files'], module.params['prune'], module.params['keep'],
                               module.params['patterns'], module.params['marker'] or DEFAULT_MARKER)
    except RenderFilesError as exc:
        module.fail_json(msg=str(exc))
    changed = bool(changes['write'] or changes['chmod'] or changes['remove'])
    result = dict(changed=changed, written=[c[0] for c in changes['write']],
                  removed=[c[0] for c in changes['remove']], kept=changes['foreign'],
                  unchanged=changes['unchanged'])
    if module._diff and changed:
        result['diff'] = _diffs(root, changes)
    if changed and not module.check_mode:
        done = {}
        try:
            apply_changes(root, changes, done=done)
        except (IOError, OSError) as exc:
            # What the failure left, not what was planned: a write that never happened is no change.
            result.update(changed=any(done.values()), written=done['write'], removed=done['remove'])
            result.pop('diff', None)
            module.fail_json(msg='writing below %s failed: %s' % (root, to_text(exc)), **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
