# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The front door's view of the plan: which leaders serve which model.

A front door (role nim_frontend) balances OpenAI-API traffic over the leaders of the Docker
deployment groups that serve the same model. Every group's leader is one server; groups are
pooled by the model they serve, which is the group's ``nim_frontend_model`` or, by default, the
name NIM serves for its image: the image path without the registry and without the leading
``nim/`` (``nvcr.io/nim/meta/llama-3.1-405b-instruct`` serves ``meta/llama-3.1-405b-instruct``).
No Ansible imports: the filter and the tests use this directly.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.nimstack.multinode.plugins.module_utils import settings as declared
from ansible_collections.nimstack.multinode.plugins.module_utils.group_members import groups_of
from ansible_collections.nimstack.multinode.plugins.module_utils.input_checks import as_bool

_BACKEND_NAME = re.compile(r'[^A-Za-z0-9_.-]+')

# The role's settings frontend_problems() reads, with their declared defaults (roles/nim_frontend/meta/argument_specs.yml).
SETTING_DEFAULTS = declared.defaults(('nim_frontend_state', 'nim_frontend_port', 'nim_frontend_metrics_port'))
# What drain_marks() reads of a front door's host, with the declared defaults.
DRAIN_DEFAULTS = declared.defaults(('nim_frontend_state', 'nim_frontend_load_aware', 'nim_frontend_config_dir'))
# The directory of the drain marks, under nim_frontend_config_dir.
DRAINS_DIR = 'drains'
# The group supervisor's settings on a front door's host, with the inventory-wide defaults
# (nim_docker_supervisor and nim_docker_supervisor_port default to them).
SUPERVISOR_DEFAULTS = declared.defaults(('nim_group_supervisor', 'nim_group_supervisor_port'))
SETTING_NAMES = tuple(sorted(SETTING_DEFAULTS)) + tuple(sorted(SUPERVISOR_DEFAULTS)) + (
    'nim_docker_supervisor', 'nim_docker_supervisor_port')
PROBLEM_ON_KUBERNETES = ("nim_frontend host %s is a host of group '%s', which runs on Kubernetes "
                         "(nim_deployment_mode=kubernetes): the front door would log in to it, and the hosts of a "
                         "Kubernetes group are never contacted; put the front door on another host")
PROBLEM_PORT = ("%s=%s on host %s is also the %s port (nim_%s_port) of group '%s' on that host: the "
                "front door and the rank share the host network; choose another port")
PROBLEM_METRICS_PORT = ("nim_frontend_metrics_port=%s on host %s is also nim_frontend_port: the front door's metrics "
                        "need a port of their own; choose another port")
PROBLEM_SUPERVISOR_PORT = ("%s=%s on host %s is also the port of the supervisor of group '%s' on that "
                           "host (nim_docker_supervisor_port, inventory-wide nim_group_supervisor_port): both listen "
                           "on the host network; choose another port")


def served_model(image, override=None):
    """The model name a NIM image serves, or override when the group sets one."""
    if override:
        return str(override)
    path = str(image or '').split('@', 1)[0]
    last = path.rsplit('/', 1)[-1]
    if ':' in last:
        path = path[:len(path) - len(last)] + last.split(':', 1)[0]
    parts = path.split('/')
    # A registry host has a dot or a port (nvcr.io, registry.lab:5000) or is localhost.
    if len(parts) > 1 and ('.' in parts[0] or ':' in parts[0] or parts[0] == 'localhost'):
        parts = parts[1:]
    if len(parts) > 1 and parts[0] == 'nim':
        parts = parts[1:]
    return '/'.join(parts)


def backend_name(model):
    return 'model_' + _BACKEND_NAME.sub('_', model).strip('_')


