# -*- coding: utf-8 -*-
"""The nim_bundle_apt module against a bundle served from a directory (file://): what it writes,
and when it reads the lists (apt-get update) again."""

import os

import pytest
from ansible.module_utils import basic

from ansible_collections.nimstack.multinode.plugins.module_utils import bundle
from ansible_collections.nimstack.multinode.plugins.modules import nim_bundle_apt
from ansible_collections.nimstack.multinode.tests.unit.plugins.modules.utils import run_module


@pytest.fixture
def repo(tmp_path):
    path = tmp_path / 'bundle' / 'apt' / 'debian-12'
    path.mkdir(parents=True)
    (path / 'bundle.asc').write_text('-----BEGIN PGP PUBLIC KEY BLOCK-----\nkey one\n')
    (path / 'InRelease').write_text('-----BEGIN PGP SIGNED MESSAGE-----\nrelease one\n')
    return path


@pytest.fixture
def apt_get(monkeypatch):
    """apt-get update as a stand-in: records each call and writes a Packages list where apt would."""
    calls, calls_fail = [], []

    def run_command(module, args, environ_update=None, **kwargs):
        assert args == ['apt-get', 'update', '-qq']
        calls.append(environ_update)
        if calls_fail:
            return 100, '', 'E: The repository is not signed.'
        lists = os.path.join(os.path.dirname(environ_update['APT_CONFIG']), 'lists')
        with open(os.path.join(lists, 'host_apt_debian-12_._Packages'), 'w') as handle:
            handle.write('Package: docker.io\n')
        return 0, '', ''
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    return calls, calls_fail


def _args(repo, tmp_path):
    return dict(url='file://%s/' % repo, dir=str(tmp_path / 'run'))


def test_the_first_call_writes_the_configuration_and_reads_the_lists(repo, tmp_path, apt_get):
    calls = apt_get[0]
    result, failed = run_module(nim_bundle_apt.main, _args(repo, tmp_path))
    assert not failed and not result['changed'] and result['read']
    run = tmp_path / 'run'
    assert result['apt_config'] == str(run / 'apt.conf')
    assert calls == [{'APT_CONFIG': str(run / 'apt.conf')}]
    assert (run / 'bundle.asc').read_text() == (repo / 'bundle.asc').read_text()
    assert (run / 'bundle.list').read_text().splitlines()[1] == \
        'deb [signed-by=%s] file://%s ./' % (run / 'bundle.asc', repo)
    conf = (run / 'apt.conf').read_text()
    assert 'Dir::State::Lists "%s";' % (run / 'lists') in conf
    assert 'Dir::Cache "%s";' % (run / 'cache') in conf
    for sub in ('sources.list.d', 'lists/partial', 'cache/archives/partial'):
        assert (run / sub).is_dir()
    assert oct((run / 'apt.conf').stat().st_mode & 0o777) == '0o644'


def test_the_default_directory_is_the_one_the_roles_apt_tasks_name():
    spec = nim_bundle_apt.DOCUMENTATION
    assert 'default: %s' % os.path.dirname(bundle.APT_CONFIG) in spec


def test_a_converged_call_reads_nothing_again(repo, tmp_path, apt_get):
    calls = apt_get[0]
    run_module(nim_bundle_apt.main, _args(repo, tmp_path))
    result, failed = run_module(nim_bundle_apt.main, _args(repo, tmp_path))
    assert not failed and not result['read'] and len(calls) == 1


@pytest.mark.parametrize('change', ['release', 'key', 'lists'])
def test_a_new_release_a_new_key_or_lost_lists_are_read_again(repo, tmp_path, apt_get, change):
    calls = apt_get[0]
    run_module(nim_bundle_apt.main, _args(repo, tmp_path))
    if change == 'release':
        (repo / 'InRelease').write_text('-----BEGIN PGP SIGNED MESSAGE-----\nrelease two\n')
    elif change == 'key':
        (repo / 'bundle.asc').write_text('-----BEGIN PGP PUBLIC KEY BLOCK-----\nkey two\n')
    else:
        for name in os.listdir(tmp_path / 'run' / 'lists'):
            if name.endswith('_Packages'):
                os.remove(tmp_path / 'run' / 'lists' / name)
    result, failed = run_module(nim_bundle_apt.main, _args(repo, tmp_path))
    assert not failed and result['read'] and len(calls) == 2
    assert (tmp_path / 'run' / 'bundle.asc').read_text() == (repo / 'bundle.asc').read_text()


def test_a_failed_read_fails_naming_the_repository_and_is_tried_again(repo, tmp_path, apt_get):
    calls, fail = apt_get
    fail.append(True)
    result, failed = run_module(nim_bundle_apt.main, _args(repo, tmp_path))
    assert failed and 'apt-get update against file://%s failed (rc=100): E: The repository is not signed.' % repo \
        in result['msg']
    fail.clear()
    result, failed = run_module(nim_bundle_apt.main, _args(repo, tmp_path))
    assert not failed and result['read'] and len(calls) == 2


def test_an_unreachable_bundle_fails_naming_the_file(repo, tmp_path, apt_get):
    calls = apt_get[0]
    os.remove(repo / 'InRelease')
    result, failed = run_module(nim_bundle_apt.main, _args(repo, tmp_path))
    assert failed and result['msg'].startswith('the offline bundle: cannot read file://%s/InRelease from this host: ' % repo)
    assert calls == []
