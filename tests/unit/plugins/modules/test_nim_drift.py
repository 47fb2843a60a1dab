# -*- coding: utf-8 -*-
"""The nim_drift module: files, directories, absent paths, units, nft tables and the secrets group, read only."""

import grp
import hashlib
import os
import pwd

import pytest
from ansible.module_utils import basic

from ansible_collections.nimstack.multinode.plugins.module_utils import nim_ownership
from ansible_collections.nimstack.multinode.plugins.modules import nim_drift
from ansible_collections.nimstack.multinode.tests.unit.plugins.modules.utils import run_module


def _user_name(uid):
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _group_name(gid):
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


UID, GID = os.getuid(), os.getgid()
OWNER, GROUP = _user_name(UID), _group_name(GID)


def _write(path, text, mode=0o644):
    with open(str(path), 'w') as handle:
        handle.write(text)
    os.chmod(str(path), mode)
    return str(path)


def _sha1(text):
    return hashlib.sha1(text.encode('utf-8')).hexdigest()


def _mark(path, owner):
    os.makedirs(str(path), exist_ok=True)
    _write(os.path.join(str(path), nim_ownership.MARKER), nim_ownership.marker_text(owner))
    return str(path)


def _drift(files=(), check_mode=False, **extra):
    result, failed = run_module(nim_drift.main, dict(files=list(files), **extra), check_mode=check_mode)
    assert not failed, result
    assert not result['changed']
    assert result['in_sync'] == (not result['drift'])
    return result


def _snapshot(root):
    """Every path under root with its kind, mode, owner, size, mtime and content."""
    seen = {}
    for top, dirs, files in os.walk(str(root)):
        for name in dirs + files:
            full = os.path.join(top, name)
            info = os.lstat(full)
            body = None
            if os.path.isfile(full) and not os.path.islink(full):
                with open(full, 'rb') as handle:
                    body = handle.read()
            seen[full] = (info.st_mode, info.st_uid, info.st_gid, info.st_size, info.st_mtime_ns, body)
    return seen


@pytest.fixture
def systemd(monkeypatch):
    """A host whose systemctl reports ``states`` ({unit: (is-enabled, is-active)}); the commands run are recorded."""
    def install(states, present=True):
        calls = []

        def get_bin_path(module, name, required=False, opt_dirs=None):
            return '/fake/bin/' + name if present and name == 'systemctl' else None

        def run_command(module, args, **kwargs):
            calls.append(list(args))
            assert args[0] == '/fake/bin/systemctl'
            verb, unit = args[1], args[2]
            enabled, active = states.get(unit, ('not-found', 'inactive'))
            return 0, '%s\n' % (enabled if verb == 'is-enabled' else active), ''
        monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', get_bin_path)
        monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
        return calls
    return install


def _nft(tmp_path, lines):
    """A stand-in nft that prints ``lines`` and records its arguments in nft.args."""
    script = tmp_path / 'nft'
    log = tmp_path / 'nft.args'
    body = ''.join("printf '%%s\\n' '%s'\n" % line for line in lines)
    _write(script, '#!/bin/sh\necho "$@" >> %s\n%s' % (log, body), 0o755)
    return str(script), log


def test_a_file_in_sync_by_content_checksum_owner_group_and_mode(tmp_path):
    path = _write(tmp_path / 'supervisor.json', '{}\n', 0o600)
    entries = [
        dict(path=path, content='{}\n', owner=OWNER, group=GROUP, mode='0600'),
        dict(path=path, checksum=_sha1('{}\n'), owner=str(UID), group=str(GID), mode='600'),
        dict(path=path, state='file', owner=UID, group=GID, mode=0o600),
    ]
    result = _drift(entries)
    assert result['in_sync'] and result['drift'] == []


def test_a_file_that_differs_is_reported_once_per_difference(tmp_path):
    path = _write(tmp_path / 'supervisor.json', '{"old": 1}\n', 0o644)
    other_uid, other_gid = UID + 1, GID + 1
    result = _drift([dict(path=path, content='{}\n', owner=str(other_uid), group=str(other_gid), mode='0600')])
    assert not result['in_sync']
    assert result['drift'] == [
        '%s: content differs' % path,
        '%s: owner %s, wanted %d' % (path, OWNER, other_uid),
        '%s: group %s, wanted %d' % (path, GROUP, other_gid),
        '%s: mode 0644, wanted 0600' % path,
    ]


