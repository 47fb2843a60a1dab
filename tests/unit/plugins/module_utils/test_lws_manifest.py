# -*- coding: utf-8 -*-
"""The LeaderWorkerSet release manifest with gang scheduling applied (role lws, install method file)."""

import os

import yaml

from ansible_collections.nimstack.multinode.plugins.module_utils.lws_manifest import merge, patch_manifest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
MANIFEST = os.path.join(REPO, 'tests', 'k8s', 'fixtures', 'lws-manifests-trimmed.txt')
GANG = {'gangSchedulingManagement': {'schedulerProvider': 'volcano'}}
KEY = 'controller_manager_config.yaml'
RBAC = [{'apiVersion': 'rbac.authorization.k8s.io/v1', 'kind': 'ClusterRole', 'metadata': {'name': 'x'}}]


def _objects():
    with open(MANIFEST, encoding='utf-8') as handle:
        return [obj for obj in yaml.safe_load_all(handle) if obj]


def _patch(objects, extra=None):
    return patch_manifest(objects, GANG, 'lws-manager-config', KEY, 'nimstack.multinode/lws-config-checksum', 'abc',
                          yaml.safe_load, lambda data: yaml.safe_dump(data, sort_keys=True), extra)


def test_the_configmap_gets_gang_scheduling_and_keeps_the_rest_of_its_configuration():
    objects = _objects()
    before = yaml.safe_load(next(o for o in objects if o['kind'] == 'ConfigMap')['data'][KEY])
    patched = _patch(objects)
    config = yaml.safe_load(next(o for o in patched if o['kind'] == 'ConfigMap')['data'][KEY])
    assert config['gangSchedulingManagement'] == {'schedulerProvider': 'volcano'}
    assert dict((k, v) for k, v in config.items() if k != 'gangSchedulingManagement') == before


def test_the_controller_is_annotated_with_the_checksum_and_other_objects_are_kept():
    objects = _objects()
    patched = _patch(objects, RBAC)
    controller = next(o for o in patched if o['kind'] == 'Deployment')
    assert controller['spec']['template']['metadata']['annotations']['nimstack.multinode/lws-config-checksum'] == 'abc'
    assert controller['spec']['template']['spec'] == next(o for o in objects if o['kind'] == 'Deployment')['spec']['template']['spec']
    assert [o['kind'] for o in patched] == [o['kind'] for o in objects] + ['ClusterRole']
    for before, after in zip(objects, patched):
        if before['kind'] not in ('ConfigMap', 'Deployment'):
            assert before == after
    # The input is not modified.
    assert objects == _objects()


def test_merge_is_recursive_for_mappings_and_replaces_the_rest():
    assert merge({'a': {'b': 1, 'c': [1]}, 'd': 1}, {'a': {'c': [2], 'e': 3}, 'd': {'x': 1}}) == \
        {'a': {'b': 1, 'c': [2], 'e': 3}, 'd': {'x': 1}}
