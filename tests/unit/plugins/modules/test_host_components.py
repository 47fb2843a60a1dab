# -*- coding: utf-8 -*-
"""The host_components module on the real H100 capture (tests/unit/fixtures/h100_host) and on
synthetic hosts: the package list, sysfs, procfs and nvidia-smi it reads, and its decision."""

import os

import pytest
from ansible.module_utils import basic

from ansible_collections.nimstack.multinode.plugins.modules import host_components
from ansible_collections.nimstack.multinode.tests.unit.plugins.modules.utils import run_module

H100 = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'h100_host')


def _fixture(name):
    with open(os.path.join(H100, name), newline='') as handle:
        return handle.read()


@pytest.fixture
def host(monkeypatch):
    """A host whose dpkg-query prints ``packages`` and whose nvidia-smi (when ``smi``) prints the H100 query."""
    def install(packages, smi=True):
        calls = []

        def run_command(module, args, **kwargs):
            assert isinstance(args, list)
            calls.append(args)
            if args[0] == 'dpkg-query':
                return 0, packages, ''
            if args[0].endswith('nvidia-smi'):
                return 0, _fixture('query-gpu.csv'), ''
            raise AssertionError('unexpected command %r' % (args,))

        def get_bin_path(module, name, required=False, opt_dirs=None):
            if name == 'dpkg-query':
                return '/usr/bin/dpkg-query'
            if name == 'nvidia-smi' and smi:
                return '/usr/bin/nvidia-smi'
            return None
        monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
        monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', get_bin_path)
        return calls
    return install


def _driver(tmp_path, **extra):
    args = dict(component='driver', host='h100-vm', branch='580', architecture='x86_64', root=str(tmp_path),
                sysfs_root=os.path.join(H100, 'sys'), procfs_root=os.path.join(H100, 'proc'))
    args.update(extra)
    return args


@pytest.mark.parametrize('check_mode', [False, True])
def test_real_h100_driver_is_adopted(host, tmp_path, check_mode):
    calls = host(_fixture('dpkg-query.txt'))
    result, failed = run_module(host_components.main, _driver(tmp_path), check_mode=check_mode)
    assert not failed and not result['changed']
    component = result['component']
    assert component['action'] == 'adopt' and component['problem'] == ''
    assert component['found']['source'] == 'platform'
    assert component['found']['version'] == '580.159.04' and component['found']['flavour'] == 'open'
    assert component['compute_caps'] == ['9.0']
    assert [c[0] for c in calls] == ['dpkg-query', '/usr/bin/nvidia-smi']


def test_real_h100_driver_refused_for_another_branch(host, tmp_path):
    host(_fixture('dpkg-query.txt'))
    result, failed = run_module(host_components.main, _driver(tmp_path, branch='590'))
    assert not failed
    assert result['component']['action'] == 'refuse'
    assert result['component']['problem'].startswith('nvidia_driver on h100-vm: driver 580.159.04 (open kernel module, '
                                                     'loaded), installed by the platform')


def test_runfile_marks_are_read_under_root(host, tmp_path):
    host('')
    (tmp_path / 'usr' / 'bin').mkdir(parents=True)
    (tmp_path / 'usr' / 'bin' / 'nvidia-uninstall').write_text('')
    result, dummy = run_module(host_components.main, _driver(tmp_path))
    assert result['component']['found']['source'] == 'runfile'
    assert result['component']['found']['runfile'] == ['/usr/bin/nvidia-uninstall']


def test_no_driver_no_nvidia_smi_call(host, tmp_path):
    calls = host('', smi=True)
    result, dummy = run_module(host_components.main, _driver(tmp_path, sysfs_root=str(tmp_path), procfs_root=str(tmp_path)))
    assert result['component']['action'] == 'install' and result['component']['compute_caps'] == []
    assert [c[0] for c in calls] == ['dpkg-query']


def test_docker_ce_engine_is_adopted(host, tmp_path):
    host('docker-ce 5:28.1.1-1~debian.12~bookworm ii \ncontainerd.io 1.7.27-1 ii \n')
    result, dummy = run_module(host_components.main, dict(component='engine', host='node-1', root=str(tmp_path)))
    assert result['component']['action'] == 'adopt'
    assert result['component']['found'] == {'source': 'docker', 'package': 'docker-ce', 'version': '28.1.1',
                                            'binaries': []}


def test_toolkit_with_the_roles_repository_file_is_managed(host, tmp_path):
    host('nvidia-container-toolkit 1.18.0-1 ii \n')
    (tmp_path / 'etc' / 'apt' / 'sources.list.d').mkdir(parents=True)
    (tmp_path / 'etc' / 'apt' / 'sources.list.d' / 'nvidia-container-toolkit.sources').write_text('')
    args = dict(component='toolkit', host='h', root=str(tmp_path),
                repo_path='/etc/apt/sources.list.d/nvidia-container-toolkit.sources')
    result, dummy = run_module(host_components.main, args)
    assert result['component']['action'] == 'manage'
    (tmp_path / 'etc' / 'apt' / 'sources.list.d' / 'nvidia-container-toolkit.sources').unlink()
    result, dummy = run_module(host_components.main, args)
    assert result['component']['action'] == 'adopt'


def test_package_query_failure_is_reported(monkeypatch, tmp_path):
    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', lambda m, name, required=False, opt_dirs=None: '/usr/bin/' + name)
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', lambda m, args, **kw: (2, '', 'dpkg: database locked'))
    result, failed = run_module(host_components.main, dict(component='engine', host='h', root=str(tmp_path)))
    assert failed and result['msg'] == 'dpkg-query failed (rc=2): dpkg: database locked'
