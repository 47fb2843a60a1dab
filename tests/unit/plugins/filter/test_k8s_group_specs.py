# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""k8s_group_specs with a header: each group's files are its objects as k8s_object_files writes them."""

from ansible_collections.nimstack.multinode.plugins.filter.k8s_object_files import k8s_object_files
from ansible_collections.nimstack.multinode.plugins.filter.k8s_objects import k8s_group_specs
from ansible_collections.nimstack.multinode.plugins.module_utils.nim_plan import build_plan
from ansible_collections.nimstack.multinode.tests.unit.models import LLAMA_405B

HEADER = '# Rendered by nimstack.multinode; do not edit.\n'


def _plan():
    nodes = [{'host': '%s-%d' % (group, index), 'address': '10.0.0.%d' % (len(group) * 10 + index), 'group': group,
              'settings': dict(LLAMA_405B)} for group in ('alpha', 'beta') for index in range(2)]
    plan = build_plan(nodes, deployment_mode='kubernetes')
    assert plan['valid'], plan['errors']
    return plan


def test_without_a_header_there_are_no_files():
    specs = k8s_group_specs(_plan(), {'nim_k8s_backend': 'lws'})
    assert sorted(specs) == ['alpha', 'beta']
    assert all('files' not in spec for spec in specs.values())


def test_with_a_header_each_group_has_the_files_of_its_objects():
    specs = k8s_group_specs(_plan(), {'nim_k8s_backend': 'lws'}, header=HEADER)
    for name, spec in specs.items():
        assert spec['files'] == k8s_object_files({name: spec['objects']}, header=HEADER)
        assert [f['path'].split('/')[0] for f in spec['files']] == [name] * len(spec['objects'])
