# -*- coding: utf-8 -*-
"""The nim_secrets_group module: create the group when missing, refuse every conflict, check mode, idempotence.

The host's group database and groupadd are fakes: the real system's groups are never read for a
decision nor changed.
"""

import grp

import pytest
from ansible.module_utils import basic

from ansible_collections.nimstack.multinode.plugins.modules import nim_secrets_group
from ansible_collections.nimstack.multinode.tests.unit.plugins.modules.utils import run_module

ARGS = dict(gid=64990, variable='nim_secrets_gid')


@pytest.fixture
def host(monkeypatch, tmp_path):
    """A fake group database (``groups``) and a stand-in groupadd script that records its arguments
    in groupadd.log; a group it adds appears in the database. ``rc`` sets the script's exit status."""
    log = tmp_path / 'groupadd.log'
    script = tmp_path / 'groupadd'
    state = dict(groups=[], rc=0)

    def install(groups=(), rc=0):
        state.update(groups=[grp.struct_group((name, 'x', gid, list(members))) for name, gid, members in groups], rc=rc)
        script.write_text('#!/bin/sh\necho "$@" >> %s\nexit %d\n' % (log, rc))
        script.chmod(0o755)
        return state

    def getgrall():
        added = []
        if log.exists() and state['rc'] == 0:
            for line in log.read_text().splitlines():
                words = line.split()
                added.append(grp.struct_group((words[-1], 'x', int(words[words.index('--gid') + 1]), [])))
        return state['groups'] + added

    def get_bin_path(module, name, required=False, opt_dirs=None):
        assert name == 'groupadd', name
        return str(script)

    monkeypatch.setattr(nim_secrets_group.grp, 'getgrall', getgrall)
    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', get_bin_path)
    state['calls'] = lambda: log.read_text().splitlines() if log.exists() else []
    state['install'] = install
    install()
    return state


def test_a_missing_group_is_created_once_as_a_system_group_with_its_gid(host):
    result, failed = run_module(nim_secrets_group.main, ARGS, check_mode=True)
    assert not failed and result['changed'] and result['created']
    assert host['calls']() == []
    result, failed = run_module(nim_secrets_group.main, ARGS)
    assert not failed and result['changed'] and result['created']
    assert host['calls']() == ['--system --gid 64990 nimstack-secrets']
    result, failed = run_module(nim_secrets_group.main, ARGS)
    assert not failed and not result['changed'] and not result['created']
    result, failed = run_module(nim_secrets_group.main, ARGS, check_mode=True)
    assert not failed and not result['changed'] and not result['created']
    assert host['calls']() == ['--system --gid 64990 nimstack-secrets']


def test_another_name_is_created_with_that_name(host):
    host['install']([('users', 100, ['alice'])])
    result, failed = run_module(nim_secrets_group.main, dict(ARGS, name='site-secrets', gid='64991'))
    assert not failed and result['changed']
    assert host['calls']() == ['--system --gid 64991 site-secrets']


def test_the_group_already_there_alone_without_members_is_left_alone(host):
    host['install']([('nimstack-secrets', 64990, []), ('users', 100, ['alice'])])
    result, failed = run_module(nim_secrets_group.main, ARGS)
    assert not failed and result == dict(changed=False, created=False)
    assert host['calls']() == []


@pytest.mark.parametrize('groups, conflicts', [
    ([('site', 64990, [])], 'gid 64990 belongs to group site'),
    ([('b-site', 64990, []), ('a-site', 64990, [])], 'gid 64990 belongs to group a-site, b-site'),
    ([('nimstack-secrets', 1234, [])], 'group nimstack-secrets has gid 1234, not 64990'),
    ([('nimstack-secrets', 64990, ['alice', 'bob'])], 'group nimstack-secrets has members alice,bob'),
    ([('nimstack-secrets', 1234, ['alice']), ('site', 64990, [])],
     'gid 64990 belongs to group site; group nimstack-secrets has gid 1234, not 64990; group nimstack-secrets has members alice'),
])
def test_every_conflict_is_refused_naming_it_and_the_variable_and_nothing_changes(host, groups, conflicts):
    host['install'](groups)
    for check_mode in (True, False):
        result, failed = run_module(nim_secrets_group.main, ARGS, check_mode=check_mode)
        assert failed
        assert result['msg'] == ("%s; the secrets group is the collection's own (nimstack-secrets, gid nim_secrets_gid), for the NIM "
                                 "containers only: choose a free gid or remove the conflicting group or member." % conflicts)
    assert host['calls']() == []


def test_a_failing_groupadd_fails_the_module(host):
    host['install'](rc=9)
    result, failed = run_module(nim_secrets_group.main, ARGS)
    assert failed and result['rc'] == 9
    assert host['calls']() == ['--system --gid 64990 nimstack-secrets']


@pytest.mark.parametrize('args', [dict(gid=64990), dict(variable='nim_secrets_gid'), dict(ARGS, gid='not-a-number')])
def test_gid_and_variable_are_required_and_the_gid_a_number(host, args):
    result, failed = run_module(nim_secrets_group.main, args)
    assert failed
    assert host['calls']() == []
