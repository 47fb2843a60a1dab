# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Every condition in the roles, their molecule scenarios and the playbooks is a string (or a
boolean) once YAML has read it.

ansible-core 2.19 refuses any other conditional at run time ("Conditional expressions must be
strings"), and ansible-lint does not see it: an unquoted condition holding ': ' (a message
searched for, a header compared with) reads as a mapping and fails only when its task runs.
"""

import glob
import os
import sys

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, 'tests', 'awx'))

from messages import tasks  # noqa: E402  pylint: disable=wrong-import-position
CONDITION_KEYS = ('when', 'failed_when', 'changed_when', 'until')
ASSERT_MODULES = ('ansible.builtin.assert', 'assert')


def _files():
    found = glob.glob(os.path.join(REPO, 'roles', '*', '**', '*.yml'), recursive=True)
    found += glob.glob(os.path.join(REPO, 'playbooks', '**', '*.yml'), recursive=True)
    return sorted(os.path.relpath(path, REPO) for path in found if '/vars/' not in path and '/defaults/' not in path)


def _conditions(task):
    for key in CONDITION_KEYS:
        if key in task:
            value = task[key]
            for item in value if isinstance(value, list) else [value]:
                yield key, item
    for module in ASSERT_MODULES:
        args = task.get(module)
        if isinstance(args, dict) and 'that' in args:
            value = args['that']
            for item in value if isinstance(value, list) else [value]:
                yield 'that', item


def bad_conditions(data):
    """(key, condition) of every condition of a task file that is neither a string nor a boolean."""
    return [(key, item) for task in tasks(data) for key, item in _conditions(task)
            if not isinstance(item, (str, bool))]


def test_a_mapping_read_from_an_unquoted_condition_is_found():
    data = yaml.safe_load("- ansible.builtin.assert:\n    that:\n      - x.startswith('# a: b')\n"
                          "  when:\n    - y is search('k: v')\n    - \"z is search('k: v')\"\n")
    assert [found[0] for found in bad_conditions(data)] == ['when', 'that']


@pytest.mark.parametrize('path', _files())
def test_every_condition_is_a_string(path):
    with open(os.path.join(REPO, path)) as handle:
        data = yaml.safe_load(handle)
    assert bad_conditions(data) == [], '%s: quote these conditions' % path
