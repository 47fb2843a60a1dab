"""Tests of the nvidia_gpu_facts module with nvidia-smi replaced by its real captured output.

The query and banner outputs are real captures from an H100 host (tests/unit/fixtures/nvidia_smi,
see the README there); the 8-GPU output is the synthetic variant derived from them. The driver
failure message is the real one nvidia-smi prints when the kernel module is not loaded.
"""

import os

import pytest
from ansible.module_utils import basic

from ansible_collections.nimstack.multinode.plugins.modules import nvidia_gpu_facts
from ansible_collections.nimstack.multinode.tests.unit.plugins.modules.utils import run_module

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'nvidia_smi')
QUERY = ('--query-gpu=index,name,uuid,memory.total,driver_version,persistence_mode,pci.bus_id,'
         'compute_cap')
DRIVER_NOT_LOADED = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running.\n\n")


def fixture(name):
    with open(os.path.join(FIXTURES, name), newline='') as handle:
        return handle.read()


class FakeNvidiaSmi:
    """Stands in for AnsibleModule.run_command; answers the query and the plain call."""

    def __init__(self, query=(0, None, ''), banner=(0, None, '')):
        self.query = (query[0], fixture('query-gpu.csv') if query[1] is None else query[1], query[2])
        self.banner = (banner[0], fixture('nvidia-smi.txt') if banner[1] is None else banner[1],
                       banner[2])
        self.calls = []

    def __call__(self, args, **kwargs):
        assert isinstance(args, list), 'nvidia-smi must be run with an argument list, not a shell'
        self.calls.append(args)
        return self.query if len(args) > 1 else self.banner


@pytest.fixture
def smi(monkeypatch):
    """Install a fake nvidia-smi; ``path`` is what the lookup finds (None: not installed)."""
    def install(path='/usr/bin/nvidia-smi', **kwargs):
        fake = FakeNvidiaSmi(**kwargs)
        monkeypatch.setattr(basic.AnsibleModule, 'run_command',
                            lambda module, args, **kwargs: fake(args, **kwargs))

        def get_bin_path(module, name, required=False, opt_dirs=None):
            assert (name, opt_dirs) == ('nvidia-smi', ['/usr/local/nvidia/bin'])
            return path
        monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', get_bin_path)
        return fake
    return install


H100_FACTS = {
    'count': 1,
    'driver_version': '580.159.04',
    'cuda_version': '13.0',
    'gpus': [{
        'index': 0,
        'name': 'NVIDIA H100 80GB HBM3',
        'uuid': 'GPU-869c0860-ccac-982e-a33e-402fa7514f87',
        'memory_total_mib': 81559,
        'persistence_mode': True,
        'pci_bus_id': '00000000:00:06.0',
        'compute_capability': '9.0',
    }],
    'models': ['NVIDIA H100 80GB HBM3'],
    'total_memory_mib': 81559,
    'reason': None,
}


@pytest.mark.parametrize('check_mode', [False, True])
def test_real_h100(smi, check_mode):
    fake = smi()
    result, failed = run_module(nvidia_gpu_facts.main, {}, check_mode=check_mode)
    assert not failed
    assert result['changed'] is False
    assert result['ansible_facts'] == {'nvidia_gpu': H100_FACTS}
    # Read-only, so check mode probes as well.
    assert fake.calls == [
        ['/usr/bin/nvidia-smi', QUERY, '--format=csv,noheader,nounits'],
        ['/usr/bin/nvidia-smi'],
    ]


def test_eight_gpus(smi):
    smi(query=(0, fixture('query-gpu-8x-synthetic.csv'), ''))
    facts = run_module(nvidia_gpu_facts.main, {})[0]['ansible_facts']['nvidia_gpu']
    assert facts['count'] == 8
    assert [gpu['index'] for gpu in facts['gpus']] == list(range(8))
    assert facts['total_memory_mib'] == 652472
    assert facts['models'] == ['NVIDIA H100 80GB HBM3']
    assert facts['cuda_version'] == '13.0'
    assert facts['reason'] is None


