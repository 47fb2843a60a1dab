# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Filters secret_source, docker_rollout_waves and group_drift (docs in the .yml files)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.nimstack.multinode.plugins.module_utils.lazy import lazy_module

group_members = lazy_module('group_members')
rolling_restart = lazy_module('rolling_restart')


def _registered(hostvars, host, name, *path):
    """The field at path of what host registered as name; None where it registered nothing."""
    try:
        value = hostvars[host].get(name)
    except KeyError:
        return None
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def secret_source(members, hostvars, registered, leader):
    members = list(members or [])
    holders = [m for m in members if _registered(hostvars, m, registered, 'stat', 'exists') is True]
    return group_members.secret_source(members, leader, holders)


def docker_rollout_waves(plan, play_hosts, hostvars, max_unavailable_groups=1, canary=None, failed_hosts=None):
    state = group_members.rollout_state(
        (plan or {}).get('hosts') or {}, list(play_hosts or []),
        lambda host: bool(_registered(hostvars, host, '__nim_docker_restart')),
        lambda host: _registered(hostvars, host, '__nim_docker_serving_now', 'status'), list(failed_hosts or []))
    try:
        return rolling_restart.rollout_waves(state['groups'], state['restarting'], state['serving'],
                                             max_unavailable_groups, canary or None)
    except rolling_restart.RestartWaveError as exc:
        raise AnsibleFilterError('docker_rollout_waves: %s' % exc)


def group_drift(members, hostvars, registered):
    names = [registered] if isinstance(registered, str) else list(registered)
    return group_members.group_drift(list(members or []), lambda member: [_registered(hostvars, member, name) for name in names])


class FilterModule(object):
    def filters(self):
        return {'secret_source': secret_source, 'docker_rollout_waves': docker_rollout_waves,
                'group_drift': group_drift}
