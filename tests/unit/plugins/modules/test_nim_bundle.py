# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import hashlib

import pytest

from ansible_collections.nimstack.multinode.plugins.modules import nim_bundle


def test_print_uris_gives_each_file_its_source_and_size():
    text = ("'http://deb.debian.org/debian/pool/main/h/haproxy/haproxy_2.6.12-1%2bdeb12u1_amd64.deb' "
            "haproxy_2.6.12-1+deb12u1_amd64.deb 2131112 SHA256:ab12\n"
            "Reading package lists...\n")
    assert nim_bundle.parse_uris(text) == {'haproxy_2.6.12-1+deb12u1_amd64.deb': {
        'uri': 'http://deb.debian.org/debian/pool/main/h/haproxy/haproxy_2.6.12-1%2bdeb12u1_amd64.deb',
        'size': 2131112}}


def test_a_packages_index_gives_name_version_and_path():
    text = ('Package: haproxy\nVersion: 2.6.12-1+deb12u1\nDepends: libc6,\n libssl3\nFilename: pool/haproxy.deb\n\n'
            'Package: liblua5.3-0\nVersion: 5.3.6-2\nFilename: ./pool/liblua.deb\n')
    assert nim_bundle.parse_packages(text) == [
        {'name': 'haproxy', 'version': '2.6.12-1+deb12u1', 'path': 'pool/haproxy.deb'},
        {'name': 'liblua5.3-0', 'version': '5.3.6-2', 'path': 'pool/liblua.deb'}]


def test_the_fingerprint_changes_with_the_image_the_packages_or_the_key_only():
    base = nim_bundle.fingerprint('sha256:1', ['b', 'a'], 'K')
    assert base == nim_bundle.fingerprint('sha256:1', ['a', 'b'], 'K')
    assert len({base, nim_bundle.fingerprint('sha256:2', ['a', 'b'], 'K'),
                nim_bundle.fingerprint('sha256:1', ['a'], 'K'), nim_bundle.fingerprint('sha256:1', ['a', 'b'], 'L')}) == 4


def test_a_record_is_intact_only_with_every_file_at_its_size(tmp_path):
    (tmp_path / 'apt').mkdir()
    (tmp_path / 'apt' / 'x.deb').write_bytes(b'abc')
    record = {'files': [{'path': 'apt/x.deb', 'size': 3}]}
    assert nim_bundle.intact(str(tmp_path), record)
    assert not nim_bundle.intact(str(tmp_path), {'files': [{'path': 'apt/x.deb', 'size': 4}]})
    assert not nim_bundle.intact(str(tmp_path), {'files': [{'path': 'apt/y.deb', 'size': 3}]})
    assert not nim_bundle.intact(str(tmp_path), {'files': []})


def test_the_fingerprint_changes_with_a_vendor_repository_or_its_key():
    cuda = {'uri': 'http://m/cuda/', 'sha256': 'k1'}
    base = nim_bundle.fingerprint('sha256:1', ['a'], 'K', [cuda])
    assert base != nim_bundle.fingerprint('sha256:1', ['a'], 'K')
    assert base != nim_bundle.fingerprint('sha256:1', ['a'], 'K', [dict(cuda, sha256='k2')])
    assert base != nim_bundle.fingerprint('sha256:1', ['a'], 'K', [dict(cuda, uri='http://n/cuda/')])
    assert base == nim_bundle.fingerprint('sha256:1', ['a'], 'K', [dict(cuda)])
    # A bundle made before vendor repositories keeps its fingerprint where it has none.
    assert nim_bundle.fingerprint('sha256:1', ['a'], 'K', []) == nim_bundle.fingerprint('sha256:1', ['a'], 'K')


def test_a_vendor_key_is_named_as_apt_reads_it():
    source = {'name': 'nvidia-cuda'}
    assert nim_bundle.key_file(source, 'debian-12', b'\n-----BEGIN PGP PUBLIC KEY BLOCK-----\n') == 'nvidia-cuda-debian-12.asc'
    assert nim_bundle.key_file(source, 'ubuntu-22.04', b'\x99\x01\x0d') == 'nvidia-cuda-ubuntu-22.04.gpg'


