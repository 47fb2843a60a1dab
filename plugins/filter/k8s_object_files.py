# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Filter k8s_object_files: Kubernetes objects as the files render-only mode writes (docs in k8s_object_files.yml)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible.plugins.filter.core import to_nice_yaml


def _unshared(value):
    """A copy in which no container appears twice: YAML would write the second as an alias of the
    first (the objects of k8s_group_specs share their leader's and workers' mounts, for one)."""
    if isinstance(value, Mapping):
        return dict((key, _unshared(item)) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return [_unshared(item) for item in value]
    return value


def _file(directory, obj, header, mode):
    try:
        kind, name = obj['kind'], obj['metadata']['name']
    except (KeyError, TypeError):
        # Names the keys only: the object may be a Secret, whose values must not reach a message.
        raise AnsibleFilterError('k8s_object_files: every object needs kind and metadata.name; got a %s with keys %s'
                                 % (type(obj).__name__, sorted(obj) if isinstance(obj, Mapping) else []))
    if directory is None:
        # A namespaced object goes with its namespace, a Namespace with itself.
        directory = '_namespaces/%s' % (obj['metadata'].get('namespace') or name)
    entry = {'path': '%s/%s-%s.yaml' % (directory, kind, name),
             'content': header + to_nice_yaml(_unshared(obj), indent=2, sort_keys=True)}
    if mode is not None:
        entry['mode'] = mode
    return entry


def k8s_object_files(objects, header='', mode=None):
    """objects: a list (each file under _namespaces/<namespace>/) or a mapping of directory -> list."""
    if isinstance(objects, Mapping):
        return [_file(directory, obj, header, mode) for directory, group in objects.items() for obj in group]
    if isinstance(objects, (list, tuple)):
        return [_file(None, obj, header, mode) for obj in objects]
    raise AnsibleFilterError('k8s_object_files: expects a list of objects or a mapping of directories to lists, got %r'
                             % type(objects).__name__)


class FilterModule(object):
    def filters(self):
        return {'k8s_object_files': k8s_object_files}