def test_a_wrong_checksum_or_owner_name_alone_is_drift(tmp_path):
    path = _write(tmp_path / 'token', 'secret\n', 0o640)
    assert _drift([dict(path=path, checksum=_sha1('other\n'))])['drift'] == ['%s: content differs' % path]
    assert _drift([dict(path=path, owner='nimstack-no-such-user')])['drift'] == [
        '%s: owner %s, wanted nimstack-no-such-user' % (path, OWNER)]
    assert _drift([dict(path=path, group='nimstack-no-such-group')])['drift'] == [
        '%s: group %s, wanted nimstack-no-such-group' % (path, GROUP)]
    assert _drift([dict(path=path, mode='0640', checksum=_sha1('secret\n'))])['in_sync']


def test_a_missing_file_or_one_of_the_wrong_kind_is_drift(tmp_path):
    missing = str(tmp_path / 'missing.json')
    directory = tmp_path / 'dir'
    directory.mkdir()
    target = _write(tmp_path / 'target', 'x')
    link = tmp_path / 'link'
    link.symlink_to(target)
    result = _drift([dict(path=missing, content='x'), dict(path=str(directory)), dict(path=str(link), content='x'),
                     dict(path=target, state='directory')])
    assert result['drift'] == [
        '%s: missing' % missing,
        '%s: not a regular file' % directory,
        '%s: not a regular file' % link,
        '%s: not a directory' % target,
    ]


def test_a_directory_with_and_without_the_roles_marker(tmp_path):
    ours = _mark(tmp_path / 'mesh', 'ssh_mesh')
    os.chmod(ours, 0o750)
    result = _drift([dict(path=ours, state='directory', marker_owner='ssh_mesh', owner=OWNER, group=GROUP, mode='0750')])
    assert result['in_sync']
    unmarked = tmp_path / 'plain'
    unmarked.mkdir()
    others = _mark(tmp_path / 'others', 'nim_docker')
    result = _drift([dict(path=str(unmarked), state='directory', marker_owner='ssh_mesh'),
                     dict(path=others, state='directory', marker_owner='ssh_mesh'),
                     dict(path=str(unmarked), state='directory')])
    assert result['drift'] == ["%s: not marked as role ssh_mesh's" % unmarked, "%s: not marked as role ssh_mesh's" % others]


def test_prune_except_reports_the_roles_own_directories_left_behind(tmp_path):
    mesh = _mark(tmp_path / 'mesh', 'ssh_mesh')
    _mark(tmp_path / 'mesh' / 'current', 'ssh_mesh')
    entry = dict(path=mesh, state='directory', marker_owner='ssh_mesh', prune_except=['current'])
    assert _drift([entry])['in_sync']
    _mark(tmp_path / 'mesh' / 'old', 'ssh_mesh')
    _write(tmp_path / 'mesh' / 'notes.txt', 'a file beside them is not a group directory')
    assert _drift([entry])['drift'] == ['%s/old: left behind' % mesh]
    assert _drift([dict(entry, prune_except=['current', 'old'])])['in_sync']


def test_a_path_that_must_be_absent(tmp_path):
    gone = str(tmp_path / 'maintenance')
    assert _drift([dict(path=gone, state='absent')])['in_sync']
    _write(gone, '')
    directory = tmp_path / 'old-group'
    directory.mkdir()
    dangling = tmp_path / 'dangling'
    dangling.symlink_to(tmp_path / 'nothing')
    result = _drift([dict(path=gone, state='absent'), dict(path=str(directory), state='absent'),
                     dict(path=str(dangling), state='absent')])
    assert result['drift'] == ['%s: present, wanted absent' % p for p in (gone, directory, dangling)]


def test_state_any_only_refuses_a_file_whose_text_matches_refuse_pattern(tmp_path):
    state = str(tmp_path / 'state.json')
    entry = dict(path=state, state='any', refuse_pattern=r'"state":\s*"failed"', owner='nimstack-no-such-user', mode='0600')
    assert _drift([entry])['in_sync']
    _write(state, '{"state": "running"}\n')
    assert _drift([entry])['in_sync']
    assert _drift([dict(path=state, state='any')])['in_sync']
    _write(state, '{"state":  "failed", "rank": 1}\n')
    assert _drift([entry])['drift'] == ['%s: holds "state":\\s*"failed"' % state]
    assert _drift([dict(path=state, state='any')])['in_sync']


