# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: nim_k8s_objects_info
short_description: List the objects of several kinds in several namespaces in one call, metadata only
version_added: 0.1.0
description:
  - Lists every object of each of O(kinds) in each of O(namespaces) that matches O(label_selectors),
    with one API client and one API discovery for them all, where a loop of
    M(kubernetes.core.k8s_info) starts a module and discovers the API once per kind and namespace.
  - Returns of each object its C(apiVersion), C(kind) and C(metadata) only, never its C(data),
    C(spec) or C(status), and without C(managedFields) and the
    C(kubectl.kubernetes.io/last-applied-configuration) annotation, which repeats an object applied
    by C(kubectl apply), a Secret's data included. So a Secret's contents never reach a result or a log.
  - A kind the API server does not serve (its CustomResourceDefinition is not installed) has no
    objects and is named in RV(missing_kinds).
author:
  - nimstack maintainers (@nimstack)
options:
  kinds:
    description: The kinds to list.
    type: list
    elements: dict
    required: true
    suboptions:
      api_version:
        description: The kind's C(apiVersion).
        type: str
        default: v1
      kind:
        description: The kind.
        type: str
        required: true
  namespaces:
    description: The namespaces to list them in.
    type: list
    elements: str
    required: true
  label_selectors:
    description: Label selectors every object must match, as M(kubernetes.core.k8s_info) takes them.
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - nimstack.multinode.attributes.k8s_read
'''

EXAMPLES = r'''
- name: Look up what the collection made for group alpha
  nimstack.multinode.nim_k8s_objects_info:
    kinds:
      - {kind: ConfigMap}
      - {kind: Secret}
      - {api_version: leaderworkerset.x-k8s.io/v1, kind: LeaderWorkerSet}
      - {api_version: apps.nvidia.com/v1alpha1, kind: NIMService}
    namespaces: [nim]
    label_selectors:
      - app.kubernetes.io/managed-by=nimstack.multinode
      - nimstack.multinode/group=alpha
  register: earlier
'''

RETURN = r'''
resources:
  description: The objects found, C(apiVersion), C(kind) and C(metadata) of each, by kind then namespace.
  returned: always
  type: list
  elements: dict
  sample:
    - apiVersion: v1
      kind: ConfigMap
      metadata: {name: nim-alpha-env, namespace: nim, labels: {nimstack.multinode/group: alpha}}
missing_kinds:
  description: The kinds of O(kinds) the API server does not serve, as C(apiVersion/kind).
  returned: always
  type: list
  elements: str
  sample: [apps.nvidia.com/v1alpha1/NIMService]
'''

import copy

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.core import AnsibleK8SModule
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import CoreException
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.service import K8sService


LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration'


def metadata_of(obj):
    """An object's metadata without what may repeat its contents."""
    metadata = dict(obj.get('metadata') or {})
    metadata.pop('managedFields', None)
    if LAST_APPLIED in (metadata.get('annotations') or {}):
        metadata['annotations'] = dict((k, v) for k, v in metadata['annotations'].items() if k != LAST_APPLIED)
    return metadata


def list_objects(service, kinds, namespaces, label_selectors):
    """(objects, missing kinds): each object's apiVersion, kind and metadata, kind by kind."""
    found, missing = [], []
    for entry in kinds:
        for namespace in namespaces:
            result = service.find(entry['kind'], entry['api_version'], namespace=namespace,
                                  label_selectors=label_selectors)
            if not result.get('api_found', True):
                missing.append('%s/%s' % (entry['api_version'], entry['kind']))
                break
            for obj in result['resources']:
                found.append({'apiVersion': obj.get('apiVersion', entry['api_version']),
                              'kind': obj.get('kind', entry['kind']), 'metadata': metadata_of(obj)})
    return found, missing


def main():
    argument_spec = copy.deepcopy(AUTH_ARG_SPEC)
    argument_spec.update(
        kinds=dict(type='list', elements='dict', required=True, options=dict(
            api_version=dict(type='str', default='v1'),
            kind=dict(type='str', required=True),
        )),
        namespaces=dict(type='list', elements='str', required=True),
        label_selectors=dict(type='list', elements='str', default=[]),
    )
    module = AnsibleK8SModule(module_class=AnsibleModule, argument_spec=argument_spec, supports_check_mode=True)
    try:
        service = K8sService(get_api_client(module), module)
        resources, missing = list_objects(service, module.params['kinds'], module.params['namespaces'],
                                          module.params['label_selectors'])
    except CoreException as exc:
        module.fail_from_exception(exc)
    module.exit_json(changed=False, resources=resources, missing_kinds=missing)


if __name__ == '__main__':
    main()
