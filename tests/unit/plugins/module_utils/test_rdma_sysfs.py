"""Tests of the RDMA sysfs reader.

The sysfs trees here are CONSTRUCTED from the kernel ABI (Documentation/ABI/stable/
sysfs-class-infiniband), NOT captured from a host: the GPU machine the other fixtures come from had
no RDMA device (/sys/class/infiniband was empty). See rdma_sysfs_trees.py for what each tree
models.
"""

import os

import pytest

from ansible_collections.nimstack.multinode.plugins.module_utils.rdma_sysfs import (
    MAX_GIDS_READ,
    gather,
    is_zero_gid,
    parse_rate,
    strip_code,
)
from ansible_collections.nimstack.multinode.tests.unit.plugins.module_utils import rdma_sysfs_trees as trees


@pytest.mark.parametrize('raw, expected', [
    ('4: ACTIVE', 'ACTIVE'),
    ('1: DOWN', 'DOWN'),
    ('5: ACTIVE_DEFER', 'ACTIVE_DEFER'),
    ('5: LinkUp', 'LinkUp'),
    ('3: Disabled', 'Disabled'),
    ('7: Phy Test', 'Phy Test'),
    ('1: CA', 'CA'),
    ('4: RNIC', 'RNIC'),
    ('InfiniBand', 'InfiniBand'),
    (None, None),
])
def test_strip_code(raw, expected):
    assert strip_code(raw) == expected


@pytest.mark.parametrize('raw, expected', [
    ('400 Gb/sec (4X NDR)', 400.0),
    ('200 Gb/sec (4X HDR)', 200.0),
    ('800 Gb/sec (4X XDR)', 800.0),
    ('2.5 Gb/sec (1X SDR)', 2.5),
    ('56 Gb/sec (4X FDR)', 56.0),
    ('', None),
    ('garbage', None),
    (None, None),
])
def test_parse_rate(raw, expected):
    assert parse_rate(raw) == expected


def test_zero_gid():
    assert is_zero_gid(trees.ZERO_GID)
    assert not is_zero_gid('fe80:0000:0000:0000:a088:c203:0045:7e1a')
    assert not is_zero_gid('0000:0000:0000:0000:0000:ffff:0a00:000b')


def test_ndr_infiniband_host(tmp_path):
    facts = gather(str(trees.ndr_ib_host(tmp_path)))
    assert facts == {
        'present': True,
        'reason': None,
        'active_ports': 1,
        'devices': [
            {
                'name': 'mlx5_0',
                'node_type': 'CA',
                'fw_ver': '28.39.1002',
                'ports': [{
                    'port': 1,
                    'state': 'ACTIVE',
                    'phys_state': 'LinkUp',
                    'rate': '400 Gb/sec (4X NDR)',
                    'rate_gbps': 400.0,
                    'link_layer': 'InfiniBand',
                    'gids': True,
                    'netdev': 'ibp24s0',
                }],
            },
            {
                'name': 'mlx5_1',
                'node_type': 'CA',
                'fw_ver': '28.39.1002',
                'ports': [{
                    'port': 1,
                    'state': 'DOWN',
                    'phys_state': 'Disabled',
                    'rate': '10 Gb/sec (4X SDR)',
                    'rate_gbps': 10.0,
                    'link_layer': 'InfiniBand',
                    'gids': True,
                    'netdev': 'ibp42s0',
                }],
            },
        ],
    }


def test_roce_device(tmp_path):
    facts = gather(str(trees.roce_host(tmp_path)))
    assert facts['present'] is True
    assert facts['active_ports'] == 1
    assert facts['devices'][0]['fw_ver'] == '22.39.1002'
    assert facts['devices'][0]['ports'] == [{
        'port': 1,
        'state': 'ACTIVE',
        'phys_state': 'LinkUp',
        'rate': '100 Gb/sec (4X EDR)',
        'rate_gbps': 100.0,
        'link_layer': 'Ethernet',
        'gids': True,
        'netdev': 'enp93s0f0np0',
    }]


def test_empty_class_directory(tmp_path):
    trees.empty_host(tmp_path)
    assert gather(str(tmp_path)) == {
        'present': False,
        'reason': 'no RDMA devices (%s is empty)' % os.path.join(str(tmp_path), 'class', 'infiniband'),
        'devices': [],
        'active_ports': 0,
    }


