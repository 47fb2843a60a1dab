# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The LeaderWorkerSet release manifest with the role lws's settings applied (gang scheduling).

Pure: the manifest's objects in, the patched objects out. The YAML of the controller's own
configuration (a string inside its ConfigMap) is read and written by the load and dump the
caller passes, so that the filter writes it exactly as the role's other YAML.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

CONTROLLER = 'lws-controller-manager'


def merge(base, update):
    """Ansible's combine(recursive=true): mappings merge key by key, anything else is replaced."""
    out = dict(base)
    for key, value in update.items():
        if isinstance(out.get(key), dict) and isinstance(value, dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def patch_manifest(objects, gang, configmap, config_key, annotation, checksum, load, dump, extra=None):
    """The manifest's objects with gang merged into the manager's configuration (the ConfigMap
    named configmap, its key config_key), the checksum annotated on the controller's pod template
    so that a change rolls it, and the extra objects (RBAC) appended. Other objects are kept as
    they are."""
    out = []
    for obj in objects:
        kind = obj.get('kind')
        name = (obj.get('metadata') or {}).get('name')
        if kind == 'ConfigMap' and name == configmap:
            config = merge(load(obj['data'][config_key]) or {}, gang)
            out.append(merge(obj, {'data': {config_key: dump(config)}}))
        elif kind == 'Deployment' and name == CONTROLLER:
            out.append(merge(obj, {'spec': {'template': {'metadata': {'annotations': {annotation: checksum}}}}}))
        else:
            out.append(obj)
    return out + list(extra or [])
