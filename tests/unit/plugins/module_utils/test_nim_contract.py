# -*- coding: utf-8 -*-
"""nim_launch_contract: auto decides from the image tag and the model profile, explicit wins."""

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


def test_auto_takes_an_sglang_profile_to_leader_address_whatever_the_tag():
    decided, reason = resolve_contract('auto', 'nvcr.io/nim/deepseek-ai/deepseek-r1', '1.7.3',
                                       profile='sglang-h100-fp8-tp8-pp2')
    assert decided == 'leader_address'
    assert reason.startswith("nim_model_profile 'sglang-h100-fp8-tp8-pp2' is an SGLang profile")


def test_auto_takes_nim_use_sglang_to_leader_address():
    decided, _reason = resolve_contract('auto', 'nvcr.io/nim/x', '1.7.3', extra_env={'NIM_USE_SGLANG': '1'})
    assert decided == 'leader_address'


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
