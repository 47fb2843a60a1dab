# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Filter k8s_quantities: resource quantities as the API server returns them (docs in k8s_quantities.yml)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError


def k8s_quantities(resources):
    if not isinstance(resources, dict):
        raise AnsibleFilterError('k8s_quantities: expects a mapping of resource names to quantities, got %r'
                                 % type(resources).__name__)
    out = {}
    for name, value in resources.items():
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise AnsibleFilterError('k8s_quantities: %s=%r is not a quantity (a number or a string such as 500m or 64Gi)'
                                     % (name, value))
        out[name] = str(value)
    return out


class FilterModule(object):
    def filters(self):
        return {'k8s_quantities': k8s_quantities}
