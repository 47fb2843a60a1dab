"""Build sysfs trees of RDMA hosts for the rdma_sysfs and rdma_facts tests.

CONSTRUCTED, NOT CAPTURED: the GPU host whose output the other fixtures come from had no RDMA
device. These trees follow the kernel's stable ABI (Documentation/ABI/stable/sysfs-class-infiniband
and the formats of drivers/infiniband/core/sysfs.c: "<code>: <name>" for node_type, state and
phys_state, "<n> Gb/sec (<w>X <speed>)" for rate, GIDs as eight groups of four hex digits), and
the layout of a real host: class/infiniband/<dev> is a link into the PCI device's directory, and
<dev>/device links back to the PCI function, whose net/ directory holds its interfaces.
"""

import os

ZERO_GID = '0000:0000:0000:0000:0000:0000:0000:0000'


def _write(path, content):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as handle:
        handle.write(content + '\n')


def add_device(root, name, pci, node_type='1: CA', fw_ver='28.39.1002', ports=None, netdevs=None):
    """Add RDMA device ``name`` on PCI function ``pci`` under sysfs ``root``.

    ``ports`` maps a port number to dict(state, phys_state, rate, link_layer, gids) where gids is
    a list of GID strings for the first table entries (the rest of a 16-entry table is zeros).
    ``netdevs`` maps an interface name to its dev_port.
    """
    pci_dir = os.path.join(str(root), 'devices', 'pci0000:00', pci)
    dev_dir = os.path.join(pci_dir, 'infiniband', name)
    _write(os.path.join(dev_dir, 'node_type'), node_type)
    _write(os.path.join(dev_dir, 'fw_ver'), fw_ver)
    _write(os.path.join(dev_dir, 'node_guid'), 'a088:c203:0045:7e1a')
    for port, attrs in (ports or {}).items():
        port_dir = os.path.join(dev_dir, 'ports', str(port))
        for key in ('state', 'phys_state', 'rate', 'link_layer'):
            _write(os.path.join(port_dir, key), attrs[key])
        gids = list(attrs.get('gids', []))
        for index in range(16):
            _write(os.path.join(port_dir, 'gids', str(index)),
                   gids[index] if index < len(gids) else ZERO_GID)
    for ifname, dev_port in (netdevs or {}).items():
        _write(os.path.join(pci_dir, 'net', ifname, 'dev_port'), str(dev_port))
    os.symlink(os.path.relpath(pci_dir, dev_dir), os.path.join(dev_dir, 'device'))
    class_dir = os.path.join(str(root), 'class', 'infiniband')
    os.makedirs(class_dir, exist_ok=True)
    os.symlink(os.path.relpath(dev_dir, class_dir), os.path.join(class_dir, name))
    return dev_dir


def ndr_ib_host(root):
    """A ConnectX-7 NDR InfiniBand host with two ports: mlx5_0 ACTIVE at 400 Gb/s, mlx5_1 DOWN.

    mlx5 registers one RDMA device per PCI function, so the two ports of the host are port 1 of
    two devices. An IB port has its link-local GID (fe80:: + port GUID) even when down.
    """
    add_device(root, 'mlx5_0', '0000:18:00.0', ports={1: {
        'state': '4: ACTIVE',
        'phys_state': '5: LinkUp',
        'rate': '400 Gb/sec (4X NDR)',
        'link_layer': 'InfiniBand',
        'gids': ['fe80:0000:0000:0000:a088:c203:0045:7e1a'],
    }}, netdevs={'ibp24s0': 0})
    add_device(root, 'mlx5_1', '0000:2a:00.0', ports={1: {
        'state': '1: DOWN',
        'phys_state': '3: Disabled',
        'rate': '10 Gb/sec (4X SDR)',
        'link_layer': 'InfiniBand',
        'gids': ['fe80:0000:0000:0000:a088:c203:0045:7e1b'],
    }}, netdevs={'ibp42s0': 0})
    return root


def roce_host(root):
    """A RoCE device on a 100 GbE port with link-local IPv6 and IPv4 10.0.0.11 GIDs.

    GID 0/1 are the IPv6 link-local address (RoCE v1/v2), 2/3 the IPv4-mapped address (RoCE
    v1/v2), the usual order that makes index 3 the RoCE v2 IPv4 GID.
    """
    add_device(root, 'mlx5_2', '0000:5d:00.0', fw_ver='22.39.1002', ports={1: {
        'state': '4: ACTIVE',
        'phys_state': '5: LinkUp',
        'rate': '100 Gb/sec (4X EDR)',
        'link_layer': 'Ethernet',
        'gids': [
            'fe80:0000:0000:0000:0e42:a1ff:fe6b:2c10',
            'fe80:0000:0000:0000:0e42:a1ff:fe6b:2c10',
            '0000:0000:0000:0000:0000:ffff:0a00:000b',
            '0000:0000:0000:0000:0000:ffff:0a00:000b',
        ],
    }}, netdevs={'enp93s0f0np0': 0})
    return root


def empty_host(root):
    """A host whose RDMA core is loaded but has no device: class/infiniband exists, empty."""
    os.makedirs(os.path.join(str(root), 'class', 'infiniband'))
    return root
