# -*- coding: utf-8 -*-
"""How the driver, the toolkit and the engine got onto a host, and what the roles do with them.

The H100 case reads the real capture in tests/unit/fixtures/h100_host (a module the platform
provides, no driver package); the other hosts are synthetic and built here."""

import os
import shutil

import pytest

from ansible_collections.nimstack.multinode.plugins.module_utils import host_components as hc

H100 = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'h100_host')
PROPRIETARY = ('NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15  Thu Jan 16 00:00:00 UTC 2025\n'
               'GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n')


def _read(name):
    with open(os.path.join(H100, name)) as handle:
        return handle.read()


def _h100_found():
    loaded = hc.read_loaded_driver(os.path.join(H100, 'sys'), os.path.join(H100, 'proc'))
    return hc.driver_found(hc.parse_packages(_read('dpkg-query.txt')), loaded, [], [])


def _tree(tmp_path, version, proc_text, files=()):
    (tmp_path / 'sys' / 'module' / 'nvidia').mkdir(parents=True)
    (tmp_path / 'sys' / 'module' / 'nvidia' / 'version').write_text(version + '\n')
    (tmp_path / 'proc' / 'driver' / 'nvidia').mkdir(parents=True)
    (tmp_path / 'proc' / 'driver' / 'nvidia' / 'version').write_text(proc_text)
    for name in files:
        path = tmp_path / 'root' / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('')
    (tmp_path / 'root').mkdir(exist_ok=True)
    return str(tmp_path / 'sys'), str(tmp_path / 'proc'), str(tmp_path / 'root')


def test_real_h100_capture_is_a_platform_driver_of_the_open_module():
    found = _h100_found()
    assert found['source'] == 'platform'
    assert found['version'] == found['loaded_version'] == '580.159.04'
    assert found['flavour'] == 'open'
    # cuda-compat-13-0 580.95.05 is CUDA's forward-compatibility library, not a driver.
    assert found['packages'] == [] and found['package_version'] == ''


def test_real_h100_package_list_keeps_installed_and_drops_unpacked_names():
    installed = hc.parse_packages(_read('dpkg-query.txt'))
    assert installed['cuda-compat-13-0'] == '580.95.05-0ubuntu1'
    assert 'cuda-cub-13-0' not in installed and 'cuda-cudart-11-2' not in installed
    assert len(installed) == 18


def test_real_h100_on_branch_580_is_adopted_and_reported():
    decision = hc.driver_decision('gpu-1', _h100_found(), 'adopt', '580', '', ['9.0'], 'x86_64')
    assert decision['action'] == 'adopt' and decision['problem'] == ''
    assert decision['report'].startswith('driver 580.159.04 (open kernel module, loaded), installed by the platform')


def test_real_h100_on_another_branch_is_refused_naming_host_version_and_fix():
    decision = hc.driver_decision('gpu-1', _h100_found(), 'adopt', '590', '', ['9.0'], 'x86_64')
    assert decision['action'] == 'refuse'
    assert decision['problem'] == (
        'nvidia_driver on gpu-1: driver 580.159.04 (open kernel module, loaded), installed by the platform: the module '
        'is loaded and no package or installer provided it, but nvidia_driver_branch=590 asks for branch 590. The role '
        'does not replace a driver it did not install: update the driver where the platform provides it (the image or '
        'the hypervisor); or set nvidia_driver_branch/nvidia_driver_version to what runs to adopt it.')


def test_real_h100_pinned_version_must_match_exactly():
    assert hc.driver_decision('h', _h100_found(), 'adopt', '580', '580.159.04', [], 'x86_64')['action'] == 'adopt'
    decision = hc.driver_decision('h', _h100_found(), 'adopt', '580', '580.95.05', [], 'x86_64')
    assert decision['action'] == 'refuse' and 'nvidia_driver_version=580.95.05 asks for 580.95.05' in decision['problem']


def test_platform_driver_cannot_be_managed_or_accepted_under_refuse():
    found = _h100_found()
    manage = hc.driver_decision('h', found, 'manage', '580', '', [], 'x86_64')
    assert manage['action'] == 'refuse' and 'nvidia_driver_policy=manage cannot take it over' in manage['problem']
    refuse = hc.driver_decision('h', found, 'refuse', '580', '', [], 'x86_64')
    assert refuse['action'] == 'refuse' and 'nvidia_driver_policy=refuse stops on a driver' in refuse['problem']


