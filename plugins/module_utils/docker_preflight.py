# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The Docker path's preflight (role nim_docker, tasks/preflight.yml), on the controller.

Pure functions of the plan of nim_plan ({groups, hosts}), the hosts of the play and, per group,
the role's inputs as its first member in the play sees them (the role reads them from hostvars:
only Ansible knows a host's variables). Every problem of every group comes back at once; the
role fails once, naming them all.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re

from ansible_collections.nimstack.multinode.plugins.module_utils.docker_spec import bundle_image, docker_groups
from ansible_collections.nimstack.multinode.plugins.module_utils.values import ansible_int as as_int
from ansible_collections.nimstack.multinode.plugins.module_utils.input_checks import (
    RULES, as_bool, check_value, gid_clash_problems, image_reference)

ULIMIT_PATTERN = re.compile(r'^[a-z]+:-?[0-9]+(:-?[0-9]+)?\Z')

EMPTY_PLAN = ('nim_docker_plan: empty; pass the plan of nimstack.multinode.nim_plan'
              ' (playbooks/deploy_docker.yml does)')
NOT_A_PLAN = ('nim_docker_plan: not a whole plan (it has no groups and hosts); pass the result of'
              ' nimstack.multinode.nim_plan (nim_planned), not its groups')


def _as_list(value):
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def _unique(items):
    out = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


def preflight_groups(plan, play_hosts, inputs=None):
    """Every Docker group with a member in the play, with its members in and out of the play and,
    when ``inputs`` ({group name: inputs}) holds its entry, the role's inputs for it."""
    play = list(play_hosts or [])
    out = []
    for group in docker_groups(plan):
        hosts = list(group.get('hosts') or [])
        in_play = [h for h in hosts if h in play]
        if not in_play:
            continue
        entry = {'name': group.get('name'), 'hosts': hosts, 'in_play': in_play,
                 'missing': [h for h in hosts if h not in play]}
        entry.update((inputs or {}).get(group.get('name')) or {})
        out.append(entry)
    return out


def _member_value(member, names, otherwise):
    """The first of names the member sets (the role's variable, then the inventory-wide one)."""
    for name in names:
        if name in member:
            return member[name]
    return otherwise


def preflight_inputs(plan, play_hosts, host_vars, play_inputs, key_from_inventory=False):
    """Per name of every Docker group with a member in the play, the role's inputs as
    preflight_problems() takes them, as the group's first member in the play sees them.

    The role's inputs are settings of the whole inventory as a rule; a group that overrides one
    (group_vars of its child group, host vars) is read from its first member in the play
    (host_vars: host -> its variables, each read only when taken), the play's own value otherwise
    (play_inputs: the role's variables by name, and key_set: whether nim_docker_ngc_api_key is
    set). The NGC key enters only as whether it is set: the member's nim_docker_ngc_api_key, else
    its nim_ngc_api_key. Where the key comes from the inventory (key_from_inventory), a group
    without one has none: the play's value is that of the host the task runs on, another group's.
    """
    inputs = {}
    for group in preflight_groups(plan, play_hosts):
        member = host_vars[group['in_play'][0]]

        def read(*names):
            return _member_value(member, names, play_inputs.get(names[0]))

        key_names = [name for name in ('nim_docker_ngc_api_key', 'nim_ngc_api_key') if name in member]
        inputs[group['name']] = {
            'present': read('nim_docker_state') == 'present',
            'archive': read('nim_docker_image_archive'),
            'download_archive': read('nim_docker_download_image_archive'),
            'archive_on_nodes': as_bool(read('nim_docker_image_archive_on_nodes')) is True,
            'key_set': (len(member[key_names[0]] or '') > 0 if key_names
                        else as_bool(play_inputs.get('key_set')) is True and not key_from_inventory),
            'registry': read('nim_docker_registry'),
            'download_image': read('nim_docker_download_image'),
            'bundle_url': read('nimstack_bundle_url'),
            'mesh_port': _member_value(member, ('ssh_mesh_port',), None),
            'mesh_gid': _member_value(member, ('ssh_mesh_secrets_gid', 'nim_secrets_gid'), None),
            'ulimits': read('nim_docker_ulimits'),
            'supervisor': read('nim_docker_supervisor', 'nim_group_supervisor'),
            'supervisor_port': read('nim_docker_supervisor_port', 'nim_group_supervisor_port'),
        }
    return inputs


def _gid_problems(name, secrets_gid, mesh_gid, ssh_mesh, container_gid):
    """The gids of a group's member that must not meet, as the inventory's check reads them
    (input_checks.GIDS): the ranks' and, where the group needs it, the mesh's secrets gid (mesh_gid
    None: the default) are one, and neither is the containers' gid. secrets_gid is one its rule
    accepts (a gid it refuses is named by that rule, not here)."""
    hvars = {'nim_docker_secrets_gid': secrets_gid, 'nim_docker_container_gid': container_gid, 'nfs_enabled': False,
             'nim_launch_contract': 'mpi' if ssh_mesh else 'ray'}
    if mesh_gid is not None:
        hvars['ssh_mesh_secrets_gid'] = mesh_gid
    return ["group '%s': %s=%s %s" % (name, variable, gid, problem)
            for variable, gid, problem in gid_clash_problems(hvars, {'docker'})]


