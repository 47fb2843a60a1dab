# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Filters toolkit_problems and toolkit_packages of the role nvidia_container_toolkit (docs in the .yml files)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.nimstack.multinode.plugins.module_utils.lazy import lazy_module

_toolkit = lazy_module('toolkit_plan')
_driver = lazy_module('driver_plan')


def toolkit_problems(inputs):
    if not isinstance(inputs, dict):
        raise AnsibleFilterError('toolkit_problems: expects the role inputs as a mapping, got %r' % type(inputs).__name__)
    try:
        return _toolkit.toolkit_problems(inputs)
    except _driver.DriverPlanError as exc:
        raise AnsibleFilterError('toolkit_problems: %s' % exc)


def toolkit_packages(packages, version, pkg_mgr):
    try:
        return _toolkit.toolkit_packages(packages, version, pkg_mgr)
    except _driver.DriverPlanError as exc:
        raise AnsibleFilterError('toolkit_packages: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {
            'toolkit_problems': toolkit_problems,
            'toolkit_packages': toolkit_packages,
        }