def test_the_vendors_sources_list_is_written_with_or_without_a_repository(tmp_path):
    import os
    import subprocess
    script = 'set -eu\n' + nim_bundle.VENDORS
    target = str(tmp_path / 'vendors.list')
    env = dict(os.environ, VENDOR_LIST=target)
    env.pop('SOURCES', None)
    subprocess.check_call(['sh', '-c', script], env=env)
    assert open(target).read() == ''
    env['SOURCES'] = 'http://m/cuda/ nvidia-cuda-debian-12.asc /\nhttps://d/linux/debian docker-debian-12.asc bookworm stable'
    subprocess.check_call(['sh', '-c', script], env=env)
    assert open(target).read().splitlines() == [
        'deb [signed-by=/keys/nvidia-cuda-debian-12.asc] http://m/cuda/ /',
        'deb [signed-by=/keys/docker-debian-12.asc] https://d/linux/debian bookworm stable']


class _Module(object):
    check_mode = False

    def __init__(self, files):
        self.params = {'files': files, 'helm': 'helm'}

    def fail_json(self, **kwargs):
        raise AssertionError(kwargs['msg'])


def _maker(dest, files):
    maker = object.__new__(nim_bundle.Maker)
    maker.module = _Module(files)
    maker.p = maker.module.params
    maker.dest = str(dest)
    return maker


def test_the_kubernetes_files_are_fetched_once_checksummed_and_dropped_when_no_longer_named(tmp_path):
    source = tmp_path / 'internet'
    (source / 'charts').mkdir(parents=True)
    (source / 'lws.yaml').write_text('kind: List\n')
    (source / 'charts' / 'op-3.1.2.tgz').write_bytes(b'chart')
    (source / 'index.yaml').write_text('entries:\n  k8s-nim-operator:\n  - version: 3.1.2\n    urls: [charts/op-3.1.2.tgz]\n')
    files = [{'name': 'lws-v0.10.0-manifests.yaml', 'url': 'file://%s/lws.yaml' % source},
             {'name': 'k8s-nim-operator-v3.1.2.tgz', 'repo': 'file://%s' % source, 'chart': 'k8s-nim-operator',
              'version': 'v3.1.2'}]
    bundle_dir = tmp_path / 'bundle'
    manifest = {}
    assert _maker(bundle_dir, files).files(manifest) == ['k8s-nim-operator-v3.1.2.tgz', 'lws-v0.10.0-manifests.yaml']
    assert (bundle_dir / 'files' / 'k8s-nim-operator-v3.1.2.tgz').read_bytes() == b'chart'
    sums = (bundle_dir / 'files' / 'SHA256SUMS').read_text().splitlines()
    assert sums == ['%s  k8s-nim-operator-v3.1.2.tgz' % hashlib.sha256(b'chart').hexdigest(),
                    '%s  lws-v0.10.0-manifests.yaml' % hashlib.sha256(b'kind: List\n').hexdigest()]
    assert [(r['path'], r['size'], r['source']) for r in manifest['files']] == [
        ('files/k8s-nim-operator-v3.1.2.tgz', 5, 'file://%s (k8s-nim-operator v3.1.2)' % source),
        ('files/lws-v0.10.0-manifests.yaml', 11, 'file://%s/lws.yaml' % source)]
    # Again with nothing changed: nothing fetched, even with the source gone.
    (source / 'index.yaml').unlink()
    assert _maker(bundle_dir, files).files(manifest) == []
    # A file changed in the bundle is fetched again; a file no longer named goes.
    (bundle_dir / 'files' / 'lws-v0.10.0-manifests.yaml').write_text('kind: Lis\n')
    assert _maker(bundle_dir, files[:1]).files(manifest) == ['lws-v0.10.0-manifests.yaml']
    assert sorted(p.name for p in (bundle_dir / 'files').iterdir()) == ['SHA256SUMS', 'lws-v0.10.0-manifests.yaml']
    with pytest.raises(AssertionError, match='needs a plain name and one source'):
        _maker(bundle_dir, [{'name': '../x', 'url': 'file:///etc/hostname'}]).files(manifest)
    with pytest.raises(AssertionError, match='cannot fetch k8s-nim-operator-v3.1.2.tgz for the bundle: .*index.yaml'):
        _maker(bundle_dir, files[1:]).files(manifest)
