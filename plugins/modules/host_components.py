# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: host_components
short_description: Find how the NVIDIA driver, the container toolkit or the Docker engine got onto a host, and decide what to do with it
version_added: 0.1.0
description:
  - Reads the installed packages (C(dpkg-query) or C(rpm)), the loaded NVIDIA module (C(/sys/module/nvidia/version),
    C(/proc/driver/nvidia/version)), the traces of NVIDIA's runfile installer (C(/usr/bin/nvidia-uninstall),
    C(/var/log/nvidia-installer.log)), DKMS (C(/var/lib/dkms)) and the binaries a component may have without
    a package.
  - Says how the component got there (the C(source) of RV(component.found)) and what the role does with it under
    O(policy) (RV(component.action)); a refusal comes back in RV(component.problem), naming the host, what was
    found, how it was installed and what to do, so that the caller can report every host before it fails.
  - Only reads; it runs in check mode too.
author:
  - nimstack maintainers (@nimstack)
options:
  component:
    description: Which component to look at.
    type: str
    required: true
    choices: [driver, toolkit, engine]
  host:
    description: The host's name in the inventory, for messages.
    type: str
    required: true
  policy:
    description:
      - V(adopt) keeps a component the collection did not install where it meets the requirement and refuses
        where it does not; V(manage) lets the role take it over; V(refuse) stops on any component the collection
        did not install.
    type: str
    default: adopt
    choices: [adopt, manage, refuse]
  root:
    description: Root of the file system to read files under (tests point it at a prepared tree).
    type: path
    default: /
  sysfs_root:
    description: Where sysfs is mounted.
    type: path
    default: /sys
  procfs_root:
    description: Where procfs is mounted.
    type: path
    default: /proc
  branch:
    description: The driver branch the role wants (O(component=driver)).
    type: str
    default: ''
  version:
    description: The exact driver or toolkit version the role wants; empty for any of the branch.
    type: str
    default: ''
  architecture:
    description: The host's CPU architecture (Grace Hopper needs the open kernel modules).
    type: str
    default: ''
  reboot_allowed:
    description: Whether the role may reboot the host (taking over a runfile driver needs a reboot).
    type: bool
    default: false
  repo_path:
    description: The repository file the toolkit role writes; a toolkit package beside it came from the collection.
    type: path
  engine_source:
    description: The engine source the docker role installs from (V(distribution), V(docker)).
    type: str
    default: distribution
  engine_package:
    description: The engine package that source installs.
    type: str
    default: docker.io
attributes:
  platform:
    description: Target OS/families that can be operated against.
    support: full
    platforms: posix
extends_documentation_fragment:
  - nimstack.multinode.attributes.facts
seealso:
  - module: nimstack.multinode.nvidia_gpu_facts
'''

EXAMPLES = r'''
- name: Find how the driver got onto the host
  nimstack.multinode.host_components:
    component: driver
    host: "{{ inventory_hostname }}"
    policy: "{{ nvidia_driver_policy }}"
    branch: "{{ nvidia_driver_branch }}"
  register: __driver_found

- name: Keep an engine of Docker's repository instead of installing docker.io over it
  nimstack.multinode.host_components:
    component: engine
    host: "{{ inventory_hostname }}"
    engine_source: distribution
    engine_package: docker.io
