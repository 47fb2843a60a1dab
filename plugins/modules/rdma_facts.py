# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: rdma_facts
short_description: Gather facts about the RDMA (InfiniBand and RoCE) devices of a host from sysfs
version_added: 0.1.0
description:
  - Reads C(class/infiniband) under O(sysfs_root) as the kernel documents it in
    C(Documentation/ABI/stable/sysfs-class-infiniband) and returns the result as the C(rdma) fact.
  - For every device the node type and firmware version; for every port its state, physical state,
    rate, link layer, whether its GID table holds a non-zero GID, and its network interface.
  - A host without RDMA devices is not an error. The module then returns
    RV(ansible_facts.rdma.present=false) and says why in RV(ansible_facts.rdma.reason).
  - Needs no tools such as C(ibstat) or C(ibv_devinfo) on the host, only sysfs.
  - Only reads; it runs in check mode too.
author:
  - nimstack maintainers (@nimstack)
options:
  sysfs_root:
    description:
      - Where sysfs is mounted.
      - Another value reads a copy of a sysfs tree, for example one collected from another host.
    type: path
    default: /sys
attributes:
  platform:
    description: Target OS/families that can be operated against.
    support: full
    platforms: linux
extends_documentation_fragment:
  - nimstack.multinode.attributes.facts
notes:
  - Only the first 16 entries of each GID table are read; a port with an address fills the first
    ones.
  - The network interface of a port is the one under C(device/net) of the device; where a device
    has several, the one whose C(dev_port) is the port number minus one.
seealso:
  - module: nimstack.multinode.nvidia_gpu_facts
'''

EXAMPLES = r'''
- name: Gather RDMA facts
  nimstack.multinode.rdma_facts:

- name: Ensure every RDMA port is up at 400 Gb/s
  ansible.builtin.assert:
    that:
      - ansible_facts['rdma']['present']
      - ansible_facts['rdma']['devices'] | map(attribute='ports') | flatten
        | rejectattr('state', 'equalto', 'ACTIVE') | list | length == 0
      - ansible_facts['rdma']['devices'] | map(attribute='ports') | flatten
        | map(attribute='rate_gbps') | unique == [400.0]
    fail_msg: "{{ ansible_facts['rdma']['reason'] | default('an RDMA port is down or slow', true) }}"
'''

RETURN = r'''
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: dict
  contains:
    rdma:
      description: The RDMA devices of the host.
      returned: always
      type: dict
      contains:
        present:
          description: Whether the host has at least one RDMA device.
          returned: always
          type: bool
          sample: true
        reason:
          description: V(null) when devices were found, otherwise why RV(ansible_facts.rdma.present) is V(false).
          returned: always
          type: str
          sample: no RDMA devices (/sys/class/infiniband is empty)
        devices:
          description: One entry per device, sorted by name. Attributes that cannot be read are V(null).
          returned: always
          type: list
          elements: dict
          contains:
            name:
              description: Device name.
              type: str
              sample: mlx5_0
            node_type:
              description: Node type without its numeric code, for example V(CA) for a host channel adapter.
              type: str
              sample: CA
            fw_ver:
              description: Firmware version.
              type: str
              sample: 28.39.1002
            ports:
              description: One entry per port, sorted by port number.
              type: list
              elements: dict
              contains:
                port:
                  description: Port number.
                  type: int
                  sample: 1
                state:
                  description: Logical port state without its numeric code (V(DOWN), V(INIT), V(ARMED), V(ACTIVE), V(ACTIVE_DEFER)).
                  type: str
                  sample: ACTIVE
                phys_state:
                  description: Physical port state without its numeric code (V(Polling), V(Disabled), V(LinkUp), ...).
                  type: str
                  sample: LinkUp
                rate:
                  description: Rate as the kernel prints it.
                  type: str
                  sample: 400 Gb/sec (4X NDR)
                rate_gbps:
                  description: Rate in Gb/s.
                  type: float
                  sample: 400.0
                link_layer:
                  description: V(InfiniBand) or V(Ethernet) (RoCE).
                  type: str
                  sample: InfiniBand
                gids:
                  description: Whether the port's GID table holds a non-zero GID.
                  type: bool
                  sample: true
                netdev:
                  description: Network interface of the port, V(null) when there is none.
                  type: str
                  sample: ibp24s0
        active_ports:
          description: Number of ports in state V(ACTIVE) over all devices.
          returned: always
          type: int
          sample: 8
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.nimstack.multinode.plugins.module_utils.rdma_sysfs import gather


def main():
    module = AnsibleModule(
        argument_spec=dict(
            sysfs_root=dict(type='path', default='/sys'),
        ),
        supports_check_mode=True,
    )
    module.exit_json(changed=False, ansible_facts={'rdma': gather(module.params['sysfs_root'])})


if __name__ == '__main__':
    main()
