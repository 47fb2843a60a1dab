# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Filter lws_patched_manifest of the role lws (docs in lws_patched_manifest.yml)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.plugins.filter.core import from_yaml, to_nice_yaml

from ansible_collections.nimstack.multinode.plugins.module_utils.lazy import lazy_module

_lws = lazy_module('lws_manifest')


def _dump(data):
    return to_nice_yaml(data, indent=2, sort_keys=True)


def lws_patched_manifest(objects, gang, configmap, config_key, annotation, checksum, extra=None):
    if not isinstance(objects, list) or not all(isinstance(obj, dict) for obj in objects):
        raise AnsibleFilterError('lws_patched_manifest: expects the list of the manifest objects')
    try:
        return _lws.patch_manifest(objects, gang, configmap, config_key, annotation, checksum, from_yaml, _dump, extra)
    except (KeyError, TypeError, AttributeError) as exc:
        raise AnsibleFilterError('lws_patched_manifest: the manifest is not in the expected shape: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'lws_patched_manifest': lws_patched_manifest}
