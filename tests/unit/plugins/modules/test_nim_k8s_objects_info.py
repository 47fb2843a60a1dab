# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""nim_k8s_objects_info: kinds times namespaces in one pass, metadata only."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.nimstack.multinode.plugins.modules.nim_k8s_objects_info import list_objects


class FakeService:
    """K8sService.find as kubernetes.core answers it: api_found False for a kind not served."""

    def __init__(self, objects, served):
        self.objects, self.served, self.calls = objects, served, []

    def find(self, kind, api_version, namespace=None, label_selectors=None):
        self.calls.append((kind, namespace, tuple(label_selectors or ())))
        if kind not in self.served:
            return {'resources': [], 'api_found': False}
        return {'resources': [o for o in self.objects if o['kind'] == kind and o['metadata']['namespace'] == namespace],
                'api_found': True}


SECRET = {
    'apiVersion': 'v1', 'kind': 'Secret', 'type': 'Opaque', 'data': {'NGC_API_KEY': 'bnZhcGkt'},
    'metadata': {'name': 'team-ngc', 'namespace': 'nim', 'managedFields': [{'manager': 'kubectl'}],
                 'annotations': {'kubectl.kubernetes.io/last-applied-configuration': '{"data":{"NGC_API_KEY":"bnZhcGkt"}}',
                                 'team': 'a'}},
}
CONFIG = {'apiVersion': 'v1', 'kind': 'ConfigMap', 'data': {'k': 'v'}, 'metadata': {'name': 'env', 'namespace': 'other'}}


def test_every_kind_in_every_namespace_metadata_only():
    service = FakeService([SECRET, CONFIG], served={'Secret', 'ConfigMap'})
    found, missing = list_objects(service, [{'api_version': 'v1', 'kind': 'Secret'}, {'api_version': 'v1', 'kind': 'ConfigMap'}],
                                  ['nim', 'other'], ['a=b'])
    assert missing == []
    assert [(o['kind'], o['metadata']['name']) for o in found] == [('Secret', 'team-ngc'), ('ConfigMap', 'env')]
    assert service.calls == [('Secret', 'nim', ('a=b',)), ('Secret', 'other', ('a=b',)),
                             ('ConfigMap', 'nim', ('a=b',)), ('ConfigMap', 'other', ('a=b',))]
    secret = found[0]
    assert set(secret) == {'apiVersion', 'kind', 'metadata'}
    assert 'bnZhcGkt' not in repr(found)
    assert secret['metadata']['annotations'] == {'team': 'a'}
    assert 'managedFields' not in secret['metadata']
    assert SECRET['metadata']['managedFields'], 'the object read is left as it was'


def test_a_kind_not_served_is_named_once_and_lists_nothing():
    service = FakeService([SECRET], served={'Secret'})
    found, missing = list_objects(service, [{'api_version': 'apps.nvidia.com/v1alpha1', 'kind': 'NIMService'},
                                            {'api_version': 'v1', 'kind': 'Secret'}], ['nim', 'other'], [])
    assert missing == ['apps.nvidia.com/v1alpha1/NIMService']
    assert [o['metadata']['name'] for o in found] == ['team-ngc']
    assert [c[0] for c in service.calls].count('NIMService') == 1
