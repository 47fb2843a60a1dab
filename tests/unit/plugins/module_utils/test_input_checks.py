# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""input_checks: the type, range and format of every public variable, refused on the controller."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib.util
import os
import re
import sys

import pytest
import yaml

from ansible_collections.nimstack.multinode.plugins.module_utils import input_checks, nim_plan, settings
from ansible_collections.nimstack.multinode.plugins.module_utils.input_checks import (
    PROBLEMS, RULES, check_inputs, check_value, image_reference, operator_image)
from ansible_collections.nimstack.multinode.plugins.module_utils.inventory_checks import check_inventory

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
DIGEST = 'sha256:' + 'a' * 64

# (variable, value, problem) for values that must be refused ...
REFUSED = [
    ('ansible_host', '10.0.0.12\nevil.example.com', input_checks.P_BAD_ADDRESS),
    ('ansible_host', '10.0.0.12 ', input_checks.P_BAD_ADDRESS),
    ('ansible_host', ['10.0.0.12'], input_checks.P_BAD_ADDRESS),
    ('ansible_port', 70000, input_checks.P_OUT_OF_RANGE),
    ('nim_cache_path', '/', input_checks.P_SYSTEM_DIR),
    ('nim_cache_path', '/var/', input_checks.P_SYSTEM_DIR),
    ('nim_cache_path', '//etc', input_checks.P_SYSTEM_DIR),
    ('nim_cache_path', '/home/../opt', input_checks.P_PATH_CHARS),
    ('monitoring_dir', '/opt/${HOSTNAME}/prometheus', input_checks.P_PATH_CHARS),
    ('nim_frontend_config_dir', '/etc/nim"front', input_checks.P_PATH_CHARS),
    ('nim_cache_path', 'cache', input_checks.P_NOT_ABSOLUTE),
    ('nim_cache_path', '/proc/1/root', input_checks.P_VIRTUAL_TREE),
    ('nim_cache_path', ['/data'], input_checks.P_NOT_STRING),
    ('nfs_export_path', '/srv', input_checks.P_SYSTEM_DIR),
    ('ssh_mesh_dir', '/etc', input_checks.P_SYSTEM_DIR),
    ('nim_docker_config_dir', '/etc/nimstack\n', input_checks.P_MULTILINE),
    ('nim_k8s_render_dir', '/', input_checks.P_SYSTEM_DIR),
    ('nim_k8s_render_dir', '/home', input_checks.P_SYSTEM_DIR),
    ('nim_api_allowed_cidrs', '10.0.0.0/8', input_checks.P_STRING_NOT_LIST),
    ('nim_api_allowed_cidrs', ['*'], input_checks.P_WORLD),
    ('nim_api_allowed_cidrs', ['10.0.0.0/33'], input_checks.P_NOT_NETWORK),
    ('nim_api_allowed_cidrs', ['10.0.0.0/8 '], input_checks.P_NOT_NETWORK),
    ('nim_firewall_extra_member_sources', ['0.0.0.0/0'], input_checks.P_WORLD),
    ('nim_firewall_extra_member_sources', ['::/0'], input_checks.P_WORLD),
    ('nim_firewall_extra_member_sources', ['gpu-9.example.com'], input_checks.P_NOT_NETWORK),
    ('ssh_mesh_authorized_extra_sources', ['*'], input_checks.P_WORLD),
    ('ssh_mesh_authorized_extra_sources', ['10.*'], input_checks.P_WORLD),
    ('ssh_mesh_authorized_extra_sources', ['0.0.0.0/0'], input_checks.P_WORLD),
    ('ssh_mesh_authorized_extra_sources', '10.0.0.5', input_checks.P_STRING_NOT_LIST),
    ('nfs_export_cidrs', ['0.0.0.0/0'], input_checks.P_WORLD),
    ('nim_ssh_port', 22, input_checks.P_SSHD_PORT),
    ('nim_ssh_port', '22', input_checks.P_SSHD_PORT),
    ('ssh_mesh_port', 22, input_checks.P_SSHD_PORT),
    ('nim_api_port', 0, input_checks.P_OUT_OF_RANGE),
    ('nim_api_port', 65536, input_checks.P_OUT_OF_RANGE),
    ('nim_api_port', True, input_checks.P_BOOL_AS_INT),
    ('nim_api_port', 8000.5, input_checks.P_NOT_INT),
    ('nim_firewall_mpi_ports', [2047, 1024], input_checks.P_OUT_OF_RANGE),
    ('nim_firewall_ray_ports', '8265', input_checks.P_STRING_NOT_LIST),
    ('nim_image_tag', 1.1, input_checks.P_TAG_NUMBER),
    ('nim_image_tag', 2, input_checks.P_TAG_NUMBER),
    ('nim_image_tag', '1.10 ', input_checks.P_BAD_TAG),
    ('nim_image_tag', 'sha256:abc', input_checks.P_BAD_TAG),
    ('nim_image', 'nvcr.io/nim/meta/llama:1.10', input_checks.P_TAG_IN_IMAGE),
    ('nim_image', 'nvcr.io/nim/meta/llama@' + DIGEST, input_checks.P_TAG_IN_IMAGE),
    ('nim_image', 'nvcr.io/NIM/Llama', input_checks.P_BAD_IMAGE),
    ('nim_image', ['nvcr.io/nim/meta/llama'], input_checks.P_NOT_STRING),
    ('nim_k8s_namespace', 'My_Namespace', input_checks.P_BAD_DNS),
    ('nim_k8s_namespace', 'a' * 64, input_checks.P_BAD_DNS),
    ('nim_k8s_replicas', 200000, input_checks.P_OUT_OF_RANGE),
    ('nim_k8s_replicas', 2 ** 70, input_checks.P_OUT_OF_RANGE),
    ('nim_tensor_parallel', '8 GPUs', input_checks.P_NOT_INT),
    ('nim_shm_size_gb', False, input_checks.P_BOOL_AS_INT),
    ('nim_gpu_memory_gb', float('nan'), input_checks.P_NOT_NUMBER),
    ('nim_gpu_memory_gb', 10 ** 400, input_checks.P_OUT_OF_RANGE),
    ('nim_k8s_storage_size', '1 TB', input_checks.P_BAD_QUANTITY),
    ('nim_k8s_resources', {'limits': {'memory': 'lots'}}, input_checks.P_BAD_QUANTITY),
    ('nim_k8s_resources', {'limit': {'memory': '1Gi'}}, input_checks.P_NOT_MAPPING),
    ('nvidia_driver_repo_url', 'http://mirror.example.com/cuda', input_checks.P_NOT_HTTPS),
    ('nvidia_driver_repo_key_url', 'ftp://mirror.example.com/key', input_checks.P_NOT_HTTPS),
    ('docker_repo_url', '', input_checks.P_NOT_HTTPS),
    ('nim_ngc_api_key', 'nvapi-abc\nNIM_EXTRA=1', input_checks.P_SECRET_CHARS),
    ('nim_ngc_api_key', 'nvapi abc', input_checks.P_SECRET_CHARS),
    ('nim_ngc_api_key', ['nvapi-abc'], input_checks.P_NOT_STRING),
    ('nim_extra_env', {'NCCL_DEBUG': 'INFO\nNGC_API_KEY=x'}, input_checks.P_BAD_ENV),
    ('nim_extra_env', {'NCCL DEBUG': 'INFO'}, input_checks.P_BAD_ENV),
    ('nim_extra_env', ['NCCL_DEBUG=INFO'], input_checks.P_NOT_MAPPING),
    ('nim_socket_ifname', 'eth0 eth1', input_checks.P_NOT_CHOICE),
    ('nim_deployment_mode', 'swarm', input_checks.P_NOT_CHOICE),
    ('nim_k8s_autoscaling', 'maybe', input_checks.P_NOT_BOOL),
    ('nim_model', 'meta/llama\n', input_checks.P_MULTILINE),
    ('nim_docker_ulimits', 'memlock:-1:-1', input_checks.P_STRING_NOT_LIST),
    ('nfs_cache_mode', 775, input_checks.P_NOT_STRING),
]

