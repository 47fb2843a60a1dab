# -*- coding: utf-8 -*-
"""The nvidia_driver decisions: input problems, the per-host plan (branch, packages, pins, what to
remove, keep, release and hold, whether anything changes) and why a host needs a reboot.

The families and servers are those of the role's molecule scenario "families"; the constants
are read from the role's own vars, so the tests check the role's data, not a copy of it.
"""

import os

import pytest
import yaml

from ansible_collections.nimstack.multinode.plugins.module_utils.platforms import platform_names

from ansible_collections.nimstack.multinode.plugins.module_utils.driver_plan import (
    DriverPlanError,
    as_bool,
    as_int,
    driver_plan,
    driver_problems,
    installed_version,
    reboot_reasons,
)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
with open(os.path.join(REPO, 'roles', 'nvidia_driver', 'vars', 'main.yml'), encoding='utf-8') as _handle:
    ROLE_VARS = yaml.safe_load(_handle)
with open(os.path.join(REPO, 'roles', 'nvidia_driver', 'defaults', 'main.yml'), encoding='utf-8') as _handle:
    DEFAULTS = yaml.safe_load(_handle)

NVIDIA = 'https://developer.download.nvidia.com/compute/cuda/repos'
# What the family vars files give, with their Jinja resolved for each platform.
APT = {'pkg_mgr': 'apt', 'repo_key_file': '3bf863cc.pub', 'repo_key_path': '/etc/apt/keyrings/nvidia-cuda.asc',
       'repo_path': '/etc/apt/sources.list.d/nvidia-cuda.sources', 'hold_method': 'dpkg_selections',
       'prerequisites': ['dkms', 'kmod'], 'initramfs_command': ['update-initramfs', '-u', '-k', 'all']}
DNF = {'pkg_mgr': 'dnf', 'repo_key_file': 'D42D0685.pub', 'repo_key_path': '', 'repo_path': '/etc/yum.repos.d/nvidia-cuda.repo',
       'hold_method': 'dnf_versionlock', 'prerequisites': ['dkms', 'kernel-headers', 'python3-dnf-plugin-versionlock'],
       'initramfs_command': ['dracut', '--force']}
FAMILIES = {
    'Ubuntu 22.04': dict(APT, repo_distro='ubuntu2204', distribution_major_version='22'),
    'Ubuntu 24.04': dict(APT, repo_distro='ubuntu2404', distribution_major_version='24'),
    'Debian 12': dict(APT, repo_distro='debian12', distribution_major_version='12'),
    'RedHat 9': dict(DNF, repo_distro='rhel9', distribution_major_version='9',
                     crb_repo='codeready-builder-for-rhel-9-x86_64-rpms', crb_manager='rhsm'),
    'Rocky 9': dict(DNF, repo_distro='rhel9', distribution_major_version='9', crb_repo='crb', crb_manager='dnf'),
}
SERVERS = {
    'hgx': {'gpus': ['0000:18:00.0', '0000:2a:00.0'], 'nvswitches': ['0000:05:00.0'], 'nvlink5': False},
    'nvlink5': {'gpus': ['0000:1b:00.0'], 'nvswitches': [], 'nvlink5': True},
    'pcie': {'gpus': ['0000:01:00.0'], 'nvswitches': [], 'nvlink5': False},
}


def inputs(platform='Ubuntu 22.04', server='hgx', architecture='x86_64', kernel='5.15.0-91-generic',
           installed=None, held=None, **variables):
    """The mapping the role builds (_nvidia_driver_plan_inputs) for one case."""
    family = FAMILIES[platform]
    headers = ('linux-headers-' if family['pkg_mgr'] == 'apt' else 'kernel-devel-') + kernel
    values = dict((name[len('nvidia_driver_'):], DEFAULTS[name]) for name in DEFAULTS)
    values.update(dict((name[len('_nvidia_driver_'):], value) for name, value in ROLE_VARS.items()
                       if not isinstance(value, str) or '{{' not in value))
    values.update(family)
    values.update(SERVERS[server])
    values.update(platform=platform, architecture=architecture, headers_package=headers,
                  installed=installed or {}, held=held or [], crb_repo=family.get('crb_repo', ''),
                  crb_manager=family.get('crb_manager', ''))
    values.update(variables)
    return values


