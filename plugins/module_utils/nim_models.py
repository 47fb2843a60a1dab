# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Sizing facts the parallelism planner judges a layout against.

Model shapes come from the models' public configs, the other tables from vendor data sheets
(see docs/sizing.md). No Ansible imports: the planner and its tests use this directly.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re


class ModelError(ValueError):
    """A model that cannot be resolved; ``problems`` lists every reason, one string each."""

    def __init__(self, problems):
        self.problems = list(problems)
        super(ModelError, self).__init__('; '.join(self.problems))


BYTES_PER_PARAM = {
    'fp32': 4,
    'fp16': 2,
    'bf16': 2,
    'fp8': 1,
    'int8': 1,
    'int4': 0.5,
    'fp4': 0.5,
}

# B200 ships as 180 GB and 192 GB parts; the smaller one is the safe figure to plan with.
GPU_MEMORY_GB = {
    'a100-40gb': 40,
    'a100-80gb': 80,
    'h100': 80,
    'h200': 141,
    'b200': 180,
    'l40s': 48,
    'a10g': 24,
}

# GB/s per direction. NVLink is the in-node figure of an H100 baseboard.
INTERCONNECT_GBPS = {
    'nvlink': 900,
    'ib_hdr': 25,
    'ib_ndr': 50,
    'ib_xdr': 100,
    'roce_100g': 12.5,
    'eth_25g': 3.1,
}

MODEL_KEYS = ('params_b', 'layers', 'attention_heads', 'kv_heads', 'precision')

_CATALOG = (
    {
        'name': 'llama-3.1-8b',
        'params_b': 8.0, 'layers': 32, 'attention_heads': 32, 'kv_heads': 8, 'precision': 'bf16',
        'aliases': ('llama-3.1-8b-instruct', 'meta/llama-3.1-8b-instruct', 'meta-llama/llama-3.1-8b-instruct', 'llama3.1-8b'),
    },
    {
        'name': 'llama-3.1-70b',
        'params_b': 70.6, 'layers': 80, 'attention_heads': 64, 'kv_heads': 8, 'precision': 'bf16',
        'aliases': ('llama-3.1-70b-instruct', 'meta/llama-3.1-70b-instruct', 'meta-llama/llama-3.1-70b-instruct', 'llama3.1-70b'),
    },
    {
        'name': 'llama-3.1-405b',
        'params_b': 405.9, 'layers': 126, 'attention_heads': 128, 'kv_heads': 8, 'precision': 'bf16',
        'aliases': ('llama-3.1-405b-instruct', 'meta/llama-3.1-405b-instruct', 'meta-llama/llama-3.1-405b-instruct', 'llama3.1-405b'),
    },
    {
        'name': 'mixtral-8x22b',
        'params_b': 141.0, 'layers': 56, 'attention_heads': 48, 'kv_heads': 8, 'precision': 'bf16',
        'aliases': ('mixtral-8x22b-instruct', 'mixtral-8x22b-instruct-v0.1', 'mistralai/mixtral-8x22b-instruct-v0.1',
                    'mistralai/mixtral-8x22b-instruct'),
    },
    {
        'name': 'nemotron-4-340b',
        'params_b': 341.0, 'layers': 96, 'attention_heads': 96, 'kv_heads': 8, 'precision': 'bf16',
        'aliases': ('nemotron-4-340b-instruct', 'nvidia/nemotron-4-340b-instruct'),
    },
    # DeepSeek-R1 and V3 share one architecture. MoE: every expert stays resident, so all 671B
    # parameters count for memory even though about 37B are active per token. MLA gives 128 KV heads.
    {
        'name': 'deepseek-r1',
        'params_b': 671.0, 'layers': 61, 'attention_heads': 128, 'kv_heads': 128, 'precision': 'fp8',
        'aliases': ('deepseek-ai/deepseek-r1',),
    },
    {
        'name': 'deepseek-v3',
        'params_b': 671.0, 'layers': 61, 'attention_heads': 128, 'kv_heads': 128, 'precision': 'fp8',
        'aliases': ('deepseek-ai/deepseek-v3',),
    },
)


