# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Filters restart_waves, rollout_waves, max_unavailable_problems and docker_daemon_plan (docs in the .yml files)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.nimstack.multinode.plugins.module_utils.lazy import lazy_module

rolling_restart = lazy_module('rolling_restart')


def restart_waves(hosts, needing, max_unavailable_groups=1):
    try:
        return rolling_restart.restart_waves([list(h) for h in hosts or []], list(needing or []),
                                             max_unavailable_groups)
    except rolling_restart.RestartWaveError as exc:
        raise AnsibleFilterError('restart_waves: %s' % exc)


def rollout_waves(groups, restarting, serving, max_unavailable_groups=1, canary=None):
    try:
        return rolling_restart.rollout_waves(list(groups or []), list(restarting or []), list(serving or []),
                                             max_unavailable_groups, canary or None)
    except rolling_restart.RestartWaveError as exc:
        raise AnsibleFilterError('rollout_waves: %s' % exc)


def max_unavailable_problems(value, name=None):
    return rolling_restart.max_unavailable_problems(value, rolling_restart.MAX_UNAVAILABLE_VAR if name is None else name)


def docker_daemon_plan(current, **settings):
    try:
        return rolling_restart.docker_daemon_plan(current, **settings)
    except (rolling_restart.RestartWaveError, TypeError) as exc:
        raise AnsibleFilterError('docker_daemon_plan: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {
            'restart_waves': restart_waves,
            'rollout_waves': rollout_waves,
            'max_unavailable_problems': max_unavailable_problems,
            'docker_daemon_plan': docker_daemon_plan,
        }