def test_ubuntu_2204_open_modules_exact_version_on_hgx():
    plan = driver_plan(inputs(version='580.95.05'))
    assert plan == {
        'platform': 'Ubuntu 22.04', 'package_manager': 'apt',
        'gpus': ['0000:18:00.0', '0000:2a:00.0'], 'nvswitches': ['0000:05:00.0'], 'nvlink5': False,
        'repo': {'name': 'nvidia-cuda', 'url': NVIDIA + '/ubuntu2204/x86_64/',
                 'key_url': NVIDIA + '/ubuntu2204/x86_64/3bf863cc.pub',
                 'key_path': '/etc/apt/keyrings/nvidia-cuda.asc', 'path': '/etc/apt/sources.list.d/nvidia-cuda.sources'},
        'epel': {}, 'crb': {}, 'module_stream': '',
        'headers_package': 'linux-headers-5.15.0-91-generic',
        'prerequisites': ['dkms', 'kmod', 'linux-headers-5.15.0-91-generic'],
        'pinning_package': 'nvidia-driver-pinning-580.95.05',
        'packages': ['nvidia-open=580.95.05-*', 'nvidia-fabricmanager=580.95.05-*', 'libnvidia-nscq=580.95.05-*'],
        'installed_version': '', 'change': True, 'module_reset': False, 'remove': [], 'conflicts': [],
        'hold': {'method': 'dpkg_selections',
                 'packages': ['nvidia-driver-pinning-580.95.05', 'nvidia-open', 'nvidia-fabricmanager', 'libnvidia-nscq'],
                 'release': []},
        'blacklist': {'path': '/etc/modprobe.d/blacklist-nouveau.conf'},
        'initramfs_command': ['update-initramfs', '-u', '-k', 'all'],
        'services': ['nvidia-persistenced', 'nvidia-fabricmanager'],
        'imex_nodes': {'path': '/etc/nvidia-imex/nodes_config.cfg'},
    }


def test_ubuntu_2404_on_arm_proprietary_branch_only_pcie_card():
    plan = driver_plan(inputs('Ubuntu 24.04', 'pcie', architecture='aarch64', kernel='6.8.0-45-generic-64k',
                              branch='580', kernel_modules='proprietary'))
    assert plan['repo']['url'] == NVIDIA + '/ubuntu2404/sbsa/'
    assert plan['repo']['key_url'] == NVIDIA + '/ubuntu2404/sbsa/3bf863cc.pub'
    assert plan['headers_package'] == 'linux-headers-6.8.0-45-generic-64k'
    assert plan['pinning_package'] == 'nvidia-driver-pinning-580'
    assert plan['packages'] == ['cuda-drivers=580.*']
    assert plan['hold'] == {'method': 'dpkg_selections', 'packages': ['nvidia-driver-pinning-580', 'cuda-drivers'],
                            'release': []}
    assert plan['services'] == ['nvidia-persistenced']
    assert plan['change'] is True


def test_debian_12_nvlink5_with_imex():
    plan = driver_plan(inputs('Debian 12', 'nvlink5', kernel='6.1.0-26-amd64', branch='580', imex_enabled=True,
                              imex_nodes=['10.0.0.11', '10.0.0.12']))
    assert plan['nvlink5'] is True
    assert plan['packages'] == ['nvidia-open=580.*', 'nvidia-fabricmanager=580.*', 'libnvidia-nscq=580.*',
                                'libnvsdm=580.*', 'nvidia-imex=580.*', 'nvlsm', 'infiniband-diags']
    assert plan['hold']['packages'] == ['nvidia-driver-pinning-580', 'nvidia-open', 'nvidia-fabricmanager',
                                        'libnvidia-nscq', 'libnvsdm', 'nvidia-imex']
    assert plan['services'] == ['nvidia-persistenced', 'nvidia-fabricmanager', 'nvidia-imex']


def test_nvlink5_on_arm_has_no_libnvsdm_but_the_subnet_manager():
    plan = driver_plan(inputs('Debian 12', 'nvlink5', architecture='aarch64', branch='580'))
    assert plan['packages'] == ['nvidia-open=580.*', 'nvidia-fabricmanager=580.*', 'libnvidia-nscq=580.*',
                                'nvlsm', 'infiniband-diags']


