# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Parse nvidia-smi output into the nvidia_gpu facts.

Two outputs are read: ``nvidia-smi --query-gpu=<QUERY_FIELDS> --format=csv,noheader,nounits``
(one CSV line per GPU) and the banner of plain ``nvidia-smi``, the only place besides the much
larger ``nvidia-smi -q`` report that names the CUDA version the driver supports. No Ansible
imports: the module and the unit tests call these functions directly.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import csv
import re

QUERY_FIELDS = (
    'index',
    'name',
    'uuid',
    'memory.total',
    'driver_version',
    'persistence_mode',
    'pci.bus_id',
    'compute_cap',
)

# nvidia-smi prints these where a field does not apply to the GPU or the driver cannot read it.
_UNAVAILABLE = frozenset(('n/a', '[n/a]', 'not supported', '[not supported]', '[unknown error]'))

# "NVIDIA-SMI 580.159.04": the tool's own version opens the banner; error messages such as
# "NVIDIA-SMI has failed ..." name the tool without a version.
_BANNER_RE = re.compile(r'NVIDIA-SMI\s+[0-9]')
_DRIVER_RE = re.compile(r'Driver Version:\s*([0-9][0-9.]*)')
_CUDA_RE = re.compile(r'CUDA Version:\s*([0-9][0-9.]*)')
# "81559 MiB" when a caller dropped nounits; the unit is the only one memory.total uses.
_MIB_RE = re.compile(r'^([0-9]+)(?:\s*MiB)?\Z')
# A header cell reads "memory.total [MiB]": the unit in brackets is not part of the field name.
_HEADER_UNIT_RE = re.compile(r'\s*\[[^\]]*\]\Z')


class NvidiaSmiError(ValueError):
    """nvidia-smi output that does not have the expected shape."""


def query_command(binary, fields=QUERY_FIELDS):
    """Return the argument list that asks nvidia-smi for ``fields`` of every GPU."""
    return [binary, '--query-gpu=' + ','.join(fields), '--format=csv,noheader,nounits']


def _value(cell):
    cell = cell.strip()
    if not cell or cell.lower() in _UNAVAILABLE:
        return None
    return cell


def _mib(cell, field):
    value = _value(cell)
    if value is None:
        return None
    match = _MIB_RE.match(value)
    if not match:
        raise NvidiaSmiError('%s: expected a number of MiB, got %r' % (field, value))
    return int(match.group(1))


def _enabled(cell, field):
    value = _value(cell)
    if value is None:
        return None
    lowered = value.lower()
    if lowered == 'enabled':
        return True
    if lowered == 'disabled':
        return False
    raise NvidiaSmiError('%s: expected Enabled or Disabled, got %r' % (field, value))


def _index(cell):
    value = _value(cell)
    if value is None or not value.isdigit():
        raise NvidiaSmiError('index: expected a GPU index, got %r' % cell.strip())
    return int(value)


def _is_header(row, fields):
    names = [_HEADER_UNIT_RE.sub('', cell.strip()) for cell in row]
    return names == list(fields)


def parse_query_csv(text, fields=QUERY_FIELDS):
    """Parse ``--query-gpu`` CSV output into GPU dicts sorted by index.

    ``fields`` are the queried fields in order; it must contain at least ``index``. Unknown
    fields are ignored, a header line (``--format=csv`` without ``noheader``) is skipped, and
    values that carry units (without ``nounits``) are accepted. Each dict has index, name, uuid,
    memory_total_mib, driver_version, persistence_mode, pci_bus_id and compute_capability for
    the fields that were queried; unavailable values are None.
    """
    fields = list(fields)
    if 'index' not in fields:
        raise NvidiaSmiError('the query must include the index field')
    gpus = []
    lines = [line for line in text.splitlines() if line.strip()]
    for lineno, row in enumerate(csv.reader(lines, skipinitialspace=True), start=1):
        if lineno == 1 and _is_header(row, fields):
            continue
        if len(row) != len(fields):
            raise NvidiaSmiError(
                'line %d has %d values for %d queried fields: %r'
                % (lineno, len(row), len(fields), lines[lineno - 1]))
        cells = dict(zip(fields, row))
        gpu = {'index': _index(cells['index'])}
        if 'name' in cells:
            gpu['name'] = _value(cells['name'])
        if 'uuid' in cells:
            gpu['uuid'] = _value(cells['uuid'])
        if 'memory.total' in cells:
            gpu['memory_total_mib'] = _mib(cells['memory.total'], 'memory.total')
        if 'driver_version' in cells:
            gpu['driver_version'] = _value(cells['driver_version'])
        if 'persistence_mode' in cells:
            gpu['persistence_mode'] = _enabled(cells['persistence_mode'], 'persistence_mode')
        if 'pci.bus_id' in cells:
            gpu['pci_bus_id'] = _value(cells['pci.bus_id'])
        if 'compute_cap' in cells:
            gpu['compute_capability'] = _value(cells['compute_cap'])
        gpus.append(gpu)
    return sorted(gpus, key=lambda gpu: gpu['index'])


def parse_banner(text):
    """Return dict(driver_version, cuda_version) from the banner of plain ``nvidia-smi``.

    A version the banner does not show (e.g. "CUDA Version: N/A") is None; a text without any
    banner raises NvidiaSmiError.
    """
    if not _BANNER_RE.search(text):
        raise NvidiaSmiError('no nvidia-smi banner in the output')
    driver = _DRIVER_RE.search(text)
    cuda = _CUDA_RE.search(text)
    return {
        'driver_version': driver.group(1) if driver else None,
        'cuda_version': cuda.group(1) if cuda else None,
    }


def failure_reason(rc, stdout, stderr):
    """Say in one line why an nvidia-smi call with exit status ``rc`` gave no GPUs."""
    message = ' '.join((stdout or '').split() + (stderr or '').split())
    if "couldn't communicate with the NVIDIA driver" in message:
        return 'the NVIDIA driver is not loaded (nvidia-smi rc %d): %s' % (rc, message)
    if not message:
        message = 'no output'
    return 'nvidia-smi failed (rc %d): %s' % (rc, message)


def build_facts(gpus, driver_version=None, cuda_version=None, reason=None):
    """Assemble ansible_facts.nvidia_gpu from parsed GPUs.

    The driver version of the GPUs wins over ``driver_version`` (the banner's): it is what the
    query reported for the devices themselves. Without GPUs, ``reason`` says why.
    """
    listed = []
    for gpu in gpus:
        listed.append({
            'index': gpu['index'],
            'name': gpu.get('name'),
            'uuid': gpu.get('uuid'),
            'memory_total_mib': gpu.get('memory_total_mib'),
            'persistence_mode': gpu.get('persistence_mode'),
            'pci_bus_id': gpu.get('pci_bus_id'),
            'compute_capability': gpu.get('compute_capability'),
        })
    reported = [gpu['driver_version'] for gpu in gpus if gpu.get('driver_version')]
    if reported:
        driver_version = reported[0]
    if not listed and reason is None:
        reason = 'nvidia-smi listed no GPUs'
    return {
        'count': len(listed),
        'driver_version': driver_version,
        'cuda_version': cuda_version,
        'gpus': listed,
        'models': sorted(set(gpu['name'] for gpu in listed if gpu['name'])),
        'total_memory_mib': sum(gpu['memory_total_mib'] or 0 for gpu in listed),
        'reason': reason if not listed else None,
    }
