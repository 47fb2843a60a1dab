# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.nimstack.multinode.plugins.module_utils.inventory_checks import (
    InventoryCheckError,
    check_ansible_version,
    check_group_members,
    check_host_vars,
    check_inventory,
    check_os,
    monitoring_host_problems,
    parse_rank,
    parse_version,
)

DEBIAN_12 = {'distribution': 'Debian', 'distribution_version': '12.7',
             'distribution_major_version': '12', 'os_family': 'Debian'}
UBUNTU_2204 = {'distribution': 'Ubuntu', 'distribution_version': '22.04',
               'distribution_major_version': '22', 'os_family': 'Debian'}


@pytest.mark.parametrize('text, expected', [
    ('2.19.14', (2, 19, 14)),
    ('2.16', (2, 16, 0)),
    ('2.21.0.dev0', (2, 21, 0)),
    ('2.18.0rc1', (2, 18, 0)),
])
def test_parse_version(text, expected):
    assert parse_version(text) == expected


def test_parse_version_rejects_words():
    with pytest.raises(InventoryCheckError, match="'latest' is not a version"):
        parse_version('latest')


@pytest.mark.parametrize('version', ['2.16.0', '2.19.14', '2.20.9'])
def test_supported_ansible_versions(version):
    assert check_ansible_version(version) == []


@pytest.mark.parametrize('version', ['2.15.13', '2.21.0', '2.21.0.dev0', '3.0.0'])
def test_unsupported_ansible_versions_name_the_range_and_variables(version):
    assert check_ansible_version(version) == [
        'ansible-core %s is not supported: the collection needs ansible-core >= 2.16.0 and < 2.21.0 '
        '(validate_inventory_ansible_min_version, validate_inventory_ansible_max_version)' % version]


def test_empty_max_version_means_no_upper_bound():
    assert check_ansible_version('9.0.0', '2.16.0', '') == []


def test_missing_group_is_named():
    problems, hosts = check_group_members({'all': ['a']})
    assert hosts == []
    assert problems == ["the inventory has no hosts in group 'nim_nodes' (validate_inventory_group): "
                        "put every GPU node in that group"]


def test_empty_group_is_a_problem_and_a_full_one_is_not():
    assert check_group_members({'nim_nodes': []})[0]
    assert check_group_members({'gpu': ['a', 'b']}, 'gpu') == ([], ['a', 'b'])


@pytest.mark.parametrize('value, expected', [
    (0, 0), (3, 3), ('2', 2), (' 1 ', 1), (-1, None), (True, None), ('one', None), (1.5, None),
    ('-1', None),
])
def test_parse_rank(value, expected):
    assert parse_rank(value) == expected


def test_valid_host_vars_pass():
    host_vars = {'a': {'nim_group': 'llama-405b', 'nim_node_rank': 1},
                 'b': {'nim_group': 'llama-405b', 'nim_node_rank': '0'},
                 'c': {}}
    assert check_host_vars(['a', 'b', 'c'], host_vars, 'default') == []


@pytest.mark.parametrize('name', ['Llama', 'llama_70b', '-a', 'a-', '7b', '', 'a' * 31, 5])
def test_invalid_group_names_are_named(name):
    problems = check_host_vars(['h1'], {'h1': {'nim_group': name}}, 'default')
    assert problems == ["host h1: nim_group=%r is not a valid group name: use 1-30 lowercase letters, "
                        "digits and '-', starting with a letter and ending with a letter or digit"
                        % (name,)]


def test_bad_rank_is_named():
    problems = check_host_vars(['h1'], {'h1': {'nim_node_rank': -2}}, 'default')
    assert problems == ['host h1: nim_node_rank=-2 is not a non-negative whole number (0 is the '
                        'leader; leave it unset to rank hosts in inventory order)']


def test_two_leaders_in_one_group_and_rank_out_of_range():
    host_vars = {'a': {'nim_node_rank': 0}, 'b': {'nim_node_rank': 0}, 'c': {'nim_node_rank': 5},
                 'd': {'nim_group': 'other', 'nim_node_rank': 0}}
    assert check_host_vars(['a', 'b', 'c', 'd'], host_vars, 'default') == [
        'group default: nim_node_rank=0 is set on a, b; each rank must be unique in a group',
        'group default: host c has nim_node_rank=5 but the group has 3 hosts; ranks must be 0 to 2',
    ]


