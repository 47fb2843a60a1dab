# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Filters driver_problems, driver_plan and driver_reboot_reasons of the role nvidia_driver (docs in the .yml files)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.nimstack.multinode.plugins.module_utils.lazy import lazy_module

_driver = lazy_module('driver_plan')


def _inputs(name, inputs):
    if not isinstance(inputs, dict):
        raise AnsibleFilterError('%s: expects the role inputs as a mapping, got %r' % (name, type(inputs).__name__))
    return inputs


def driver_problems(inputs):
    try:
        return _driver.driver_problems(_inputs('driver_problems', inputs))
    except _driver.DriverPlanError as exc:
        raise AnsibleFilterError('driver_problems: %s' % exc)


def driver_plan(inputs):
    try:
        return _driver.driver_plan(_inputs('driver_plan', inputs))
    except _driver.DriverPlanError as exc:
        raise AnsibleFilterError('driver_plan: %s' % exc)


def driver_reboot_reasons(nouveau_loaded, loaded_version, installed_module):
    return _driver.reboot_reasons(nouveau_loaded, loaded_version, installed_module)


class FilterModule(object):
    def filters(self):
        return {
            'driver_problems': driver_problems,
            'driver_plan': driver_plan,
            'driver_reboot_reasons': driver_reboot_reasons,
        }
