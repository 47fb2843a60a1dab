# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Which launch contract a NIM image speaks (docs/contracts.md), decided once per deployment group.

    mpi             NIM for LLMs 1.x: mpirun over SSH, hostfile, per-deployment key
    ray             NIM for LLMs 2.0 and later: nim-serve-ray head and workers, no SSH
                    (SGLang images too from 2.0.13)
    leader_address  1.x SGLang-based NIMs: every node starts with the leader's address and its rank

nim_launch_contract: auto reads the image tag's generation first, then the model profile (an
SGLang profile, or NIM_USE_SGLANG=1, picks leader_address on 1.x only); an explicit value always
wins. A tag that says nothing about the NIM version (latest, a digest, a site's own tag) is an
error that names the variable: guessing would start the image the wrong way, and a multi-node
group started the wrong way fails only after its model has loaded.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

LAUNCH_CONTRACTS = ('mpi', 'ray', 'leader_address')
AUTO = 'auto'
CONTRACT_CHOICES = (AUTO,) + LAUNCH_CONTRACTS

# A NIM release tag: 1.8.4, 1.10, 2.0.1, v2.0.0, 1.7.3-rtx, 2.0.0-rc1.
_VERSION_TAG = re.compile(r'^v?(?P<major>\d+)\.(?P<minor>\d+)(?:\.(?P<patch>\d+))?(?:[-+._][0-9A-Za-z.+_-]*)?\Z')
# NIM model profiles name their engine: sglang-h100-bf16-tp8-pp2, tensorrt_llm-..., vllm-...
_SGLANG_PROFILE = re.compile(r'(^|[^a-z])sglang([^a-z]|$)', re.IGNORECASE)
# The first NIM for LLMs release that runs multi-node on Ray (docs/contracts.md), and the first
# in which Ray forms SGLang groups too; before it, leader_address is the contract of 1.x SGLang NIMs.
RAY_FROM_MAJOR = 2
RAY_SGLANG_FROM = (2, 0, 13)


class ContractError(Exception):
    """The contract cannot be decided; str() says which variable to set."""


def _is_digest(image, tag):
    return '@' in (image or '') or str(tag or '').startswith('sha256:')


def resolve_contract(requested, image=None, tag=None, profile=None, extra_env=None):
    """Return (contract, reason) for a deployment group.

    requested: the group's nim_launch_contract (auto, mpi, ray or leader_address).
    image, tag: nim_image and nim_image_tag. profile: nim_model_profile. extra_env:
    nim_extra_env (NIM_USE_SGLANG=1 there marks an SGLang image as the profile does).
    Raises ContractError when requested is unknown or auto cannot decide.
    """
    if requested in LAUNCH_CONTRACTS:
        return requested, 'nim_launch_contract=%s is set explicitly' % requested
    if requested != AUTO:
        raise ContractError('nim_launch_contract=%r must be one of %s' % (requested, ', '.join(CONTRACT_CHOICES)))

    use_sglang = str((extra_env or {}).get('NIM_USE_SGLANG', '')).strip() == '1'
    if profile and _SGLANG_PROFILE.search(str(profile)):
        sglang = "nim_model_profile '%s' is an SGLang profile" % profile
    elif use_sglang:
        sglang = 'nim_extra_env sets NIM_USE_SGLANG=1'
    else:
        sglang = None
    if _is_digest(image, tag):
        raise ContractError("nim_launch_contract=auto cannot read the NIM version from the digest-pinned image %s%s: "
                            "set nim_launch_contract to mpi (NIM for LLMs 1.x), ray (2.0 and later) or "
                            "leader_address (1.x SGLang-based NIMs)"
                            % (image or '', '@' + str(tag) if tag and '@' not in (image or '') else ''))
    match = _VERSION_TAG.match(str(tag or '').strip())
    if not match:
        raise ContractError("nim_launch_contract=auto cannot tell the NIM version from nim_image_tag=%r (expected a "
                            "release tag such as 1.8.4 or 2.0.1): set nim_launch_contract to mpi (NIM for LLMs 1.x), "
                            "ray (2.0 and later) or leader_address (1.x SGLang-based NIMs)" % (tag,))
    # The generation first: the engine decides between the contracts of one generation only.
    version = tuple(int(match.group(part) or 0) for part in ('major', 'minor', 'patch'))
    major = version[0]
    if major < RAY_FROM_MAJOR:
        if sglang:
            return 'leader_address', ("%s and image tag %s is NIM for LLMs %d.x: 1.x SGLang-based NIMs start every "
                                      "node with the leader's address and its rank" % (sglang, tag, major))
        return 'mpi', ('image tag %s is NIM for LLMs %d.x, which runs multi-node with mpirun over SSH (hostfile, '
                       'per-deployment key)' % (tag, major))
    if sglang and version < RAY_SGLANG_FROM:
        raise ContractError("nim_launch_contract=auto: %s, but image tag %s is a NIM for LLMs 2.x release before %s, "
                            "which documents no multi-node contract for SGLang: use %s or later (Ray forms the "
                            "group), or set nim_launch_contract explicitly"
                            % (sglang, tag, _dotted(RAY_SGLANG_FROM), _dotted(RAY_SGLANG_FROM)))
    return 'ray', ('image tag %s is NIM for LLMs %d.x, which runs multi-node on Ray (nim-serve-ray head and '
                   'workers, no SSH)%s' % (tag, major, ', SGLang included' if sglang else ''))


def _dotted(version):
    return '.'.join(str(part) for part in version)
