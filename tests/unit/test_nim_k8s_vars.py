# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The role nim_k8s only names what Python built, and its secrets stay behind no_log.

- roles/nim_k8s/vars/main.yml holds data, and expressions that name a setting, a field of the
  specs (plugins/module_utils/k8s_objects.py) or one filter of the collection over them: no Jinja
  statement, no list or dict built in Jinja, no list algebra (map, select, zip, +, ...);
- the tables it keeps as data are those of k8s_objects;
- every task whose arguments, loop or vars reach the NGC key or an SSH private key, directly or
  through a var built from one, has no_log: true. The secrets are the key setting, what a no_log
  task registers or sets, and every var (vars/main.yml, a task's or block's vars, set_fact) whose
  definition names one of them.
"""

import glob
import os
import re
import sys

import yaml
from jinja2 import Environment

from ansible_collections.nimstack.multinode.plugins.module_utils import k8s_objects

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, 'tests', 'awx'))

# The one walker of task files the tests share (blocks opened).
from messages import tasks  # noqa: E402  pylint: disable=wrong-import-position

ROLE = os.path.join(REPO, 'roles', 'nim_k8s')

# Filters an expression of vars/main.yml may use besides the collection's own: a default, a type,
# the length of a setting, the render directory's real path.
PLAIN_FILTERS = {'default', 'bool', 'int', 'length', 'ansible.builtin.realpath'}
# Operators that build or combine values.
BUILDING_OPERATORS = {'+', '-', '*', '/', '//', '%', '~', '{'}
# Jinja's words that a [ after them opens a list, not a subscript.
KEYWORDS = {'if', 'else', 'in', 'not', 'and', 'or', 'is'}
# Keys of a task whose text is never printed with a value: conditions, its name, a block's tasks
# (each checked on its own).
QUIET_KEYS = ('name', 'when', 'changed_when', 'failed_when', 'until', 'block', 'rescue', 'always')
# The role's own secret setting (the playbook passes nim_ngc_api_key).
SECRET_SETTINGS = {'nim_k8s_ngc_api_key'}


def _load(path):
    with open(path, encoding='utf-8') as handle:
        return yaml.safe_load(handle)


def _role_vars():
    return _load(os.path.join(ROLE, 'vars', 'main.yml'))


def _strings(node):
    if isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)
    elif isinstance(node, str):
        yield node


def _tokens(text):
    """Jinja's own tokens of a string (its text outside {{ }} and {% %} is one data token)."""
    return [(kind, value) for _line, kind, value in Environment().lex(text) if kind != 'whitespace']


def _names(node):
    """Every name inside a {{ }} or {% %} of the strings of node."""
    return set(value for text in _strings(node) for kind, value in _tokens(text) if kind == 'name')


def _expression_problems(text):
    """What one {{ }} or {% %} does beyond naming and filters allowed (dotted names joined)."""
    tokens = _tokens(text)
    problems = []
    for index, (kind, value) in enumerate(tokens):
        previous = tokens[index - 1] if index else (None, None)
        following = tokens[index + 1] if index + 1 < len(tokens) else (None, None)
        if kind == 'block_begin':
            problems.append('a Jinja statement')
        elif kind == 'name' and previous == ('operator', '|'):
            name = value.replace('__DOT__', '.')
            if not name.startswith('nimstack.multinode.') and name not in PLAIN_FILTERS:
                problems.append('filter %s' % name)
        elif kind == 'operator' and value in BUILDING_OPERATORS:
            problems.append('operator %s' % value)
        elif (kind, value) == ('operator', '[') and following != ('operator', ']'):
            # A subscript follows a name, ] or ); anything else opens a list (an empty one is a default).
            subscript = previous[0] == 'name' and previous[1] not in KEYWORDS or previous[1] in (']', ')')
            if not subscript:
                problems.append('a list literal')
    return problems


def _expressions_problems(text):
    # A dotted filter name (nimstack.multinode.x) lexes as one name once its dots are hidden.
    return _expression_problems(re.sub(r'\|\s*([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)',
                                       lambda match: '| ' + match.group(1).replace('.', '__DOT__'), text))


def test_vars_only_name_what_python_built():
    offenders = {}
    for name, value in _role_vars().items():
        problems = [p for text in _strings(value) for p in _expressions_problems(text)]
        if problems:
            offenders[name] = problems
    assert offenders == {}


