# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import grp
import os
import pwd

import pytest

from ansible_collections.nimstack.multinode.plugins.module_utils import drift, nim_ownership

OWNER = pwd.getpwuid(os.getuid())[0]
GROUP = grp.getgrgid(os.getgid())[0]


def _names(uid):
    return pwd.getpwuid(uid)[0]


def _groups(gid):
    return grp.getgrgid(gid)[0]


def _units(states):
    return lambda name: states.get(name, (None, None))


def _check(files, units=(), states=None):
    reasons, checksums, _contents, _exists = drift.drift(files, list(units), _names, _groups, _units(states or {}))
    return reasons, checksums


def _write(path, text, mode=0o644):
    with open(path, 'w') as handle:
        handle.write(text)
    os.chmod(path, mode)
    return str(path)


def test_a_file_as_wanted_is_in_sync(tmp_path):
    path = _write(tmp_path / 'a.json', '{}\n', 0o600)
    assert _check([{'path': path, 'content': '{}\n', 'owner': OWNER, 'group': GROUP, 'mode': '0600'}]) == ([], {})


def test_content_mode_owner_and_group_differences_are_each_named(tmp_path):
    path = _write(tmp_path / 'a.json', '{"a": 1}\n', 0o644)
    reasons = _check([{'path': path, 'content': '{}\n', 'owner': 'nobody-else', 'group': 'nogroup-else',
                      'mode': '0600'}])[0]
    assert reasons == ['%s: content differs' % path, '%s: owner %s, wanted nobody-else' % (path, OWNER),
                       '%s: group %s, wanted nogroup-else' % (path, GROUP), '%s: mode 0644, wanted 0600' % path]


def test_a_checksum_stands_for_the_content(tmp_path):
    path = _write(tmp_path / 'prog.py', 'print(1)\n')
    assert _check([{'path': path, 'checksum': drift.sha1_text('print(1)\n')}])[0] == []
    assert _check([{'path': path, 'checksum': drift.sha1_text('print(2)\n')}])[0] == ['%s: content differs' % path]


def test_missing_absent_and_any(tmp_path):
    path = str(tmp_path / 'gone')
    assert _check([{'path': path}])[0] == ['%s: missing' % path]
    assert _check([{'path': path, 'state': 'absent'}])[0] == []
    assert _check([{'path': path, 'state': 'any', 'refuse_pattern': 'failed'}])[0] == []
    _write(path, '{"state": "failed"}\n')
    assert _check([{'path': path, 'state': 'absent'}])[0] == ['%s: present, wanted absent' % path]
    assert _check([{'path': path, 'state': 'any', 'refuse_pattern': '"state":\\s*"failed"'}])[0] == [
        '%s: holds "state":\\s*"failed"' % path]
    assert _check([{'path': path, 'state': 'any', 'refuse_pattern': '"state":\\s*"formed"'}])[0] == []


def test_a_directory_needs_the_roles_marker(tmp_path):
    path = str(tmp_path)
    assert _check([{'path': path, 'state': 'directory', 'marker_owner': 'nim_docker'}])[0] == [
        "%s: not marked as role nim_docker's" % path]
    nim_ownership.apply_claim(path, 'nim_docker', nim_ownership.claim_directory(path, 'nim_docker')[1])
    assert _check([{'path': path, 'state': 'directory', 'marker_owner': 'nim_docker'}])[0] == []
    assert _check([{'path': path, 'state': 'file'}])[0] == ['%s: not a regular file' % path]
    assert _check([{'path': path + '/.nimstack-managed', 'state': 'directory'}])[0] == [
        '%s/.nimstack-managed: not a directory' % path]


def test_checksums_are_reported_never_the_content(tmp_path):
    path = _write(tmp_path / 'secret', 'abc\n', 0o600)
    reasons, checksums = _check([{'path': path, 'report_checksum': True},
                                 {'path': str(tmp_path / 'none'), 'report_checksum': True}])
    assert checksums == {path: drift.sha1_text('abc\n'), str(tmp_path / 'none'): None}
    assert reasons == ['%s/none: missing' % tmp_path]


