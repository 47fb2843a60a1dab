# -*- coding: utf-8 -*-
"""The Docker path's preflight (role nim_docker, tasks/preflight.yml): one test per rule, on plans
that nim_plan builds, so the checks read the plan as the role receives it."""

import pytest

from ansible_collections.nimstack.multinode.plugins.module_utils.docker_preflight import (
    EMPTY_PLAN,
    NOT_A_PLAN,
    preflight_groups,
    preflight_inputs,
    preflight_problems,
)
from ansible_collections.nimstack.multinode.plugins.module_utils.input_checks import DEFAULT_SECRETS_GID, RULES
from ansible_collections.nimstack.multinode.plugins.module_utils.nim_plan import build_plan
from ansible_collections.nimstack.multinode.tests.unit.models import LLAMA_405B

MODEL = LLAMA_405B
GOOD = {'present': True, 'archive': '', 'archive_on_nodes': False, 'key_set': True,
        'registry': 'nvcr.io', 'mesh_port': None, 'ulimits': ['memlock:-1:-1', 'stack:67108864']}


def _plan(groups=('a', 'b'), **settings):
    nodes = []
    for name in groups:
        for index in range(2):
            nodes.append({'host': '%s-%d' % (name, index), 'address': '10.0.%d.%d' % (len(nodes), index + 1),
                          'group': name, 'settings': dict(MODEL, **settings)})
    return build_plan(nodes)


def _hosts(plan):
    return sorted(plan['hosts'])


def _inputs(plan, **changes):
    return dict((name, dict(GOOD, **changes)) for name in plan['groups'])


def _problems(plan, play=None, inputs=None, **kwargs):
    kwargs.setdefault('secrets_gid', DEFAULT_SECRETS_GID)
    kwargs.setdefault('ulimits', ['memlock:-1:-1'])
    kwargs.setdefault('is_file', lambda path: path == '/srv/nim.tar')
    return preflight_problems(plan, _hosts(plan) if play is None else play,
                              _inputs(plan) if inputs is None else inputs, **kwargs)


def test_a_good_plan_has_no_problem():
    plan = _plan()
    assert plan['valid'], plan['errors']
    assert _problems(plan) == []


def test_an_empty_plan_names_the_variable():
    assert _problems({}, play=['a-0'], inputs={}) == [EMPTY_PLAN]
    assert _problems(None, play=['a-0'], inputs={}) == [EMPTY_PLAN]


def test_the_groups_alone_are_not_a_plan():
    plan = _plan()
    problems = _problems(plan['groups'], play=_hosts(plan), inputs=_inputs(plan))
    assert problems == [NOT_A_PLAN]


def test_an_invalid_group_names_the_planners_errors():
    plan = _plan(groups=('a',), nim_pipeline_parallel=3)
    assert not plan['groups']['a']['valid']
    problems = _problems(plan)
    assert problems[0].startswith("group 'a' is not valid: ")
    assert '; '.join(plan['groups']['a']['errors']) in problems[0]


def test_a_deploying_run_refuses_a_group_with_members_out_of_the_play():
    plan = _plan()
    problems = _problems(plan, play=['a-0', 'b-0', 'b-1'])
    assert problems == [
        "group 'a': members a-1 are not in this play (--limit, an AWX slice, a failed or unreachable host); a "
        'multi-node group is deployed as a whole, so include every member (--limit a-0,a-1, or no --limit) and run '
        'again; host preparation alone (prepare_hosts.yml, --tags prepare) runs on part of a group']


def test_a_partial_group_passes_when_allowed_or_not_deploying():
    plan = _plan()
    play = ['a-0', 'b-0', 'b-1']
    assert _problems(plan, play=play, allow_partial=True) == []
    assert _problems(plan, play=play, deploying=False) == []


def test_a_group_without_a_member_in_the_play_is_not_judged():
    plan = _plan()
    inputs = _inputs(plan)
    inputs['a'].update(key_set=False, ulimits=['bad'])
    assert _problems(plan, play=['b-0', 'b-1'], inputs=inputs) == []
    assert [g['name'] for g in preflight_groups(plan, ['b-0', 'b-1'])] == ['b']


def test_a_pulled_image_needs_the_key_of_its_own_group():
    plan = _plan()
    inputs = _inputs(plan)
    inputs['b']['key_set'] = False
    assert _problems(plan, inputs=inputs) == [
        "group 'b': nim_ngc_api_key (nim_docker_ngc_api_key) is empty, but "
        'nvcr.io/nim/meta/llama-3.1-405b-instruct:1.3.0 is pulled from nvcr.io; provide the key (ansible-vault or '
        'an AWX credential) or ship the image as an archive (nim_docker_image_archive)']


