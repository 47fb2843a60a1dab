# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Filters docker_preflight_groups, docker_preflight_inputs and docker_preflight_problems: the Docker
path's preflight (docs in docker_preflight_groups.yml, docker_preflight_inputs.yml and
docker_preflight_problems.yml)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.nimstack.multinode.plugins.module_utils.lazy import lazy_module

_preflight = lazy_module('docker_preflight')


def docker_preflight_groups(plan, play_hosts, inputs=None):
    return _preflight.preflight_groups(plan, play_hosts, inputs)


def docker_preflight_inputs(plan, play_hosts, hostvars, play_inputs, key_from_inventory=False):
    return _preflight.preflight_inputs(plan, play_hosts, hostvars, play_inputs, key_from_inventory=bool(key_from_inventory))


def docker_preflight_problems(plan, play_hosts, inputs, deploying=True, allow_partial=False, secrets_gid=0,
                              ulimits=None, canary=None, container_gid=1000):
    return _preflight.preflight_problems(plan, play_hosts, inputs, deploying=bool(deploying),
                                         allow_partial=bool(allow_partial), secrets_gid=secrets_gid,
                                         ulimits=ulimits, canary=canary or None, container_gid=container_gid)


class FilterModule(object):
    def filters(self):
        return {'docker_preflight_groups': docker_preflight_groups,
                'docker_preflight_inputs': docker_preflight_inputs,
                'docker_preflight_problems': docker_preflight_problems}
