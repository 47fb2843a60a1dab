# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import hashlib
import io
import json
import os
import tarfile

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


def _maker(dest, files=(), module=None):
    maker = object.__new__(nim_bundle.Maker)
    maker.module = module or _Module(list(files))
    maker.p = maker.module.params
    maker.dest = str(dest)
    maker.docker = 'docker'
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


class _Docker(_Module):
    """A module whose docker fills a model cache as a downloader would, and records each run."""

    def __init__(self, models, key='', rc=0):
        super(_Docker, self).__init__([])
        self.params.update({'models': models, 'ngc_api_key': key})
        self.runs, self.env_files, self.rc = [], [], rc

    def run_command(self, cmd):
        if cmd[1:3] == ['image', 'inspect']:
            return 0, 'sha256:%s\n' % hashlib.sha256(cmd[-1].encode()).hexdigest(), ''
        self.runs.append(cmd)
        env_file = cmd[cmd.index('--env-file') + 1]
        self.env_files.append((oct(os.stat(env_file).st_mode & 0o777), open(env_file).read()))
        cache = cmd[cmd.index('-v') + 1].split(':')[0]
        os.makedirs(os.path.join(cache, 'ngc', 'hub', 'models--llama'))
        with open(os.path.join(cache, 'ngc', 'hub', 'models--llama', 'weights.bin'), 'wb') as handle:
            handle.write(b'w' * 10)
        return self.rc, 'downloading\n', 'NGC said no to ' + self.params['ngc_api_key'] if self.rc else ''


def test_a_model_cache_is_filled_by_its_downloader_archived_and_not_filled_again(tmp_path):
    model = {'file': 'nvcr.io_nim_llama_1.3.0_0123456789ab.tar', 'image': 'nvcr.io/nim/llama:1.3.0', 'profile': '',
             'downloader': 'nvcr.io/nim/llama:1.3.0', 'command': ['download-to-cache'], 'user': '1000:1000',
             'env': {'NIM_CACHE_PATH': '/model-store', 'NIM_TENSOR_PARALLEL_SIZE': '8'}}
    docker = _Docker([model], key='nvapi-SECRET')
    manifest = {}
    assert _maker(tmp_path, module=docker).models(manifest) == [model['file']]
    # The key and the env reach the downloader through a file only its owner reads, never its command line.
    run = docker.runs[0]
    assert 'nvapi-SECRET' not in ' '.join(run)
    assert run[-2:] == ['nvcr.io/nim/llama:1.3.0', 'download-to-cache'] and run[run.index('--user') + 1] == '1000:1000'
    assert docker.env_files == [('0o600', 'NGC_API_KEY=nvapi-SECRET\nNIM_CACHE_PATH=/model-store\nNIM_TENSOR_PARALLEL_SIZE=8\n')]
    archive = tmp_path / 'models' / model['file']
    with tarfile.open(str(archive)) as tar:
        members = dict((m.name, m) for m in tar.getmembers())
    assert sorted(members) == ['ngc', 'ngc/hub', 'ngc/hub/models--llama', 'ngc/hub/models--llama/weights.bin']
    assert set((m.uid, m.gid, m.uname) for m in members.values()) == {(1000, 1000, '')}
    # Nothing left beside the archive and its checksums: the filled cache and the env file are gone.
    assert sorted(p.name for p in (tmp_path / 'models').iterdir()) == ['SHA256SUMS', model['file']]
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    assert (tmp_path / 'models' / 'SHA256SUMS').read_text() == '%s  %s\n' % (digest, model['file'])
    assert [(r['path'], r['size'], r['sha256']) for r in manifest['models']] == [
        ('models/' + model['file'], archive.stat().st_size, digest)]
    # Again with nothing changed: not filled again. Another env (the way the model is reached) fills it again.
    assert _maker(tmp_path, module=_Docker([model])).models(manifest) == []
    changed = dict(model, env=dict(model['env'], NIM_MODEL_PROFILE='abc'))
    assert _maker(tmp_path, module=_Docker([changed])).models(manifest) == [model['file']]
    # A cache no longer named goes.
    assert _maker(tmp_path, module=_Docker([])).models(manifest) == []
    assert list((tmp_path / 'models').iterdir()) == [] and manifest['models'] == []