def test_an_archive_or_an_absent_state_needs_no_key():
    plan = _plan()
    assert _problems(plan, inputs=_inputs(plan, key_set=False, archive='/srv/nim.tar')) == []
    assert _problems(plan, inputs=_inputs(plan, key_set=False, present=False)) == []


def test_offline_an_image_from_an_internet_registry_comes_from_the_bundle_and_needs_no_key():
    plan = _plan(groups=('a',))
    offline = dict(bundle_url='http://10.0.0.5:8080', key_set=False)
    # Whether the bundle holds it is the OS check's (bundle_problems), which reads its manifest.
    assert _problems(plan, inputs=_inputs(plan, **offline)) == []
    # The site's own registry is pulled from, with the key it needs.
    site = _plan(groups=('a',), nim_image='registry.site.example:5000/nim/llama')
    assert [p[:60] for p in _problems(site, inputs=_inputs(site, **offline))] == [
        "group 'a': nim_ngc_api_key (nim_docker_ngc_api_key) is empty"]
    assert _problems(plan, inputs=_inputs(plan, key_set=False)) != []


def test_an_image_comes_from_the_bundle_offline_only_from_an_internet_registry_without_an_archive():
    from ansible_collections.nimstack.multinode.plugins.module_utils.docker_spec import bundle_image
    url = 'http://10.0.0.5:8080'
    assert bundle_image('nvcr.io/nim/meta/llama:1.3.0', '', url) == 'nvcr.io_nim_meta_llama_1.3.0.tar'
    assert bundle_image('busybox@sha256:ab', '', url) == 'busybox_sha256_ab.tar'
    assert bundle_image('nvcr.io/nim/meta/llama:1.3.0', '/srv/nim.tar', url) == ''
    assert bundle_image('site:5000/nim/llama:1', '', url) == ''
    assert bundle_image('nvcr.io/nim/meta/llama:1.3.0', '', '') == ''
    assert bundle_image('', '', url) == ''


@pytest.mark.parametrize('image, registry', [('nvcr.io/nim/meta/llama:1', 'nvcr.io'), ('busybox:1', 'docker.io'),
                                             ('library/busybox', 'docker.io'), ('localhost/x:1', 'localhost'),
                                             ('site:5000/x', 'site:5000'), ('index.docker.io/x/y', 'docker.io')])
def test_the_registry_an_image_is_pulled_from(image, registry):
    from ansible_collections.nimstack.multinode.plugins.module_utils.docker_spec import registry_of
    assert registry_of(image) == registry


def test_an_archive_must_be_on_the_controller_unless_on_the_nodes():
    plan = _plan(groups=('a',))
    problems = _problems(plan, inputs=_inputs(plan, archive='/srv/missing.tar'))
    assert problems == ['nim_docker_image_archive=/srv/missing.tar: no such file on the controller (set'
                        ' nim_docker_image_archive_on_nodes=true when the path is on the nodes)']
    assert _problems(plan, inputs=_inputs(plan, archive='/srv/missing.tar', archive_on_nodes=True)) == []
    assert _problems(plan, inputs=_inputs(plan, archive='/srv/missing.tar', present=False)) == []
    # The downloader's archive is read the same way.
    assert _problems(plan, inputs=_inputs(plan, download_archive='/srv/dl.tar')) == [
        'nim_docker_download_image_archive=/srv/dl.tar: no such file on the controller (set'
        ' nim_docker_image_archive_on_nodes=true when the path is on the nodes)']
    assert _problems(plan, inputs=_inputs(plan, download_archive='/srv/dl.tar', archive_on_nodes=True)) == []


def test_the_mesh_port_must_be_the_groups_ssh_port_where_it_needs_the_mesh():
    plan = _plan(groups=('a',), nim_ssh_port=2222)
    assert plan['groups']['a']['launch']['ssh_mesh']
    assert _problems(plan, inputs=_inputs(plan, mesh_port=2200)) == [
        "group 'a': nim_ssh_port=2222 but ssh_mesh_port=2200; the containers sshd and the mesh ssh_config must "
        'agree on one port']
    assert _problems(plan, inputs=_inputs(plan, mesh_port='2222')) == []
    assert _problems(plan, inputs=_inputs(plan, mesh_port=None)) == []