def test_same_rank_in_different_groups_is_fine():
    host_vars = {'a': {'nim_group': 'g1', 'nim_node_rank': 0},
                 'b': {'nim_group': 'g2', 'nim_node_rank': 0}}
    assert check_host_vars(['a', 'b'], host_vars, 'default') == []


@pytest.mark.parametrize('facts', [
    DEBIAN_12, UBUNTU_2204,
    {'distribution': 'Ubuntu', 'distribution_version': '24.04', 'distribution_major_version': '24',
     'os_family': 'Debian'},
    {'distribution': 'Rocky', 'distribution_version': '9.4', 'distribution_major_version': '9',
     'os_family': 'RedHat'},
    {'distribution': 'RedHat', 'distribution_version': '9.5', 'distribution_major_version': '9',
     'os_family': 'RedHat'},
])
def test_supported_os(facts):
    assert check_os(['h'], {'h': facts}) == []


@pytest.mark.parametrize('facts, label', [
    ({'distribution': 'Ubuntu', 'distribution_version': '20.04', 'distribution_major_version': '20',
      'os_family': 'Debian'}, 'Ubuntu 20.04 (os_family Debian)'),
    ({'distribution': 'Debian', 'distribution_version': '11.9', 'distribution_major_version': '11',
      'os_family': 'Debian'}, 'Debian 11.9 (os_family Debian)'),
    ({'distribution': 'Archlinux', 'distribution_version': 'NA', 'distribution_major_version': 'NA',
      'os_family': 'Archlinux'}, 'Archlinux NA (os_family Archlinux)'),
    ({'distribution': 'Rocky', 'distribution_version': '8.9', 'distribution_major_version': '8',
      'os_family': 'RedHat'}, 'Rocky 8.9 (os_family RedHat)'),
])
def test_unsupported_os_names_host_found_and_accepted(facts, label):
    assert check_os(['gpu-7'], {'gpu-7': facts}) == [
        'host gpu-7: %s is not supported; supported: Ubuntu 22.04/24.04, Debian 12, RedHat 9, '
        'Rocky 9 (validate_inventory_supported_os)' % label]


def test_hosts_without_facts_are_skipped():
    assert check_os(['a', 'b'], {'a': {}, 'b': {'distribution': None}}) == []


def test_custom_supported_os_list():
    supported = [{'distribution': 'Debian', 'versions': [11, 12]}]
    facts = {'distribution': 'Debian', 'distribution_version': '11.9',
             'distribution_major_version': '11', 'os_family': 'Debian'}
    assert check_os(['a'], {'a': facts}, supported) == []
    assert check_os(['a'], {'a': UBUNTU_2204}, supported)[0].endswith(
        'supported: Debian 11/12 (validate_inventory_supported_os)')


def test_malformed_supported_os_raises():
    with pytest.raises(InventoryCheckError, match='needs distribution and versions'):
        check_os(['a'], {'a': DEBIAN_12}, [{'distribution': 'Debian'}])


def test_check_inventory_collects_every_problem_at_once():
    groups = {'nim_nodes': ['a', 'b', 'c']}
    host_vars = {'a': {'nim_group': 'Bad_Name'}, 'b': {'nim_node_rank': 'x'}, 'c': {}}
    host_facts = {'a': DEBIAN_12, 'b': DEBIAN_12,
                  'c': {'distribution': 'CentOS', 'distribution_version': '7.9',
                        'distribution_major_version': '7', 'os_family': 'RedHat'}}
    problems = check_inventory(groups, host_vars, '2.15.0', host_facts=host_facts)
    assert len(problems) == 4
    assert problems[0].startswith('ansible-core 2.15.0 is not supported')
    assert problems[1].startswith("host a: nim_group='Bad_Name'")
    assert problems[2].startswith("host b: nim_node_rank='x'")
    assert problems[3].startswith('host c: CentOS 7.9 (os_family RedHat) is not supported')