# ... and values that must pass.
ACCEPTED = [
    ('ansible_host', '10.0.0.12'), ('ansible_host', 'gpu-1.example.com'), ('ansible_host', 'fd00::12'),
    ('nim_cache_path', '/var/lib/nim/cache'), ('nim_cache_path', '/mnt/models'), ('nim_cache_path', '/data'),
    ('nim_k8s_render_dir', 'out'), ('nim_k8s_render_dir', ''), ('doctor_report_dir', '~/.cache/nimstack/doctor'),
    ('nim_api_allowed_cidrs', ['0.0.0.0/0']), ('nim_api_allowed_cidrs', []),
    ('nim_firewall_extra_member_sources', ['10.0.0.0/16', '192.168.1.5']),
    ('ssh_mesh_authorized_extra_sources', ['bastion.example.com', '10.1.0.0/24']),
    ('nim_ssh_port', 2222), ('nim_ssh_port', '2222'), ('ansible_port', 22), ('nim_firewall_management_ports', [22]),
    ('nim_image_tag', '1.10'), ('nim_image_tag', 'latest'), ('nim_image_tag', DIGEST),
    ('nim_image', 'nvcr.io/nim/meta/llama-3.1-405b-instruct'), ('nim_image', 'localhost:5000/nim/standin'),
    ('nim_k8s_namespace', 'nim-prod'), ('nim_k8s_replicas', 1000), ('nim_k8s_replicas', '2'),
    ('nim_gpu_memory_gb', 80), ('nim_gpu_memory_gb', 141.5), ('nim_k8s_storage_size', '1Ti'),
    ('nim_k8s_resources', {'limits': {'memory': '512Gi', 'nvidia.com/gpu': 8}}),
    ('nvidia_driver_repo_url', ''), ('nvidia_driver_repo_url', 'https://mirror.example.com/cuda'),
    ('nim_ngc_api_key', 'nvapi-0123456789abcdef'), ('nim_ngc_api_key', ''),
    ('nim_extra_env', {'NCCL_DEBUG': 'INFO', 'NIM_MAX_MODEL_LEN': 8192, 'FLAG': True}),
    ('nim_socket_ifname', '^lo,docker'), ('nim_k8s_autoscaling', 'false'), ('nfs_cache_mode', '0775'),
    ('nim_ray_auth', False), ('nim_ray_auth', 'token'), ('unknown_variable', object()),
]


@pytest.mark.parametrize('name,value,problem', REFUSED, ids=['%s-%d' % (c[0], i) for i, c in enumerate(REFUSED)])
def test_refused(name, value, problem):
    assert check_value(name, value) == problem


@pytest.mark.parametrize('name,value', ACCEPTED, ids=['%s-%d' % (c[0], i) for i, c in enumerate(ACCEPTED)])
def test_accepted(name, value):
    assert check_value(name, value) is None