def test_the_check_finds_what_jinja_builds():
    # What vars/main.yml held before its logic moved to Python is refused.
    assert _expressions_problems("{{ _a | map(attribute='k8s.namespace') | unique | sort }}") == [
        'filter map', 'filter unique', 'filter sort']
    assert _expressions_problems("{{ (_a | reverse | list) + ([_b] if _c else []) }}") == [
        'filter reverse', 'filter list', 'operator +', 'a list literal']
    assert _expressions_problems("{% for n in _a %}{{ n }}{% endfor %}") == ['a Jinja statement', 'a Jinja statement']
    assert _expressions_problems("{{ {'auths': {_r: _k}} | to_json | b64encode }}") == [
        'operator {', 'operator {', 'filter to_json', 'filter b64encode']
    assert _expressions_problems("{{ ('$oauthtoken:' ~ _k) | ansible.builtin.b64encode }}") == [
        'operator ~', 'filter ansible.builtin.b64encode']
    assert _expressions_problems("{{ _s[_g.name] | nimstack.multinode.k8s_group_objects(_b, _m, _k | bool) }}") == []
    assert _expressions_problems("{{ _d | ansible.builtin.realpath if _r else '' }}") == []


def test_the_tables_kept_as_data_are_python_s():
    values = _role_vars()
    assert values['_nim_k8s_monitoring_crds'] == k8s_objects.MONITORING_CRDS
    assert values['_nim_k8s_storage_kinds'] == list(k8s_objects.STORAGE_KINDS)


def _role_nodes():
    for path in sorted(glob.glob(os.path.join(ROLE, 'tasks', '*.yml'))):
        for node in tasks(_load(path) or []):
            yield os.path.relpath(path, REPO), node


def _definitions():
    """name -> every definition of it: vars/main.yml, a task's or block's vars, set_fact."""
    found = {}
    for name, value in _role_vars().items():
        found.setdefault(name, []).append(value)
    for _source, node in _role_nodes():
        for name, value in (node.get('vars') or {}).items():
            found.setdefault(name, []).append(value)
        for name, value in (node.get('ansible.builtin.set_fact') or {}).items():
            found.setdefault(name, []).append(value)
    return found


def secret_names():
    secrets = set(SECRET_SETTINGS)
    for _source, node in _role_nodes():
        if node.get('no_log') is True:
            if node.get('register'):
                secrets.add(node['register'])
            secrets.update((node.get('ansible.builtin.set_fact') or {}).keys())
    definitions = _definitions()
    grown = True
    while grown:
        grown = False
        for name, values in definitions.items():
            if name not in secrets and any(_names(value) & secrets for value in values):
                secrets.add(name)
                grown = True
    return secrets


def _printing_part(node):
    return dict((k, v) for k, v in node.items() if k not in QUIET_KEYS)


def test_the_secrets_are_found():
    secrets = secret_names()
    for name in ('_nim_k8s_ngc_secret_objects', '_nim_k8s_ngc_secret_files', '_nim_k8s_ssh_secret_object',
                 '__nim_k8s_ssh_key', '__nim_k8s_ssh_host_key', '__nim_k8s_ssh_existing_data'):
        assert name in secrets
    # What is registered and printed without no_log holds none: the specs, the objects applied.
    for name in ('__nim_k8s_specs', '_nim_k8s_spec', '_nim_k8s_objects', '_nim_k8s_removed_objects',
                 '_nim_k8s_kept_objects', '_nim_k8s_role_settings', '_nim_k8s_namespaces'):
        assert name not in secrets


def test_every_task_that_reads_a_secret_hides_it():
    secrets = secret_names()
    readers, offenders = [], []
    for source, node in _role_nodes():
        # A name is printed even with no_log.
        if _names(node.get('name') or '') & secrets:
            offenders.append('%s: %s (its name)' % (source, node.get('name')))
        if any(key in node for key in ('block', 'rescue', 'always')):
            continue
        if _names(_printing_part(node)) & secrets:
            readers.append(node.get('name'))
            if node.get('no_log') is not True:
                offenders.append('%s: %s' % (source, node.get('name')))
    assert offenders == []
    # The NGC Secrets rendered and applied, the SSH key Secret rendered and created, and the
    # steps that read the keys.
    assert len(readers) >= 5