def test_the_mesh_keys_and_the_ranks_share_one_secrets_gid_where_the_group_needs_the_mesh():
    plan = _plan(groups=('a',))
    assert _problems(plan, inputs=_inputs(plan, mesh_gid=64911)) == [
        "group 'a': ssh_mesh_secrets_gid=64911 differs from nim_docker_secrets_gid on this host, and both are the gid "
        'of the one group nimstack-secrets']
    # Unset on both sides: one default; set for the ranks alone: the mesh keeps the default.
    assert _problems(plan, inputs=_inputs(plan, mesh_gid=None)) == []
    assert len(_problems(plan, secrets_gid=5000)) == 1
    assert _problems(plan, secrets_gid='5000', inputs=_inputs(plan, mesh_gid=5000)) == []
    ray = _plan(groups=('a',), nim_launch_contract='ray', nim_image_tag='2.0.1')
    assert _problems(ray, secrets_gid=5000) == []


def test_a_group_without_the_mesh_ignores_the_mesh_port():
    plan = _plan(groups=('a',), nim_launch_contract='ray', nim_image_tag='2.0.1')
    assert not plan['groups']['a']['launch']['ssh_mesh']
    assert _problems(plan, inputs=_inputs(plan, mesh_port=2200)) == []


@pytest.mark.parametrize('gid,problem', [('', 'is not a whole number'), (0, 'is out of range'), ('0', 'is out of range'),
                                         ('nimstack', 'is not a whole number'), ('-5', 'is out of range'),
                                         (None, 'is not a whole number'), (999, 'is out of range'),
                                         (65534, 'is out of range')])
def test_the_secrets_gid_is_checked_by_its_rule_once(gid, problem):
    plan = _plan(groups=('a',))
    assert _problems(plan, secrets_gid=gid) == [
        'nim_docker_secrets_gid=%s %s; accepted: %s (inventory-wide nim_secrets_gid)'
        % (gid, problem, RULES['nim_docker_secrets_gid'].accepts)]


def test_the_secrets_gid_is_not_the_containers_gid():
    plan = _plan(groups=('a',))
    assert _problems(plan, secrets_gid=5000, container_gid=5000, inputs=_inputs(plan, mesh_gid=5000)) == [
        "group 'a': nim_docker_container_gid=5000 is also nim_docker_secrets_gid, ssh_mesh_secrets_gid on this host: "
        "nimstack-secrets, the group that may read the keys, would hold the user the NIM containers run as or the "
        "model cache's owner"]


def test_wrong_ulimits_are_named_once_whoever_sets_them():
    plan = _plan()
    message = 'nim_docker_ulimits: each entry is name:soft[:hard], e.g. memlock:-1:-1; got memlock=-1, NOFILE:1'
    assert _problems(plan, ulimits=['memlock=-1', 'NOFILE:1', 'nofile:1:2']) == [message]
    assert _problems(plan, inputs=_inputs(plan, ulimits=['memlock=-1', 'NOFILE:1'])) == [message]


def test_every_problem_is_named_at_once():
    plan = _plan()
    inputs = _inputs(plan, key_set=False)
    problems = _problems(plan, play=['a-0', 'b-0', 'b-1'], inputs=inputs, secrets_gid='', ulimits=['x'])
    assert len(problems) == 5, problems
    assert [p.split(':')[0] for p in problems] == [
        "group 'a'", "group 'a'", "group 'b'", 'nim_docker_secrets_gid= is not a whole number; accepted', 'nim_docker_ulimits']


def test_the_groups_name_their_members_in_and_out_of_the_play():
    plan = _plan(groups=('b', 'a'))
    groups = preflight_groups(plan, ['a-1', 'b-0', 'b-1'], {'a': {'key_set': True}})
    assert groups == [
        {'name': 'a', 'hosts': ['a-0', 'a-1'], 'in_play': ['a-1'], 'missing': ['a-0'], 'key_set': True},
        {'name': 'b', 'hosts': ['b-0', 'b-1'], 'in_play': ['b-0', 'b-1'], 'missing': []}]


PLAY_INPUTS = {'nim_docker_state': 'present', 'nim_docker_image_archive': '', 'nim_docker_image_archive_on_nodes': False,
               'nim_docker_registry': 'nvcr.io', 'nim_docker_ulimits': ['memlock:-1:-1'], 'nim_docker_supervisor': True,
               'nim_docker_supervisor_port': 8479, 'nim_docker_download_image_archive': '', 'key_set': True,
               'nim_docker_download_image': '', 'nimstack_bundle_url': ''}


