# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: nvidia_gpu_facts
short_description: Gather facts about the NVIDIA GPUs of a host with nvidia-smi
version_added: 0.1.0
description:
  - Runs C(nvidia-smi --query-gpu=index,name,uuid,memory.total,driver_version,persistence_mode,pci.bus_id,compute_cap
    --format=csv,noheader,nounits) and reads the CUDA version from the banner of plain C(nvidia-smi).
  - Returns the result as the C(nvidia_gpu) fact.
  - A host without nvidia-smi, without a loaded NVIDIA driver or without GPUs is not an error. The
    module then returns RV(ansible_facts.nvidia_gpu.count=0) and says why in RV(ansible_facts.nvidia_gpu.reason),
    so that a preflight can report every host before it fails.
  - Only reads; it runs in check mode too.
  - C(nvidia-smi) can hang on a GPU in a bad state. Bound the task with the C(timeout) task keyword
    where that matters.
author:
  - nimstack maintainers (@nimstack)
options:
  nvidia_smi_path:
    description:
      - Path of the C(nvidia-smi) binary.
      - When not set, C(nvidia-smi) is looked up in E(PATH), the usual sbin directories and
        C(/usr/local/nvidia/bin).
      - A path that is not an executable file gives RV(ansible_facts.nvidia_gpu.count=0) with a
        reason, like a host without the binary.
    type: path
attributes:
  platform:
    description: Target OS/families that can be operated against.
    support: full
    platforms: posix
extends_documentation_fragment:
  - nimstack.multinode.attributes.facts
notes:
  - A driver too old to know one of the queried fields (C(compute_cap) is the most recent of them)
    makes the query fail; RV(ansible_facts.nvidia_gpu.reason) then quotes C(nvidia-smi).
seealso:
  - module: nimstack.multinode.rdma_facts
'''

EXAMPLES = r'''
- name: Gather GPU facts
  nimstack.multinode.nvidia_gpu_facts:

- name: Ensure every node has 8 GPUs of one model
  ansible.builtin.assert:
    that:
      - ansible_facts['nvidia_gpu']['count'] == 8
      - ansible_facts['nvidia_gpu']['models'] | length == 1
    fail_msg: "{{ ansible_facts['nvidia_gpu']['reason'] | default('unexpected GPU inventory', true) }}"

- name: Gather GPU facts with nvidia-smi outside PATH
  nimstack.multinode.nvidia_gpu_facts:
    nvidia_smi_path: /usr/local/nvidia/bin/nvidia-smi
'''

RETURN = r'''
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: dict
  contains:
    nvidia_gpu:
      description: The NVIDIA GPUs of the host.
      returned: always
      type: dict
      contains:
        count:
          description: Number of GPUs nvidia-smi listed; V(0) when it could not list any.
          returned: always
          type: int
          sample: 8
        driver_version:
          description: NVIDIA driver version; V(null) when it could not be read.
          returned: always
          type: str
          sample: 580.159.04
        cuda_version:
          description: Highest CUDA version the driver supports, from the nvidia-smi banner; V(null) when it could not be read.
          returned: always
          type: str
          sample: '13.0'
        gpus:
          description: One entry per GPU, sorted by index. Values nvidia-smi reports as N/A are V(null).
          returned: always
          type: list
          elements: dict
          contains:
            index:
              description: GPU index as nvidia-smi numbers it.
              type: int
              sample: 0
            name:
              description: Product name.
              type: str
              sample: NVIDIA H100 80GB HBM3
            uuid:
              description: GPU UUID.
              type: str
              sample: GPU-869c0860-ccac-982e-a33e-402fa7514f87
            memory_total_mib:
              description: Total GPU memory in MiB.
              type: int
              sample: 81559
            persistence_mode:
              description: Whether persistence mode is enabled.
              type: bool
              sample: true
            pci_bus_id:
              description: PCI bus id as C(domain:bus:device.function).
              type: str
              sample: 00000000:00:06.0
            compute_capability:
              description: CUDA compute capability as C(major.minor).
              type: str
              sample: '9.0'
        models:
          description: Sorted unique GPU product names.
          returned: always
          type: list
          elements: str
          sample: [NVIDIA H100 80GB HBM3]
        total_memory_mib:
          description: Sum of the memory of all GPUs in MiB.
          returned: always
          type: int
          sample: 652472
        reason:
          description: V(null) when GPUs were listed, otherwise why RV(ansible_facts.nvidia_gpu.count) is V(0).
          returned: always
          type: str
          sample: nvidia-smi not found in PATH or /usr/local/nvidia/bin (no NVIDIA driver installed?)
'''

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.nimstack.multinode.plugins.module_utils.nvidia_smi import (
    NvidiaSmiError,
    build_facts,
    failure_reason,
    parse_banner,
    parse_query_csv,
    query_command,
)


# GPU containers and hosts set up like them (the H100 machine the fixtures come from) keep
# nvidia-smi here, outside the PATH of a non-interactive SSH session.
EXTRA_DIRS = ['/usr/local/nvidia/bin']


def _find_binary(module):
    path = module.params['nvidia_smi_path']
    if path:
        if not os.path.isfile(path) or not os.access(path, os.X_OK):
            return None, 'nvidia_smi_path=%s is not an executable file' % path
        return path, None
    path = module.get_bin_path('nvidia-smi', opt_dirs=EXTRA_DIRS)
    if not path:
        return None, 'nvidia-smi not found in PATH or %s (no NVIDIA driver installed?)' % (
            ', '.join(EXTRA_DIRS))
    return path, None


def gather(module):
    """Return the nvidia_gpu facts, running nvidia-smi at most twice."""
    binary, reason = _find_binary(module)
    if binary is None:
        return build_facts([], reason=reason)

    rc, out, err = module.run_command(query_command(binary))
    if rc != 0:
        return build_facts([], reason=failure_reason(rc, out, err))
    try:
        gpus = parse_query_csv(out)
    except NvidiaSmiError as exc:
        return build_facts([], reason='unexpected nvidia-smi --query-gpu output: %s' % exc)
    if not gpus:
        return build_facts([])

    # The banner is the only cheap source of the CUDA version; the GPUs stay valid without it.
    rc, out, err = module.run_command([binary])
    versions = {'driver_version': None, 'cuda_version': None}
    if rc == 0:
        try:
            versions = parse_banner(out)
        except NvidiaSmiError as exc:
            module.warn('CUDA version unknown: %s' % exc)
    else:
        module.warn('CUDA version unknown: %s' % failure_reason(rc, out, err))
    return build_facts(gpus, **versions)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nvidia_smi_path=dict(type='path'),
        ),
        supports_check_mode=True,
    )
    module.exit_json(changed=False, ansible_facts={'nvidia_gpu': gather(module)})


if __name__ == '__main__':
    main()
