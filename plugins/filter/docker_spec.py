# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Filters docker_groups, docker_rank_spec, docker_group_hash and env_file_safe (docs in the .yml files)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.nimstack.multinode.plugins.module_utils.lazy import lazy_module

docker_spec = lazy_module('docker_spec')


def docker_groups(plan):
    return docker_spec.docker_groups(plan)


def docker_rank_spec(plan, host, options):
    try:
        return docker_spec.docker_rank_spec(plan, host, options)
    except (docker_spec.DockerSpecError, KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError('docker_rank_spec: %s' % exc)


def docker_group_hash(group_spec, hosts, hostvars):
    image_ids = []
    for host in hosts or []:
        try:
            image_ids.append(hostvars[host].get('__nim_docker_image_id', ''))
        except KeyError:
            image_ids.append('')
    return docker_spec.group_hash(group_spec, image_ids)


def env_file_safe(value):
    return docker_spec.env_file_safe(str(value or ''))


class FilterModule(object):
    def filters(self):
        return {'docker_groups': docker_groups, 'docker_rank_spec': docker_rank_spec, 'docker_group_hash': docker_group_hash, 'env_file_safe': env_file_safe}
