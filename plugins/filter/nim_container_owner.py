# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Filter nim_container_owner: whether a container is a rank of the collection (docs in nim_container_owner.yml)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.nimstack.multinode.plugins.module_utils.nim_ownership import container_owner


def nim_container_owner(info, group):
    return container_owner(info, group)


class FilterModule(object):
    def filters(self):
        return {'nim_container_owner': nim_container_owner}