def test_a_group_value_is_named_once_for_the_group_and_a_host_value_for_its_host():
    hosts = ['gpu-1', 'gpu-2', 'gpu-3']
    host_vars = {
        'gpu-1': {'nim_cache_path': '/', 'ansible_host': '10.0.0.11'},
        'gpu-2': {'nim_cache_path': '/', 'ansible_host': '10.0.0.12\nevil'},
        'gpu-3': {'nim_cache_path': '/', 'nim_k8s_replicas': 200000},
    }
    problems = check_inputs(hosts, host_vars, dict.fromkeys(hosts, 'llama'))
    assert problems == [
        "group 'llama' (hosts gpu-1, gpu-2, gpu-3): nim_cache_path=\"/\" is a system directory, not one dedicated "
        "to the collection; accepted: " + input_checks.ACCEPT_OWNED_DIR,
        'host gpu-2: ansible_host="10.0.0.12\\nevil" is not a host name or IP address; accepted: '
        + input_checks.ACCEPT_HOST_ADDRESS,
        "host gpu-3: nim_k8s_replicas=200000 is out of range; accepted: a whole number from 1 to 1000",
    ]


def test_the_key_is_never_shown():
    problems = check_inputs(['gpu-1'], {'gpu-1': {'nim_ngc_api_key': 'nvapi-SECRET\nX=1'}})
    assert problems == ['host gpu-1: nim_ngc_api_key=<hidden> ' + input_checks.P_SECRET_CHARS
                        + '; accepted: ' + input_checks.ACCEPT_SECRET]
    assert 'SECRET' not in problems[0]


def test_a_float_tag_says_to_quote_it():
    problem = check_inputs(['a'], {'a': {'nim_image_tag': 1.1}})[0]
    assert 'nim_image_tag=1.1 is a number, not a string' in problem and 'quote the tag' in problem


def test_long_values_are_shortened_and_many_hosts_summed_up():
    hosts = ['gpu-%d' % i for i in range(10)]
    problems = check_inputs(hosts, dict((h, {'nim_model': 'x' * 200 + '\n'}) for h in hosts))
    assert len(problems) == 1
    assert 'hosts gpu-0, gpu-1, gpu-2, gpu-3, gpu-4, gpu-5 and 4 more' in problems[0]
    assert '...' in problems[0] and len(problems[0]) < 300


def test_check_inventory_adds_the_input_checks_and_the_nfs_server():
    problems = check_inventory({'nim_nodes': ['gpu-1']}, {'gpu-1': {}}, '2.19.0',
                               input_vars={'gpu-1': {'nim_ssh_port': 22}, 'nfs-1': {'nfs_export_path': '/'}})
    assert [p.split(':')[0] for p in problems] == ['host gpu-1', 'host nfs-1']
    assert check_inventory({'nim_nodes': ['gpu-1']}, {'gpu-1': {}}, '2.19.0',
                           input_vars={'gpu-1': {'nim_ssh_port': 2222}}) == []


@pytest.mark.parametrize('tag,reference', [('1.10', 'nvcr.io/nim/x:1.10'), (DIGEST, 'nvcr.io/nim/x@' + DIGEST)])
def test_image_reference(tag, reference):
    assert image_reference('nvcr.io/nim/x', tag) == reference


@pytest.mark.parametrize('tag,repository,last', [
    ('1.10', 'nvcr.io/nim/x', '1.10'), (DIGEST, 'nvcr.io/nim/x@sha256', DIGEST.split(':')[1])])
def test_the_operator_image_joins_back_to_the_reference(tag, repository, last):
    parts = operator_image('nvcr.io/nim/x', tag)
    assert parts == {'repository': repository, 'tag': last}
    assert parts['repository'] + ':' + parts['tag'] == image_reference('nvcr.io/nim/x', tag)


def test_every_problem_and_accepted_text_is_in_the_troubleshooting_page():
    with open(os.path.join(REPO, 'docs', 'troubleshooting.md')) as handle:
        page = re.sub(r'\s+', ' ', handle.read())
    for problem in PROBLEMS:
        assert problem in page, problem
    for rule in RULES.values():
        assert re.sub(r'\s+', ' ', rule.accepts.replace(', or empty', '')) in page, rule.accepts


def test_the_troubleshooting_page_lists_what_each_variable_accepts_as_the_rules_say():
    """The page's table is rendered from RULES (scripts/accepts-table.py --write renders it again)."""
    spec = importlib.util.spec_from_file_location('accepts_table', os.path.join(REPO, 'scripts', 'accepts-table.py'))
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    with open(script.PAGE) as handle:
        page = handle.read()
    assert page == script.page_with(page, script.table(RULES)), 'run scripts/accepts-table.py --write'


def _public_variables():
    names = set()
    for role in os.listdir(os.path.join(REPO, 'roles')):
        path = os.path.join(REPO, 'roles', role, 'meta', 'argument_specs.yml')
        if os.path.exists(path):
            with open(path) as handle:
                for spec in yaml.safe_load(handle)['argument_specs'].values():
                    names.update(spec.get('options') or {})
    return names


# Ansible's own connection variables, which the inventory sets and the controller checks too.
ANSIBLE_OWN = {'ansible_host', 'ansible_port'}


def test_every_rule_names_a_declared_variable():
    """A rule checks a setting some role's argument specs declare (test_settings.py: the inventory's own
    are those of validate_inventory's entry point inventory), or Ansible's own host and port."""
    assert sorted(set(RULES) - set(settings.DECLARED) - ANSIBLE_OWN) == []
    # Every setting the planner reads has a rule.
    assert sorted(set(nim_plan.SETTING_NAMES) - set(RULES)) == []


def test_every_option_of_a_role_has_a_rule_unless_the_collection_passes_it():
    """No setting reaches a host unchecked: an option of a role's argument_specs without a rule is
    named here, unless the collection's own plays pass it (the plan, a wave's hosts, role common)."""
    from ansible_collections.nimstack.multinode.plugins.module_utils.input_checks import (
        CHECKED_WITH_THE_RANKS, PASSED_BY_THE_COLLECTION, PASSED_BY_THE_COLLECTION_PREFIX)
    unchecked = sorted(name for name in _public_variables()
                       if name not in RULES and name not in PASSED_BY_THE_COLLECTION | CHECKED_WITH_THE_RANKS
                       and not name.startswith(PASSED_BY_THE_COLLECTION_PREFIX))
    assert unchecked == []
    assert sorted(PASSED_BY_THE_COLLECTION - _public_variables()) == []
    assert sorted(PASSED_BY_THE_COLLECTION & set(RULES)) == []


