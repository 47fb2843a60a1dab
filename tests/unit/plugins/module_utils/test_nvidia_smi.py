"""Tests of the nvidia-smi parsers against real captures from an H100 host.

The fixtures in tests/unit/fixtures/nvidia_smi are real nvidia-smi output (driver 580.159.04,
CUDA 13.0), except query-gpu-8x-synthetic.csv, which is derived from the real line (see the
README there). Short inline strings below are marked where they are constructed.
"""

import os

import pytest

from ansible_collections.nimstack.multinode.plugins.module_utils.nvidia_smi import (
    QUERY_FIELDS,
    NvidiaSmiError,
    build_facts,
    failure_reason,
    parse_banner,
    parse_query_csv,
    query_command,
)

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'nvidia_smi')

H100 = {
    'index': 0,
    'name': 'NVIDIA H100 80GB HBM3',
    'uuid': 'GPU-869c0860-ccac-982e-a33e-402fa7514f87',
    'memory_total_mib': 81559,
    'driver_version': '580.159.04',
    'persistence_mode': True,
    'pci_bus_id': '00000000:00:06.0',
    'compute_capability': '9.0',
}

# The message nvidia-smi prints when the kernel module is not loaded (seen on a real host); 9 is
# the exit status nvidia-smi(1) documents for "NVIDIA driver is not loaded".
DRIVER_NOT_LOADED = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running.\n\n")


def fixture(name):
    with open(os.path.join(FIXTURES, name), newline='') as handle:
        return handle.read()


def test_query_command_asks_for_every_field_without_header_or_units():
    assert query_command('/usr/bin/nvidia-smi') == [
        '/usr/bin/nvidia-smi',
        '--query-gpu=index,name,uuid,memory.total,driver_version,persistence_mode,pci.bus_id,'
        'compute_cap',
        '--format=csv,noheader,nounits',
    ]


def test_real_h100_query_line():
    assert parse_query_csv(fixture('query-gpu.csv')) == [H100]


def test_real_output_with_header_and_units():
    fields = QUERY_FIELDS[:6]
    expected = dict((key, H100[key]) for key in (
        'index', 'name', 'uuid', 'memory_total_mib', 'driver_version', 'persistence_mode'))
    assert parse_query_csv(fixture('query-gpu-header.csv'), fields=fields) == [expected]


def test_synthetic_eight_gpus_are_sorted_and_complete():
    gpus = parse_query_csv(fixture('query-gpu-8x-synthetic.csv'))
    assert [gpu['index'] for gpu in gpus] == list(range(8))
    assert gpus[7]['pci_bus_id'] == '00000000:DB:00.0'
    assert len(set(gpu['uuid'] for gpu in gpus)) == 8
    assert all(gpu['memory_total_mib'] == 81559 for gpu in gpus)


def test_lines_out_of_order_come_back_by_index():
    # Constructed: the real line twice with indexes swapped around.
    real = fixture('query-gpu.csv').strip()
    text = real.replace('0, ', '1, ', 1) + '\n' + real + '\n'
    assert [gpu['index'] for gpu in parse_query_csv(text)] == [0, 1]


@pytest.mark.parametrize('cell', ['N/A', '[N/A]', '[Not Supported]', '', '  '])
def test_unavailable_values_are_none(cell):
    # Constructed: the real line with the last three values replaced.
    line = '0, NVIDIA H100 80GB HBM3, GPU-869c0860-ccac-982e-a33e-402fa7514f87, %s, 580.159.04, ' \
        '%s, 00000000:00:06.0, %s' % (cell, cell, cell)
    gpu = parse_query_csv(line)[0]
    assert gpu['memory_total_mib'] is None
    assert gpu['persistence_mode'] is None
    assert gpu['compute_capability'] is None
    assert gpu['name'] == 'NVIDIA H100 80GB HBM3'


def test_disabled_persistence_and_surrounding_whitespace():
    text = '\n  3 ,  NVIDIA A100-SXM4-80GB ,GPU-x, 81920 , 535.54.03 , Disabled , ' \
        '00000000:07:00.0 , 8.0  \n\n'
    assert parse_query_csv(text) == [{
        'index': 3,
        'name': 'NVIDIA A100-SXM4-80GB',
        'uuid': 'GPU-x',
        'memory_total_mib': 81920,
        'driver_version': '535.54.03',
        'persistence_mode': False,
        'pci_bus_id': '00000000:07:00.0',
        'compute_capability': '8.0',
    }]


