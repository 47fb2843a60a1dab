# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Filter nim_container_owner: whether a container is a rank of the collection (docs in nim_container_owner.yml)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.nimstack.multinode.plugins.module_utils.lazy import lazy_module

_ownership = lazy_module('nim_ownership')


def nim_container_owner(info, group):
    return _ownership.container_owner(info, group)


class FilterModule(object):
    def filters(self):
        return {'nim_container_owner': nim_container_owner}