def test_rhel_9_open_modules_exact_version_on_hgx():
    plan = driver_plan(inputs('RedHat 9', 'hgx', kernel='5.14.0-427.13.1.el9_4.x86_64', version='580.95.05'))
    assert plan['package_manager'] == 'dnf'
    assert plan['repo']['url'] == NVIDIA + '/rhel9/x86_64/'
    assert plan['repo']['key_path'] == ''
    assert plan['epel'] == {'name': 'epel', 'description': 'Extra Packages for Enterprise Linux 9',
                            'baseurl': 'https://dl.fedoraproject.org/pub/epel/9/Everything/x86_64/',
                            'gpgkey': 'https://dl.fedoraproject.org/pub/epel/RPM-GPG-KEY-EPEL-9'}
    assert plan['crb'] == {'name': 'codeready-builder-for-rhel-9-x86_64-rpms', 'manager': 'rhsm'}
    assert plan['module_stream'] == 'nvidia-driver:580-open'
    assert plan['prerequisites'][-1] == 'kernel-devel-5.14.0-427.13.1.el9_4.x86_64'
    assert plan['pinning_package'] == ''
    assert plan['packages'] == ['nvidia-open-580.95.05', 'nvidia-fabricmanager-580.95.05', 'libnvidia-nscq-580.95.05']
    assert plan['hold'] == {'method': 'dnf_versionlock', 'packages': ['*nvidia*580.95.05*'], 'release': []}
    assert plan['initramfs_command'] == ['dracut', '--force']


def test_rocky_9_proprietary_branch_590_from_a_mirror():
    plan = driver_plan(inputs('Rocky 9', 'pcie', branch='590', kernel_modules='proprietary',
                              repo_base_url='http://mirror.lab.internal/cuda/', epel_base_url='http://mirror.lab.internal/epel'))
    assert plan['repo']['url'] == 'http://mirror.lab.internal/cuda/rhel9/x86_64/'
    assert plan['repo']['key_url'] == 'http://mirror.lab.internal/cuda/rhel9/x86_64/D42D0685.pub'
    assert plan['epel']['baseurl'] == 'http://mirror.lab.internal/epel/9/Everything/x86_64/'
    assert plan['epel']['gpgkey'] == 'http://mirror.lab.internal/epel/RPM-GPG-KEY-EPEL-9'
    assert plan['crb'] == {'name': 'crb', 'manager': 'dnf'}
    assert plan['module_stream'] == 'nvidia-driver:590-dkms'
    assert plan['packages'] == ['cuda-drivers']
    assert plan['hold'] == {'method': 'dnf_versionlock', 'packages': ['*nvidia*590*', 'cuda-drivers-590*'], 'release': []}


def test_explicit_repository_and_key_urls_win():
    plan = driver_plan(inputs(repo_url='http://m/cuda/ubuntu2204/x86_64/', repo_key_url='http://m/key.pub',
                              epel_enabled=False))
    assert plan['repo']['url'] == 'http://m/cuda/ubuntu2204/x86_64/'
    assert plan['repo']['key_url'] == 'http://m/key.pub'
    assert driver_plan(inputs(repo_url='http://m/cuda'))['repo']['url'] == 'http://m/cuda/'
    rocky = driver_plan(inputs('Rocky 9', epel_repo_url='http://e/9/', epel_key_url='http://e/key', crb_enabled=False))
    assert (rocky['epel']['baseurl'], rocky['epel']['gpgkey'], rocky['crb']) == ('http://e/9/', 'http://e/key', {})
    assert driver_plan(inputs('Rocky 9', epel_enabled=False))['epel'] == {}


def test_upgrade_from_branch_580_to_590_removes_the_old_pin_and_releases_the_holds():
    installed = {'nvidia-open': '580.95.05-0ubuntu1', 'nvidia-driver-pinning-580': '580-1', 'cuda-keyring': '1.1-1',
                 'nvidia-fabricmanager': '580.95.05-1', 'libnvidia-nscq': '580.95.05-1', 'dkms': '3.0.3-1ubuntu1'}
    held = ['nvidia-open', 'nvidia-driver-pinning-580', 'nvidia-fabricmanager', 'libnvidia-nscq']
    plan = driver_plan(inputs(branch='590', installed=installed, held=held))
    assert plan['pinning_package'] == 'nvidia-driver-pinning-590'
    assert plan['packages'] == ['nvidia-open=590.*', 'nvidia-fabricmanager=590.*', 'libnvidia-nscq=590.*']
    assert plan['installed_version'] == '580.95.05'
    assert plan['change'] is True
    assert plan['remove'] == ['nvidia-driver-pinning-580']
    # The site's cuda-keyring is reported, never removed.
    assert plan['conflicts'] == ['cuda-keyring']
    assert plan['hold'] == {'method': 'dpkg_selections',
                            'packages': ['nvidia-driver-pinning-590', 'nvidia-open', 'nvidia-fabricmanager', 'libnvidia-nscq'],
                            'release': ['nvidia-open', 'nvidia-driver-pinning-580', 'nvidia-fabricmanager', 'libnvidia-nscq']}


