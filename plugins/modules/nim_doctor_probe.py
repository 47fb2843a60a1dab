# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: nim_doctor_probe
short_description: Measure what the preflight doctor judges on one node
version_added: 0.2.0
description:
  - Reads, on the node it runs on, what decides whether a multi-node NIM can start there; the
    judgement against the plan is made later on the controller by M(nimstack.multinode.nim_doctor_report).
  - "The memlock limit: the hard limit of C(dockerd) when it runs (a container's C(--ulimit memlock)
    cannot exceed it in a nested engine), else the soft limit of this SSH session."
  - The size of C(/dev/shm) (the NIM containers share the host IPC namespace), the free space of the
    file system that holds O(cache_path) (or its nearest existing parent), whether O(cache_path) exists.
  - Whether the kernel reports the clock synchronised (C(adjtimex)); the offsets between the
    nodes' clocks are measured by M(nimstack.multinode.nim_doctor_peers).
  - The SSH mesh files of the deployment group in O(mesh_dir); the public key derived from
    C(private.key) with C(ssh-keygen -y), its SHA256 fingerprint, the fingerprints
    C(authorized_keys) authorizes.
  - Whether C(sshd) is installed and O(ssh_probe_port) is free for the doctor's short-lived sshd.
  - Reads only, but for the leader's shared-cache test file (O(cache_file)); it runs in check mode too.
author:
  - nimstack maintainers (@nimstack)