def test_runfile_driver_of_the_wrong_branch_is_refused(tmp_path):
    sysfs, procfs, root = _tree(tmp_path, '570.86.15', PROPRIETARY, ['usr/bin/nvidia-uninstall'])
    found = hc.driver_found({}, hc.read_loaded_driver(sysfs, procfs), hc.read_marks(root, hc.RUNFILE_MARKS),
                            hc.read_dkms(root))
    assert found['source'] == 'runfile' and found['flavour'] == 'proprietary' and found['runfile'] == ['/usr/bin/nvidia-uninstall']
    decision = hc.driver_decision('gpu-2', found, 'adopt', '580', '', [], 'x86_64')
    assert decision['action'] == 'refuse'
    assert decision['problem'].startswith(
        'nvidia_driver on gpu-2: driver 570.86.15 (proprietary kernel module, loaded), installed by NVIDIA\'s runfile '
        'installer (/usr/bin/nvidia-uninstall), but nvidia_driver_branch=580 asks for branch 580.')
    assert 'upgrade it with NVIDIA\'s runfile of that branch' in decision['problem']


def test_runfile_takeover_only_when_managed_and_reboots_are_allowed(tmp_path):
    sysfs, procfs, root = _tree(tmp_path, '570.86.15', PROPRIETARY, ['var/log/nvidia-installer.log'])
    found = hc.driver_found({}, hc.read_loaded_driver(sysfs, procfs), hc.read_marks(root, hc.RUNFILE_MARKS), [])
    assert hc.driver_decision('h', found, 'manage', '580', '', [], 'x86_64', reboot_allowed=True)['action'] == 'takeover'
    refused = hc.driver_decision('h', found, 'manage', '580', '', [], 'x86_64', reboot_allowed=False)
    assert refused['action'] == 'refuse' and 'set nvidia_driver_reboot_allowed=true' in refused['problem']


def test_proprietary_module_refused_where_the_gpu_needs_the_open_one(tmp_path):
    sysfs, procfs, root = _tree(tmp_path, '580.95.05', PROPRIETARY.replace('570.86.15', '580.95.05'))
    found = hc.driver_found({}, hc.read_loaded_driver(sysfs, procfs), [], [])
    blackwell = hc.driver_decision('b200', found, 'adopt', '580', '', ['10.0'], 'x86_64')
    assert blackwell['action'] == 'refuse' and 'compute capability 10.0' in blackwell['problem']
    assert hc.driver_decision('gh200', found, 'adopt', '580', '', ['9.0'], 'aarch64')['action'] == 'refuse'
    # An H100 on x86 runs with either flavour.
    assert hc.driver_decision('h100', found, 'adopt', '580', '', ['9.0'], 'x86_64')['action'] == 'adopt'


@pytest.mark.parametrize('installed,source,packages', [
    ({'nvidia-driver-pinning-580': '580-1', 'nvidia-open': '580.95.05-1'}, 'collection', ['nvidia-driver-pinning-580']),
    ({'nvidia-open': '580.95.05-1'}, 'cuda-repo', ['nvidia-open']),
    ({'nvidia-driver': '580.95.05-1'}, 'cuda-repo', ['nvidia-driver']),
    ({'nvidia-driver-580-server-open': '580.95.05-0ubuntu0.24.04.2'}, 'distribution', ['nvidia-driver-580-server-open']),
    ({'nvidia-driver-570': '570.172.08-0ubuntu1'}, 'distribution', ['nvidia-driver-570']),
    ({'nvidia-driver': '535.247.01-1~deb12u1', 'nvidia-kernel-dkms': '535.247.01-1~deb12u1'}, 'distribution',
     ['nvidia-driver', 'nvidia-kernel-dkms']),
    ({}, '', []),
])
def test_package_sources(installed, source, packages):
    found = hc.driver_found(installed, {}, [], [])
    assert (found['source'], found['packages']) == (source, packages)


def test_distribution_driver_not_loaded_takes_its_version_from_the_package():
    found = hc.driver_found({'nvidia-driver-580-open': '580.95.05-0ubuntu1'}, {}, [], [])
    assert found['version'] == '580.95.05' and found['loaded_version'] == ''
    decision = hc.driver_decision('h', found, 'adopt', '580', '', [], 'x86_64')
    assert decision['action'] == 'adopt' and '(not loaded)' in decision['report']
    assert hc.driver_decision('h', found, 'manage', '580', '', [], 'x86_64')['action'] == 'manage'


def test_collection_and_cuda_repo_drivers_are_managed_and_nothing_installs():
    assert hc.driver_decision('h', hc.driver_found({}, {}, [], []), 'refuse', '580', '', [], '')['action'] == 'install'
    found = hc.driver_found({'nvidia-open': '580.82.07-1'}, {}, [], [])
    assert hc.driver_decision('h', found, 'refuse', '580', '', [], '')['action'] == 'manage'


def test_dkms_is_read_from_var_lib_dkms(tmp_path):
    (tmp_path / 'var' / 'lib' / 'dkms' / 'nvidia' / '580.95.05').mkdir(parents=True)
    (tmp_path / 'var' / 'lib' / 'dkms' / 'nvidia' / 'kernel-6.1').mkdir(parents=True)
    (tmp_path / 'var' / 'lib' / 'dkms' / 'zfs' / '2.1').mkdir(parents=True)
    assert hc.read_dkms(str(tmp_path)) == ['nvidia/580.95.05']
    assert hc.read_dkms(str(tmp_path / 'none')) == []


