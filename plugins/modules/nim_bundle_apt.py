# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: nim_bundle_apt
short_description: Let apt on a host read the offline bundle's repository, in one call
version_added: 0.10.0
description:
  - Offline mode (C(nimstack_bundle_url)). Writes, under O(dir), an apt configuration of the
    collection's own (C(apt.conf)) whose only source (C(bundle.list)) is the bundle's flat repository
    O(url) for the host's platform, verified with the bundle's key (C(bundle.asc), fetched from
    O(url)), with lists and a package cache of its own in the same directory. The host's own
    sources, lists and C(apt.conf) are not touched; apt reads this configuration only where
    C(APT_CONFIG) names it.
  - Reads the bundle's lists (C(apt-get update)) only when they are not there yet, or when the
    repository's C(InRelease) or the key differ from those of the last read, so that a converged
    run reads two small files and runs nothing.
  - O(dir) is runtime state (under C(/run) by default); a boot removes it and the next run makes it
    again. It is the run's scratch state, not a change of the host's configuration, so the module
    reports no change; RV(read) says whether it read the lists.
author:
  - nimstack maintainers (@nimstack)
options:
  url:
    description: The bundle's repository for the host's platform (C(<nimstack_bundle_url>/apt/<platform>)); http(s) or file.
    type: str
    required: true
  dir:
    description: Where the configuration, the key, the lists and the package cache go.
    type: path
    default: /run/nimstack/bundle
  timeout:
    description: Seconds to wait for each of the two files fetched from O(url).
    type: int
    default: 30
attributes:
  check_mode:
    support: none
    description: Call it with C(check_mode=false), since a dry run's apt needs the bundle's lists to say what it would install.
  diff_mode:
    support: none
    description: Scratch state of the run, reported as no change; RV(read) says whether the lists were read.
  platform:
    support: full
    platforms: debian
    description: A Debian-family host's apt.
'''

EXAMPLES = r'''
- name: Ensure apt can read the offline bundle
  nimstack.multinode.nim_bundle_apt:
    url: http://bundle.example:8080/apt/debian-12
  check_mode: false
'''

RETURN = r'''
apt_config:
  description: The configuration to name in C(APT_CONFIG) for apt to read the bundle.
  returned: always
  type: str
  sample: /run/nimstack/bundle/apt.conf
read:
  description: Whether this call ran C(apt-get update) (the lists were missing, or the repository or its key changed).
  returned: always
  type: bool
  sample: false
'''

import hashlib
import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_native

HEADER = 'managed-by: nimstack.multinode (offline bundle)'
# The sha256 of the InRelease and the key apt last read the lists with, one per line.
STAMP = 'lists.sha256'


def _fetch(module, url):
    """The body of url (http, https or file), or fail naming it."""
    from ansible.module_utils.urls import open_url
    try:
        return open_url(url, timeout=module.params['timeout'], follow_redirects='safe').read()
    except Exception as exc:  # urllib's, socket's and ssl's errors alike: the message names the cause
        module.fail_json(msg='the offline bundle: cannot read %s from this host: %s' % (url, to_native(exc)),
                         url=url)


def _write(path, content, mode=0o644):
    """Write content (bytes) to path when it differs, atomically."""
    try:
        with open(path, 'rb') as handle:
            if handle.read() == content:
                return
    except (IOError, OSError):
        pass
    tmp = path + '.tmp'
    with open(tmp, 'wb') as handle:
        handle.write(content)
    os.chmod(tmp, mode)
    os.rename(tmp, path)


def _lists_present(lists):
    try:
        return any(name.endswith('_Packages') for name in os.listdir(lists))
    except OSError:
        return False


def main():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type='str', required=True),
            dir=dict(type='path', default='/run/nimstack/bundle'),
            timeout=dict(type='int', default=30),
        ),
        supports_check_mode=False,
    )
    url = module.params['url'].rstrip('/')
    base = module.params['dir']
    lists = os.path.join(base, 'lists')
    cache = os.path.join(base, 'cache')
    for path in (os.path.join(base, 'sources.list.d'), os.path.join(lists, 'partial'),
                 os.path.join(cache, 'archives', 'partial')):
        if not os.path.isdir(path):
            os.makedirs(path, 0o755)
    key = _fetch(module, url + '/bundle.asc')
    release = _fetch(module, url + '/InRelease')
    _write(os.path.join(base, 'bundle.asc'), key)
    _write(os.path.join(base, 'bundle.list'), to_bytes(
        '# %s\ndeb [signed-by=%s] %s ./\n' % (HEADER, os.path.join(base, 'bundle.asc'), url)))
    apt_config = os.path.join(base, 'apt.conf')
    _write(apt_config, to_bytes(
        '// %s: read only where APT_CONFIG names this file.\n'
        'Dir::Etc::SourceList "%s";\n'
        'Dir::Etc::SourceParts "%s";\n'
        'Dir::State::Lists "%s";\n'
        'Dir::Cache "%s";\n'
        'APT::Keep-Downloaded-Packages "false";\n'
        % (HEADER, os.path.join(base, 'bundle.list'), os.path.join(base, 'sources.list.d'), lists, cache)))

    stamp_path = os.path.join(base, STAMP)
    stamp = to_bytes('%s\n%s\n' % (hashlib.sha256(release).hexdigest(), hashlib.sha256(key).hexdigest()))
    try:
        with open(stamp_path, 'rb') as handle:
            current = handle.read() == stamp
    except (IOError, OSError):
        current = False
    read = not (current and _lists_present(lists))
    if read:
        # A failed read leaves no stamp: the next call reads again.
        if os.path.exists(stamp_path):
            os.remove(stamp_path)
        rc, out, err = module.run_command(['apt-get', 'update', '-qq'], environ_update={'APT_CONFIG': apt_config})
        if rc != 0:
            module.fail_json(msg='the offline bundle: apt-get update against %s failed (rc=%d): %s'
                             % (url, rc, (err or out).strip()), rc=rc, stdout=out, stderr=err)
        _write(stamp_path, stamp)
    module.exit_json(changed=False, apt_config=apt_config, read=read)


if __name__ == '__main__':
    main()