def test_the_inputs_are_the_first_members_in_the_play_else_the_plays():
    plan = _plan(groups=('a', 'b', 'c'))
    host_vars = {
        'a-0': {'nim_docker_ngc_api_key': '', 'nim_ngc_api_key': 'nvapi-a', 'nim_docker_state': 'absent'},
        'a-1': {'nim_docker_registry': 'never read: a-0 is in the play first'},
        'b-1': {'nim_docker_image_archive': '/srv/b.tar', 'nim_docker_image_archive_on_nodes': 'yes',
                'ssh_mesh_port': 2222, 'nim_group_supervisor': False, 'nim_group_supervisor_port': 9000,
                'nim_docker_supervisor_port': 9001, 'nim_ngc_api_key': 'nvapi-b', 'nim_secrets_gid': 2000,
                'nim_docker_download_image_archive': '/srv/downloader.tar', 'nimstack_bundle_url': 'http://b'},
    }
    inputs = preflight_inputs(plan, ['a-0', 'a-1', 'b-1'], host_vars, PLAY_INPUTS)
    assert sorted(inputs) == ['a', 'b']
    assert inputs['a'] == {'present': False, 'archive': '', 'archive_on_nodes': False, 'key_set': False,
                           'registry': 'nvcr.io', 'mesh_port': None, 'ulimits': ['memlock:-1:-1'],
                           'supervisor': True, 'supervisor_port': 8479, 'download_archive': '', 'mesh_gid': None,
                           'download_image': '', 'bundle_url': ''}
    assert inputs['b'] == {'present': True, 'archive': '/srv/b.tar', 'archive_on_nodes': True, 'key_set': True,
                           'registry': 'nvcr.io', 'mesh_port': 2222, 'ulimits': ['memlock:-1:-1'],
                           'supervisor': False, 'supervisor_port': 9001, 'download_archive': '/srv/downloader.tar',
                           'mesh_gid': 2000, 'download_image': '', 'bundle_url': 'http://b'}


def test_a_group_without_a_key_of_its_own_has_none_where_the_inventory_holds_keys():
    plan = _plan(groups=('a',))
    assert preflight_inputs(plan, _hosts(plan), {'a-0': {}}, PLAY_INPUTS)['a']['key_set'] is True
    assert preflight_inputs(plan, _hosts(plan), {'a-0': {}}, PLAY_INPUTS, key_from_inventory=True)['a']['key_set'] is False
    assert preflight_inputs(plan, _hosts(plan), {'a-0': {}}, dict(PLAY_INPUTS, key_set=False))['a']['key_set'] is False


def test_kubernetes_groups_are_not_judged():
    plan = build_plan([{'host': 'k-%d' % i, 'address': '10.1.0.%d' % i, 'group': 'k',
                        'settings': dict(MODEL, nim_deployment_mode='kubernetes')} for i in range(2)])
    assert plan['groups']['k']['mode'] == 'kubernetes'
    assert _problems(plan, inputs={'k': dict(GOOD, key_set=False)}) == []


def test_every_message_is_quoted_on_the_troubleshooting_page():
    import os
    import re
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
    with open(os.path.join(repo, 'docs', 'troubleshooting.md')) as handle:
        page = re.sub(r'\s+', ' ', handle.read())
    for message in (EMPTY_PLAN, NOT_A_PLAN, 'nim_docker_image_archive_on_nodes=true when the path is on the nodes',
                    'the containers sshd and the mesh ssh_config must agree on one port',
                    'each entry is name:soft[:hard], e.g. memlock:-1:-1; got',
                    '; accepted: ', '(inventory-wide nim_secrets_gid)',
                    'is pulled from'):
        assert message in page, message


def test_the_supervisor_port_must_not_be_a_port_of_the_group():
    plan = _plan(groups=('a',))
    inputs = _inputs(plan, supervisor=True, supervisor_port=8000)
    assert _problems(plan, inputs=inputs) == [
        "group 'a': nim_docker_supervisor_port=8000 (inventory-wide nim_group_supervisor_port) is also the group's "
        'api port (nim_api_port): the supervisor listens on every member beside the ranks, on the host network; '
        'choose another port']
    # Off, or on a port of its own: nothing to clash.
    assert _problems(plan, inputs=_inputs(plan, supervisor='false', supervisor_port=8000)) == []
    assert _problems(plan, inputs=_inputs(plan, supervisor=True, supervisor_port='8479')) == []


@pytest.mark.parametrize('gid', [1000, 65534, 999, '100'])
def test_the_secrets_gid_is_one_no_other_group_or_account_shares(gid):
    plan = _plan(groups=('a',))
    problems = _problems(plan, secrets_gid=gid, inputs=_inputs(plan, mesh_gid=gid))
    # A gid of a system group or nogroup is out of its rule's range; 1000 is the containers' own.
    assert len(problems) == 1, problems
    assert problems[0].startswith("group 'a': nim_docker_container_gid=1000 is also nim_docker_secrets_gid"
                                  if gid == 1000 else 'nim_docker_secrets_gid=%s is out of range' % gid)
    assert _problems(plan, secrets_gid=64910) == []
