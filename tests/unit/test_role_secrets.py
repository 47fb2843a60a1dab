# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The safety rules for secrets, read from the roles' own task and vars files.

- no_log is a literal true wherever it is set: never an expression of the current settings (a
  rank started with a key still holds it after the key is gone from the inventory);
- every task whose result can hold a key (a container's config, a Secret) hides it;
- no background job (async) handles a secret: its result file stays under ~/.ansible_async;
- the deployment key, the container sshd host key and the Ray token belong to root and the
  collection's own secrets group, which the ranks get and no host login account has;
- the NGC key reaches the serving ranks only when no downloader filled the cache;
- a key that would not fit on one line of Docker's env file is refused before it is written.
"""

import glob
import os

import pytest
import yaml

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.nimstack.multinode.plugins.module_utils import docker_spec
from ansible_collections.nimstack.multinode.plugins.module_utils.docker_spec import docker_rank_spec

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

TASK_FILES = sorted(glob.glob(os.path.join(REPO, 'roles', '*', 'tasks', '*.yml'))
                    + glob.glob(os.path.join(REPO, 'roles', '*', 'handlers', '*.yml'))
                    + glob.glob(os.path.join(REPO, 'playbooks', '*.yml')))

# Modules whose result holds what they were given or read: a container's config (its env), a
# login's password, a Kubernetes object (a Secret's data).
REVEALING_MODULES = (
    'community.docker.docker_container',
    'community.docker.docker_container_info',
    'community.docker.docker_login',
)
KEY_MENTIONS = ('ngc_api_key', 'env_file', 'password', 'private_key', 'privatekey', 'ray_token', '__nim_k8s_ssh_key')


def _load(path):
    with open(path, encoding='utf-8') as handle:
        return yaml.safe_load(handle)


def _tasks(node):
    """Every task of a task list, blocks and plays opened."""
    if isinstance(node, list):
        for item in node:
            yield from _tasks(item)
    elif isinstance(node, dict):
        if any(k in node for k in ('tasks', 'pre_tasks', 'post_tasks', 'handlers')) and 'hosts' in node:
            for key in ('pre_tasks', 'tasks', 'post_tasks', 'handlers'):
                yield from _tasks(node.get(key) or [])
            return
        yield node
        for key in ('block', 'rescue', 'always'):
            yield from _tasks(node.get(key) or [])


def _all_tasks():
    for path in TASK_FILES:
        for task in _tasks(_load(path) or []):
            yield os.path.relpath(path, REPO), task


def _module(task):
    for name in task:
        if '.' in name and name.count('.') == 2:
            return name, task[name]
    return None, None


def _label(source, task):
    return '%s: %s' % (source, task.get('name', '?'))


def test_the_files_hold_tasks():
    assert len(list(_all_tasks())) > 200


def test_no_log_is_never_an_expression():
    offenders = [_label(source, task) + ' (no_log: %r)' % (task['no_log'],)
                 for source, task in _all_tasks() if 'no_log' in task and task['no_log'] is not True]
    assert offenders == []


def test_every_result_that_can_hold_a_key_is_hidden():
    offenders = []
    for source, task in _all_tasks():
        module, args = _module(task)
        if module in REVEALING_MODULES and (args or {}).get('state') != 'absent':
            if task.get('no_log') is not True:
                offenders.append(_label(source, task))
        if module in ('kubernetes.core.k8s', 'kubernetes.core.k8s_info') and 'Secret' in yaml.safe_dump(args):
            if task.get('no_log') is not True:
                offenders.append(_label(source, task))
    assert offenders == []


def test_no_background_job_handles_a_secret():
    offenders = []
    for source, task in _all_tasks():
        if 'async' not in task:
            continue
        module, args = _module(task)
        text = yaml.safe_dump(args)
        if module in REVEALING_MODULES or any(word in text for word in KEY_MENTIONS):
            offenders.append(_label(source, task))
    assert offenders == []


SECRET_PATHS = ('_ssh_mesh_private_key_path', '_ssh_mesh_host_key_path', '_nim_docker_ray_token_file')
SECRETS_GIDS = ('{{ ssh_mesh_secrets_gid | string }}', '{{ nim_docker_secrets_gid | string }}')


def _secret_file_tasks():
    for source, task in _all_tasks():
        module, args = _module(task)
        if not isinstance(args, dict) or args.get('state') == 'absent':
            continue
        path = str(args.get('path') or args.get('dest') or '')
        if any(name in path for name in SECRET_PATHS) and 'owner' in args:
            yield source, task, args


def test_secret_files_belong_to_root_and_the_secrets_group():
    found = list(_secret_file_tasks())
    # The host key, the deployment key (made and copied) and the Ray token (made, copied, fixed).
    assert len(found) >= 6
    for source, task, args in found:
        assert args['owner'] == 'root', _label(source, task)
        if _module(task)[0] == 'community.crypto.openssh_keypair':
            # ssh-keygen reads back only a root-only key: made 0600, then handed to the group.
            assert (args['group'], args['mode']) == ('root', '0600'), _label(source, task)
            continue
        assert args['group'] in SECRETS_GIDS, _label(source, task)
        assert args['mode'] in ('0640', '0440'), _label(source, task)
    handed = [args['path'] for _source, task, args in found if _module(task)[0] == 'ansible.builtin.file']
    for name in ('_ssh_mesh_private_key_path', '_ssh_mesh_host_key_path'):
        assert any(name in path for path in handed), name


def test_no_mesh_file_belongs_to_the_container_user():
    # nim_owned_path's owner is the role whose marker a directory carries, not a user.
    tasks = [(s, t) for s, t in _all_tasks() if s.startswith('roles/ssh_mesh/')
             and _module(t)[0] != 'nimstack.multinode.nim_owned_path']
    owners = set(str(_module(t)[1].get('owner')) for s, t in tasks
                 if isinstance(_module(t)[1], dict) and 'owner' in _module(t)[1])
    assert owners == {'root'}


def _container_task():
    for source, task in _all_tasks():
        if source == 'roles/nim_docker/tasks/container.yml' and _module(task)[0] == 'community.docker.docker_container':
            return task
    raise AssertionError('no rank container task')


def test_every_rank_gets_the_secrets_group():
    args = _container_task()['community.docker.docker_container']
    assert args.get('groups') == ['{{ nim_docker_secrets_gid | string }}']


def test_a_rank_gets_the_env_file_only_when_it_downloads_itself():
    args = _container_task()['community.docker.docker_container']
    assert '_nim_docker_ranks_get_key' in args['env_file']


# Role vars rendered as Ansible renders them: defaults, then vars, then the case's settings; the
# host's launch spec resolved from the role's own options (tasks/resolve.yml) on a one-host plan
# whose entry for the host is the case's.
def _render(expression, entry=None, **settings):
    loader = DataLoader()
    variables = {}
    for part in ('defaults', 'vars'):
        path = os.path.join(REPO, 'roles', 'nim_docker', part, 'main.yml')
        variables.update(loader.load_from_file(path, trusted_as_template=True))
    variables.update(settings, ansible_check_mode=False)
    templar = Templar(loader=loader, variables=variables)
    plan = {'hosts': {'gpu-0': dict({'mode': 'docker', 'group': 'g', 'rank': 0, 'role': 'leader'}, **(entry or {}))},
            'groups': {'g': {'name': 'g', 'hosts': ['gpu-0'], 'ranks': [], 'launch': {}}}}
    options = templar.template(trust_as_template('{{ _nim_docker_spec_options }}'))
    templar.available_variables = dict(variables, __nim_docker_spec=docker_rank_spec(plan, 'gpu-0', options))
    return templar.template(trust_as_template('{{ %s }}' % expression))


@pytest.mark.parametrize('download_model,key,expected', [
    (True, 'nvapi-abc', False),
    (False, 'nvapi-abc', True),
    (False, '', False),
    (True, '', False),
])
def test_serving_ranks_get_the_key_only_without_a_downloader(download_model, key, expected):
    assert _render('_nim_docker_ranks_get_key | bool', nim_docker_download_model=download_model,
                   nim_docker_ngc_api_key=key) is expected


@pytest.mark.parametrize('leader,download_model,expected', [
    (True, True, True),
    (False, True, False),
    (False, False, True),
    (True, False, True),
])
def test_the_env_file_stays_only_where_a_container_reads_it(leader, download_model, expected):
    # The host's entry of the plan (plan.hosts) says whether it leads.
    entry = {'role': 'leader' if leader else 'worker'}
    assert _render('_nim_docker_env_file_needed | bool', nim_docker_download_model=download_model,
                   nim_docker_ngc_api_key='nvapi-abc', entry=entry) is expected


@pytest.mark.parametrize('key,expected', [
    ('nvapi-AbC_123-xyz', True),
    ('', True),
    ('nvapi-abc\nLD_PRELOAD=/tmp/x.so', False),
    ('nvapi-abc\r', False),
    ('nvapi-abc ', False),
    (' nvapi-abc', False),
    ('nvapi-abc\tx', False),
    ('nvapi-abc\x00', False),
    (u'nvapi-ab\u00e9', False),
])
def test_a_key_that_breaks_the_env_file_is_refused(key, expected):
    assert docker_spec.env_file_safe(key) is expected


def test_the_role_checks_the_key_with_the_filter():
    with open(os.path.join(REPO, 'roles', 'nim_docker', 'vars', 'main.yml'), encoding='utf-8') as handle:
        role_vars = yaml.safe_load(handle)
    assert role_vars['_nim_docker_ngc_key_env_safe'] == '{{ nim_docker_ngc_api_key | nimstack.multinode.env_file_safe }}'


def test_the_env_file_is_written_only_after_the_check():
    tasks = _load(os.path.join(REPO, 'roles', 'nim_docker', 'tasks', 'configure_apply.yml'))
    names = [t.get('name') for t in tasks]
    check = [i for i, t in enumerate(tasks)
             if '_nim_docker_ngc_key_env_safe | bool' in (t.get('ansible.builtin.assert') or {}).get('that', [])]
    write = [i for i, t in enumerate(tasks)
             if (t.get('ansible.builtin.copy') or {}).get('dest') == '{{ _nim_docker_env_file }}']
    assert check and write and check[0] < write[0], names
    # The check evaluates only whether the key fits: the failure message never holds the key.
    assert 'ngc_api_key }}' not in tasks[check[0]]['ansible.builtin.assert']['fail_msg']


def _drift_tasks():
    for source, task in _all_tasks():
        if _module(task)[0] == 'nimstack.multinode.nim_drift':
            yield source, task, _module(task)[1]


def test_a_comparison_that_carries_a_key_is_hidden():
    found = [(source, task) for source, task, args in _drift_tasks() if 'ngc_api_key' in yaml.safe_dump(args)]
    assert found, 'the env file is compared by the checksum of its line'
    assert [_label(s, t) for s, t in found if t.get('no_log') is not True] == []


def test_a_comparison_reads_back_only_public_halves():
    read = [(source, task, entry['path']) for source, task, args in _drift_tasks()
            for entry in args.get('files') or [] if entry.get('report_content')]
    assert read, 'the SSH mesh reads the public halves of its keys'
    # The public halves of the mesh's keys, and daemon.json (which the docker role merges into).
    assert [_label(s, t) + ' ' + p for s, t, p in read
            if not p.endswith(".pub") and p != '{{ docker_daemon_json_path }}'] == []


def test_applying_the_lws_release_manifest_is_hidden():
    # Its webhook certificate Secret comes back from the API server with the keys LWS filled in.
    found = [(source, task) for source, task in _all_tasks()
             if _module(task)[0] == 'kubernetes.core.k8s' and source.startswith('roles/lws/')
             and any(name in yaml.safe_dump(_module(task)[1]) for name in ('_lws_manifest', '_lws_patched_objects'))]
    assert len(found) >= 2
    assert [_label(s, t) for s, t in found if t.get('no_log') is not True] == []