def test_report_checksum_content_and_exists(tmp_path):
    key = _write(tmp_path / 'id.pub', 'ssh-ed25519 AAAA member\n')
    secret = _write(tmp_path / 'private.key', 'PRIVATE\n', 0o400)
    missing = str(tmp_path / 'missing.pub')
    dangling = tmp_path / 'nvidia-runtime'
    dangling.symlink_to(tmp_path / 'nothing')
    link = tmp_path / 'key-link.pub'
    link.symlink_to(key)
    result = _drift([
        dict(path=secret, report_checksum=True),
        dict(path=key, state='any', report_content=True),
        dict(path=missing, state='any', report_content=True, report_checksum=True, report_exists=True),
        dict(path=str(link), state='any', report_content=True, report_exists=True),
        dict(path=str(dangling), state='any', report_exists=True),
        dict(path=key, state='any', report_exists=True),
    ])
    assert result['in_sync']
    assert result['checksums'] == {secret: _sha1('PRIVATE\n'), missing: None}
    assert result['contents'] == {key: 'ssh-ed25519 AAAA member\n', missing: None, str(link): 'ssh-ed25519 AAAA member\n'}
    assert result['exists'] == {missing: False, str(link): True, str(dangling): False, key: True}
    # What was not asked for is not returned: never a secret's content.
    assert secret not in result['contents']


def test_report_content_of_a_large_file_fails_naming_it(tmp_path):
    big = _write(tmp_path / 'big', 'x' * (1048576 + 1))
    result, failed = run_module(nim_drift.main, dict(files=[dict(path=big, state='any', report_content=True)]))
    assert failed and result['msg'] == '%s: larger than 1048576 bytes, not read' % big
    exact = _write(tmp_path / 'exact', 'x' * 1048576)
    assert len(_drift([dict(path=exact, state='any', report_content=True)])['contents'][exact]) == 1048576


@pytest.mark.parametrize('entry, named', [
    (dict(path='etc/nimstack/x'), 'etc/nimstack/x'),
    (dict(path='/etc/nimstack/x', state='present'), '/etc/nimstack/x'),
    (dict(state='absent'), 'None'),
])
def test_a_relative_path_or_an_unknown_state_is_refused_naming_it(tmp_path, entry, named):
    fine = _write(tmp_path / 'fine', 'x')
    result, failed = run_module(nim_drift.main, dict(files=[dict(path=fine), entry]))
    assert failed
    assert result['msg'] == 'files need an absolute path and a state of file, directory, absent, any: %s' % named


def test_check_mode_reports_the_same_and_changes_nothing(tmp_path):
    conf = _write(tmp_path / 'conf', 'old\n', 0o644)
    stale = _write(tmp_path / 'maintenance', 'on\n')
    mesh = tmp_path / 'mesh'
    mesh.mkdir()
    _mark(mesh / 'old-group', 'ssh_mesh')
    files = [dict(path=conf, content='new\n', mode='0600', report_checksum=True, report_content=True),
             dict(path=stale, state='absent'),
             dict(path=str(tmp_path / 'missing'), state='file', content='x'),
             dict(path=str(mesh), state='directory', marker_owner='ssh_mesh', prune_except=[])]
    before = _snapshot(tmp_path)
    checked = _drift(files, check_mode=True)
    assert _snapshot(tmp_path) == before
    applied = _drift(files)
    assert _snapshot(tmp_path) == before
    assert checked == applied
    assert len(checked['drift']) == 6 and checked['checksums'] == {conf: _sha1('old\n')}