def test_missing_class_directory(tmp_path):
    facts = gather(str(tmp_path))
    assert facts['present'] is False
    assert facts['devices'] == []
    assert facts['reason'] == 'no RDMA devices (%s does not exist: no RDMA driver loaded)' % (
        os.path.join(str(tmp_path), 'class', 'infiniband'))


def test_port_without_addresses_has_no_gid(tmp_path):
    trees.add_device(tmp_path, 'mlx5_3', '0000:9a:00.0', ports={1: {
        'state': '1: DOWN', 'phys_state': '2: Polling', 'rate': '10 Gb/sec (4X SDR)',
        'link_layer': 'Ethernet', 'gids': []}})
    port = gather(str(tmp_path))['devices'][0]['ports'][0]
    assert port['gids'] is False
    assert port['phys_state'] == 'Polling'
    assert port['netdev'] is None


def test_gid_beyond_the_read_bound_is_not_seen(tmp_path):
    dev_dir = trees.add_device(tmp_path, 'mlx5_4', '0000:ab:00.0', ports={1: {
        'state': '4: ACTIVE', 'phys_state': '5: LinkUp', 'rate': '400 Gb/sec (4X NDR)',
        'link_layer': 'Ethernet', 'gids': []}})
    gids_dir = os.path.join(dev_dir, 'ports', '1', 'gids')
    with open(os.path.join(gids_dir, str(MAX_GIDS_READ + 4)), 'w') as handle:
        handle.write('fe80:0000:0000:0000:0e42:a1ff:fe6b:2c10\n')
    assert gather(str(tmp_path))['devices'][0]['ports'][0]['gids'] is False


def test_gid_table_is_read_in_numeric_order(tmp_path):
    # As text, entries 10-19 and 20-22 sort before 9 and would fill the bound without it.
    dev_dir = trees.add_device(tmp_path, 'mlx5_5', '0000:ba:00.0', ports={1: {
        'state': '4: ACTIVE', 'phys_state': '5: LinkUp', 'rate': '400 Gb/sec (4X NDR)',
        'link_layer': 'Ethernet', 'gids': []}})
    gids_dir = os.path.join(dev_dir, 'ports', '1', 'gids')
    for index in range(16, 40):
        with open(os.path.join(gids_dir, str(index)), 'w') as handle:
            handle.write(trees.ZERO_GID + '\n')
    with open(os.path.join(gids_dir, '9'), 'w') as handle:
        handle.write('0000:0000:0000:0000:0000:ffff:0a00:000b\n')
    assert gather(str(tmp_path))['devices'][0]['ports'][0]['gids'] is True


def test_unreadable_rate_is_none(tmp_path):
    # The kernel answers EINVAL on read where it cannot compute a rate; a directory in its place
    # makes the read fail the same way.
    dev_dir = trees.add_device(tmp_path, 'mlx5_6', '0000:db:00.0', ports={1: {
        'state': '1: DOWN', 'phys_state': '3: Disabled', 'rate': 'x',
        'link_layer': 'InfiniBand', 'gids': []}})
    rate = os.path.join(dev_dir, 'ports', '1', 'rate')
    os.remove(rate)
    os.mkdir(rate)
    port = gather(str(tmp_path))['devices'][0]['ports'][0]
    assert port['rate'] is None
    assert port['rate_gbps'] is None
    assert port['state'] == 'DOWN'


def test_two_port_device_maps_netdevs_by_dev_port(tmp_path):
    # mlx4-style: one device, two ports, one PCI function with two interfaces.
    ports = {}
    for number in (1, 2):
        ports[number] = {'state': '4: ACTIVE', 'phys_state': '5: LinkUp',
                         'rate': '56 Gb/sec (4X FDR)', 'link_layer': 'Ethernet',
                         'gids': ['fe80:0000:0000:0000:0202:c9ff:fe00:000%d' % number]}
    trees.add_device(tmp_path, 'mlx4_0', '0000:03:00.0', fw_ver='2.42.5000', ports=ports,
                     netdevs={'ens1': 0, 'ens1d1': 1})
    facts = gather(str(tmp_path))
    assert [(port['port'], port['netdev']) for port in facts['devices'][0]['ports']] == [
        (1, 'ens1'), (2, 'ens1d1')]
    assert facts['active_ports'] == 2


def test_mixed_host_counts_active_ports_over_devices(tmp_path):
    trees.ndr_ib_host(tmp_path)
    trees.roce_host(tmp_path)
    facts = gather(str(tmp_path))
    assert [device['name'] for device in facts['devices']] == ['mlx5_0', 'mlx5_1', 'mlx5_2']
    assert facts['active_ports'] == 2
