# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The error messages the collection can print, for the check that docs/troubleshooting.md covers them.

role_messages() walks every task file of roles/*/tasks and playbooks/ (molecule scenarios are
tests, not the collection) and returns the fixed text of every assert fail_msg and fail msg: the
longest run of literal text between its Jinja expressions, or, for a message that is one Jinja
expression, the longest string literal inside it. error_sources() lists the module_utils files
that produce planner-style errors (error strings collected in a list, or raised).

    python3 tests/awx/messages.py      print them, one per line
"""

import glob
import os
import re

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_JINJA = re.compile(r'\{\{.*?\}\}|\{%.*?%\}', re.S)
_STRING = re.compile(r"'([^'\\]*)'|\"([^\"\\]*)\"")
_ERROR_CALL = re.compile(r'(errors|problems|warnings)\.append\(|raise \w+Error\(|fail_json\(')


def normalise(text):
    return ' '.join(str(text).split())


def fixed_text(message):
    """The longest literal part of a message template, whitespace-normalised."""
    message = normalise(message)
    parts = [p.strip(' .,;:()\'"') for p in _JINJA.split(message)]
    best = max(parts, key=len) if parts else ''
    if len(best) < 8:
        literals = [a or b for expr in _JINJA.findall(message) for a, b in _STRING.findall(expr)]
        best = max([normalise(s).strip(' .,;:()\'"') for s in literals] + [best], key=len)
    return best


def tasks(node):
    """Every task of a task file or playbook, the blocks opened (a play counts as one)."""
    if isinstance(node, list):
        for item in node:
            yield from tasks(item)
    elif isinstance(node, dict):
        yield node
        for key in ('block', 'rescue', 'always', 'tasks', 'pre_tasks', 'post_tasks', 'handlers'):
            if key in node:
                yield from tasks(node[key])


def role_messages(repo=REPO):
    """[(file, fixed text)] of every fail message of the roles and playbooks."""
    files = sorted(glob.glob(os.path.join(repo, 'roles', '*', 'tasks', '**', '*.yml'), recursive=True)
                   + glob.glob(os.path.join(repo, 'playbooks', '**', '*.yml'), recursive=True))
    found = []
    for path in files:
        if '/vars/' in path:
            continue
        with open(path) as handle:
            data = yaml.safe_load(handle)
        for task in tasks(data):
            for module, key in (('ansible.builtin.assert', 'fail_msg'), ('ansible.builtin.fail', 'msg')):
                args = task.get(module)
                if isinstance(args, dict) and args.get(key):
                    found.append((os.path.relpath(path, repo), fixed_text(args[key])))
    return found


def error_sources(repo=REPO):
    """module_utils and modules files that produce error messages for the user."""
    files = sorted(glob.glob(os.path.join(repo, 'plugins', 'module_utils', '*.py'))
                   + glob.glob(os.path.join(repo, 'plugins', 'modules', '*.py')))
    return [os.path.relpath(p, repo) for p in files if _ERROR_CALL.search(open(p).read())]


if __name__ == '__main__':
    for source, text in role_messages():
        print('%s: %s' % (source, text))
    for source in error_sources():
        print(source)
