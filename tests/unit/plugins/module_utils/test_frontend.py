# -*- coding: utf-8 -*-
"""The front door's pools: leaders by served model, from the plan."""

import pytest

from ansible_collections.nimstack.multinode.plugins.module_utils.frontend import (
    backend_name, frontend_pools, served_model)


@pytest.mark.parametrize('image, model', [
    ('nvcr.io/nim/meta/llama-3.1-405b-instruct', 'meta/llama-3.1-405b-instruct'),
    ('nvcr.io/nim/deepseek-ai/deepseek-r1:1.7.3', 'deepseek-ai/deepseek-r1'),
    ('nvcr.io/nim/meta/llama-3.1-8b-instruct@sha256:' + 'a' * 64, 'meta/llama-3.1-8b-instruct'),
    ('registry.lab:5000/nim/meta/llama-3.1-70b-instruct', 'meta/llama-3.1-70b-instruct'),
    ('localhost/nimstack-lab/nim-standin', 'nimstack-lab/nim-standin'),
    ('nimstack-lab/nim-standin', 'nimstack-lab/nim-standin'),
])
def test_the_served_model_is_the_image_path_without_registry_and_nim(image, model):
    assert served_model(image) == model


def test_a_group_setting_wins():
    assert served_model('nvcr.io/nim/x/y', 'nimstack/standin-llm') == 'nimstack/standin-llm'


def _group(name, image, address, valid=True, mode='docker', port=8000, model=None):
    return {'name': name, 'valid': valid, 'mode': mode, 'leader': {'host': name + '-1', 'address': address},
            'ports': {'api': port}, 'settings': {'nim_image': image, 'nim_frontend_model': model}}


def test_groups_of_one_model_form_one_pool_sorted_by_group():
    groups = {'b': _group('b', 'nvcr.io/nim/meta/m', '10.0.0.3'), 'a': _group('a', 'nvcr.io/nim/meta/m', '10.0.0.1'),
              'c': _group('c', 'nvcr.io/nim/other/o', '10.0.0.5', port=9000)}
    pools = frontend_pools(groups)
    assert [p['model'] for p in pools] == ['meta/m', 'other/o']
    assert pools[0]['backend'] == 'model_meta_m'
    assert pools[0]['servers'] == [
        {'name': 'group_a', 'group': 'a', 'address': '10.0.0.1', 'port': 8000},
        {'name': 'group_b', 'group': 'b', 'address': '10.0.0.3', 'port': 8000}]
    assert pools[1]['servers'][0]['port'] == 9000


def test_kubernetes_and_invalid_groups_have_no_server():
    groups = {'k': _group('k', 'nvcr.io/nim/meta/m', 'x', mode='kubernetes'),
              'bad': _group('bad', 'nvcr.io/nim/meta/m', '10.0.0.9', valid=False),
              'ok': _group('ok', 'nvcr.io/nim/meta/m', '10.0.0.1')}
    assert [s['group'] for p in frontend_pools(groups) for s in p['servers']] == ['ok']


def test_backend_names_are_safe_identifiers():
    assert backend_name('meta/llama-3.1-405b instruct') == 'model_meta_llama-3.1-405b_instruct'