def _spec_options():
    """(role, entry point, name, option) of every role's argument_specs."""
    for role in sorted(os.listdir(os.path.join(REPO, 'roles'))):
        path = os.path.join(REPO, 'roles', role, 'meta', 'argument_specs.yml')
        if os.path.exists(path):
            with open(path) as handle:
                for entry, spec in yaml.safe_load(handle)['argument_specs'].items():
                    for name, option in (spec.get('options') or {}).items():
                        yield role, entry, name, option


def test_the_controller_checks_and_the_argument_specs_say_the_same_type_and_choices():
    """One schema: where a variable has both, its rule and every role's argument_specs agree on the
    type the value has and on the values a choice accepts."""
    disagreements = []
    compared = 0
    for role, entry, name, option in _spec_options():
        rule = RULES.get(name)
        if rule is None:
            continue
        compared += 1
        kind = {'path': 'str'}.get(option.get('type', 'str'), option.get('type', 'str'))
        if rule.kind != 'raw' and kind != rule.kind:
            disagreements.append('%s (%s:%s): argument_specs type %s, rule %s' % (name, role, entry, kind, rule.kind))
        spec_choices = sorted(str(c) for c in option.get('choices') or [])
        rule_choices = sorted(str(c) for c in rule.choices or [])
        if spec_choices != rule_choices:
            disagreements.append('%s (%s:%s): argument_specs choices %s, rule %s'
                                 % (name, role, entry, spec_choices, rule_choices))
    assert compared > 100
    assert disagreements == []


def test_every_rule_says_what_it_accepts_as_a_type():
    assert [name for name, rule in RULES.items() if rule.kind not in ('int', 'float', 'bool', 'str', 'list', 'dict', 'raw')] == []
    assert RULES['nim_deployment_mode'].choices == ('docker', 'kubernetes')
    assert RULES['nim_api_port'].kind == 'int' and RULES['nim_extra_env'].kind == 'dict'


def test_every_accepted_text_says_once_what_empty_means():
    assert [name for name, rule in RULES.items() if rule.accepts.count('or empty') > 1] == []


@pytest.mark.parametrize('name', ['lws_version', 'nim_operator_version', 'volcano_version'])
@pytest.mark.parametrize('value,ok', [('v3.1.2', True), ('v0.10.0-rc.1', True), ('latest', False), ('3.1.2', False),
                                      ('', False), ('v3.1', False), ('main', False)])
def test_a_component_version_is_a_release(name, value, ok):
    assert (check_value(name, value) is None) == ok


@pytest.mark.parametrize('name,value,ok', [
    ('nim_docker_registry', 'nvcr.io', True),
    ('nim_docker_registry', 'registry.lab:5000', True),
    ('nim_docker_registry', 'nvcr.io; rm -rf /', False),
    ('nim_docker_registry', 'https://nvcr.io', False),
    ('nim_docker_registry', 'NVCR.io', False),
    ('nim_docker_registry_username', '$oauthtoken', True),
    ('nim_docker_registry_username', 'robot@example.com', True),
    ('nim_docker_registry_username', 'me`id`', False),
    ('nim_docker_registry_username', 'a b', False),
    ('nim_frontend_model', 'meta/llama-3.1-405b-instruct', True),
    ('nim_frontend_model', 'my model {x}', False),
    ('nim_frontend_model', 'model\nacl', False),
])
def test_names_that_land_in_a_configuration_file_or_a_command(name, value, ok):
    assert (check_value(name, value) is None) == ok


@pytest.mark.parametrize('value', ['/mnt/c:/etc', '/mnt/a,b', '/mnt/my cache'])
def test_a_host_path_that_would_change_a_bind_mount_is_refused(value):
    assert check_value('nim_cache_path', value) == 'holds a colon, comma or whitespace, which would change the meaning of a bind mount or a unit line'
    # On the controller a path is only a path.
    assert check_value('nim_k8s_render_dir', value) is None


@pytest.mark.parametrize('name', ['nim_secrets_gid', 'nim_docker_secrets_gid', 'ssh_mesh_secrets_gid'])
@pytest.mark.parametrize('value,problem', [
    (64910, None), ('64910', None), (1000, None),
    (0, input_checks.P_OUT_OF_RANGE), (999, input_checks.P_OUT_OF_RANGE), (65534, input_checks.P_OUT_OF_RANGE),
    (65535, input_checks.P_OUT_OF_RANGE), (2 ** 31, input_checks.P_OUT_OF_RANGE),
    ('nogroup', input_checks.P_NOT_INT), (True, input_checks.P_BOOL_AS_INT),
])
def test_the_secrets_group_has_a_gid_of_its_own(name, value, problem):
    assert check_value(name, value) == problem


@pytest.mark.parametrize('role,name', [('nim_docker', 'nim_docker_secrets_gid'), ('ssh_mesh', 'ssh_mesh_secrets_gid')])
def test_the_default_secrets_gid_is_the_roles(role, name):
    with open(os.path.join(REPO, 'roles', role, 'defaults', 'main.yml')) as handle:
        default = yaml.safe_load(handle)[name]
    assert default == '{{ nim_secrets_gid | default(%d) }}' % input_checks.DEFAULT_SECRETS_GID
    assert check_value(name, input_checks.DEFAULT_SECRETS_GID) is None


