# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""docs/troubleshooting.md quotes every failure message of the roles and playbooks, and names every
source of planner-style errors (docs/variables.md has its own check: make docs-check)."""

import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, 'tests', 'awx'))

import messages  # noqa: E402  pylint: disable=wrong-import-position


def _doc(name):
    with open(os.path.join(REPO, 'docs', name)) as handle:
        return messages.normalise(handle.read())


TROUBLESHOOTING = _doc('troubleshooting.md')
ROLE_MESSAGES = messages.role_messages()


def test_the_collection_has_failure_messages_to_check():
    assert len(ROLE_MESSAGES) > 30
    assert ('roles/nim_docker/tasks/group.yml',
            "failed or is unreachable; the leader is not started. Fix the worker and run again") in ROLE_MESSAGES


@pytest.mark.parametrize('source,text', ROLE_MESSAGES, ids=['%s:%d' % (m[0], i) for i, m in enumerate(ROLE_MESSAGES)])
def test_every_failure_message_is_quoted(source, text):
    if len(text) < 3:
        role = source.split('/')[1] if source.startswith('roles/') else source
        assert role in TROUBLESHOOTING, '%s: a message made only of variables; name the role at least' % source
    else:
        assert text in TROUBLESHOOTING, '%s: docs/troubleshooting.md does not quote %r' % (source, text)


@pytest.mark.parametrize('source', messages.error_sources())
def test_every_error_source_is_covered(source):
    name = os.path.splitext(os.path.basename(source))[0]
    assert name in TROUBLESHOOTING, '%s produces errors but docs/troubleshooting.md never names it' % source


def test_fixed_text_is_the_longest_literal_part():
    assert messages.fixed_text("group '{{ g }}': worker {{ w }} failed or is unreachable; the leader is not started.") \
        == 'failed or is unreachable; the leader is not started'
    assert messages.fixed_text("{{ (['The inventory is not usable (' ~ n ~ ')']) | join('') }}") == \
        'The inventory is not usable'