def test_proc_version_without_nvrm_line_and_missing_files(tmp_path):
    assert hc.parse_proc_version('') == {'flavour': '', 'version': ''}
    assert hc.read_loaded_driver(str(tmp_path), str(tmp_path)) == {'version': '', 'flavour': ''}


@pytest.mark.parametrize('installed,binaries,repo,source,action', [
    ({}, [], False, '', 'install'),
    ({'nvidia-container-toolkit': '1.18.0-1'}, ['/usr/bin/nvidia-ctk'], True, 'collection', 'manage'),
    ({'nvidia-container-toolkit': '1.17.8-1'}, ['/usr/bin/nvidia-ctk'], False, 'package', 'adopt'),
    ({}, ['/usr/local/bin/nvidia-ctk'], False, 'binary', 'adopt'),
])
def test_toolkit(installed, binaries, repo, source, action):
    found = hc.toolkit_found(installed, binaries, repo)
    assert found['source'] == source
    assert hc.toolkit_decision('h', found, 'adopt', '')['action'] == action


def test_toolkit_of_another_version_is_refused_unless_managed():
    found = hc.toolkit_found({'nvidia-container-toolkit': '1.17.8-1'}, [], False)
    refused = hc.toolkit_decision('gpu-1', found, 'adopt', '1.18.0-1')
    assert refused['action'] == 'refuse'
    assert refused['problem'].startswith('nvidia_container_toolkit on gpu-1: toolkit 1.17.8, installed from a repository '
                                         'the site defined (package nvidia-container-toolkit), but '
                                         'nvidia_container_toolkit_version=1.18.0-1 asks for another.')
    assert hc.toolkit_decision('h', found, 'adopt', '1.17.8')['action'] == 'adopt'
    assert hc.toolkit_decision('h', found, 'manage', '1.18.0-1')['action'] == 'manage'
    assert hc.toolkit_decision('h', found, 'refuse', '')['action'] == 'refuse'


@pytest.mark.parametrize('installed,policy,action', [
    ({}, 'adopt', 'install'),
    ({'docker.io': '20.10.24+dfsg1-1+b3'}, 'refuse', 'manage'),
    ({'docker-ce': '5:28.1.1-1~debian.12~bookworm'}, 'adopt', 'adopt'),
    ({'docker-ce': '5:28.1.1-1~debian.12~bookworm'}, 'manage', 'swap'),
    ({'docker-ce': '5:28.1.1-1~debian.12~bookworm'}, 'refuse', 'refuse'),
    ({'moby-engine': '27.5.1-1'}, 'adopt', 'adopt'),
    ({'podman-docker': '4.3.1+ds1-8+b1'}, 'adopt', 'refuse'),
    ({'podman-docker': '4.3.1+ds1-8+b1'}, 'manage', 'swap'),
])
def test_engine(installed, policy, action):
    found = hc.engine_found(installed, [])
    assert hc.engine_decision('node-1', found, policy, 'distribution', 'docker.io')['action'] == action


def test_docker_ce_is_adopted_not_swapped_by_default_and_the_report_says_why():
    found = hc.engine_found({'docker-ce': '5:28.1.1-1~debian.12~bookworm', 'docker.io': ''}, [])
    assert (found['source'], found['version']) == ('docker', '28.1.1')
    decision = hc.engine_decision('node-1', found, 'adopt', 'distribution', 'docker.io')
    assert decision['report'] == ('docker-ce 28.1.1 is installed: adopted; the role installs no engine package (installing '
                                  'docker.io would remove it and stop every container) and merges its settings into '
                                  'daemon.json')
    refused = hc.engine_decision('node-1', found, 'refuse', 'distribution', 'docker.io')
    assert refused['problem'].startswith('docker on node-1: docker-ce 28.1.1 is installed and docker_engine_policy=refuse')


def test_engine_without_package():
    found = hc.engine_found({}, ['/usr/local/bin/dockerd'])
    assert found['source'] == 'binary'
    assert hc.engine_decision('h', found, 'adopt', 'distribution', 'docker.io')['action'] == 'adopt'
    managed = hc.engine_decision('h', found, 'manage', 'distribution', 'docker.io')
    assert managed['action'] == 'refuse' and 'cannot remove an engine no package installed' in managed['problem']


def test_the_h100_tree_is_read_in_place_without_writing(tmp_path):
    copy = tmp_path / 'h100'
    shutil.copytree(H100, str(copy))
    before = sorted(os.listdir(str(copy)))
    hc.read_loaded_driver(str(copy / 'sys'), str(copy / 'proc'))
    hc.read_dkms(str(copy))
    assert sorted(os.listdir(str(copy))) == before