@pytest.mark.parametrize('value,problem', [
    ('', None),
    ('nvcr.io/nim/nvidia/downloader:1.0.0', None),
    ('registry.lab:5000/tools/downloader:2', None),
    ('nvcr.io/nim/nvidia/downloader@' + DIGEST, None),
    ('nvcr.io/nim/nvidia/downloader', input_checks.P_BAD_TAG),
    ('registry.lab:5000/tools/downloader', input_checks.P_BAD_TAG),
    ('nvcr.io/nim/nvidia/downloader:1.0 beta', input_checks.P_BAD_TAG),
    ('nvcr.io/nim/nvidia/downloader@sha256:abc', input_checks.P_BAD_TAG),
    ('nvcr.io/NIM/Downloader:1', input_checks.P_BAD_IMAGE),
    (['nvcr.io/nim/nvidia/downloader:1'], input_checks.P_NOT_STRING),
])
def test_the_downloader_image_is_pulled_by_tag_or_digest(value, problem):
    assert check_value('nim_docker_download_image', value) == problem


@pytest.mark.parametrize('name,value,problem', [
    ('lws_helm_chart_ref', 'oci://registry.k8s.io/lws/charts/lws', None),
    ('lws_helm_chart_ref', 'https://charts.example.com/lws', None),
    ('lws_helm_chart_ref', 'http://charts.example.com/lws', input_checks.P_NOT_CHART_REF),
    ('lws_helm_chart_ref', 'oci://registry.k8s.io/lws/charts/lws --devel', input_checks.P_NOT_CHART_REF),
    ('volcano_helm_chart_file', '', None),
    ('volcano_helm_chart_file', 'charts/volcano-1.12.1.tgz', None),
    ('volcano_helm_chart_file', 'charts/volcano', input_checks.P_NOT_ARCHIVE),
    ('nim_operator_helm_chart_file', 'k8s-nim-operator.tgz\n', input_checks.P_MULTILINE),
    ('lws_helm_chart_path', 'charts/lws', None),
    ('lws_kubeconfig', ['~/.kube/config'], input_checks.P_NOT_STRING),
    ('lws_helm_release', 'lws', None),
    ('lws_helm_release', 'a' * 54, input_checks.P_BAD_NAME),
    ('nim_operator_helm_release', 'NIM_Operator', input_checks.P_BAD_NAME),
    ('volcano_helm_chart', 'volcano', None),
    ('volcano_helm_chart', 'volcano sh', input_checks.P_BAD_NAME),
    ('nim_operator_gpu_operator_version', 'v25.10.0', None),
    ('nim_operator_network_operator_version', '25.7.0', None),
    ('nim_operator_network_operator_version', 25.7, input_checks.P_NOT_STRING),
    ('nim_operator_gpu_operator_version', 'stable', input_checks.P_BAD_RELEASE),
])
def test_what_helm_is_given(name, value, problem):
    assert check_value(name, value) == problem


def test_only_the_crds_of_leaderworkerset_may_be_removed():
    with open(os.path.join(REPO, 'roles', 'lws', 'vars', 'main.yml')) as handle:
        assert tuple(yaml.safe_load(handle)['_lws_crds']) == input_checks.LWS_CRDS
    assert check_value('lws_remove_crds', []) is None
    assert check_value('lws_remove_crds', list(input_checks.LWS_CRDS)) is None
    assert check_value('lws_remove_crds', ['nimservices.apps.nvidia.com']) == input_checks.P_NOT_CHOICE
    assert check_value('lws_remove_crds', input_checks.LWS_CRDS[0]) == input_checks.P_STRING_NOT_LIST


@pytest.mark.parametrize('value,problem', [
    ([], None), ([{'key': 'nvidia.com/gpu', 'operator': 'Exists'}], None),
    ({'key': 'nvidia.com/gpu'}, input_checks.P_NOT_LIST), ('nvidia.com/gpu', input_checks.P_STRING_NOT_LIST),
    (['nvidia.com/gpu'], input_checks.P_NOT_MAPPING),
])
def test_tolerations_are_a_list_of_mappings(value, problem):
    assert check_value('nim_k8s_tolerations', value) == problem


@pytest.mark.parametrize('value,ok', [('15s', True), ('1m30s', True), ('4h', True), ('1y2w3d4h5m6s7ms', True),
                                      ('30s1m', False), ('1m1m', False), ('', False), ('15', False), ('15 s', False)])
def test_a_duration_is_prometheus_own_grammar(value, ok):
    assert (input_checks.RULES['monitoring_scrape_interval'].check(value) is None) is ok


def test_the_default_driver_branch_is_the_roles():
    with open(os.path.join(REPO, 'roles', 'nvidia_driver', 'defaults', 'main.yml')) as handle:
        assert str(yaml.safe_load(handle)['nvidia_driver_branch']) == input_checks.DEFAULT_DRIVER_BRANCH


@pytest.mark.parametrize('variables,named', [
    ({'nvidia_driver_version': '570.124.06'}, 'nvidia_driver_version="570.124.06" is not a version of nvidia_driver_branch 580'),
    ({'nvidia_driver_version': '590.44.01', 'nvidia_driver_branch': '580'}, 'nvidia_driver_branch 580'),
    ({'monitoring_alertmanager_receivers': [{'name': 'pager'}], 'monitoring_alertmanager_receiver': 'pagr'},
     'monitoring_alertmanager_receiver="pagr" names no receiver'),
])
def test_two_settings_that_disagree_are_refused_naming_the_one_to_change(variables, named):
    problems = input_checks.check_inputs(['gpu-1'], {'gpu-1': variables})
    assert len(problems) == 1 and named in problems[0]


