# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.nimstack.multinode.plugins.module_utils import bundle


def names(found):
    return [name for _role, name in found]


def test_platform_of_host_facts():
    assert bundle.platform_of({'distribution': 'Debian', 'distribution_major_version': '12',
                               'distribution_version': '12.7'}) == 'debian-12'
    assert bundle.platform_of({'distribution': 'Ubuntu', 'distribution_major_version': '22',
                               'distribution_version': '22.04'}) == 'ubuntu-22.04'
    assert bundle.platform_of({'distribution': 'Ubuntu', 'distribution_version': '23.10'}) == ''
    assert bundle.platform_of({'distribution': 'Rocky', 'distribution_major_version': '9'}) == ''


def test_a_docker_node_installs_what_its_roles_declare_for_its_platform():
    found = bundle.host_packages({'docker'}, {}, 'debian-12')
    # Read from the roles' vars: docker.io (Debian's), openssh-client, nftables, python3-requests...
    assert ('docker', 'docker.io') in found and ('docker', 'ca-certificates') in found
    assert ('ssh_mesh', 'openssh-client') in found and ('nim_firewall', 'nftables') in found
    assert ('nim_docker', 'python3-requests') in found and ('rdma', 'rdma-core') in found
    # Exporters only where a monitoring host watches the groups.
    assert 'prometheus-node-exporter' not in names(found)
    assert 'prometheus-node-exporter' in names(bundle.host_packages({'docker', 'exporters'}, {}, 'debian-12'))


def test_the_inventory_s_choices_change_the_packages():
    found = names(bundle.host_packages({'docker'}, {'docker_install_source': 'docker', 'rdma_enabled': False,
                                                    'nim_group_firewall': False, 'ssh_mesh_enabled': 'no'},
                                       'ubuntu-22.04'))
    assert found[:4] == ['docker-ce', 'docker-ce-cli', 'containerd.io', 'docker-buildx-plugin']
    assert not set(found) & {'rdma-core', 'nftables', 'openssh-client', 'docker.io'}
    assert names(bundle.host_packages({'docker'}, {'docker_packages': ['moby-engine'], 'rdma_enabled': False},
                                      'debian-12'))[0] == 'moby-engine'
    assert names(bundle.host_packages({'monitoring'}, {'monitoring_mode': 'exporters'}, 'debian-12')) == []
    assert names(bundle.host_packages({'monitoring'}, {}, 'debian-12')) == ['prometheus', 'prometheus-alertmanager']
    assert names(bundle.host_packages({'frontend'}, {}, 'debian-12')) == ['haproxy']


def test_wanted_packages_by_platform_name_their_roles():
    wanted = bundle.wanted_packages({'a': {'docker'}, 'b': {'frontend'}}, {'a': {'rdma_enabled': False}},
                                    {'a': 'debian-12', 'b': 'ubuntu-24.04'})
    assert set(wanted) == {'debian-12', 'ubuntu-24.04'}
    assert wanted['ubuntu-24.04'] == {'haproxy': ['nim_frontend']}
    assert wanted['debian-12']['docker.io'] == ['docker']


def manifest(requested, files):
    return {'version': bundle.MANIFEST_VERSION,
            'platforms': {'debian-12': {'requested': dict((n, True) for n in requested),
                                        'files': [{'path': p, 'name': n, 'size': 3} for p, n in files]}}}


def test_a_bundle_that_lacks_a_package_or_a_file_or_a_platform_is_refused_naming_it():
    wanted = {'debian-12': {'haproxy': ['nim_frontend'], 'docker.io': ['docker']},
              'ubuntu-22.04': {'haproxy': ['nim_frontend']}}
    platforms = {'door': 'debian-12', 'node': 'debian-12', 'old': '', 'u': 'ubuntu-22.04'}
    held = manifest(['docker.io'], [('apt/debian-12/pool/docker.io.deb', 'docker.io'),
                                    ('apt/debian-12/InRelease', 'InRelease')])
    problems = bundle.manifest_problems(held, wanted, platforms,
                                        lambda path, size: path != 'apt/debian-12/InRelease')
    text = '\n'.join(problems)
    assert 'host old runs a distribution no bundle serves' in text
    assert 'no package haproxy for debian-12, which role nim_frontend installs' in text
    assert 'holds no packages for ubuntu-22.04 (hosts u)' in text
    assert 'lists apt/debian-12/InRelease (InRelease) but does not serve it' in text
    assert len(problems) == 4


def test_a_whole_bundle_has_no_problem_and_a_missing_manifest_one():
    wanted = {'debian-12': {'docker.io': ['docker']}}
    held = manifest(['docker.io'], [('apt/debian-12/pool/docker.io.deb', 'docker.io')])
    assert bundle.manifest_problems(held, wanted, {'n': 'debian-12'}, lambda path, size: size == 3) == []
    assert bundle.manifest_problems(None, wanted, {'n': 'debian-12'})[0].startswith('the bundle has no manifest.json')


@pytest.mark.parametrize('value', ['http://10.0.0.4:8080', 'https://mirror.example/bundle/', 'file:///srv/bundle'])
def test_the_bundle_url_rule_accepts(value):
    from ansible_collections.nimstack.multinode.plugins.module_utils import input_checks
    assert input_checks.RULES['nimstack_bundle_url'].check(value) is None


@pytest.mark.parametrize('value', ['http://h/b\n', 'ftp://h/b', 'http://h/a b', 'http://h/b#x', 'file://relative',
                                   'http://h/[x]'])
def test_the_bundle_url_rule_refuses(value):
    from ansible_collections.nimstack.multinode.plugins.module_utils import input_checks
    assert input_checks.RULES['nimstack_bundle_url'].check(value) is not None
