"""Tests of the rdma_facts module.

The sysfs trees are CONSTRUCTED from the kernel ABI (Documentation/ABI/stable/
sysfs-class-infiniband), NOT captured: the GPU host of the other fixtures had no RDMA device.
"""

import os

import pytest

from ansible_collections.nimstack.multinode.plugins.modules import rdma_facts
from ansible_collections.nimstack.multinode.tests.unit.plugins.module_utils import rdma_sysfs_trees as trees
from ansible_collections.nimstack.multinode.tests.unit.plugins.modules.utils import run_module


@pytest.mark.parametrize('check_mode', [False, True])
def test_infiniband_host(tmp_path, check_mode):
    trees.ndr_ib_host(tmp_path)
    result, failed = run_module(rdma_facts.main, {'sysfs_root': str(tmp_path)}, check_mode=check_mode)
    assert not failed
    assert result['changed'] is False
    rdma = result['ansible_facts']['rdma']
    assert rdma['present'] is True
    assert rdma['reason'] is None
    assert rdma['active_ports'] == 1
    assert [(d['name'], d['ports'][0]['state'], d['ports'][0]['rate_gbps']) for d in rdma['devices']] == [
        ('mlx5_0', 'ACTIVE', 400.0), ('mlx5_1', 'DOWN', 10.0)]


def test_roce_host(tmp_path):
    trees.roce_host(tmp_path)
    port = run_module(rdma_facts.main, {'sysfs_root': str(tmp_path)})[0][
        'ansible_facts']['rdma']['devices'][0]['ports'][0]
    assert port['link_layer'] == 'Ethernet'
    assert port['netdev'] == 'enp93s0f0np0'
    assert port['gids'] is True


def test_empty_host(tmp_path):
    trees.empty_host(tmp_path)
    result, failed = run_module(rdma_facts.main, {'sysfs_root': str(tmp_path)})
    assert not failed
    assert result['ansible_facts'] == {'rdma': {
        'present': False,
        'reason': 'no RDMA devices (%s is empty)' % os.path.join(str(tmp_path), 'class', 'infiniband'),
        'devices': [],
        'active_ports': 0,
    }}


def test_sysfs_root_defaults_to_sys(monkeypatch):
    seen = []

    def fake_gather(root):
        seen.append(root)
        return {'present': False, 'reason': 'x', 'devices': [], 'active_ports': 0}
    monkeypatch.setattr(rdma_facts, 'gather', fake_gather)
    run_module(rdma_facts.main, {})
    assert seen == ['/sys']
