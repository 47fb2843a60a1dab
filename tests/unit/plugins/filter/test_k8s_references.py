# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""k8s_references: what names an object, never its contents."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.nimstack.multinode.plugins.filter.k8s_objects import k8s_references


def test_names_only_in_order():
    objects = [
        {'apiVersion': 'v1', 'kind': 'Secret', 'metadata': {'name': 'nim-alpha-ssh', 'namespace': 'nim', 'labels': {'a': 'b'}},
         'data': {'id_ed25519': 'LS0tLS1CRUdJTg=='}},
        {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': 'nim'}},
    ]
    assert k8s_references(objects) == [
        {'apiVersion': 'v1', 'kind': 'Secret', 'metadata': {'name': 'nim-alpha-ssh', 'namespace': 'nim'}},
        {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': 'nim'}},
    ]


@pytest.mark.parametrize('value', [{'kind': 'Secret'}, [{'kind': 'Secret'}], ['nim-alpha']])
def test_refuses_what_is_no_object_list(value):
    with pytest.raises(AnsibleFilterError, match='k8s_references'):
        k8s_references(value)