@pytest.mark.parametrize('variables', [
    {'nvidia_driver_version': '580.95.05'},
    {'nvidia_driver_version': '590.44.01', 'nvidia_driver_branch': '590'},
    {'nvidia_driver_version': ''},
    {'monitoring_alertmanager_receiver': 'pager'},
    {'monitoring_alertmanager_receivers': [{'name': 'pager', 'webhook_configs': [{'url': 'https://hooks.example/a'}]}],
     'monitoring_alertmanager_receiver': 'pager'},
    # A wrong branch is named once, by its own rule, not again for the version.
])
def test_two_settings_that_agree_pass(variables):
    assert input_checks.check_inputs(['gpu-1'], {'gpu-1': variables}) == []


def test_a_wrong_branch_is_named_once():
    problems = input_checks.check_inputs(['gpu-1'], {'gpu-1': {'nvidia_driver_branch': 'latest',
                                                               'nvidia_driver_version': '580.95.05'}})
    assert len(problems) == 1 and 'nvidia_driver_branch="latest"' in problems[0]


@pytest.mark.parametrize('name,value,problem', [
    ('docker_limit_memlock', 'infinity', None),
    ('docker_limit_memlock', '64M', None),
    ('docker_limit_memlock', '64M:infinity', None),
    ('docker_limit_memlock', 'infinity\nExecStartPre=/bin/sh', input_checks.P_MULTILINE),
    ('docker_limit_memlock', 'unlimited', input_checks.P_BAD_NAME),
    ('docker_log_max_size', '100m', None),
    ('docker_log_max_size', '100 MB', input_checks.P_BAD_NAME),
    ('nvidia_driver_kernel_modules', 'opensource', input_checks.P_NOT_CHOICE),
    ('nvidia_driver_branch', '580', None),
    ('nvidia_driver_branch', 590, None),
    ('nvidia_driver_branch', '570', input_checks.P_BAD_RELEASE),
    ('nvidia_driver_branch', '580\n', input_checks.P_BAD_RELEASE),
    ('nvidia_driver_version', '580.95', None),
    ('nvidia_driver_version', 'latest', input_checks.P_BAD_RELEASE),
    ('nvidia_container_toolkit_version', '1.18.0-1', None),
    ('nvidia_container_toolkit_version', '1.18.0\n', input_checks.P_MULTILINE),
    ('monitoring_dcgm_exporter_tag', '4.2.3-4.1.3-ubuntu22.04', None),
    ('monitoring_alertmanager_repeat_interval', '0s', input_checks.P_OUT_OF_RANGE),
    ('monitoring_alertmanager_repeat_interval', '4h', None),
    ('monitoring_alertmanager_receivers', [{'name': 'hook', 'webhook_configs': [{'url': 'hooks.example/x'}]}],
     input_checks.P_NOT_URL),
    ('monitoring_alertmanager_receivers', [{'webhook_configs': []}], input_checks.P_BAD_NAME),
    ('monitoring_alert_thresholds', {'gpu_temp_celsius': 85}, None),
    ('monitoring_alert_thresholds', {'gpu_temp': 85}, input_checks.P_BAD_THRESHOLDS),
    ('monitoring_alert_thresholds', {'restart_budget_fraction': 95}, input_checks.P_BAD_THRESHOLDS),
    ('monitoring_alert_thresholds', {'not_serving_for': '1h30'}, input_checks.P_BAD_THRESHOLDS),
    ('nim_k8s_alert_thresholds', {'not_serving_for': '1h30'}, input_checks.P_BAD_THRESHOLDS),
    ('nfs_mount_options', 'nfsvers=4.2,hard,nconnect=8,timeo=600,retrans=2,noatime,_netdev', None),
    ('nfs_mount_options', 'rw hard', input_checks.P_BAD_NAME),
    ('nfs_export_options', ['rw', 'sync', 'fsid=0'], None),
    ('nfs_export_options', ['rw,no_root_squash'], input_checks.P_BAD_NAME),
    ('rdma_limits_domains', ['*', 'root', '@nim', '1000:'], None),
    ('rdma_limits_domains', ['* hard'], input_checks.P_BAD_NAME),
    ('rdma_pci_vendor_ids', ['0x15b3'], None),
    ('rdma_sysfs_root', '/sys', None),
    ('rdma_sysfs_root', 'sys', input_checks.P_NOT_ABSOLUTE),
    ('nim_k8s_rollout_max_unavailable', '25%', None),
    ('nim_k8s_rollout_max_unavailable', 2, None),
    ('nim_k8s_rollout_max_unavailable', '150%', input_checks.P_OUT_OF_RANGE),
    ('nim_k8s_rollout_max_unavailable', '1\n', input_checks.P_NOT_INT),
    ('nim_k8s_exclusive_topology', 'topology.kubernetes.io/rack', None),
    ('nim_k8s_exclusive_topology', 'rack zone', input_checks.P_BAD_NAME),
    ('nim_k8s_mpi_start_script', '#!/bin/bash\n\tmpirun "$@"\n', None),
    ('nim_k8s_mpi_start_script', 'echo \x1b[31m', input_checks.P_MULTILINE),
    ('doctor_shm_min_gb', '', None),
    ('doctor_shm_min_gb', 64, None),
    ('doctor_shm_min_gb', 'lots', input_checks.P_NOT_NUMBER),
    ('ssh_mesh_host_names', ['gpu-1', '10.0.0.1'], None),
    ('ssh_mesh_host_names', ['gpu-1 gpu-2'], input_checks.P_BAD_ADDRESS),
    ('validate_inventory_ansible_max_version', '', None),
    ('validate_inventory_ansible_max_version', '2.21', None),
    ('validate_inventory_ansible_max_version', 'latest', input_checks.P_BAD_RELEASE),
])
def test_the_options_each_role_reads(name, value, problem):
    assert check_value(name, value) == problem