def test_check_inventory_without_facts_skips_os():
    groups = {'nim_nodes': ['a']}
    assert check_inventory(groups, {'a': {}}, '2.19.14', host_facts=None) == []


def test_check_inventory_scales_to_a_thousand_hosts():
    hosts = ['gpu-%04d' % i for i in range(1000)]
    host_vars = dict((h, {'nim_group': 'g%d' % (i // 8), 'nim_node_rank': i % 8})
                     for i, h in enumerate(hosts))
    assert check_inventory({'nim_nodes': hosts}, host_vars, '2.19.14') == []


def test_group_name_rule_is_the_one_the_planner_applies():
    """validate_inventory and nim_plan must accept and refuse the same group names."""
    from ansible_collections.nimstack.multinode.plugins.module_utils.nim_plan import build_plan
    for name, accepted in (('a' * 30, True), ('a' * 31, False)):
        problems = check_host_vars(['h1'], {'h1': {'nim_group': name}}, 'default')
        planned = build_plan([{'host': 'h1', 'address': '10.0.0.1', 'group': name, 'rank': None, 'settings': {}}])
        named = [e for e in planned['errors'] if 'not a valid group name' in e]
        assert (problems == []) is accepted
        assert (named == []) is accepted


def test_a_setting_of_the_controller_s_plays_set_for_the_nodes_alone_is_refused():
    from ansible_collections.nimstack.multinode.plugins.module_utils.inventory_checks import (
        PROBLEM_CONTROLLER_SETTING, check_controller_settings)
    hosts = ['a', 'b']
    group_of = {'a': 'g', 'b': 'g'}
    nodes = {'a': {'nim_k8s_backend': 'lws', 'nim_k8s_namespace': 'x'}, 'b': {'nim_k8s_backend': 'lws'}}
    # Unset on the controller: the play would use the role's default.
    assert check_controller_settings(hosts, nodes, {}, group_of, plan_settings=('nim_k8s_namespace',)) == [
        PROBLEM_CONTROLLER_SETTING % ("group 'g' (hosts a, b)", 'nim_k8s_backend', "none (the role's default applies)")]
    # Another value there: named without either value (a key may be one).
    assert check_controller_settings(['a'], {'a': {'nim_k8s_ngc_api_key': 's3cret'}}, {'nim_k8s_ngc_api_key': 'other'}) == [
        PROBLEM_CONTROLLER_SETTING % ('host a', 'nim_k8s_ngc_api_key', 'another value')]
    # The same value (group_vars/all, -e): nothing to say; names of other roles are not looked at.
    assert check_controller_settings(hosts, nodes, {'nim_k8s_backend': 'lws'}, group_of, ('nim_k8s_namespace',)) == []
    assert check_controller_settings(['a'], {'a': {'nim_docker_registry': 'x'}}, {}) == []


@pytest.mark.parametrize('name', ['gpu 1', 'gpu-ü', 'gpu,1', 'gpu:1', '-gpu', 'gpu-', 'gpu\n', ''])
def test_a_host_name_that_limit_and_the_plays_cannot_select_is_named(name):
    problems = check_host_vars([name, 'ok-1'], {}, 'default')
    assert problems == ["host %r of group nim_nodes: its inventory name must be ASCII letters, digits, '.', '-' and "
                        "'_', beginning and ending with a letter or digit, at most 253 characters (--limit and the "
                        'plays select hosts by it, and the ranks are named after it); rename it in the inventory and '
                        'give its address in ansible_host' % (name,)]


@pytest.mark.parametrize('name', ['gpu-1', 'GPU_node.rack2', 'n1', '10.0.0.11'])
def test_usual_host_names_pass(name):
    assert check_host_vars([name], {}, 'default') == []


def test_a_kubernetes_setting_the_controller_alone_sees_is_named():
    from ansible_collections.nimstack.multinode.plugins.module_utils.inventory_checks import (
        PROBLEM_CONTROLLER_ONLY_SETTING, check_controller_settings)
    controller = {'nim_k8s_kubeconfig': '/etc/kube', 'volcano_version': '1.9', 'nim_k8s_namespace': 'x'}
    nodes = {'a': {}, 'b': {'nim_k8s_kubeconfig': '/etc/kube'}}
    assert check_controller_settings(['a', 'b'], nodes, controller, plan_settings=('nim_k8s_namespace',)) == [
        PROBLEM_CONTROLLER_ONLY_SETTING % ('host a', 'nim_k8s_kubeconfig')]
    # Seen alike by the controller and every node (group_vars/all, -e): nothing to say.
    assert check_controller_settings(['a'], {'a': {'nim_k8s_kubeconfig': '/etc/kube'}}, controller,
                                     plan_settings=('nim_k8s_namespace',)) == []


def test_a_misspelt_setting_is_warned_of_with_the_nearest_name():
    from ansible_collections.nimstack.multinode.plugins.module_utils.inventory_checks import unknown_settings
    known = {'nim_api_port', 'monitoring_dcgm_exporter_tag'}
    warnings = unknown_settings({'gpu-1': ['nim_api_prot', 'ansible_host', 'common_problems'],
                                 'gpu-2': ['nim_api_prot', 'nim_totally_new', 'nim_api_port']}, known,
                                {'gpu-1': 'llama', 'gpu-2': 'llama'})
    assert warnings == [
        "group 'llama' (hosts gpu-1, gpu-2): nim_api_prot is not a setting of the collection, so nothing reads it "
        '(did you mean nim_api_port?)',
        'host gpu-2: nim_totally_new is not a setting of the collection, so nothing reads it']


MONITORED = {'nim_nodes': ['gpu-1', 'gpu-2'], 'nim_monitoring': ['mon-1']}


def test_a_monitoring_host_with_an_ip_address_passes():
    assert monitoring_host_problems(MONITORED, ['gpu-1', 'gpu-2'], {}, {'mon-1': '10.0.0.50'}) == []
    assert monitoring_host_problems(MONITORED, ['gpu-1', 'gpu-2'], {}, {'mon-1': 'fd00::50'}) == []


@pytest.mark.parametrize('address, shown', [(None, 'no ansible_host'), ('mon-1.example.com', 'ansible_host=mon-1.example.com'),
                                            ('10.0.0.50/24', 'ansible_host=10.0.0.50/24')])
def test_a_monitoring_host_the_firewall_cannot_let_in_by_address_is_refused(address, shown):
    problems = monitoring_host_problems(MONITORED, ['gpu-1', 'gpu-2'], {}, {'mon-1': address})
    assert len(problems) == 1
    assert problems[0].startswith('nim_monitoring host mon-1 has %s, not an IP address' % shown)
    assert 'nim_monitoring_sources' in problems[0]


@pytest.mark.parametrize('settings', [{'nim_monitoring_sources': ['10.0.0.0/24']},
                                      {'nim_firewall_monitoring_sources': ['10.0.0.50']},
                                      {'nim_group_firewall': False}, {'nim_firewall_enabled': 'no'},
                                      {'nim_deployment_mode': 'kubernetes'}])
def test_a_monitoring_host_by_name_passes_where_no_firewall_lets_it_in_by_address(settings):
    input_vars = {'gpu-1': dict(settings), 'gpu-2': dict(settings)}
    assert monitoring_host_problems(MONITORED, ['gpu-1', 'gpu-2'], input_vars, {'mon-1': 'mon-1.example.com'}) == []


def test_a_monitoring_host_of_a_kubernetes_group_is_refused():
    groups = {'nim_nodes': ['k8s-1', 'k8s-2'], 'nim_monitoring': ['k8s-1']}
    input_vars = dict((host, {'nim_deployment_mode': 'kubernetes', 'nim_group': 'k8s'}) for host in ('k8s-1', 'k8s-2'))
    problems = monitoring_host_problems(groups, ['k8s-1', 'k8s-2'], input_vars, {'k8s-1': '10.0.0.1'})
    assert problems == ["nim_monitoring host k8s-1 is a host of group 'k8s', which runs on Kubernetes "
                        "(nim_deployment_mode=kubernetes): the hosts of a Kubernetes group are never contacted, and "
                        "the monitoring of a Kubernetes group is the Prometheus Operator's (nim_k8s_monitoring); "
                        "put the monitoring host on another host"]