def test_downgrade_from_590_to_an_exact_580_version():
    plan = driver_plan(inputs('Debian 12', 'pcie', version='580.95.05',
                              installed={'nvidia-open': '590.44.01-1', 'nvidia-driver-pinning-590': '590-1'},
                              held=['nvidia-open', 'nvidia-driver-pinning-590']))
    assert plan['packages'] == ['nvidia-open=580.95.05-*']
    assert plan['installed_version'] == '590.44.01'
    assert plan['change'] is True
    assert plan['remove'] == ['nvidia-driver-pinning-590']
    assert plan['hold']['release'] == ['nvidia-open', 'nvidia-driver-pinning-590']


def test_already_at_the_pinned_version_changes_nothing_and_keeps_the_holds():
    plan = driver_plan(inputs('Debian 12', 'pcie', version='580.95.05',
                              installed={'nvidia-open': '580.95.05-1', 'nvidia-driver-pinning-580.95.05': '580.95.05-1'},
                              held=['nvidia-open', 'nvidia-driver-pinning-580.95.05']))
    assert (plan['installed_version'], plan['change'], plan['remove'], plan['hold']['release']) == ('580.95.05', False, [], [])


def test_a_site_pinning_package_of_the_same_pin_is_kept_and_only_other_pins_are_stale():
    plan = driver_plan(inputs(branch='580', installed={'nvidia-open': '580.95.05-1', 'nvidia-driver-pinning-580': '580-1',
                                                       'nvidia-driver-pinning-575': '575-1', 'my-nvidia-tool': '1.0'}))
    assert plan['remove'] == ['nvidia-driver-pinning-575']
    assert plan['change'] is True


def test_rhel_branch_switch_resets_the_module_stream_and_releases_every_lock():
    plan = driver_plan(inputs('RedHat 9', 'hgx', branch='590',
                              installed={'nvidia-open': '580.95.05', 'nvidia-fabricmanager': '580.95.05'}))
    assert plan['module_stream'] == 'nvidia-driver:590-open'
    assert plan['packages'] == ['nvidia-open', 'nvidia-fabricmanager', 'libnvidia-nscq']
    assert (plan['installed_version'], plan['change'], plan['module_reset']) == ('580.95.05', True, True)
    assert plan['hold'] == {'method': 'dnf_versionlock', 'packages': ['*nvidia*590*'], 'release': ['*nvidia*', 'cuda-drivers*']}
    # dnf has no pinning package, so nothing is ever removed or reported as conflicting.
    assert (plan['remove'], plan['conflicts']) == ([], [])


def test_rhel_same_branch_newer_driver_keeps_the_stream_and_locks():
    plan = driver_plan(inputs('RedHat 9', 'pcie', branch='580', installed={'nvidia-open': '580.65.06'}))
    assert (plan['change'], plan['module_reset'], plan['hold']['release']) == (False, False, [])


def test_fabric_manager_off_and_no_holds():
    plan = driver_plan(inputs('Ubuntu 24.04', 'hgx', fabric_manager_enabled=False, hold=False, persistenced_enabled=False))
    assert plan['nvswitches'] == ['0000:05:00.0']
    assert plan['packages'] == ['nvidia-open=580.*']
    assert plan['hold'] == {'method': 'none', 'packages': [], 'release': []}
    assert plan['services'] == []


def test_a_pcie_card_needs_no_fabric_manager():
    assert driver_plan(inputs(server='pcie'))['packages'] == ['nvidia-open=580.*']


@pytest.mark.parametrize('value, version', [
    ('580.95.05-0ubuntu1', '580.95.05'), ('1:580.95.05-1', '580.95.05'), ('580.95.05', '580.95.05'), (None, '')])
def test_installed_version_drops_epoch_and_revision(value, version):
    assert installed_version({} if value is None else {'nvidia-open': value}, 'nvidia-open') == version


def test_a_missing_input_is_named():
    values = inputs()
    del values['pkg_mgr']
    with pytest.raises(DriverPlanError, match='pkg_mgr'):
        driver_plan(values)


