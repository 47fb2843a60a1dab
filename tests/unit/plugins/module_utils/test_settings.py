# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""One declaration per setting: every public variable a role, a playbook or the planner reads is
declared in a role's argument specs (the inventory's own in validate_inventory's entry point
inventory), reads it with the declared default, and module_utils/settings.py is generated from them."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import ast
import importlib.util
import os
import re

import yaml

from ansible_collections.nimstack.multinode.plugins.module_utils import input_checks, nim_plan, settings

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
# Ansible's own connection variables: Ansible declares them.
ANSIBLE_OWN = {'ansible_host', 'ansible_port'}
# Read with a default by a playbook, yet never reaching a host: the hosts pattern of
# playbooks/bootstrap.yml, which Ansible itself parses before any of the collection's code runs.
PLAY_SELECTORS = {'nim_bootstrap_hosts'}
# A fact a role sets on its host for a later play of the run, read with a default where no play set it
# yet (roles/docker/README.md): not a setting.
PUBLISHED_FACTS = {'docker_restart_pending'}
# NAME | default(ARGUMENT) of a name with one of the collection's prefixes, where the argument holds no
# parenthesis.
_READ = re.compile(r'\b((?:%s)[a-z0-9_]+|ansible_host|ansible_port)\s*\|\s*default\(([^()]*)\)?'
                   % '|'.join(re.escape(prefix) for prefix in input_checks.SETTING_PREFIXES + ('nimstack_',)))
_JINJA_WORDS = {'true': 'True', 'false': 'False', 'none': 'None'}
# What _literal returns for an argument that is not a plain literal (a template, a variable).
NOT_LITERAL = object()


def _script():
    spec = importlib.util.spec_from_file_location('settings_table', os.path.join(REPO, 'scripts', 'settings-table.py'))
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def _reads():
    """(file, name, default argument or None) of every `NAME | default(...)` in the roles (not their
    molecule tests) and playbooks, for a name with one of the collection's prefixes: what the
    collection reads of a setting an inventory may set. (A nimstack_* variable
    only a playbook reads is an input of that controller-only playbook, given with -e: playbooks/
    bundle.yml's, playbooks/awx/teardown.yml's; they check it themselves.)"""
    for top in ('roles', 'playbooks'):
        for root, dirs, files in os.walk(os.path.join(REPO, top)):
            dirs[:] = [name for name in dirs if name != 'molecule']  # the roles' tests, not the roles
            for name in sorted(files):
                if name.endswith(('.yml', '.yaml', '.j2')):
                    path = os.path.join(root, name)
                    with open(path) as handle:
                        text = handle.read()
                    for match in _READ.finditer(text):
                        if top == 'playbooks' and match.group(1).startswith('nimstack_'):
                            continue
                        yield os.path.relpath(path, REPO), match.group(1), match.group(2)


def _literal(argument):
    """The Python value of a default's argument where it is a plain literal, else NOT_LITERAL
    (default(VALUE, true) gives VALUE, as for an unset variable)."""
    text = re.sub(r'\b(true|false|none)\b', lambda m: _JINJA_WORDS[m.group(1)], argument.strip())
    try:
        value = ast.literal_eval(text)
    except (SyntaxError, ValueError):
        return NOT_LITERAL
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], bool):
        return value[0]
    return value


def test_the_generated_table_is_the_specs():
    with open(os.path.join(REPO, 'plugins', 'module_utils', 'settings.py')) as handle:
        assert handle.read() == _script().module_text(), 'run scripts/settings-table.py --write'


def test_two_declarations_of_one_name_that_differ_are_refused_naming_both(tmp_path):
    script = _script()
    for role, default in (('one', 1), ('two', 2)):
        meta = tmp_path / 'roles' / role / 'meta'
        meta.mkdir(parents=True)
        meta.joinpath('argument_specs.yml').write_text(yaml.safe_dump(
            {'argument_specs': {'main': {'options': {'nim_x': {'type': 'int', 'default': default}}}}}))
    try:
        script.declared(str(tmp_path))
    except script.DeclarationError as exc:
        assert 'nim_x is declared differently by one and two' in str(exc)
    else:
        raise AssertionError('two declarations that differ were accepted')


def test_every_variable_the_collection_reads_with_a_default_is_declared():
    """No public variable without a declaration: each one a role, a playbook or the planner reads is
    declared by a role's argument specs; named here where it is not."""
    read = set(name for _path, name, _argument in _reads()) | set(nim_plan.SETTING_NAMES)
    assert len(read) > 50
    assert sorted(read - set(settings.DECLARED) - ANSIBLE_OWN - PLAY_SELECTORS - PUBLISHED_FACTS) == []


def test_every_default_read_is_the_declared_one():
    """A setting read as NAME | default(VALUE) is read with the default its declaration says, in
    every role and playbook, so that a default is written once in effect."""
    compared = 0
    differ = []
    for path, name, argument in _reads():
        declared = settings.DECLARED.get(name)
        if declared is None or argument is None or 'default' not in declared:
            continue
        value = _literal(argument)
        if value is NOT_LITERAL:
            continue
        compared += 1
        if value != declared['default'] and str(value) != str(declared['default']):
            differ.append('%s: %s | default(%s), declared %r' % (path, name, argument, declared['default']))
    assert compared > 50
    assert differ == []


def test_the_inventory_declares_what_no_role_takes_as_an_option():
    """validate_inventory's entry point inventory holds the inventory's own settings: each is read by
    the planner or a role without being an option of a role, and none is also declared by another role."""
    own = set(name for name, entry in settings.DECLARED.items() if entry['roles'] == ('validate_inventory',)
              and not name.startswith('validate_inventory_'))
    with open(os.path.join(REPO, 'roles', 'validate_inventory', 'meta', 'argument_specs.yml')) as handle:
        inventory = set(yaml.safe_load(handle)['argument_specs']['inventory']['options'])
    assert inventory == own
    assert set(nim_plan.SETTING_NAMES) <= inventory
    assert {'nim_group_supervisor', 'nim_secrets_gid', 'nim_ngc_api_key', 'nimstack_bundle_url'} <= inventory


def test_the_controller_reads_the_declared_defaults_and_choices():
    assert nim_plan.SETTING_DEFAULTS['nim_api_port'] == settings.DECLARED['nim_api_port']['default'] == 8000
    assert nim_plan.SETTING_DEFAULTS['nim_tensor_parallel'] is None
    assert input_checks.RULES['nim_k8s_backend'].choices == settings.choices('nim_k8s_backend')
    assert 'nim_k8s_replicas' in nim_plan.INT_SETTINGS and 'nim_gpu_memory_gb' not in nim_plan.INT_SETTINGS
    # A default handed out is a copy: a caller that changes it changes no other caller's.
    settings.default('nim_extra_env')['X'] = '1'
    assert settings.default('nim_extra_env') == {}


def test_a_secret_is_declared_as_one():
    assert settings.DECLARED['nim_ngc_api_key'].get('secret') is True
    assert input_checks.RULES['nim_ngc_api_key'].secret
    assert sorted(name for name, rule in input_checks.RULES.items() if rule.secret
                  and not settings.DECLARED.get(name, {}).get('secret')) == []
