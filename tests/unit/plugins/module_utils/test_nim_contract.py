# -*- coding: utf-8 -*-
"""nim_launch_contract: auto decides from the image tag's generation, then the model profile; explicit wins."""

import pytest

from ansible_collections.nimstack.multinode.plugins.module_utils.nim_contract import (
    CONTRACT_CHOICES, ContractError, resolve_contract)


@pytest.mark.parametrize('tag, contract', [
    ('1.3.0', 'mpi'),
    ('1.10.1', 'mpi'),
    ('v1.8', 'mpi'),
    ('1.7.3-rtx', 'mpi'),
    ('2.0.1', 'ray'),
    ('2.0.0-rc1', 'ray'),
    ('3.1', 'ray'),
])
def test_auto_reads_the_nim_generation_from_the_tag(tag, contract):
    decided, reason = resolve_contract('auto', 'nvcr.io/nim/meta/llama-3.1-405b-instruct', tag)
    assert decided == contract
    assert reason.startswith('image tag %s is NIM for LLMs %s.x' % (tag, tag.lstrip('v').split('.')[0]))


def test_auto_takes_a_1x_sglang_profile_to_leader_address():
    decided, reason = resolve_contract('auto', 'nvcr.io/nim/deepseek-ai/deepseek-r1', '1.7.3',
                                       profile='sglang-h100-fp8-tp8-pp2')
    assert decided == 'leader_address'
    assert reason.startswith("nim_model_profile 'sglang-h100-fp8-tp8-pp2' is an SGLang profile and image tag 1.7.3 "
                             "is NIM for LLMs 1.x")


def test_auto_takes_nim_use_sglang_on_1x_to_leader_address():
    decided, _reason = resolve_contract('auto', 'nvcr.io/nim/x', '1.7.3', extra_env={'NIM_USE_SGLANG': '1'})
    assert decided == 'leader_address'


@pytest.mark.parametrize('tag', ['2.0.13', '2.0.14', '2.1.6', '3.0.0', 'v2.1'])
def test_auto_takes_sglang_from_2_0_13_on_to_ray(tag):
    for kwargs in ({'profile': 'sglang-h100-fp8-tp8-pp2'}, {'extra_env': {'NIM_USE_SGLANG': '1'}}):
        decided, reason = resolve_contract('auto', 'nvcr.io/nim/deepseek-ai/deepseek-r1', tag, **kwargs)
        assert decided == 'ray'
        assert reason.endswith('SGLang included')


@pytest.mark.parametrize('tag', ['2.0.0', '2.0.12', '2.0.12-rc1'])
def test_auto_refuses_sglang_on_2x_before_2_0_13(tag):
    with pytest.raises(ContractError) as exc:
        resolve_contract('auto', 'nvcr.io/nim/x', tag, profile='sglang-h100-fp8-tp8-pp2')
    assert 'is a NIM for LLMs 2.x release before 2.0.13' in str(exc.value)
    assert 'set nim_launch_contract explicitly' in str(exc.value)


def test_an_sglang_profile_on_an_unreadable_tag_is_still_refused():
    with pytest.raises(ContractError):
        resolve_contract('auto', 'nvcr.io/nim/x', 'latest', profile='sglang-h100-fp8-tp8-pp2')


def test_a_profile_that_only_contains_the_letters_is_not_sglang():
    assert resolve_contract('auto', 'nvcr.io/nim/x', '1.3.0', profile='tensorrt_llm-h100-fp8-tp8-pp2')[0] == 'mpi'


@pytest.mark.parametrize('requested', ['mpi', 'ray', 'leader_address'])
def test_an_explicit_contract_wins_even_for_a_digest_pinned_image(requested):
    assert resolve_contract(requested, 'nvcr.io/nim/x', 'sha256:' + 'b' * 64) == (
        requested, 'nim_launch_contract=%s is set explicitly' % requested)


@pytest.mark.parametrize('image, tag', [
    ('nvcr.io/nim/x', 'sha256:' + 'c' * 64),
    ('nvcr.io/nim/x@sha256:' + 'c' * 64, None),
])
def test_auto_refuses_a_digest_pinned_image_naming_the_variable(image, tag):
    with pytest.raises(ContractError) as exc:
        resolve_contract('auto', image, tag)
    message = str(exc.value)
    assert message.startswith('nim_launch_contract=auto cannot read the NIM version from the digest-pinned image')
    assert 'set nim_launch_contract to mpi' in message


@pytest.mark.parametrize('tag', ['latest', 'main', '2024-11', '', None, 'one.two'])
def test_auto_refuses_an_unparseable_tag_naming_the_variable(tag):
    with pytest.raises(ContractError) as exc:
        resolve_contract('auto', 'nvcr.io/nim/x', tag)
    assert str(exc.value).startswith('nim_launch_contract=auto cannot tell the NIM version from nim_image_tag=%r'
                                     % (tag,))


def test_an_unknown_contract_lists_the_choices():
    with pytest.raises(ContractError) as exc:
        resolve_contract('ssh', 'nvcr.io/nim/x', '1.3.0')
    assert str(exc.value) == "nim_launch_contract='ssh' must be one of auto, mpi, ray, leader_address"
    assert CONTRACT_CHOICES == ('auto', 'mpi', 'ray', 'leader_address')