def test_no_binary(smi):
    fake = smi(path=None)
    result, failed = run_module(nvidia_gpu_facts.main, {})
    assert not failed
    assert result['changed'] is False
    assert result['ansible_facts']['nvidia_gpu'] == {
        'count': 0,
        'driver_version': None,
        'cuda_version': None,
        'gpus': [],
        'models': [],
        'total_memory_mib': 0,
        'reason': 'nvidia-smi not found in PATH or /usr/local/nvidia/bin (no NVIDIA driver installed?)',
    }
    assert fake.calls == []


def test_driver_not_loaded(smi):
    fake = smi(query=(9, DRIVER_NOT_LOADED, ''))
    result, failed = run_module(nvidia_gpu_facts.main, {})
    assert not failed
    facts = result['ansible_facts']['nvidia_gpu']
    assert facts['count'] == 0
    assert facts['gpus'] == []
    assert facts['reason'] == (
        "the NVIDIA driver is not loaded (nvidia-smi rc 9): NVIDIA-SMI has failed because it "
        "couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver "
        "is installed and running.")
    assert len(fake.calls) == 1


def test_rejected_query_field(smi):
    message = fixture('query-bad.txt').split('\n\nrc=')[0] + '\n\n'
    smi(query=(2, message, ''))
    facts = run_module(nvidia_gpu_facts.main, {})[0]['ansible_facts']['nvidia_gpu']
    assert facts['count'] == 0
    assert facts['reason'] == (
        'nvidia-smi failed (rc 2): Field "bogus_field" is not a valid field to query.')


def test_no_devices(smi):
    # nvidia-smi(1): exit status 6 is "a query was unsuccessful"; a driver without GPUs prints
    # this line.
    smi(query=(6, 'No devices were found\n', ''))
    facts = run_module(nvidia_gpu_facts.main, {})[0]['ansible_facts']['nvidia_gpu']
    assert facts['count'] == 0
    assert facts['reason'] == 'nvidia-smi failed (rc 6): No devices were found'


def test_unexpected_output_is_a_reason_not_a_crash(smi):
    smi(query=(0, '0, NVIDIA H100 80GB HBM3\n', ''))
    facts = run_module(nvidia_gpu_facts.main, {})[0]['ansible_facts']['nvidia_gpu']
    assert facts['count'] == 0
    assert facts['reason'] == ("unexpected nvidia-smi --query-gpu output: line 1 has 2 values "
                               "for 8 queried fields: '0, NVIDIA H100 80GB HBM3'")


def test_banner_failure_keeps_the_gpus(smi):
    smi(banner=(255, '', 'Unknown Error\n'))
    facts = run_module(nvidia_gpu_facts.main, {})[0]['ansible_facts']['nvidia_gpu']
    assert facts['count'] == 1
    assert facts['driver_version'] == '580.159.04'
    assert facts['cuda_version'] is None
    assert facts['reason'] is None


def test_explicit_path(smi, tmp_path):
    binary = tmp_path / 'nvidia-smi'
    binary.write_text('#!/bin/sh\n')
    binary.chmod(0o755)
    fake = smi(path='/not/used')
    result = run_module(nvidia_gpu_facts.main, {'nvidia_smi_path': str(binary)})[0]
    assert result['ansible_facts']['nvidia_gpu']['count'] == 1
    assert [call[0] for call in fake.calls] == [str(binary), str(binary)]


def test_explicit_path_missing(smi, tmp_path):
    fake = smi()
    missing = str(tmp_path / 'nvidia-smi')
    result, failed = run_module(nvidia_gpu_facts.main, {'nvidia_smi_path': missing})
    assert not failed
    assert result['ansible_facts']['nvidia_gpu']['count'] == 0
    assert result['ansible_facts']['nvidia_gpu']['reason'] == (
        'nvidia_smi_path=%s is not an executable file' % missing)
    assert fake.calls == []
