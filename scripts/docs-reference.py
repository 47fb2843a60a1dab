#!/usr/bin/env python
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Render the variables reference (docs/variables.md) from every role's meta/argument_specs.yml.

The argument specs are the one description of a role's public variables (ansible-doc -t role reads
them too); this renders them as Markdown, with the default from the spec or, where the spec has
none, from the role's defaults/main.yml. Every role under roles/ is listed, in name order, every
entry point of it (main first) and every option, suboptions as parent.child rows. A role without
argument specs is listed as such, so a new role cannot be missed.

    scripts/docs-reference.py                  print the reference
    scripts/docs-reference.py -o FILE          write it to FILE

`make docs-check` renders it again and fails when docs/variables.md differs.
"""

import argparse
import json
import os
import re
import sys

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMESPACE = 'nimstack.multinode'

# Ansible's documentation markup, as Markdown.
_MARKUP = [
    (re.compile(r'L\(([^)]*?),\s*([^)]*)\)'), r'[\1](\2)'),
    (re.compile(r'U\(([^)]*)\)'), r'<\1>'),
    (re.compile(r'I\(([^)]*)\)'), r'*\1*'),
    (re.compile(r'B\(([^)]*)\)'), r'**\1**'),
    (re.compile(r'(?:C|O|V|M|RV|E|P)\(([^)]*)\)'), r'`\1`'),
    (re.compile(r'HORIZONTALLINE'), ''),
]


class SpecError(Exception):
    """A role's argument specs cannot be read; the message names the file."""


def markup(text):
    if text is None:
        return ''
    if isinstance(text, list):
        text = ' '.join(str(t) for t in text)
    text = ' '.join(str(text).split())
    for pattern, repl in _MARKUP:
        text = pattern.sub(repl, text)
    return text.replace('|', '\\|')


def code(value):
    if isinstance(value, str):
        text = json.dumps(value) if value == '' or value != value.strip() else value
    else:
        text = json.dumps(value, sort_keys=True)
    text = text.replace('|', '\\|')
    fence = '``' if '`' in text else '`'
    pad = ' ' if text.startswith('`') or text.endswith('`') else ''
    return '%s%s%s%s%s' % (fence, pad, text, pad, fence)


def _load(path):
    try:
        with open(path) as handle:
            return yaml.safe_load(handle)
    except (OSError, yaml.YAMLError) as exc:
        raise SpecError('%s: %s' % (os.path.relpath(path, REPO), ' '.join(str(exc).split())))


def _type(option):
    kind = option.get('type', 'str')
    if option.get('elements'):
        kind = '%s of %s' % (kind, option['elements'])
    return kind


def _rows(options, defaults, prefix=''):
    rows = []
    for name in sorted(options or {}):
        option = options[name] or {}
        if 'default' in option:
            default = code(option['default'])
        elif not prefix and name in defaults:
            default = code(defaults[name])
        elif option.get('required'):
            default = '*required*'
        else:
            default = ''
        choices = ', '.join(code(c) for c in option.get('choices') or [])
        cells = (prefix, name, _type(option), default, choices, markup(option.get('description')))
        rows.append('| `%s%s` | %s | %s | %s | %s |' % cells)
        rows.extend(_rows(option.get('options'), defaults, prefix='%s%s.' % (prefix, name)))
    return rows


def render_role(role_dir):
    role = os.path.basename(role_dir)
    lines = ['## %s' % role, '']
    spec_path = os.path.join(role_dir, 'meta', 'argument_specs.yml')
    if not os.path.isfile(spec_path):
        return lines + ['This role has no `meta/argument_specs.yml`: its variables are not documented yet.', '']
    specs = (_load(spec_path) or {}).get('argument_specs')
    if not isinstance(specs, dict) or not specs:
        raise SpecError('%s: no argument_specs mapping' % os.path.relpath(spec_path, REPO))
    defaults_path = os.path.join(role_dir, 'defaults', 'main.yml')
    defaults = (_load(defaults_path) or {}) if os.path.isfile(defaults_path) else {}
    for entry in sorted(specs, key=lambda e: (e != 'main', e)):
        spec = specs[entry] or {}
        title = '`%s.%s`' % (NAMESPACE, role) if entry == 'main' else '`%s.%s`, entry point `%s`' % (
            NAMESPACE, role, entry)
        lines += ['### %s' % title, '']
        if spec.get('short_description'):
            lines += [markup(spec['short_description']) + '.' if not str(spec['short_description']).endswith('.')
                      else markup(spec['short_description']), '']
        rows = _rows(spec.get('options'), defaults if entry == 'main' else {})
        if not rows:
            lines += ['No variables.', '']
            continue
        lines += ['| variable | type | default | choices | description |', '|---|---|---|---|---|']
        lines += rows + ['']
    return lines


def render(repo=REPO):
    roles_dir = os.path.join(repo, 'roles')
    roles = sorted(d for d in os.listdir(roles_dir) if os.path.isdir(os.path.join(roles_dir, d)))
    lines = [
        '# Variables reference',
        '',
        '<!-- Generated by scripts/docs-reference.py from roles/*/meta/argument_specs.yml and',
        '     roles/*/defaults/main.yml: do not edit. `make docs-check` fails when it is stale. -->',
        '',
        'Every public variable of every role of `%s`, as its `meta/argument_specs.yml` declares it'
        % NAMESPACE,
        '(`ansible-doc -t role %s.<role>` shows the same). The deployment settings the planner'
        % NAMESPACE,
        'reads from the inventory (`nim_*` group variables) are described in',
        '[inventories/example/group_vars/nim_nodes.yml](../inventories/example/group_vars/nim_nodes.yml);',
        'the playbooks pass them to these roles.',
        '',
        '| role | entry points | variables |',
        '|---|---|---|',
    ]
    sections = []
    for role in roles:
        section = render_role(os.path.join(roles_dir, role))
        entries = [line for line in section if line.startswith('### ')]
        count = sum(1 for line in section if line.startswith('| `'))
        lines.append('| [%s](#%s) | %d | %d |' % (role, role, len(entries), count))
        sections += section
    return '\n'.join(lines + [''] + sections).rstrip('\n') + '\n'


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n', maxsplit=1)[0])
    parser.add_argument('-o', '--output', help='write to this file instead of stdout')
    args = parser.parse_args(argv)
    try:
        text = render()
    except SpecError as exc:
        sys.stderr.write('docs-reference.py: %s\n' % exc)
        return 1
    if args.output:
        with open(args.output, 'w') as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == '__main__':
    sys.exit(main())