def test_a_downloader_that_fails_is_named_with_its_last_lines_and_leaves_nothing(tmp_path):
    model = {'file': 'm.tar', 'image': 'nvcr.io/nim/llama:1.3.0', 'profile': 'p1', 'downloader': 'dl:1',
             'command': ['download-to-cache'], 'user': '1000:1000', 'env': {}}
    with pytest.raises(AssertionError, match=r'the model cache of nvcr.io/nim/llama:1.3.0 \(profile p1\) could not be '
                                             r'filled: dl:1 download-to-cache ended with rc 1: downloading \| NGC said no'):
        _maker(tmp_path, module=_Docker([model], key='k', rc=1)).models({})
    assert [p.name for p in (tmp_path / 'models').iterdir()] == []
    with pytest.raises(AssertionError, match='a line of an env file cannot hold: A'):
        _maker(tmp_path, module=_Docker([dict(model, env={'A': 'two\nlines'})])).models({})


def _installed(root, name='community.example', version='1.2.0', files=None, dependencies=None):
    """An installed collection as the ansible package leaves one: its MANIFEST.json and FILES.json, some of
    the files FILES.json lists (the tests left out)."""
    path = root / name.replace('.', '_')
    files = {'plugins/modules/thing.py': b'print(1)\n', 'meta/runtime.yml': b'---\n'} if files is None else files
    entries = [{'name': '.', 'ftype': 'dir', 'chksum_type': None, 'chksum_sha256': None, 'format': 1}]
    for directory in ('meta', 'plugins', 'plugins/modules', 'tests'):
        entries.append({'name': directory, 'ftype': 'dir', 'chksum_type': None, 'chksum_sha256': None, 'format': 1})
    for rel, data in sorted(files.items()) + [('tests/unit/test_thing.py', b'left out\n')]:
        entries.append({'name': rel, 'ftype': 'file', 'chksum_type': 'sha256',
                        'chksum_sha256': hashlib.sha256(data).hexdigest(), 'format': 1})
        if not rel.startswith('tests/'):
            (path / os.path.dirname(rel)).mkdir(parents=True, exist_ok=True)
            (path / rel).write_bytes(data)
    files_json = json.dumps({'files': entries, 'format': 1}).encode()
    (path / 'FILES.json').write_bytes(files_json)
    namespace, short = name.split('.')
    (path / 'MANIFEST.json').write_text(json.dumps({
        'collection_info': {'namespace': namespace, 'name': short, 'version': version, 'dependencies': dependencies or {}},
        'file_manifest_file': {'name': 'FILES.json', 'ftype': 'file', 'chksum_type': 'sha256',
                               'chksum_sha256': hashlib.sha256(files_json).hexdigest(), 'format': 1},
        'format': 1}))
    return str(path)


def test_an_installed_collection_is_packed_as_an_artifact_galaxy_checks_and_not_packed_again(tmp_path):
    path = _installed(tmp_path)
    item = {'name': 'community.example', 'version': '1.2.0', 'path': path, 'installed': True}
    module = _Module([])
    module.params['collections'] = [item]
    manifest = {}
    bundle_dir = tmp_path / 'bundle'
    assert _maker(bundle_dir, module=module).collections(manifest) == ['community.example']
    artifact = bundle_dir / 'collections' / 'community-example-1.2.0.tar.gz'
    with tarfile.open(str(artifact)) as tar:
        members = dict((m.name, m) for m in tar.getmembers())
        data = dict((name, tar.extractfile(m).read()) for name, m in members.items() if m.isfile())
    # What is installed, with a FILES.json of it and a MANIFEST.json naming that FILES.json: what
    # ansible-galaxy checks every file against when it installs the artifact. The test left out is not listed.
    assert sorted(members) == ['FILES.json', 'MANIFEST.json', 'meta', 'meta/runtime.yml', 'plugins', 'plugins/modules',
                               'plugins/modules/thing.py']
    listed = json.loads(data['FILES.json'])['files']
    assert [e['name'] for e in listed] == ['.', 'meta', 'plugins', 'plugins/modules', 'meta/runtime.yml',
                                           'plugins/modules/thing.py']
    for entry in listed:
        if entry['ftype'] == 'file':
            assert hashlib.sha256(data[entry['name']]).hexdigest() == entry['chksum_sha256']
    info = json.loads(data['MANIFEST.json'])
    assert info['file_manifest_file']['chksum_sha256'] == hashlib.sha256(data['FILES.json']).hexdigest()
    assert info['collection_info']['version'] == '1.2.0'
    assert set((m.uid, m.gid, m.uname, m.mtime) for m in members.values()) == {(0, 0, '', 0)}
    record = manifest['collections'][0]
    assert (record['path'], record['size'], record['sha256']) == (
        'collections/community-example-1.2.0.tar.gz', artifact.stat().st_size, hashlib.sha256(artifact.read_bytes()).hexdigest())
    assert record['source'].endswith('; 2 files and folders it lists are not installed here, nor carried')
    assert (bundle_dir / 'collections' / 'SHA256SUMS').read_text() == '%s  %s\n' % (record['sha256'], artifact.name)
    # Again: not packed again; the same files pack the same bytes.
    assert _maker(bundle_dir, module=module).collections(manifest) == []
    first = artifact.read_bytes()
    artifact.unlink()
    assert _maker(bundle_dir, module=module).collections(manifest) == ['community.example']
    assert artifact.read_bytes() == first
    # No longer named: gone.
    module.params['collections'] = []
    assert _maker(bundle_dir, module=module).collections(manifest) == []
    assert list((bundle_dir / 'collections').iterdir()) == [] and manifest['collections'] == []