def check(**variables):
    values = {
        'host': 'gpu-1', 'branch': '580', 'version': '', 'platform': 'Ubuntu 22.04', 'os_family': 'Debian',
        'architecture': 'x86_64', 'repo_base_url': NVIDIA, 'imex_enabled': False, 'imex_nodes': [],
        'max_unavailable_groups': 1, 'reboot_timeout': 1800,
    }
    values['repo_arch_map'] = ROLE_VARS['_nvidia_driver_repo_arch_map']
    # The role reads the collection's one list (filter supported_platforms).
    values['supported_platforms'] = platform_names()
    values.update(variables)
    return driver_problems(values)


def test_usable_inputs_have_no_problem():
    assert check() == []
    assert check(branch=590, version='590.44.01') == []
    assert check(version='580.95') == []


@pytest.mark.parametrize('branch', ['latest', '58x', '570', '5800'])
def test_a_branch_must_be_three_digits_from_580(branch):
    assert check(branch=branch) == [
        'nvidia_driver_branch="%s" is not a driver branch: use three digits, 580 or later (for example "580"); '
        'names such as "latest" are not pinnable' % branch]


@pytest.mark.parametrize('version', ['latest', '58x', '580'])
def test_a_version_must_be_a_full_version(version):
    assert check(version=version) == [
        'nvidia_driver_version="%s" is not a driver version: use the full version such as "580.95.05", or leave it '
        'empty to track the newest driver of nvidia_driver_branch' % version]


def test_a_version_must_belong_to_the_branch():
    assert check(version='590.44.01') == ['nvidia_driver_version="590.44.01" does not belong to nvidia_driver_branch="580"']


def test_several_problems_are_all_named_in_order():
    problems = check(branch='latest', version='58x')
    assert [p.split(' is not')[0] for p in problems] == ['nvidia_driver_branch="latest"', 'nvidia_driver_version="58x"']


def test_an_unsupported_platform_names_the_host_and_what_is_supported():
    assert check(platform='CentOS 7', os_family='RedHat') == [
        'host gpu-1 runs CentOS 7 (os_family RedHat), which this role does not support; supported: Ubuntu 22.04, '
        'Ubuntu 24.04, Debian 12, RedHat 9, Rocky 9. Set nvidia_driver_enabled=false for this host to leave it alone']


def test_an_unpublished_cpu():
    assert check(architecture='ppc64le') == ['host gpu-1 is ppc64le; NVIDIA publishes the driver for x86_64, aarch64']


@pytest.mark.parametrize('url, ok', [('https://x', True), ('http://x', True), ('file:///srv/cuda', True),
                                     ('ftp://x', False), ('mirror.lab', False)])
def test_the_repository_base_url(url, ok):
    assert check(repo_base_url=url) == ([] if ok else [
        'nvidia_driver_repo_base_url="%s" is not an http(s):// or file:// URL' % url])


def test_imex_needs_its_nodes():
    assert check(imex_enabled=True) == [
        'nvidia_driver_imex_enabled=true needs nvidia_driver_imex_nodes: the addresses of every node of the NVLink domain']
    assert check(imex_enabled='true', imex_nodes=['10.0.0.1']) == []


def test_max_unavailable_groups_and_reboot_timeout():
    assert check(max_unavailable_groups=0)[0].startswith('nvidia_driver_max_unavailable_groups')
    assert check(reboot_timeout=0) == ['nvidia_driver_reboot_timeout=0 must be a positive number of seconds']
    assert check(reboot_timeout='soon') == ['nvidia_driver_reboot_timeout=soon must be a positive number of seconds']


@pytest.mark.parametrize('nouveau, loaded, installed, reasons', [
    (False, '', '', []),
    (False, '580.95.05', '580.95.05', []),
    (False, '', '580.95.05', []),
    (False, '580.95.05', '', []),
    (True, '', '580.95.05', ['nouveau is loaded']),
    (False, '575.57.08', '580.95.05', ['the loaded NVIDIA module is 575.57.08, the installed one 580.95.05']),
    ('True', '575.57.08', '580.95.05', ['nouveau is loaded',
                                        'the loaded NVIDIA module is 575.57.08, the installed one 580.95.05']),
])
def test_reboot_reasons(nouveau, loaded, installed, reasons):
    assert reboot_reasons(nouveau, loaded, installed) == reasons


def test_ansible_bool_and_int():
    assert [as_bool(v) for v in (True, 'yes', 'on', 1, '1', 'True', False, 'no', 0, None, '')] == [True] * 6 + [False] * 5
    assert [as_int(v) for v in (3, '3', '3.7', 'x', None)] == [3, 3, 3, 0, 0]