def test_units_must_be_enabled_and_active():
    unit = {'name': 'nimstack-supervisor@g.service', 'enabled': True, 'active': True}
    assert _check([], [unit], {unit['name']: ('enabled', 'active')})[0] == []
    assert _check([], [unit], {unit['name']: ('disabled', 'failed')})[0] == [
        'nimstack-supervisor@g.service: disabled', 'nimstack-supervisor@g.service: failed']
    assert _check([], [unit])[0] == ['nimstack-supervisor@g.service: not found'] * 2


def test_owner_and_group_may_be_numbers(tmp_path):
    path = _write(tmp_path / 'key', 'k\n', 0o440)
    assert _check([{'path': path, 'owner': str(os.getuid()), 'group': os.getgid(), 'mode': '0440'}])[0] == []
    assert _check([{'path': path, 'group': '64999'}])[0] == ['%s: group %s, wanted 64999' % (path, GROUP)]


def test_contents_of_public_files_are_reported(tmp_path):
    path = _write(tmp_path / 'key.pub', 'ssh-ed25519 AAAA host\n')
    _reasons, _checksums, contents, _exists = drift.drift(
        [{'path': path, 'report_content': True}, {'path': str(tmp_path / 'none.pub'), 'state': 'any', 'report_content': True}],
        [], _names, _groups, _units({}))
    assert contents == {path: 'ssh-ed25519 AAAA host\n', str(tmp_path / 'none.pub'): None}


def test_a_directory_of_the_role_left_behind_is_drift(tmp_path):
    root = str(tmp_path)
    for path in (root, root + '/g1', root + '/old'):
        if not os.path.isdir(path):
            os.makedirs(path)
        nim_ownership.apply_claim(path, 'ssh_mesh', nim_ownership.claim_directory(path, 'ssh_mesh')[1])
    entry = {'path': root, 'state': 'directory', 'marker_owner': 'ssh_mesh', 'prune_except': ['g1']}
    assert _check([entry])[0] == ['%s/old: left behind' % root]
    assert _check([dict(entry, prune_except=['g1', 'old'])])[0] == []


def test_the_secrets_group_must_exist_alone_without_members():
    host = [('nimstack-secrets', 64910, []), ('users', 100, [])]

    def check(groups):
        return drift.drift([], [], _names, _groups, _units({}), [{'name': 'nimstack-secrets', 'gid': 64910}], groups)[0]
    assert check(host) == []
    assert check(host[1:]) == ['group nimstack-secrets: missing']
    assert check([('nimstack-secrets', 64910, ['bob'])]) == ['group nimstack-secrets has members bob']


def test_a_unit_wanted_disabled_may_be_missing_and_booleans_may_be_text():
    unit = {'name': 'nimstack-firewall.service', 'enabled': 'False'}
    assert _check([], [unit])[0] == []
    assert _check([], [unit], {unit['name']: ('enabled', 'inactive')})[0] == ['nimstack-firewall.service: enabled']
    assert _check([], [dict(unit, enabled='true')], {unit['name']: ('enabled', 'inactive')})[0] == []


def test_a_table_that_is_not_loaded_is_drift():
    assert drift.table_drift(['inet nimstack'], ['table inet filter', 'table inet nimstack']) == []
    assert drift.table_drift(['inet nimstack'], ['table ip nat']) == ['table inet nimstack: not loaded']


def test_contents_follow_links_and_a_large_file_is_an_error(tmp_path):
    target = _write(tmp_path / 'daemon.json', '{}\n')
    os.symlink(target, str(tmp_path / 'link.json'))
    big = _write(tmp_path / 'big', 'x' * (drift.CONTENT_LIMIT + 1))
    found = drift.drift([{'path': str(tmp_path / 'link.json'), 'state': 'any', 'report_content': True, 'report_exists': True},
                         {'path': str(tmp_path / 'none'), 'state': 'any', 'report_exists': True}],
                        [], _names, _groups, _units({}))
    assert found[2] == {str(tmp_path / 'link.json'): '{}\n'}
    assert found[3] == {str(tmp_path / 'link.json'): True, str(tmp_path / 'none'): False}
    with pytest.raises(drift.DriftError):
        drift.drift([{'path': big, 'report_content': True}], [], _names, _groups, _units({}))
