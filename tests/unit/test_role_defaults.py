# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""A role's defaults and its argument_specs say the same: every default is an option of the
specs, and an option the specs give a default has that one in defaults/main.yml (ansible-doc,
docs/variables.md and the controller's checks read the specs; the role reads its defaults)."""

import glob
import os

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLES = sorted(os.path.basename(os.path.dirname(os.path.dirname(path)))
               for path in glob.glob(os.path.join(REPO, 'roles', '*', 'meta', 'argument_specs.yml')))


def _load(role, *parts):
    path = os.path.join(REPO, 'roles', role, *parts)
    if not os.path.exists(path):
        return {}
    with open(path) as handle:
        return yaml.safe_load(handle) or {}


@pytest.mark.parametrize('role', ROLES)
def test_the_defaults_are_the_specs(role):
    options = {}
    for entry, spec in _load(role, 'meta', 'argument_specs.yml')['argument_specs'].items():
        if (role, entry) == ('validate_inventory', 'inventory'):
            continue  # the inventory's own settings: a declaration that no role's defaults hold
        for name, option in (spec.get('options') or {}).items():
            options.setdefault(name, option)
    defaults = _load(role, 'defaults', 'main.yml')
    assert sorted(set(defaults) - set(options)) == [], 'defaults without an option in the specs'
    differ = ['%s: specs %r, defaults %r' % (name, option['default'], defaults.get(name, '<none>'))
              for name, option in sorted(options.items())
              if 'default' in option and not name.startswith('common_')
              and str(option['default']) != str(defaults.get(name, '<none>'))]
    assert differ == []


def test_every_role_is_read():
    assert 'nim_docker' in ROLES and len(ROLES) >= 15
