"""The sizing catalog against docs/sizing.md."""

import pytest

from ansible_collections.nimstack.multinode.plugins.module_utils.nim_models import (
    BYTES_PER_PARAM,
    GPU_MEMORY_GB,
    INTERCONNECT_GBPS,
    ModelError,
    lookup_gpu_memory_gb,
    lookup_interconnect_gbps,
    model_names,
    resolve_model,
)

# name -> (params_b, layers, attention heads, KV heads, native precision), docs/sizing.md.
FACTS_MODELS = {
    'llama-3.1-8b': (8.0, 32, 32, 8, 'bf16'),
    'llama-3.1-70b': (70.6, 80, 64, 8, 'bf16'),
    'llama-3.1-405b': (405.9, 126, 128, 8, 'bf16'),
    'mixtral-8x22b': (141.0, 56, 48, 8, 'bf16'),
    'nemotron-4-340b': (341.0, 96, 96, 8, 'bf16'),
    'deepseek-r1': (671.0, 61, 128, 128, 'fp8'),
    'deepseek-v3': (671.0, 61, 128, 128, 'fp8'),
}


@pytest.mark.parametrize('name', sorted(FACTS_MODELS))
def test_catalog_holds_facts_numbers(name):
    shape = resolve_model(name)
    assert (shape['params_b'], shape['layers'], shape['attention_heads'], shape['kv_heads'],
            shape['precision']) == FACTS_MODELS[name]
    assert shape['name'] == name


def test_catalog_has_exactly_the_facts_models():
    assert sorted(model_names()) == sorted(FACTS_MODELS)


@pytest.mark.parametrize('alias, name', [
    ('meta/llama-3.1-405b-instruct', 'llama-3.1-405b'),
    ('LLAMA-3.1-405B', 'llama-3.1-405b'),
    ('Llama 3.1 405B', 'llama-3.1-405b'),
    ('  llama_3.1_70b ', 'llama-3.1-70b'),
    ('meta/llama-3.1-8b-instruct', 'llama-3.1-8b'),
    ('mistralai/Mixtral-8x22B-Instruct-v0.1', 'mixtral-8x22b'),
    ('nvidia/nemotron-4-340b-instruct', 'nemotron-4-340b'),
    ('DeepSeek-R1', 'deepseek-r1'),
    ('deepseek-ai/DeepSeek-V3', 'deepseek-v3'),
])
def test_aliases_resolve(alias, name):
    assert resolve_model(alias)['name'] == name


def test_resolved_model_is_a_copy():
    resolve_model('llama-3.1-8b')['params_b'] = 1.0
    assert resolve_model('llama-3.1-8b')['params_b'] == 8.0


def test_unknown_name_lists_the_catalog():
    with pytest.raises(ModelError) as exc:
        resolve_model('llama-4-2t')
    assert len(exc.value.problems) == 1
    message = exc.value.problems[0]
    assert message.startswith("model='llama-4-2t': not in the built-in catalog")
    assert 'llama-3.1-405b' in message and 'deepseek-r1' in message


def test_dict_model_is_accepted_and_normalised():
    shape = resolve_model({'name': 'mine', 'params_b': '120', 'layers': 64, 'attention_heads': '96',
                           'kv_heads': 8, 'precision': 'BF16'})
    assert shape == {'name': 'mine', 'params_b': 120.0, 'layers': 64, 'attention_heads': 96,
                     'kv_heads': 8, 'precision': 'bf16'}


def test_dict_model_without_name_is_custom():
    shape = resolve_model({'params_b': 7, 'layers': 32, 'attention_heads': 32, 'kv_heads': 8, 'precision': 'fp16'})
    assert shape['name'] == 'custom'


def test_dict_model_reports_every_bad_key():
    with pytest.raises(ModelError) as exc:
        resolve_model({'params_b': 0, 'layers': 'many', 'attention_heads': True, 'kv_heads': 2.5,
                       'precision': 'fp12', 'experts': 8})
    assert exc.value.problems == [
        'model: unknown key(s) experts; a model dict takes params_b, layers, attention_heads, kv_heads, '
        'precision and optionally name',
        'model.params_b=0: must be a number > 0 (billions of parameters)',
        "model.layers='many': must be an integer >= 1",
        'model.attention_heads=True: must be an integer >= 1',
        'model.kv_heads=2.5: must be an integer >= 1',
        "model.precision='fp12': must be one of bf16, fp16, fp32, fp4, fp8, int4, int8",
    ]


def test_dict_model_names_missing_keys():
    with pytest.raises(ModelError) as exc:
        resolve_model({'params_b': 70})
    assert exc.value.problems == ['model: missing key(s) layers, attention_heads, kv_heads, precision']


def test_dict_model_rejects_more_kv_heads_than_heads():
    with pytest.raises(ModelError) as exc:
        resolve_model({'params_b': 7, 'layers': 32, 'attention_heads': 8, 'kv_heads': 32, 'precision': 'bf16'})
    assert exc.value.problems == ['model.kv_heads=32: cannot exceed model.attention_heads=8']


@pytest.mark.parametrize('value', [None, '', 42, ['llama-3.1-8b']])
def test_model_of_wrong_type_is_rejected(value):
    with pytest.raises(ModelError) as exc:
        resolve_model(value)
    assert exc.value.problems[0].startswith('model=%r: must be a catalog name or a dict' % (value,))


def test_bytes_per_param():
    assert BYTES_PER_PARAM == {'fp32': 4, 'fp16': 2, 'bf16': 2, 'fp8': 1, 'int8': 1, 'int4': 0.5, 'fp4': 0.5}


def test_gpu_memory_table():
    assert GPU_MEMORY_GB == {'a100-40gb': 40, 'a100-80gb': 80, 'h100': 80, 'h200': 141, 'b200': 180,
                             'l40s': 48, 'a10g': 24}
    assert lookup_gpu_memory_gb('H200') == 141
    assert lookup_gpu_memory_gb('A100-80GB') == 80
    assert lookup_gpu_memory_gb('a100') is None
    assert lookup_gpu_memory_gb(None) is None


def test_interconnect_table():
    assert INTERCONNECT_GBPS == {'nvlink': 900, 'ib_hdr': 25, 'ib_ndr': 50, 'ib_xdr': 100,
                                 'roce_100g': 12.5, 'eth_25g': 3.1}
    assert lookup_interconnect_gbps('IB_NDR') == 50
    assert lookup_interconnect_gbps('other') is None
    assert lookup_interconnect_gbps(None) is None
