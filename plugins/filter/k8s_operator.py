# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Filter k8s_operator_labels: labels the NIM Operator's templates read back unchanged (docs in k8s_operator_labels.yml)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.nimstack.multinode.plugins.module_utils import k8s_operator


def k8s_operator_labels(labels):
    if not isinstance(labels, dict):
        raise AnsibleFilterError('k8s_operator_labels: expects a mapping of label keys to values, got %s'
                                 % type(labels).__name__)
    return k8s_operator.template_safe_labels(labels)


class FilterModule(object):
    def filters(self):
        return {'k8s_operator_labels': k8s_operator_labels}
