# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Every pattern that checks a value ends its anchor with \\Z, never $.

In Python's re (and so in Jinja's match and regex_search tests) $ also matches before a final
newline: 'nvcr.io\\n' passes '^[a-z.]+$', and a value written as a YAML | block lands in a
configuration file, a manifest or a unit with its newline. The value checks of plugins/ and the
roles' own checks are held to \\Z here; a pattern that reads output line by line has no newline to
worry about, but is held to the same rule so that one habit serves everywhere.
"""

import glob
import os
import re

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# A raw or plain string literal whose last character is an unescaped $.
_PY_DOLLAR = re.compile(r"""r?(['"])[^'"\n]*(?<!\\)\$\1""")
# Jinja's tests and filters that take a pattern, with a pattern ending in $.
_JINJA_DOLLAR = re.compile(r"""(match|search|regex|regex_search|regex_findall)\(\s*(['"])[^'"\n]*(?<!\\)\$\2""")
# A pattern kept in a role's variable (_x_re, _x_regex, _x_pattern) for those tests to take.
_VARS_DOLLAR = re.compile(r"""^\s*\w*(_re|_regex|_pattern):\s*(['"]).*(?<!\\)\$\2\s*$""")


def _python_files():
    found = glob.glob(os.path.join(REPO, 'plugins', '**', '*.py'), recursive=True)
    found += glob.glob(os.path.join(REPO, 'roles', '*', 'files', '**', '*.py'), recursive=True)
    return sorted(os.path.relpath(path, REPO) for path in found)


def _yaml_files():
    found = glob.glob(os.path.join(REPO, 'roles', '*', '**', '*.yml'), recursive=True)
    found += glob.glob(os.path.join(REPO, 'playbooks', '**', '*.yml'), recursive=True)
    return sorted(os.path.relpath(path, REPO) for path in found)


def _offenders(path, pattern, keep=lambda line: True):
    with open(os.path.join(REPO, path), encoding='utf-8') as handle:
        return ['%s:%d: %s' % (path, number, line.strip())
                for number, line in enumerate(handle, 1) if pattern.search(line) and keep(line)]


def test_the_files_to_check_are_found():
    assert 'plugins/module_utils/input_checks.py' in _python_files()
    assert 'roles/nfs/tasks/preflight.yml' in _yaml_files()


@pytest.mark.parametrize('path', _python_files())
def test_python_patterns_end_with_backslash_z(path):
    # re.sub replaces up to a newline either way; a string that is not a pattern has no re. on its line.
    assert _offenders(path, _PY_DOLLAR, lambda line: 're.' in line and 're.sub(' not in line or '_RE = ' in line) == []


@pytest.mark.parametrize('path', _yaml_files())
def test_jinja_patterns_end_with_backslash_z(path):
    assert _offenders(path, _JINJA_DOLLAR) == []
    assert _offenders(path, _VARS_DOLLAR) == []


def test_the_rule_finds_what_it_is_for():
    assert _PY_DOLLAR.search("TAG_RE = re.compile(r'^[a-z]+$')")
    assert not _PY_DOLLAR.search(r"TAG_RE = re.compile(r'^[a-z]+\Z')")
    assert not _PY_DOLLAR.search(r"PRICE = re.compile(r'^\$[0-9]+\Z')")
    assert _JINJA_DOLLAR.search("x is match('^/[^\\s]+$')")
    assert not _JINJA_DOLLAR.search("x is match('^/[^\\s]+\\Z')")
    assert _VARS_DOLLAR.search("_nfs_ipv4_regex: '^[0-9.]+$'")
    assert not _VARS_DOLLAR.search("_nfs_ipv4_regex: '^[0-9.]+\\Z'")


@pytest.mark.parametrize('module, name, good', [
    ('input_checks', 'TAG_RE', '1.3.0'),
    ('input_checks', 'MODEL_NAME_RE', 'meta/llama-3.1-70b-instruct'),
    ('input_checks', 'DNS_LABEL_RE', 'nim'),
    ('k8s_preflight', 'LABEL_VALUE_RE', 'team-a'),
    ('nim_alerts', 'DURATION_RE', '1h30m'),
    ('inventory_checks', 'GROUP_NAME_RE', 'llama'),
])
def test_a_trailing_newline_is_refused_where_the_value_alone_passes(module, name, good):
    imported = __import__('ansible_collections.nimstack.multinode.plugins.module_utils.' + module, fromlist=[name])
    regex = getattr(imported, name)
    assert regex.match(good)
    assert not regex.match(good + '\n')