options:
  cache_path:
    description:
      - The model cache path of the node's deployment group (C(nim_cache_path)).
    type: path
    required: true
  mesh_dir:
    description:
      - The deployment group's SSH mesh directory (C(<ssh_mesh_dir>/<group>)).
    type: path
    required: true
  cache_file:
    description:
      - The shared-cache test file; with O(cache_token) the node (the group's leader) writes the token
        there when O(cache_path) exists, for the other nodes to read (M(nimstack.multinode.nim_doctor_peers)).
      - The only thing the module writes; the same name is overwritten on every run.
    type: path
  cache_token:
    description:
      - The token to write to O(cache_file).
    type: str
  ssh_probe_port:
    description:
      - The TCP port the doctor's short-lived sshd would listen on; reported free or not.
    type: int
    default: 2299
attributes:
  platform:
    description: Target OS/families that can be operated against.
    support: full
    platforms: posix
extends_documentation_fragment:
  - nimstack.multinode.attributes
  - nimstack.multinode.attributes.facts
notes:
  - Returns no facts into C(ansible_facts); the result is registered and passed on.
seealso:
  - module: nimstack.multinode.nim_doctor_report
  - module: nimstack.multinode.nim_doctor_peers
'''

EXAMPLES = r'''
- name: Measure the node for the doctor
  nimstack.multinode.nim_doctor_probe:
    cache_path: /mnt/nimstack/model-cache
    mesh_dir: /etc/nimstack/mesh/default
  register: probe
'''

RETURN = r'''
probe:
  description: What the node reported.
  returned: always
  type: dict
  contains:
    memlock_kb:
      description: The memlock limit in KiB; V(-1) is unlimited, V(null) unreadable.
      type: int
      sample: -1
    memlock_source:
      description: Whose limit memlock_kb is.
      type: str
      sample: dockerd (pid 412)
    docker_installed:
      description: Whether C(dockerd) is installed (the node has been prepared for the Docker path).
      type: bool
      sample: true
    shm_bytes:
      description: Size of C(/dev/shm) in bytes; V(null) when it does not exist.
      type: int
      sample: 68719476736
    cache_path:
      description: O(cache_path).
      type: str
      sample: /mnt/nimstack/model-cache
    cache_exists:
      description: Whether O(cache_path) exists.
      type: bool
      sample: true
    cache_fs_path:
      description: The path whose file system was measured (O(cache_path) or its nearest existing parent).
      type: str
      sample: /mnt/nimstack/model-cache
    cache_free_bytes:
      description: Bytes available to unprivileged users on that file system.
      type: int
      sample: 1099511627776
    clock_synced:
      description: The kernel's NTP synchronisation state; V(null) when it cannot be read.
      type: bool
      sample: true
    sshd:
      description: Path of sshd, V(null) when not installed.
      type: str
      sample: /usr/sbin/sshd
    ssh_probe_port_free:
      description: Whether O(ssh_probe_port) can be bound now.
      type: bool
      sample: true
    cache_write:
      description: With O(cache_token), C({ok, error, path}) of writing the test file; V(null) without.
      type: dict
    mesh:
      description: The deployment group's SSH mesh files.
      type: dict
      contains:
        dir:
          description: O(mesh_dir).
          type: str
        present:
          description: Whether O(mesh_dir) exists.
          type: bool
        missing:
          description: Mesh files that are not there.
          type: list
          elements: str
        key_fingerprint:
          description: SHA256 fingerprint of the public half of C(private.key).
          type: str
          sample: SHA256:vngYG+IszWWKJ52UN40ox+sjaMVPk+/leUIYimwFisQ
        authorized:
          description: SHA256 fingerprints of the keys C(authorized_keys) lists.
          type: list
          elements: str
        error:
          description: Why the key could not be read, when it could not.
          type: str
'''

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.nimstack.multinode.plugins.module_utils import doctor_probe

MESH_FILES = ('private.key', 'authorized_keys', 'known_hosts', 'ssh_host_ed25519_key')


def _mesh(module, mesh_dir):
    mesh = {'dir': mesh_dir, 'present': os.path.isdir(mesh_dir), 'missing': [], 'key_fingerprint': None,
            'authorized': [], 'error': None}
    if not mesh['present']:
        return mesh
    mesh['missing'] = [name for name in MESH_FILES if not os.path.isfile(os.path.join(mesh_dir, name))]
    private = os.path.join(mesh_dir, 'private.key')
    if os.path.isfile(private):
        keygen = module.get_bin_path('ssh-keygen')
        if keygen is None:
            mesh['error'] = 'ssh-keygen not installed: cannot read the public half of private.key'
        else:
            with doctor_probe.root_only_copy(private) as copy:
                rc, out, err = module.run_command([keygen, '-y', '-f', copy])
            blobs = doctor_probe.public_key_blobs(out) if rc == 0 else []
            if blobs:
                mesh['key_fingerprint'] = doctor_probe.key_fingerprint(blobs[0])
            else:
                mesh['error'] = 'private.key is not a readable key: %s' % (err.strip() or out.strip())
    authorized = os.path.join(mesh_dir, 'authorized_keys')
    if os.path.isfile(authorized):
        with open(authorized) as handle:
            mesh['authorized'] = [doctor_probe.key_fingerprint(b) for b in doctor_probe.public_key_blobs(handle.read())]
    return mesh


def main():
    module = AnsibleModule(
        argument_spec=dict(
            cache_path=dict(type='path', required=True),
            mesh_dir=dict(type='path', required=True),
            ssh_probe_port=dict(type='int', default=2299),
            cache_file=dict(type='path'),
            cache_token=dict(type='str', no_log=False),
        ),
        required_by={'cache_token': 'cache_file'},
        supports_check_mode=True,
    )
    params = module.params
    memlock_kb, source = doctor_probe.memlock()
    shm_total = doctor_probe.fs_size('/dev/shm')[0] if os.path.isdir('/dev/shm') else None
    fs_path = doctor_probe.existing_parent(params['cache_path'])
    free = doctor_probe.fs_size(fs_path)[1]
    sshd = module.get_bin_path('sshd', opt_dirs=['/usr/sbin', '/usr/local/sbin'])
    probe = {
        'memlock_kb': memlock_kb,
        'memlock_source': source,
        'docker_installed': module.get_bin_path('dockerd', opt_dirs=['/usr/bin', '/usr/sbin']) is not None,
        'shm_bytes': shm_total,
        'cache_path': params['cache_path'],
        'cache_exists': os.path.isdir(params['cache_path']),
        'cache_fs_path': fs_path,
        'cache_free_bytes': free,
        'clock_synced': doctor_probe.clock_synced(),
        'sshd': sshd,
        'ssh_probe_port_free': doctor_probe.port_free(params['ssh_probe_port']),
        'mesh': _mesh(module, params['mesh_dir']),
        'cache_write': None,
    }
    if params['cache_token'] and probe['cache_exists']:
        ok, error = doctor_probe.write_token(params['cache_file'], params['cache_token'])
        probe['cache_write'] = {'ok': ok, 'error': error, 'path': params['cache_file']}
    module.exit_json(changed=False, probe=probe)


if __name__ == '__main__':
    main()