def _string_samples():
    sys.path.insert(0, os.path.join(REPO, 'tests', 'bad_inputs'))
    import samples  # pylint: disable=import-outside-toplevel
    return samples.string_samples(RULES, check_value)


@pytest.mark.parametrize('name,value', _string_samples())
def test_every_string_setting_refuses_its_valid_value_with_a_trailing_newline_or_a_control_character(name, value):
    """Every value is matched whole: a valid value followed by a newline (a YAML | block), or holding
    an escape, is refused whatever the kind (a script keeps its lines, never an escape)."""
    assert value is not None, 'no sample value of %s passes its own rule' % name
    if name != 'nim_k8s_mpi_start_script':  # a script keeps its lines (samples.MULTILINE)
        assert check_value(name, value + '\n') is not None
    assert check_value(name, value + '\x1b') is not None
    assert check_value(name, value[:1] + '\x00' + value[1:]) is not None


def test_every_string_setting_that_reaches_a_file_refuses_what_the_file_reads_specially():
    """A one-line string setting either refuses characters that a configuration file, a unit's line, a
    shell or PromQL read specially (a quote, $, %, a space...), or is one of samples.FREE_TEXT, which
    reach no such file: a new setting is named here until its rule says its file's grammar or it is
    listed there, saying why."""
    sys.path.insert(0, os.path.join(REPO, 'tests', 'bad_inputs'))
    import samples  # pylint: disable=import-outside-toplevel
    spoilt = samples.special_samples(RULES, check_value)
    assert len(spoilt) > 100
    assert sorted(name for name, value in spoilt if value is None) == []
    assert sorted(samples.FREE_TEXT - set(RULES)) == []


def _listener_pairs():
    """Every pair of listeners one host can hold: a Docker host watched by the monitoring that is also
    a front door and the monitoring host, with the contract auto (every contract's port)."""
    names = [name for name, _follows, _default, _kind, _when in input_checks.LISTENERS]
    return [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]


ALL_KINDS = {'docker', 'exporters', 'frontend', 'monitoring'}


def test_a_host_with_every_listener_at_its_default_has_no_clash():
    assert input_checks.clash_problems({'nim_launch_contract': 'auto'}, ALL_KINDS) == []
    listening = input_checks.host_listeners({'nim_launch_contract': 'auto'}, ALL_KINDS)
    assert len(listening) == len(input_checks.LISTENERS)


@pytest.mark.parametrize('first,second', _listener_pairs())
def test_two_listeners_of_one_host_on_one_port_are_refused_naming_both(first, second):
    problems = input_checks.check_inputs(['gpu-1'], {'gpu-1': {'nim_launch_contract': 'auto', first: 31000, second: 31000}},
                                         host_kinds={'gpu-1': ALL_KINDS})
    assert len(problems) == 1
    assert '%s=31000' % second in problems[0] and 'the port of %s on this host' % first in problems[0]


def test_a_listener_not_in_effect_on_the_host_does_not_clash():
    # An mpi group has no Ray port; a host without the front door has none of its ports.
    assert input_checks.check_inputs(['gpu-1'], {'gpu-1': {'nim_ray_port': 8000}}, host_kinds={'gpu-1': {'docker'}}) == []
    assert input_checks.check_inputs(['gpu-1'], {'gpu-1': {'nim_frontend_port': 8000}}, host_kinds={'gpu-1': {'docker'}}) == []
    assert input_checks.check_inputs(['gpu-1'], {'gpu-1': {'nim_group_supervisor': False, 'nim_group_supervisor_port': 8000}},
                                     host_kinds={'gpu-1': {'docker'}}) == []
    assert input_checks.check_inputs(['m-1'], {'m-1': {'monitoring_mode': 'files', 'monitoring_prometheus_port': 8080}},
                                     host_kinds={'m-1': {'frontend', 'monitoring'}}) == []


def test_the_clash_is_named_by_the_setting_the_inventory_changed():
    problems = input_checks.check_inputs(['gpu-1'], {'gpu-1': {'monitoring_node_exporter_port': 8000}},
                                         host_kinds={'gpu-1': ALL_KINDS})
    assert len(problems) == 1 and problems[0].startswith('host gpu-1: monitoring_node_exporter_port=8000 is also the port of nim_api_port')


def _assert_defaults_are_the_roles(table):
    """Each setting of a per-host table (LISTENERS, DIRECTORIES, GIDS) defaults to what the planner
    (nim_plan.SETTING_DEFAULTS) or its role says: the role's default template where it follows an
    inventory-wide setting, its literal default otherwise."""
    from ansible_collections.nimstack.multinode.plugins.module_utils.nim_plan import SETTING_DEFAULTS
    defaults = {}
    for _role, _entry, name, option in _spec_options():
        defaults.setdefault(name, option.get('default'))
    for name, follows, default, _kind, _when in table:
        if name in SETTING_DEFAULTS:
            assert SETTING_DEFAULTS[name] == default, name
        elif follows:
            assert defaults[name] == '{{ %s | default(%d) }}' % (follows, default), name
        else:
            assert defaults[name] == default, name


def test_the_listeners_defaults_are_the_roles():
    _assert_defaults_are_the_roles(input_checks.LISTENERS)


def _gid_pairs():
    """Every pair of gids that must not meet: a secrets gid and a workload gid at one value, and two
    secrets gids at two values (input_checks.GIDS, GID_PURPOSE)."""
    names = [gid[0] for gid in input_checks.GIDS]
    purpose = input_checks.GID_PURPOSE
    return [(a, b) for i, a in enumerate(names) for b in names[i + 1:]
            if input_checks.GID_SECRETS in (purpose[a], purpose[b])]


