# -*- coding: utf-8 -*-
"""nim_doctor_probe on this machine: a mesh directory made with ssh-keygen, the cache token."""

import shutil
import subprocess

import pytest

from ansible_collections.nimstack.multinode.plugins.modules import nim_doctor_probe
from ansible_collections.nimstack.multinode.tests.unit.plugins.modules.utils import run_module

pytestmark = pytest.mark.skipif(shutil.which('ssh-keygen') is None, reason='needs ssh-keygen')


def _mesh(tmp_path, authorize=True):
    mesh = tmp_path / 'mesh'
    mesh.mkdir()
    subprocess.check_call(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f', str(mesh / 'private.key')])
    subprocess.check_call(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f', str(mesh / 'ssh_host_ed25519_key')])
    public = (mesh / 'private.key.pub').read_text()
    (mesh / 'authorized_keys').write_text('from="10.0.0.1",no-pty %s' % public if authorize else '')
    (mesh / 'known_hosts').write_text('')
    fingerprint = subprocess.check_output(['ssh-keygen', '-l', '-E', 'sha256', '-f', str(mesh / 'private.key.pub')])
    return str(mesh), fingerprint.decode().split()[1]


def test_probe_reads_the_mesh_and_writes_the_token(tmp_path):
    mesh, fingerprint = _mesh(tmp_path)
    cache = tmp_path / 'cache'
    cache.mkdir()
    result, failed = run_module(nim_doctor_probe.main, {
        'cache_path': str(cache), 'mesh_dir': mesh, 'cache_file': str(cache / '.t'), 'cache_token': 'abc',
        'ssh_probe_port': 1})
    assert not failed and not result['changed']
    probe = result['probe']
    assert probe['mesh']['present'] and probe['mesh']['missing'] == []
    assert probe['mesh']['key_fingerprint'] == fingerprint and probe['mesh']['authorized'] == [fingerprint]
    assert probe['cache_exists'] and probe['cache_fs_path'] == str(cache) and probe['cache_free_bytes'] > 0
    assert probe['cache_write'] == {'ok': True, 'error': '', 'path': str(cache / '.t')}
    assert (cache / '.t').read_text() == 'abc\n'
    assert probe['memlock_source']


def test_probe_reports_missing_cache_and_mesh(tmp_path):
    result, failed = run_module(nim_doctor_probe.main, {
        'cache_path': str(tmp_path / 'not' / 'yet'), 'mesh_dir': str(tmp_path / 'nomesh'),
        'cache_file': str(tmp_path / 'not' / 'yet' / '.t'), 'cache_token': 'abc'})
    assert not failed
    probe = result['probe']
    assert not probe['cache_exists'] and probe['cache_fs_path'] == str(tmp_path) and probe['cache_write'] is None
    assert probe['mesh']['present'] is False


def test_probe_sees_an_unauthorized_key(tmp_path):
    mesh, fingerprint = _mesh(tmp_path, authorize=False)
    result, failed = run_module(nim_doctor_probe.main, {'cache_path': str(tmp_path), 'mesh_dir': mesh})
    assert not failed
    assert result['probe']['mesh']['key_fingerprint'] == fingerprint and result['probe']['mesh']['authorized'] == []
