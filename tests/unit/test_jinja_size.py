"""No Jinja program in roles/ or playbooks/ is MAX_LINES lines or longer.

Logic beyond a filter chain belongs in Python (plugins/module_utils with a filter or a module),
where pytest covers every rule. This scans every YAML and .j2 file under roles/ and playbooks/
(molecule scenarios aside) for:

- an expression or a statement ({{ ... }} or {% ... %}) that spans lines, counted from the line
  it opens on to the line it closes on;
- a folded or literal YAML block scalar (key: >- or |) that is a Jinja program, that is whose
  text holds a {% ... %} statement, counted over the scalar's lines.

Each one of MAX_LINES lines or more fails, named as file:line.
"""

import os
import re

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAX_LINES = 15
SCANNED = ('roles', 'playbooks')
SUFFIXES = ('.yml', '.yaml', '.j2')

# Files still allowed a long program (none: keep it so). A listed file that no longer holds one
# fails the test, so the list can only shrink.
ALLOWED = set()

_BLOCK_START = re.compile(r'^(?P<indent>\s*)(?:-\s+|[^#\s][^#]*?:\s+)(?:&\S+\s+)?[>|][-+0-9]*\s*(?:#.*)?$')
_TAG = re.compile(r'\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}', re.S)


def _files():
    for top in SCANNED:
        for base, dirs, names in os.walk(os.path.join(REPO, top)):
            dirs[:] = sorted(d for d in dirs if d != 'molecule')
            for name in sorted(names):
                if name.endswith(SUFFIXES):
                    yield os.path.relpath(os.path.join(base, name), REPO)


def _spanning_tags(text):
    """(first line, number of lines) of every {{ }} or {% %} that spans lines."""
    found = []
    for match in _TAG.finditer(text):
        if match.group(0).startswith('{#'):
            continue
        lines = match.group(0).count('\n') + 1
        if lines > 1:
            found.append((text.count('\n', 0, match.start()) + 1, lines))
    return found


def _jinja_block_scalars(lines):
    """(first line, number of lines) of every YAML block scalar whose text holds a {% %} statement."""
    found = []
    index = 0
    while index < len(lines):
        start = _BLOCK_START.match(lines[index])
        index += 1
        if not start:
            continue
        key_line = index
        indent = len(start.group('indent'))
        body = []
        while index < len(lines) and (not lines[index].strip() or len(lines[index]) - len(lines[index].lstrip()) > indent):
            body.append(lines[index])
            index += 1
        while body and not body[-1].strip():
            body.pop()
        if any('{%' in line for line in body):
            found.append((key_line, len(body) + 1))
    return found


def programs(path):
    """(line, number of lines) of every Jinja program of one file."""
    with open(os.path.join(REPO, path), encoding='utf-8') as handle:
        text = handle.read()
    found = _spanning_tags(text)
    if not path.endswith('.j2'):
        found.extend(_jinja_block_scalars(text.splitlines()))
    return sorted(set(found))


def offenders(path):
    return ['%s:%d (%d lines)' % (path, line, size) for line, size in programs(path) if size >= MAX_LINES]


def test_scanner_counts_a_multiline_expression_and_a_program(tmp_path):
    assert _spanning_tags('a: "{{ x }}"\nb: >-\n  {{ x\n     | y }}\n') == [(3, 2)]
    yaml_lines = ['x:', '  fact: >-', '    {%- set a = [] -%}', '    {%- for i in b -%}', '    {%- endfor -%}',
                  '    {{ a }}', '  other: 1']
    assert _jinja_block_scalars(yaml_lines) == [(2, 5)]
    assert _jinja_block_scalars(['a: >-', '  plain folded text', '  on two lines']) == []


@pytest.mark.parametrize('path', sorted(_files()))
def test_no_long_jinja_program(path):
    found = offenders(path)
    if path in ALLOWED:
        assert found, '%s no longer holds a long Jinja program: take it off ALLOWED' % path
        return
    assert not found, ('Jinja programs of %d lines or more (move the logic into plugins/module_utils '
                       'with a filter or module and pytest tests): %s' % (MAX_LINES, ', '.join(found)))
