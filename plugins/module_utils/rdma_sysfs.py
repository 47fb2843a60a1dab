# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Read RDMA devices from sysfs into the rdma facts.

Follows the kernel's stable ABI (Documentation/ABI/stable/sysfs-class-infiniband):
``class/infiniband/<dev>/{node_type,fw_ver}`` and
``class/infiniband/<dev>/ports/<n>/{state,phys_state,rate,link_layer,gids/<i>}``. The netdev of
a port comes from ``class/infiniband/<dev>/device/net/<ifname>``, the PCI function's network
interfaces. No Ansible imports: the module and the unit tests call these functions directly.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re

# The GID table of a port has up to 255 entries (RoCE) and the kernel reports unused ones as
# zeros; an active port fills the first ones, so a bounded prefix answers "is there a GID".
MAX_GIDS_READ = 16

_RATE_RE = re.compile(r'^\s*([0-9]+(?:\.[0-9]+)?)\s*Gb/sec')


def _read(path):
    """Return the stripped content of a sysfs attribute, or None where it cannot be read.

    Several port attributes (rate, gid_attrs) fail with EINVAL instead of returning a value when
    the port cannot answer; that is "unknown", not an error of the whole probe.
    """
    try:
        with open(path, 'r') as handle:
            return handle.read().strip()
    except (IOError, OSError, UnicodeDecodeError):
        return None


def _listdir(path):
    try:
        return sorted(os.listdir(path))
    except (IOError, OSError):
        return []


def strip_code(value):
    """Drop the numeric code the kernel prefixes to an enum: "4: ACTIVE" -> "ACTIVE"."""
    if value is None:
        return None
    code, sep, text = value.partition(':')
    if sep and code.strip().isdigit():
        return text.strip()
    return value.strip()


def parse_rate(value):
    """Return the Gb/s of a rate attribute: "400 Gb/sec (4X NDR)" -> 400.0, None if unreadable."""
    if value is None:
        return None
    match = _RATE_RE.match(value)
    if not match:
        return None
    return float(match.group(1))


def is_zero_gid(value):
    """True for an all-zero GID such as "0000:0000:0000:0000:0000:0000:0000:0000"."""
    digits = value.replace(':', '').strip()
    return not digits.strip('0')


def _has_gid(gids_dir):
    entries = [name for name in _listdir(gids_dir) if name.isdigit()]
    for name in sorted(entries, key=int)[:MAX_GIDS_READ]:
        value = _read(os.path.join(gids_dir, name))
        if value and not is_zero_gid(value):
            return True
    return False


def _dev_port(net_dir, ifname):
    # dev_port numbers the ports of one PCI function from 0 (ABI sysfs-class-net).
    value = _read(os.path.join(net_dir, ifname, 'dev_port'))
    if value is not None and value.isdigit():
        return int(value)
    return None


def _netdev(device_dir, port):
    """Return the interface of ``port``, or None when the device exposes none."""
    net_dir = os.path.join(device_dir, 'device', 'net')
    names = _listdir(net_dir)
    if len(names) == 1:
        return names[0]
    for name in names:
        if _dev_port(net_dir, name) == port - 1:
            return name
    return None


def read_port(device_dir, port):
    """Return the facts of port number ``port`` of the device at ``device_dir``."""
    port_dir = os.path.join(device_dir, 'ports', str(port))
    rate = _read(os.path.join(port_dir, 'rate'))
    return {
        'port': port,
        'state': strip_code(_read(os.path.join(port_dir, 'state'))),
        'phys_state': strip_code(_read(os.path.join(port_dir, 'phys_state'))),
        'rate': rate,
        'rate_gbps': parse_rate(rate),
        'link_layer': _read(os.path.join(port_dir, 'link_layer')),
        'gids': _has_gid(os.path.join(port_dir, 'gids')),
        'netdev': _netdev(device_dir, port),
    }


def read_device(class_dir, name):
    """Return the facts of the RDMA device ``name`` under ``class_dir``."""
    device_dir = os.path.join(class_dir, name)
    ports = [entry for entry in _listdir(os.path.join(device_dir, 'ports')) if entry.isdigit()]
    return {
        'name': name,
        'node_type': strip_code(_read(os.path.join(device_dir, 'node_type'))),
        'fw_ver': _read(os.path.join(device_dir, 'fw_ver')),
        'ports': [read_port(device_dir, port) for port in sorted(int(entry) for entry in ports)],
    }


def gather(sysfs_root='/sys'):
    """Return ansible_facts.rdma for the sysfs mounted at ``sysfs_root``."""
    class_dir = os.path.join(sysfs_root, 'class', 'infiniband')
    devices = []
    reason = None
    if not os.path.isdir(class_dir):
        reason = 'no RDMA devices (%s does not exist: no RDMA driver loaded)' % class_dir
    else:
        devices = [read_device(class_dir, name) for name in _listdir(class_dir)]
        if not devices:
            reason = 'no RDMA devices (%s is empty)' % class_dir
    return {
        'present': bool(devices),
        'reason': reason,
        'devices': devices,
        'active_ports': sum(
            1 for device in devices for port in device['ports'] if port['state'] == 'ACTIVE'),
    }
