# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Filter rollout_problem: why a Deployment, LeaderWorkerSet, NIMService or NIMCache has not rolled out (docs in rollout_problem.yml)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.nimstack.multinode.plugins.module_utils.lazy import lazy_module

_rollout = lazy_module('k8s_rollout')


def rollout_problem(resources):
    if not isinstance(resources, list):
        raise AnsibleFilterError('rollout_problem: expects the resources list of kubernetes.core.k8s_info, got %r'
                                 % type(resources).__name__)
    return _rollout.rollout_problem(resources)


class FilterModule(object):
    def filters(self):
        return {'rollout_problem': rollout_problem}