def test_an_installed_collection_changed_since_its_install_is_refused_naming_the_file(tmp_path):
    path = _installed(tmp_path)
    with open(os.path.join(path, 'plugins', 'modules', 'thing.py'), 'a') as handle:
        handle.write('# edited\n')
    module = _Module([])
    module.params['collections'] = [{'name': 'community.example', 'version': '1.2.0', 'path': path, 'installed': True}]
    with pytest.raises(AssertionError, match=r'the collection community.example at .* cannot be carried in: '
                                             r'plugins/modules/thing.py changed since it was installed'):
        _maker(tmp_path / 'bundle', module=module).collections({})
    assert list((tmp_path / 'bundle' / 'collections').iterdir()) == []
    os.remove(os.path.join(path, 'FILES.json'))
    with open(os.path.join(path, 'FILES.json'), 'w') as handle:
        handle.write('{"files": []}')
    with pytest.raises(AssertionError, match='its FILES.json is not the one its MANIFEST.json names'):
        _maker(tmp_path / 'bundle', module=module).collections({})


class _Galaxy(_Module):
    """A module whose ansible-galaxy builds a source tree into an artifact, and records each build."""

    def __init__(self, collections):
        super(_Galaxy, self).__init__([])
        self.params.update({'collections': collections, 'galaxy': 'ansible-galaxy'})
        self.builds = []

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return '/controller/bin/' + name

    def run_command(self, cmd):
        self.builds.append(cmd)
        out = cmd[cmd.index('--output-path') + 1]
        with open(os.path.join(cmd[3], 'galaxy.yml')) as handle:
            version = handle.read().split('version: ')[1].strip()
        with tarfile.open(os.path.join(out, 'nimstack-multinode-%s.tar.gz' % version), 'w:gz') as tar:
            for name, data in (('MANIFEST.json', ('{"v": "%s"}' % version).encode()), ('README.md', b'hi\n')):
                member = tarfile.TarInfo(name)
                member.size = len(data)
                tar.addfile(member, io.BytesIO(data))
        return 0, '', ''


def test_a_source_tree_is_built_with_ansible_galaxy_and_kept_while_its_manifest_is_the_same(tmp_path):
    tree = tmp_path / 'tree'
    tree.mkdir()
    (tree / 'galaxy.yml').write_text('version: 0.1.0\n')
    item = {'name': 'nimstack.multinode', 'version': '0.1.0', 'path': str(tree), 'installed': False}
    galaxy = _Galaxy([item])
    manifest = {}
    assert _maker(tmp_path / 'bundle', module=galaxy).collections(manifest) == ['nimstack.multinode']
    assert galaxy.builds[0][:4] == ['/controller/bin/ansible-galaxy', 'collection', 'build', str(tree)]
    assert manifest['collections'][0]['source'] == 'ansible-galaxy collection build %s' % tree
    artifact = tmp_path / 'bundle' / 'collections' / 'nimstack-multinode-0.1.0.tar.gz'
    made = artifact.stat().st_mtime_ns
    # Built again each run (building is how its manifest is known), written only when that changed.
    assert _maker(tmp_path / 'bundle', module=galaxy).collections(manifest) == []
    assert artifact.stat().st_mtime_ns == made and len(galaxy.builds) == 2
    (tree / 'galaxy.yml').write_text('version: 0.2.0\n')
    item['version'] = '0.2.0'
    assert _maker(tmp_path / 'bundle', module=galaxy).collections(manifest) == ['nimstack.multinode']
    assert sorted(p.name for p in (tmp_path / 'bundle' / 'collections').iterdir()) == [
        'SHA256SUMS', 'nimstack-multinode-0.2.0.tar.gz']
    with pytest.raises(AssertionError, match='each item needs a name <namespace>.<name>, a version'):
        _maker(tmp_path / 'bundle', module=_Galaxy([dict(item, version='../1')])).collections({})
