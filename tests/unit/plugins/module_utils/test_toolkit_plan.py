# -*- coding: utf-8 -*-
"""The nvidia_container_toolkit decisions: input problems and the pinned packages."""

import os

import pytest
import yaml

from ansible_collections.nimstack.multinode.plugins.module_utils.platforms import platform_names

from ansible_collections.nimstack.multinode.plugins.module_utils.driver_plan import DriverPlanError
from ansible_collections.nimstack.multinode.plugins.module_utils.toolkit_plan import toolkit_packages, toolkit_problems

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
with open(os.path.join(REPO, 'roles', 'nvidia_container_toolkit', 'vars', 'main.yml'), encoding='utf-8') as _handle:
    ROLE_VARS = yaml.safe_load(_handle)
PACKAGES = ROLE_VARS['_nvidia_container_toolkit_packages']


def check(**variables):
    values = {'host': 'gpu-1', 'version': '',
              'platform': 'Ubuntu 22.04', 'os_family': 'Debian',
              'supported_platforms': platform_names(),
              'architecture': 'x86_64', 'repo_base_url': 'https://nvidia.github.io/libnvidia-container',
              'verify': True, 'verify_image': 'ubuntu:24.04'}
    values.update(variables)
    return toolkit_problems(values)


def test_usable_inputs():
    assert check() == []
    assert check(version='1.18.0-1', architecture='aarch64', platform='Rocky 9', os_family='RedHat') == []


@pytest.mark.parametrize('version', ['latest', '1.18', 'v1.18.0'])
def test_a_version_must_be_a_release(version):
    assert check(version=version) == [
        'nvidia_container_toolkit_version="%s" is not a toolkit version: use a release such as "1.18.0-1" or '
        '"1.18.0", or leave it empty for the newest' % version]


def test_platform_cpu_url_and_verify_image_are_all_named():
    assert check(platform='CentOS 7', os_family='RedHat', architecture='ppc64le', repo_base_url='mirror',
                 verify_image='') == [
        'host gpu-1 runs CentOS 7 (os_family RedHat), which this role does not support; supported: Ubuntu 22.04, '
        'Ubuntu 24.04, Debian 12, RedHat 9, Rocky 9. Set nvidia_container_toolkit_enabled=false for this host to '
        'leave it alone',
        'host gpu-1 is ppc64le; NVIDIA publishes the toolkit for x86_64, aarch64',
        'nvidia_container_toolkit_repo_base_url="mirror" is not an http(s):// or file:// URL',
        'nvidia_container_toolkit_verify=true needs nvidia_container_toolkit_verify_image',
    ]
    assert check(verify=False, verify_image='') == []


@pytest.mark.parametrize('version, pkg_mgr, first', [
    ('', 'apt', None),
    ('1.18.0', 'apt', 'nvidia-container-toolkit=1.18.0-*'),
    ('1.18.0-1', 'apt', 'nvidia-container-toolkit=1.18.0-1'),
    ('1.18.0-1', 'dnf', 'nvidia-container-toolkit-1.18.0-1'),
])
def test_packages_are_all_pinned_or_only_the_toolkit_named(version, pkg_mgr, first):
    packages = toolkit_packages(PACKAGES, version, pkg_mgr)
    if first is None:
        assert packages == ['nvidia-container-toolkit']
    else:
        assert packages[0] == first and len(packages) == 4
        assert all(p.endswith(first[len('nvidia-container-toolkit'):]) for p in packages)


def test_an_unknown_package_manager():
    with pytest.raises(DriverPlanError):
        toolkit_packages(PACKAGES, '1.18.0', 'zypper')