def test_units_enabled_and_active_as_systemctl_reports_them(systemd):
    calls = systemd({'nimstack-supervisor@g1.service': ('enabled', 'active'),
                     'docker.service': ('disabled', 'inactive'),
                     'nvidia-fabricmanager.service': ('enabled', 'failed')})
    units = [dict(name='nimstack-supervisor@g1.service', enabled=True, active=True),
             dict(name='docker.service', enabled='yes', active='true'),
             dict(name='nvidia-fabricmanager.service', enabled=True, active=True),
             dict(name='nimstack-old.service', enabled=False, active=False),
             dict(name='nimstack-maybe.service')]
    result = _drift(units=units)
    assert result['drift'] == ['docker.service: disabled', 'docker.service: inactive', 'nvidia-fabricmanager.service: failed']
    assert ['/fake/bin/systemctl', 'is-enabled', 'docker.service'] in calls
    assert ['/fake/bin/systemctl', 'is-active', 'nvidia-fabricmanager.service'] in calls
    assert all(call[1] in ('is-enabled', 'is-active') for call in calls)
    assert _drift(units=units[:1] + units[3:], check_mode=True)['in_sync']


def test_units_without_systemctl_are_not_found(systemd):
    calls = systemd({}, present=False)
    result = _drift(units=[dict(name='docker.service', enabled=True, active=True),
                           dict(name='nimstack-old.service', enabled='false', active='no')])
    assert result['drift'] == ['docker.service: not found', 'docker.service: not found']
    assert calls == []


def test_nft_tables_loaded_or_not(tmp_path):
    nft, log = _nft(tmp_path, ['table inet nimstack', 'table ip filter'])
    result = _drift(nft_tables=['inet nimstack', 'ip filter'], nft_command=nft)
    assert result['in_sync']
    assert log.read_text().split('\n')[0] == 'list tables'
    result = _drift(nft_tables=['inet nimstack', 'inet nimstack-g2', 'ip6 filter'], nft_command=nft, check_mode=True)
    assert result['drift'] == ['table inet nimstack-g2: not loaded', 'table ip6 filter: not loaded']


def test_nft_tables_without_nft_are_all_missing_and_nft_is_not_run_without_tables(tmp_path):
    result = _drift(nft_tables=['inet nimstack'], nft_command=str(tmp_path / 'no-nft'))
    assert result['drift'] == ['table inet nimstack: not loaded']
    nft, log = _nft(tmp_path, ['table inet nimstack'])
    assert _drift(nft_command=nft)['in_sync']
    assert not log.exists()


def test_the_secrets_group_must_exist_alone_with_its_gid_and_no_members(monkeypatch):
    host = []
    monkeypatch.setattr(nim_drift.grp, 'getgrall', lambda: list(host))
    wanted = [dict(name='nimstack-secrets', gid=64990)]
    assert _drift(groups=wanted)['drift'] == ['group nimstack-secrets: missing']
    host.append(grp.struct_group(('nimstack-secrets', 'x', 64990, [])))
    assert _drift(groups=wanted)['in_sync']
    assert _drift(groups=[dict(name='nimstack-secrets', gid='64990')])['in_sync']
    host.append(grp.struct_group(('site', 'x', 64990, ['alice'])))
    host[0] = grp.struct_group(('nimstack-secrets', 'x', 64990, ['bob']))
    assert _drift(groups=wanted)['drift'] == ['gid 64990 belongs to group site', 'group nimstack-secrets has members bob']
    host[:] = [grp.struct_group(('nimstack-secrets', 'x', 1234, []))]
    assert _drift(groups=wanted)['drift'] == ['group nimstack-secrets has gid 1234, not 64990']


def test_prune_except_is_in_sync_with_a_directory_the_apply_task_leaves(tmp_path):
    # nim_owned_path keeps (and warns of) a sub-directory that is not the role's, so it is no drift:
    # otherwise a mesh directory holding a site's folder would never be seen converged.
    mesh = _mark(tmp_path / 'mesh', 'ssh_mesh')
    _mark(tmp_path / 'mesh' / 'current', 'ssh_mesh')
    os.makedirs(str(tmp_path / 'mesh' / 'site'))
    _write(tmp_path / 'mesh' / 'site' / 'keep', 'the site\'s own')
    os.makedirs(str(tmp_path / 'mesh' / 'empty'))
    assert _drift([dict(path=mesh, state='directory', marker_owner='ssh_mesh', prune_except=['current'])])['in_sync']


def test_a_symbolic_mode_is_refused_naming_it(tmp_path):
    path = _write(tmp_path / 'f', 'x')
    result, failed = run_module(nim_drift.main, dict(files=[dict(path=path, content='x', mode='u=rw')]))
    assert failed and "mode 'u=rw' is not an octal mode" in result['msg']