def frontend_pools(groups):
    """Pools of leaders by served model, from the plan's groups (a dict name -> group, as
    nim_plan returns them). Only valid Docker groups with a leader count. Returns a list of
    {'model', 'backend', 'servers': [{'name', 'group', 'address', 'port'}]} sorted by model,
    servers sorted by group name, so that the rendered configuration is stable."""
    pools = {}
    for name, group in groups_of(groups, 'docker', valid=True, led=True):
        settings = group.get('settings') or {}
        model = served_model(settings.get('nim_image'), settings.get('nim_frontend_model'))
        pool = pools.setdefault(model, {'model': model, 'backend': backend_name(model), 'servers': []})
        pool['servers'].append({'name': 'group_%s' % name, 'group': name,
                                'address': group['leader']['address'],
                                'port': int(group['ports']['api'])})
    return [pools[model] for model in sorted(pools)]


def drain_marks(groups, group, stopping, frontends):
    """Where a planned restart of ``group`` drains it first: [{'host', 'path'}], one drain mark per
    front door (``frontends``: {host: its DRAIN_DEFAULTS settings}, the hosts of nim_frontend) whose
    load-aware weights service sends the group requests. The weights service gives the group's
    leader weight 0 while the mark lives (frontend_weights, the service). Empty where draining cannot
    help: the group is in no pool, or every other group of its pool stops too (``stopping``, the
    groups of the wave), so that the front door would have nowhere else to send a request."""
    pool = [p for p in frontend_pools(groups) if group in [s['group'] for s in p['servers']]]
    if not pool or not [s for s in pool[0]['servers'] if s['group'] not in set(stopping or []) | {group}]:
        return []
    marks = []
    for host in sorted(frontends or {}):
        settings = dict(DRAIN_DEFAULTS)
        settings.update((k, v) for k, v in (frontends[host] or {}).items() if k in DRAIN_DEFAULTS and v is not None)
        if settings['nim_frontend_state'] == 'present' and as_bool(settings['nim_frontend_load_aware']):
            marks.append({'host': host, 'path': '%s/%s/%s' % (
                str(settings['nim_frontend_config_dir']).rstrip('/'), DRAINS_DIR, group)})
    return marks


def frontend_problems(plan, frontends):
    """What the front door cannot do with this plan, found on the controller before any host is
    contacted. frontends: {host: its SETTING_NAMES} for every host of nim_frontend (a missing
    setting takes the role's default). A front door on a host of a Kubernetes group, or on a port
    that a rank or the group supervisor of a Docker group listens on on the same host, is refused."""
    hosts = (plan or {}).get('hosts') or {}
    groups = (plan or {}).get('groups') or {}
    problems = []
    for host in sorted(frontends or {}):
        settings = dict(SETTING_DEFAULTS, **SUPERVISOR_DEFAULTS)
        settings.update((k, v) for k, v in (frontends[host] or {}).items() if k in SETTING_NAMES)
        if settings['nim_frontend_state'] != 'present':
            continue
        entry = hosts.get(host) or {}
        if entry.get('mode') == 'kubernetes':
            problems.append(PROBLEM_ON_KUBERNETES % (host, entry.get('group')))
            continue
        ports = (('nim_frontend_port', str(settings['nim_frontend_port'])),
                 ('nim_frontend_metrics_port', str(settings['nim_frontend_metrics_port'])))
        if ports[0][1] == ports[1][1]:
            problems.append(PROBLEM_METRICS_PORT % (ports[1][1], host))
        group = groups.get(entry.get('group')) or {}
        if entry.get('mode') != 'docker' or not group.get('valid'):
            continue
        supervisor = settings.get('nim_docker_supervisor', settings['nim_group_supervisor'])
        supervisor_port = settings.get('nim_docker_supervisor_port', settings['nim_group_supervisor_port'])
        for variable, port in ports:
            for name in sorted(group.get('ports') or {}):
                if str(group['ports'][name]) == port:
                    problems.append(PROBLEM_PORT % (variable, port, host, name, name, group.get('name')))
            if as_bool(supervisor) and str(supervisor_port) == port:
                problems.append(PROBLEM_SUPERVISOR_PORT % (variable, port, host, group.get('name')))
    return problems
