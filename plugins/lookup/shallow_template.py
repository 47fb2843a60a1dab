# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
name: shallow_template
author:
  - nimstack maintainers (@nimstack)
version_added: 0.1.0
short_description: The template lookup, without a deep copy of every variable for each file
description:
  - Renders each template like L(ansible.builtin.template,https://docs.ansible.com/ansible/latest/collections/ansible/builtin/template_lookup.html)
    and returns the strings, with the same options and search path.
  - The builtin lookup deep-copies every variable of the play before each file, so that nothing a
    template does can reach them. With a large inventory that copy costs more than the template
    itself (the C(groups) of 1,000 hosts, about 0.1 s a file here), and role nim_k8s renders one
    file per deployment group. This lookup copies the mapping of variables, not every value in it.
  - Use it only for templates that do not change the variables they read (no C(append) or
    C(update) on a variable; a C({% set %}) of the template's own is fine).
options:
  _terms:
    description: The template files, found like the builtin lookup's.
    required: true
  template_vars:
    description: Variables added for these templates.
    type: dict
    default: {}
  variable_start_string:
    description: The string marking the beginning of a print statement.
    type: str
    default: '{{'
  variable_end_string:
    description: The string marking the end of a print statement.
    type: str
    default: '}}'
  comment_start_string:
    description: The string marking the beginning of a comment statement.
    type: str
    default: '{#'
  comment_end_string:
    description: The string marking the end of a comment statement.
    type: str
    default: '#}'
  trim_blocks:
    description: Whether the first newline after a block is removed.
    type: bool
    default: true
  convert_data:
    description: Passed on to the builtin lookup where its ansible-core version still reads it.
    type: bool
    default: true
  jinja2_native:
    description: Passed on to the builtin lookup where its ansible-core version still reads it.
    type: bool
    default: false
'''

EXAMPLES = r'''
- name: Render the objects of one deployment group
  ansible.builtin.set_fact:
    objects: "{{ lookup('nimstack.multinode.shallow_template', 'group-objects.yaml.j2') | ansible.builtin.from_yaml_all | list }}"
'''

RETURN = r'''
_raw:
  description: The rendered content of each template.
  type: list
  elements: str
'''

from ansible.plugins.lookup.template import LookupModule as TemplateLookup


class _CopiedShallow(dict):
    """Variables whose deep copy is a copy of the mapping only."""

    def __deepcopy__(self, memo):
        return dict(self)


class LookupModule(TemplateLookup):

    def run(self, terms, variables=None, **kwargs):
        return super().run(terms, _CopiedShallow(variables or {}), **kwargs)
