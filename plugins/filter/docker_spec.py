# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Filter docker_rank_spec (docs in docker_rank_spec.yml)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.nimstack.multinode.plugins.module_utils import docker_spec


def docker_rank_spec(plan, host, options):
    try:
        return docker_spec.docker_rank_spec(plan, host, options)
    except (docker_spec.DockerSpecError, KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError('docker_rank_spec: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'docker_rank_spec': docker_rank_spec}