def test_empty_output_is_no_gpus():
    assert parse_query_csv('') == []
    assert parse_query_csv('\n\n') == []


@pytest.mark.parametrize('text, message', [
    ('0, NVIDIA H100 80GB HBM3, GPU-x, 81559', 'line 1 has 4 values for 8 queried fields'),
    ('0, H100, GPU-x, lots, 580.159.04, Enabled, 00000000:00:06.0, 9.0',
     "memory.total: expected a number of MiB, got 'lots'"),
    ('0, H100, GPU-x, 81559, 580.159.04, On, 00000000:00:06.0, 9.0',
     "persistence_mode: expected Enabled or Disabled, got 'On'"),
    ('N/A, H100, GPU-x, 81559, 580.159.04, Enabled, 00000000:00:06.0, 9.0',
     "index: expected a GPU index, got 'N/A'"),
])
def test_malformed_lines_raise(text, message):
    with pytest.raises(NvidiaSmiError, match=message):
        parse_query_csv(text)


def test_error_message_of_a_failed_query_is_not_mistaken_for_gpus():
    # A real "invalid field" message parsed as if it were CSV output.
    message = fixture('query-bad.txt').split('\n\nrc=')[0]
    with pytest.raises(NvidiaSmiError, match='line 1 has 1 values'):
        parse_query_csv(message)


def test_query_without_index_is_refused():
    with pytest.raises(NvidiaSmiError, match='must include the index field'):
        parse_query_csv('H100', fields=('name',))


def test_real_banner_versions():
    assert parse_banner(fixture('nvidia-smi.txt')) == {
        'driver_version': '580.159.04', 'cuda_version': '13.0'}


def test_banner_without_cuda_version():
    # Constructed from the real banner line with the CUDA version unavailable.
    text = '| NVIDIA-SMI 580.159.04             Driver Version: 580.159.04     CUDA Version: N/A      |'
    assert parse_banner(text) == {'driver_version': '580.159.04', 'cuda_version': None}


def test_driver_failure_message_is_no_banner():
    with pytest.raises(NvidiaSmiError, match='no nvidia-smi banner'):
        parse_banner(DRIVER_NOT_LOADED)


def test_reason_for_driver_not_loaded():
    assert failure_reason(9, DRIVER_NOT_LOADED, '') == (
        "the NVIDIA driver is not loaded (nvidia-smi rc 9): NVIDIA-SMI has failed because it "
        "couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver "
        "is installed and running.")


def test_reason_for_rejected_query_quotes_nvidia_smi():
    message = fixture('query-bad.txt').split('\n\nrc=')[0] + '\n\n'
    assert failure_reason(2, message, '') == (
        'nvidia-smi failed (rc 2): Field "bogus_field" is not a valid field to query.')


def test_reason_without_output():
    assert failure_reason(255, '', '') == 'nvidia-smi failed (rc 255): no output'


def test_facts_of_the_real_h100():
    gpus = parse_query_csv(fixture('query-gpu.csv'))
    facts = build_facts(gpus, **parse_banner(fixture('nvidia-smi.txt')))
    gpu = dict(H100)
    del gpu['driver_version']
    assert facts == {
        'count': 1,
        'driver_version': '580.159.04',
        'cuda_version': '13.0',
        'gpus': [gpu],
        'models': ['NVIDIA H100 80GB HBM3'],
        'total_memory_mib': 81559,
        'reason': None,
    }


def test_facts_of_eight_gpus_sum_memory():
    facts = build_facts(parse_query_csv(fixture('query-gpu-8x-synthetic.csv')))
    assert facts['count'] == 8
    assert facts['total_memory_mib'] == 8 * 81559
    assert facts['models'] == ['NVIDIA H100 80GB HBM3']
    assert facts['driver_version'] == '580.159.04'
    assert facts['cuda_version'] is None


def test_facts_driver_version_of_gpus_wins_over_banner():
    gpus = parse_query_csv(fixture('query-gpu.csv'))
    assert build_facts(gpus, driver_version='1.2.3')['driver_version'] == '580.159.04'


def test_facts_without_gpus_carry_the_reason():
    assert build_facts([], reason='nvidia-smi not found') == {
        'count': 0,
        'driver_version': None,
        'cuda_version': None,
        'gpus': [],
        'models': [],
        'total_memory_mib': 0,
        'reason': 'nvidia-smi not found',
    }
    assert build_facts([])['reason'] == 'nvidia-smi listed no GPUs'
