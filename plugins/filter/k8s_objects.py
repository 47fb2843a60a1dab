# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Filters k8s_group_specs, k8s_alert_rule, k8s_references, k8s_namespaces, k8s_namespace_objects,
k8s_ngc_secrets, k8s_ssh_secret, k8s_missing_monitoring, k8s_group_objects, k8s_render_files,
k8s_ssh_secret_groups and k8s_operator_running of the role nim_k8s: the Kubernetes objects of the
groups, built from the plan (docs in the .yml files)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.nimstack.multinode.plugins.filter.k8s_object_files import k8s_object_files
from ansible_collections.nimstack.multinode.plugins.filter.k8s_preflight import plan_argument, settings_argument
from ansible_collections.nimstack.multinode.plugins.module_utils.lazy import lazy_module

k8s_objects = lazy_module('k8s_objects')


def k8s_group_specs(plan, settings, header=None):
    try:
        specs = k8s_objects.group_specs(plan_argument('k8s_group_specs', plan), settings_argument('k8s_group_specs', settings))
    except k8s_objects.K8sObjectsError as exc:
        raise AnsibleFilterError('k8s_group_specs: %s' % exc)
    if header is not None:
        # Written here, while the objects are plain Python data: once kept as a fact, every later
        # read of them goes value by value through the templating layer (a second or more for the
        # objects of a thousand ranks).
        for name, spec in specs.items():
            spec['files'] = k8s_object_files({name: spec['objects']}, header=header)
    return specs


def k8s_alert_rule(plan, settings, missing_kinds=None):
    try:
        rule = k8s_objects.alert_rule(plan_argument('k8s_alert_rule', plan), settings_argument('k8s_alert_rule', settings))
    except k8s_objects.K8sObjectsError as exc:
        raise AnsibleFilterError('k8s_alert_rule: %s' % exc)
    return [rule] if rule and rule['kind'] not in (missing_kinds or []) else []


def k8s_references(objects):
    if not isinstance(objects, list) or not all(isinstance(o, dict) and isinstance(o.get('metadata'), dict) for o in objects):
        raise AnsibleFilterError('k8s_references: expects a list of Kubernetes objects, got %r' % (objects,))
    return [{'apiVersion': o.get('apiVersion'), 'kind': o.get('kind'),
             'metadata': dict((k, o['metadata'][k]) for k in ('name', 'namespace') if k in o['metadata'])}
            for o in objects]


def k8s_namespaces(plan):
    return k8s_objects.namespaces(plan_argument('k8s_namespaces', plan))


def k8s_namespace_objects(names):
    return k8s_objects.namespace_objects(list(names or []))


def k8s_ngc_secrets(names, auth_secret, pull_secret, registry, key):
    return k8s_objects.ngc_secret_objects(list(names or []), auth_secret, pull_secret, registry, key)


def _spec(name, spec):
    if not isinstance(spec, dict) or 'objects' not in spec or 'ssh_secret' not in spec:
        raise AnsibleFilterError('%s: expects one group spec of k8s_group_specs, got %r' % (name, type(spec).__name__))
    return spec


def k8s_ssh_secret(spec, private_key='', host_key='', host_public=''):
    return k8s_objects.ssh_secret_object(_spec('k8s_ssh_secret', spec), private_key, host_key, host_public)


def k8s_missing_monitoring(crds):
    return k8s_objects.missing_monitoring(None if crds is None else list(crds))


def k8s_group_objects(spec, backend, missing_kinds=None, keep_storage=False):
    return k8s_objects.group_objects(_spec('k8s_group_objects', spec), backend, list(missing_kinds or []),
                                     bool(keep_storage))


def k8s_render_files(specs):
    return k8s_objects.render_files(dict(specs or {}))


def k8s_ssh_secret_groups(plan, backend, render_secrets=False):
    return k8s_objects.ssh_secret_groups(plan_argument('k8s_ssh_secret_groups', plan), backend, bool(render_secrets))


def k8s_operator_running(deployments):
    return k8s_objects.operator_running(list(deployments or []))


class FilterModule(object):
    def filters(self):
        return {
            'k8s_group_specs': k8s_group_specs,
            'k8s_alert_rule': k8s_alert_rule,
            'k8s_references': k8s_references,
            'k8s_namespaces': k8s_namespaces,
            'k8s_namespace_objects': k8s_namespace_objects,
            'k8s_ngc_secrets': k8s_ngc_secrets,
            'k8s_ssh_secret': k8s_ssh_secret,
            'k8s_missing_monitoring': k8s_missing_monitoring,
            'k8s_group_objects': k8s_group_objects,
            'k8s_render_files': k8s_render_files,
            'k8s_ssh_secret_groups': k8s_ssh_secret_groups,
            'k8s_operator_running': k8s_operator_running,
        }
