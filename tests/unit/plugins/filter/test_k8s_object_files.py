# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Render-only mode's files: one per object, named by directory, kind and name, written the same way twice."""

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.nimstack.multinode.plugins.filter.k8s_object_files import k8s_object_files

HEADER = '# Rendered by nimstack.multinode; do not edit.\n'
SERVICE = {'apiVersion': 'v1', 'kind': 'Service', 'metadata': {'name': 'nim-alpha', 'namespace': 'nim'},
           'spec': {'ports': [{'port': 8000, 'name': 'http'}], 'clusterIP': 'None'}}
NAMESPACE = {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': 'nim', 'labels': {'b': '2', 'a': '1'}}}
SECRET = {'apiVersion': 'v1', 'kind': 'Secret', 'metadata': {'name': 'ngc-api', 'namespace': 'nim'},
          'stringData': {'NGC_API_KEY': 'nvapi-test'}}


def test_a_mapping_puts_each_list_in_its_directory():
    files = k8s_object_files({'alpha': [SERVICE], 'beta': [dict(SERVICE, kind='ConfigMap')]}, header=HEADER)
    assert [f['path'] for f in files] == ['alpha/Service-nim-alpha.yaml', 'beta/ConfigMap-nim-alpha.yaml']
    assert all('mode' not in f for f in files)


def test_a_list_goes_under_the_namespace_and_a_namespace_under_its_own_name():
    files = k8s_object_files([NAMESPACE, SECRET], header=HEADER, mode='0600')
    assert [f['path'] for f in files] == ['_namespaces/nim/Namespace-nim.yaml', '_namespaces/nim/Secret-ngc-api.yaml']
    assert [f['mode'] for f in files] == ['0600', '0600']


def test_the_content_is_the_header_and_the_object_with_sorted_keys_indented_by_two():
    content = k8s_object_files([NAMESPACE], header=HEADER)[0]['content']
    assert content.startswith(HEADER)
    body = content[len(HEADER):]
    assert yaml.safe_load(body) == NAMESPACE
    assert body.splitlines()[:5] == ['apiVersion: v1', 'kind: Namespace', 'metadata:', '  labels:', '    a: \'1\'']
    assert k8s_object_files([NAMESPACE], header=HEADER)[0]['content'] == content


@pytest.mark.parametrize('bad', ['text', 7, [{'kind': 'Service'}], [{'metadata': {'name': 'x'}}], ['text']])
def test_anything_else_is_refused_naming_the_filter(bad):
    with pytest.raises(AnsibleFilterError, match='k8s_object_files'):
        k8s_object_files(bad)


def test_a_refused_object_is_named_by_its_keys_never_its_values():
    with pytest.raises(AnsibleFilterError) as refused:
        k8s_object_files([{'apiVersion': 'v1', 'stringData': {'NGC_API_KEY': 'nvapi-test'}}])
    assert 'stringData' in str(refused.value)
    assert 'nvapi-test' not in str(refused.value)


def test_a_container_met_twice_is_written_out_twice_never_as_an_alias():
    mounts = [{'name': 'model-store', 'mountPath': '/model-store'}]
    pod = {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': 'p'},
           'spec': {'containers': [{'name': 'a', 'volumeMounts': mounts}, {'name': 'b', 'volumeMounts': mounts}]}}
    body = k8s_object_files([pod])[0]['content']
    assert '&' not in body and '*' not in body
    assert body.count('mountPath: /model-store') == 2