'''

RETURN = r'''
component:
  description: What was found and what the role does with it.
  returned: always
  type: dict
  contains:
    found:
      description:
        - How the component got there. For the driver, C(source) is V(collection), V(cuda-repo), V(distribution),
          V(runfile), V(platform) or empty; with C(version), C(loaded_version), C(flavour) (V(open) or
          V(proprietary)), C(packages), C(runfile) (the installer's traces) and C(dkms).
        - For the toolkit C(source) is V(collection), V(package), V(binary) or empty; for the engine V(docker),
          V(distribution), V(moby), V(podman), V(binary) or empty, with C(package) and C(version).
      type: dict
      returned: always
      sample: {source: platform, version: 580.159.04, loaded_version: 580.159.04, flavour: open, packages: []}
    action:
      description: V(install), V(manage), V(adopt), V(takeover) (driver), V(swap) (engine) or V(refuse).
      type: str
      returned: always
      sample: adopt
    problem:
      description: Why the role refuses and what to do; empty unless RV(component.action=refuse).
      type: str
      returned: always
    report:
      description: One line for the run's report.
      type: str
      returned: always
    compute_caps:
      description: The compute capability of each GPU nvidia-smi lists (driver only; empty without nvidia-smi).
      type: list
      elements: str
      returned: always
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.nimstack.multinode.plugins.module_utils.host_components import (
    ENGINE_BINARIES,
    RUNFILE_MARKS,
    TOOLKIT_BINARIES,
    driver_decision,
    driver_found,
    engine_decision,
    engine_found,
    parse_packages,
    read_dkms,
    read_loaded_driver,
    read_marks,
    toolkit_decision,
    toolkit_found,
)
from ansible_collections.nimstack.multinode.plugins.module_utils.nvidia_smi import (
    NvidiaSmiError,
    parse_query_csv,
    query_command,
)

DPKG = ['dpkg-query', '-W', '-f=${Package} ${Version} ${db:Status-Abbrev}\n']
RPM = ['rpm', '-qa', '--queryformat', '%{NAME} %{VERSION}-%{RELEASE} ii\n']


def installed_packages(module):
    for argv in (DPKG, RPM):
        if module.get_bin_path(argv[0]):
            rc, out, err = module.run_command(argv)
            if rc != 0:
                module.fail_json(msg='%s failed (rc=%d): %s' % (argv[0], rc, err.strip()))
            return parse_packages(out)
    return {}


def compute_caps(module):
    binary = module.get_bin_path('nvidia-smi', opt_dirs=['/usr/local/nvidia/bin'])
    if not binary:
        return []
    rc, out, dummy = module.run_command(query_command(binary))
    if rc != 0:
        return []
    try:
        return [gpu['compute_capability'] for gpu in parse_query_csv(out) if gpu.get('compute_capability')]
    except NvidiaSmiError:
        return []


def main():
    module = AnsibleModule(
        argument_spec=dict(
            component=dict(type='str', required=True, choices=['driver', 'toolkit', 'engine']),
            host=dict(type='str', required=True),
            policy=dict(type='str', default='adopt', choices=['adopt', 'manage', 'refuse']),
            root=dict(type='path', default='/'),
            sysfs_root=dict(type='path', default='/sys'),
            procfs_root=dict(type='path', default='/proc'),
            branch=dict(type='str', default=''),
            version=dict(type='str', default=''),
            architecture=dict(type='str', default=''),
            reboot_allowed=dict(type='bool', default=False),
            repo_path=dict(type='path'),
            engine_source=dict(type='str', default='distribution'),
            engine_package=dict(type='str', default='docker.io'),
        ),
        supports_check_mode=True,
    )
    p = module.params
    installed = installed_packages(module)
    caps = []
    if p['component'] == 'driver':
        loaded = read_loaded_driver(p['sysfs_root'], p['procfs_root'])
        found = driver_found(installed, loaded, read_marks(p['root'], RUNFILE_MARKS), read_dkms(p['root']))
        caps = compute_caps(module) if found['loaded_version'] else []
        decision = driver_decision(p['host'], found, p['policy'], p['branch'], p['version'], caps,
                                   p['architecture'], p['reboot_allowed'])
    elif p['component'] == 'toolkit':
        repo = bool(p['repo_path']) and bool(read_marks(p['root'], [p['repo_path']]))
        found = toolkit_found(installed, read_marks(p['root'], TOOLKIT_BINARIES), repo)
        decision = toolkit_decision(p['host'], found, p['policy'], p['version'])
    else:
        found = engine_found(installed, read_marks(p['root'], ENGINE_BINARIES))
        decision = engine_decision(p['host'], found, p['policy'], p['engine_source'], p['engine_package'])
    result = dict(decision, found=found, compute_caps=caps)
    module.exit_json(changed=False, component=result)


if __name__ == '__main__':
    main()
