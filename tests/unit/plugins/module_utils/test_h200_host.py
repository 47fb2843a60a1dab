# -*- coding: utf-8 -*-
"""What the collection's parsers make of a real H200 host (tests/unit/fixtures/h200_host): the GPU
facts nvidia_gpu_facts reports and the driver the host components probe finds."""

import os

from ansible_collections.nimstack.multinode.plugins.module_utils import host_components as hc
from ansible_collections.nimstack.multinode.plugins.module_utils import nvidia_smi

H200 = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'h200_host')


def _read(name):
    with open(os.path.join(H200, name)) as handle:
        return handle.read()


def test_the_gpu_facts_of_an_h200():
    gpus = nvidia_smi.parse_query_csv(_read('query-gpu.csv'))
    facts = nvidia_smi.build_facts(gpus, **nvidia_smi.parse_banner(_read('nvidia-smi.txt')))
    assert facts == {
        'count': 1, 'driver_version': '580.159.04', 'cuda_version': '13.0',
        'gpus': [{'index': 0, 'name': 'NVIDIA H200', 'uuid': 'GPU-52a9f1d6-eb48-d3af-68b0-09f060076b98',
                  'memory_total_mib': 143771, 'persistence_mode': True, 'pci_bus_id': '00000000:00:06.0',
                  'compute_capability': '9.0'}],
        'models': ['NVIDIA H200'], 'total_memory_mib': 143771, 'reason': None}


def test_the_driver_the_platform_loaded_on_an_h200_is_found_and_needs_no_open_modules():
    # No sysfs capture: the version then comes from /proc, as the probe reads it when sysfs has none.
    loaded = hc.read_loaded_driver(os.path.join(H200, 'sys'), os.path.join(H200, 'proc'))
    assert loaded == {'version': '580.159.04', 'flavour': 'open'}
    found = hc.driver_found(hc.parse_packages(_read('dpkg-query.txt')), loaded, [], [])
    assert found == {'source': 'platform', 'packages': [], 'package_version': '', 'loaded_version': '580.159.04',
                     'flavour': 'open', 'version': '580.159.04', 'runfile': [], 'dkms': []}
    # Hopper on x86_64: either flavour is supported (the open modules are required from Blackwell on).
    assert hc.needs_open_modules(['9.0'], 'x86_64') is False