def test_a_host_with_every_gid_at_its_default_has_no_clash():
    assert input_checks.gid_clash_problems({'nim_launch_contract': 'mpi'}, {'docker'}) == []
    assert len(input_checks.host_gids({'nim_launch_contract': 'mpi'}, {'docker'})) == len(input_checks.GIDS)
    # The workload gids may meet: the cache is the containers'.
    assert input_checks.gid_clash_problems({'nim_docker_container_gid': 2000, 'nfs_cache_owner_gid': 2000}, {'docker'}) == []


@pytest.mark.parametrize('first,second', _gid_pairs())
def test_gids_that_must_not_meet_are_refused_naming_both(first, second):
    split = input_checks.GID_PURPOSE[first] == input_checks.GID_PURPOSE[second]
    hvars = {'nim_launch_contract': 'mpi', 'nim_secrets_gid': 5000, first: 5000, second: 5001 if split else 5000}
    hvars.update((name, 5000) for name, purpose in input_checks.GID_PURPOSE.items()
                 if purpose == input_checks.GID_SECRETS and name not in (first, second))
    problems = input_checks.check_inputs(['gpu-1'], {'gpu-1': hvars}, host_kinds={'gpu-1': {'docker'}})
    assert len(problems) == 1, problems
    assert second in problems[0] and first in problems[0], problems[0]
    assert problems[0].endswith('accepted: %s' % input_checks.ACCEPT_SECRETS_GID_OWN)


def test_the_secrets_gid_set_once_meets_the_containers_gid():
    problems = input_checks.check_inputs(['gpu-1'], {'gpu-1': {'nim_secrets_gid': 1000}}, host_kinds={'gpu-1': {'docker'}})
    assert problems == ['host gpu-1: nim_secrets_gid=1000 is also nim_docker_container_gid, nfs_cache_owner_gid on this '
                        'host: ' + input_checks.P_GID_SHARED.split(': ', 1)[1] + '; accepted: '
                        + input_checks.ACCEPT_SECRETS_GID_OWN]
    # Not on a host of no Docker group, nor where NFS is off and the containers' gid is another.
    assert input_checks.check_inputs(['k-1'], {'k-1': {'nim_secrets_gid': 1000}}, host_kinds={'k-1': set()}) == []
    assert input_checks.check_inputs(['gpu-1'], {'gpu-1': {'nim_secrets_gid': 1000, 'nfs_enabled': False,
                                                           'nim_docker_container_gid': 1001}},
                                     host_kinds={'gpu-1': {'docker'}}) == []


def test_the_gids_defaults_are_the_roles():
    _assert_defaults_are_the_roles(input_checks.GIDS)


def _directory_pairs():
    names = [name for name, _follows, _default, _kind, _when in input_checks.DIRECTORIES]
    return [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]


def test_a_host_with_every_directory_at_its_default_has_no_clash():
    assert input_checks.directory_clash_problems({}, ALL_KINDS) == []
    assert len(input_checks.host_directories({}, ALL_KINDS)) == len(input_checks.DIRECTORIES)


@pytest.mark.parametrize('first,second', _directory_pairs())
def test_two_directories_of_one_host_on_one_path_are_refused_naming_both(first, second):
    problems = input_checks.check_inputs(['gpu-1'], {'gpu-1': {first: '/srv/shared', second: '/srv/shared/'}},
                                         host_kinds={'gpu-1': ALL_KINDS})
    assert problems == ['host gpu-1: %s="/srv/shared" is also the path of %s on this host; accepted: %s'
                        % (second, first, input_checks.ACCEPT_OWN_DIR)]


def test_a_directory_inside_another_is_refused_from_the_side_the_inventory_set():
    # The inventory moved the front door's directory under the Docker path's own: the front door's is named.
    problems = input_checks.check_inputs(['gpu-1'], {'gpu-1': {'nim_frontend_config_dir': '/etc/nimstack/nim/frontend'}},
                                         host_kinds={'gpu-1': ALL_KINDS})
    assert problems == ['host gpu-1: nim_frontend_config_dir="/etc/nimstack/nim/frontend" is inside '
                        'nim_docker_config_dir on this host; accepted: %s' % input_checks.ACCEPT_OWN_DIR]
    problems = input_checks.check_inputs(['gpu-1'], {'gpu-1': {'monitoring_dir': '/etc/nimstack'}},
                                         host_kinds={'gpu-1': ALL_KINDS})
    assert len(problems) == 1 and problems[0].startswith(
        'host gpu-1: monitoring_dir="/etc/nimstack" holds nim_docker_config_dir, ssh_mesh_dir, nim_firewall_rules_file, '
        'nim_frontend_config_dir on this host')
    # A sibling that shares a prefix of its name is apart.
    assert input_checks.check_inputs(['gpu-1'], {'gpu-1': {'monitoring_dir': '/etc/nimstack/nim2'}},
                                     host_kinds={'gpu-1': ALL_KINDS}) == []


def test_a_directory_not_in_effect_on_the_host_does_not_clash():
    # Only the front door's host has the front door's directories; a ray group has no mesh.
    assert input_checks.check_inputs(['gpu-1'], {'gpu-1': {'nim_frontend_config_dir': '/etc/nimstack/nim'}},
                                     host_kinds={'gpu-1': {'docker'}}) == []
    assert input_checks.check_inputs(['gpu-1'], {'gpu-1': {'nim_launch_contract': 'ray', 'ssh_mesh_dir': '/etc/nimstack/nim'}},
                                     host_kinds={'gpu-1': {'docker'}}) == []
    assert input_checks.check_inputs(['gpu-1'], {'gpu-1': {'nim_group_firewall': False,
                                                           'nim_firewall_rules_file': '/etc/nimstack/nim/rules.nft'}},
                                     host_kinds={'gpu-1': {'docker'}}) == []


def test_the_directories_defaults_are_the_roles():
    _assert_defaults_are_the_roles(input_checks.DIRECTORIES)