def _normalize(name):
    """Case-insensitive key in which spaces and underscores read as dashes ("Llama 3.1 8B")."""
    return re.sub(r'[\s_]+', '-', name.strip().lower())


def _index():
    index = {}
    for entry in _CATALOG:
        for key in (entry['name'],) + entry['aliases']:
            index[_normalize(key)] = entry
    return index


_INDEX = _index()


def model_names():
    """Canonical names of the built-in catalog, in catalog order."""
    return [entry['name'] for entry in _CATALOG]


def _shape(entry):
    return dict((key, entry[key]) for key in ('name',) + MODEL_KEYS)


def _positive_int(value):
    """Return value as an int when it is a whole number >= 1 (numeric strings included), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        value = value.strip()
        if not value.isdigit():
            return None
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and value >= 1:
        return value
    return None


def _positive_number(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, (int, float)) and value > 0:
        return float(value)
    return None


def _from_dict(model):
    problems = []
    unknown = sorted(str(key) for key in model if key not in MODEL_KEYS + ('name',))
    if unknown:
        problems.append('model: unknown key(s) %s; a model dict takes %s and optionally name'
                        % (', '.join(unknown), ', '.join(MODEL_KEYS)))
    missing = [key for key in MODEL_KEYS if key not in model]
    if missing:
        problems.append('model: missing key(s) %s' % ', '.join(missing))

    shape = {'name': str(model.get('name') or 'custom')}
    if 'params_b' in model:
        shape['params_b'] = _positive_number(model['params_b'])
        if shape['params_b'] is None:
            problems.append('model.params_b=%r: must be a number > 0 (billions of parameters)' % (model['params_b'],))
    for key in ('layers', 'attention_heads', 'kv_heads'):
        if key in model:
            shape[key] = _positive_int(model[key])
            if shape[key] is None:
                problems.append('model.%s=%r: must be an integer >= 1' % (key, model[key]))
    if 'precision' in model:
        precision = model['precision']
        shape['precision'] = precision.strip().lower() if isinstance(precision, str) else precision
        if shape['precision'] not in BYTES_PER_PARAM:
            problems.append('model.precision=%r: must be one of %s' % (precision, ', '.join(sorted(BYTES_PER_PARAM))))
    heads, kv_heads = shape.get('attention_heads'), shape.get('kv_heads')
    if heads and kv_heads and kv_heads > heads:
        problems.append('model.kv_heads=%d: cannot exceed model.attention_heads=%d' % (kv_heads, heads))
    if problems:
        raise ModelError(problems)
    return shape


def resolve_model(model):
    """Return the model's shape: name, params_b, layers, attention_heads, kv_heads, precision.

    ``model`` is a catalog name or alias (any case, spaces or underscores for dashes) or a dict
    with every key of MODEL_KEYS. Raises ModelError naming every problem.
    """
    if isinstance(model, dict):
        return _from_dict(model)
    if isinstance(model, str) and model.strip():
        entry = _INDEX.get(_normalize(model))
        if entry is None:
            raise ModelError(['model=%r: not in the built-in catalog (%s); give a dict with %s instead'
                              % (model, ', '.join(model_names()), ', '.join(MODEL_KEYS))])
        return _shape(entry)
    raise ModelError(['model=%r: must be a catalog name or a dict with %s' % (model, ', '.join(MODEL_KEYS))])


def lookup_gpu_memory_gb(name):
    """GB of memory of a GPU named as in GPU_MEMORY_GB (any case), or None when not in the table."""
    if not isinstance(name, str):
        return None
    return GPU_MEMORY_GB.get(_normalize(name))


def lookup_interconnect_gbps(name):
    """GB/s per direction of a named interconnect, or None when the name is not in the table."""
    if not isinstance(name, str):
        return None
    return INTERCONNECT_GBPS.get(name.strip().lower())