def preflight_problems(plan, play_hosts, inputs, deploying=True, allow_partial=False, secrets_gid=0,
                       ulimits=None, is_file=os.path.isfile, canary=None, container_gid=1000):
    """Every problem the Docker preflight finds, in one list without repeats.

    plan: the whole plan of nim_plan. play_hosts: the hosts of the play. inputs: per group name,
    the role's inputs as its first member in the play sees them: present (nim_docker_state is
    present), archive (nim_docker_image_archive), download_archive (nim_docker_download_image_archive),
    archive_on_nodes, key_set (whether an NGC key is set; never the key), registry, download_image
    (nim_docker_download_image), bundle_url (nimstack_bundle_url: offline mode where set), mesh_port
    (ssh_mesh_port, None when unset), mesh_gid (ssh_mesh_secrets_gid, else nim_secrets_gid; None when
    neither is set, for the default), ulimits, supervisor and supervisor_port (nim_docker_supervisor
    and its port). deploying:
    whether the run deploys (a partial group is refused only then). allow_partial:
    nim_docker_allow_partial_group. secrets_gid, ulimits: the play's nim_docker_secrets_gid and
    nim_docker_ulimits. is_file: tells whether a path is a file on the controller. canary:
    nim_canary_group, a Docker group of the plan when set. container_gid: nim_docker_container_gid.
    """
    errors = []
    if not isinstance(plan, dict) or not plan:
        errors.append(EMPTY_PLAN)
    elif 'groups' not in plan or 'hosts' not in plan:
        errors.append(NOT_A_PLAN)
    groups = dict((g.get('name'), g) for g in docker_groups(plan))
    # The secrets group's gid by the controller's rule of the setting (inventory-wide nim_secrets_gid).
    gid_problem = check_value('nim_docker_secrets_gid', '' if secrets_gid is None else secrets_gid)
    summaries = preflight_groups(plan, play_hosts, inputs)
    for summary in summaries:
        name = summary['name']
        group = groups[name]
        settings = group.get('settings') or {}
        launch = group.get('launch') or {}
        if not group.get('valid', False):
            errors.append("group '%s' is not valid: %s" % (name, '; '.join(str(e) for e in group.get('errors') or [])))
        if summary['missing'] and deploying and not allow_partial:
            errors.append(
                "group '%s': members %s are not in this play (--limit, an AWX slice, a failed or unreachable host);"
                ' a multi-node group is deployed as a whole, so include every member (--limit %s, or no --limit)'
                ' and run again; host preparation alone (prepare_hosts.yml, --tags prepare) runs on part of a group'
                % (name, ', '.join(summary['missing']), ','.join(summary['hosts'])))
        present = bool(summary.get('present', True))
        archive = summary.get('archive') or ''
        image = image_reference(settings.get('nim_image') or '', settings.get('nim_image_tag'))
        # Offline mode: an image of a registry on the internet that no archive carries in comes from the
        # bundle (the OS check's bundle_problems says whether the bundle holds it); none is pulled from there.
        from_bundle = bundle_image(image, archive, summary.get('bundle_url'))
        if present and not archive and not from_bundle and not summary.get('key_set', False):
            errors.append(
                "group '%s': nim_ngc_api_key (nim_docker_ngc_api_key) is empty, but %s is pulled from %s;"
                ' provide the key (ansible-vault or an AWX credential) or ship the image as an archive'
                ' (nim_docker_image_archive)' % (name, image, summary.get('registry', '')))
        for variable, path in (('nim_docker_image_archive', archive),
                               ('nim_docker_download_image_archive', summary.get('download_archive') or '')):
            if present and path and not summary.get('archive_on_nodes', False) and not is_file(path):
                errors.append('%s=%s: no such file on the controller (set nim_docker_image_archive_on_nodes=true'
                              ' when the path is on the nodes)' % (variable, path))
        if present and as_bool(summary.get('supervisor', False)) is True:
            supervisor_port = as_int(summary.get('supervisor_port'))
            clashes = sorted(name_ for name_, port in (group.get('ports') or {}).items() if as_int(port) == supervisor_port)
            if clashes:
                errors.append("group '%s': nim_docker_supervisor_port=%s (inventory-wide nim_group_supervisor_port) is "
                              "also the group's %s port (%s): the supervisor listens on every member beside the ranks, "
                              'on the host network; choose another port'
                              % (name, summary.get('supervisor_port'), ', '.join(clashes),
                                 ', '.join('nim_%s_port' % c for c in clashes)))
        mesh_port = summary.get('mesh_port')
        ssh_port = settings.get('nim_ssh_port', '')
        if present and launch.get('ssh_mesh') and mesh_port is not None and as_int(mesh_port) != as_int(ssh_port):
            errors.append("group '%s': nim_ssh_port=%s but ssh_mesh_port=%s; the containers sshd and the mesh"
                          ' ssh_config must agree on one port' % (name, ssh_port, mesh_port))
        if present and not gid_problem:
            errors.extend(_gid_problems(name, secrets_gid, summary.get('mesh_gid'), launch.get('ssh_mesh'), container_gid))
    if canary not in (None, '') and canary not in groups:
        errors.append('nim_canary_group=%s (nim_docker_canary_group): not a Docker deployment group of the plan'
                      ' (accepts one of: %s)'
                      % (canary, ', '.join(sorted(str(g) for g in groups)) or 'none'))
    if gid_problem:
        errors.append('nim_docker_secrets_gid=%s %s; accepted: %s (inventory-wide nim_secrets_gid)'
                      % (secrets_gid, gid_problem, RULES['nim_docker_secrets_gid'].accepts))
    for limits in [ulimits] + [s.get('ulimits') for s in summaries]:
        wrong = [str(u) for u in _as_list(limits) if not ULIMIT_PATTERN.match(str(u))]
        if wrong:
            errors.append('nim_docker_ulimits: each entry is name:soft[:hard], e.g. memlock:-1:-1; got '
                          + ', '.join(wrong))
    return _unique(errors)
