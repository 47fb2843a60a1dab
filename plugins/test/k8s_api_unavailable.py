# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Test k8s_api_unavailable: a Kubernetes task failed only because the API server was away (docs in k8s_api_unavailable.yml)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.nimstack.multinode.plugins.module_utils.lazy import lazy_module

_diagnose = lazy_module('k8s_diagnose')


def k8s_api_unavailable(result):
    return _diagnose.api_unavailable(result)


class TestModule(object):
    def tests(self):
        return {'k8s_api_unavailable': k8s_api_unavailable}
