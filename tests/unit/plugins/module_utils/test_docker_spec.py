# -*- coding: utf-8 -*-
"""The resolved launch spec of a Docker rank (role nim_docker), on plans nim_plan builds."""

import hashlib
import os

import pytest
import yaml

from ansible_collections.nimstack.multinode.plugins.module_utils import docker_spec as docker_spec_module
from ansible_collections.nimstack.multinode.plugins.module_utils.docker_spec import (
    OPTION_NAMES, DockerSpecError, docker_rank_spec)
from ansible_collections.nimstack.multinode.plugins.module_utils.nim_plan import build_plan
from ansible_collections.nimstack.multinode.tests.unit.models import LLAMA_405B

OPTIONS = {'container_prefix': 'nim', 'config_dir': '/etc/nimstack/nim', 'mesh_dir': '/etc/nimstack/mesh',
           'ray_auth': 'token', 'download_model': True, 'download_image': '', 'ngc_key_set': True,
           'ulimits': ['memlock:-1:-1', 'stack:67108864'], 'restart_policy': 'unless-stopped',
           'secrets_gid': 64910, 'ready_timeout': 0, 'image_archive': '', 'download_image_archive': '',
           'bundle_url': '', 'overlap_transfers': True,
           'check_mode': False, 'transfer_timeout': 3600, 'transfer_poll_interval': 10}


def _plan(contract='mpi', tag='1.8.4', hosts=2, **settings):
    nodes = [{'host': 'gpu-%d' % i, 'address': '10.0.0.%d' % (i + 1), 'group': 'llm',
              'settings': dict(LLAMA_405B, nim_image_tag=tag, nim_launch_contract=contract, **settings)}
             for i in range(hosts)]
    plan = build_plan(nodes)
    assert plan['valid'], plan['errors']
    return plan


def _spec(plan, host, **options):
    return docker_rank_spec(plan, host, dict(OPTIONS, **options))


def test_names_and_paths_come_from_the_group_and_the_settings():
    spec = _spec(_plan(), 'gpu-0', container_prefix='nimx', config_dir='/srv/nim')
    assert (spec['member'], spec['leader'], spec['group']) == (True, True, 'llm')
    assert spec['image'] == 'nvcr.io/nim/meta/llama-3.1-405b-instruct:1.8.4'
    assert (spec['container'], spec['download_container']) == ('nimx-llm', 'nimx-llm-download')
    assert spec['group_dir'] == '/srv/nim/llm'
    assert [spec[k] for k in ('hostfile', 'env_file', 'formed_file', 'login_record', 'ray_token_file')] == [
        '/srv/nim/llm/hostfile', '/srv/nim/llm/ngc.env', '/srv/nim/llm/formed.json', '/srv/nim/llm/registry-login',
        '/srv/nim/llm/ray-token']
    assert spec['mesh'] == '/etc/nimstack/mesh/llm'
    assert spec['api_port'] == 8000
    assert _spec(_plan(nim_api_port=9000), 'gpu-1')['api_port'] == 9000


def test_every_host_names_every_docker_group_of_the_plan():
    plan = _plan()
    plan['groups']['k8s'] = {'name': 'k8s', 'mode': 'k8s'}
    plan['groups']['aaa'] = dict(plan['groups']['llm'], name='aaa')
    assert _spec(plan, 'gpu-1')['docker_groups'] == ['aaa', 'llm']
    assert _spec(plan, 'elsewhere')['docker_groups'] == ['aaa', 'llm']
    assert _spec({}, 'gpu-0')['docker_groups'] == []


def test_the_mpi_leader_mounts_the_hostfile_and_a_worker_the_authorized_keys():
    plan = _plan()
    leader, worker = _spec(plan, 'gpu-0'), _spec(plan, 'gpu-1')
    assert leader['hostfile_wanted'] and not worker['hostfile_wanted']
    assert leader['ssh_mesh'] and worker['ssh_mesh']
    assert '/etc/nimstack/nim/llm/hostfile:/etc/mpi/hostfile:ro' in leader['volumes']
    assert '/etc/nimstack/nim/llm/hostfile:/etc/mpi/hostfile:ro' not in worker['volumes']
    assert '/etc/nimstack/mesh/llm/authorized_keys:/opt/nim/llm/.ssh/authorized_keys:ro' in worker['volumes']
    # The mesh directory keeps its own path: the ssh_config in it names the files by their host paths.
    assert '/etc/nimstack/mesh/llm:/etc/nimstack/mesh/llm:ro' in leader['volumes']
    assert leader['volumes_cache'] == ['/var/lib/nim/cache:/model-store:rw']
    assert leader['group_spec']['volumes'] == [v['volume'] for v in leader['group_volumes']]
    assert leader['group_spec'] == worker['group_spec']


def test_the_ray_token_is_mounted_and_named_only_where_the_launch_uses_one():
    plan = _plan(contract='ray', tag='2.0.1')
    spec = _spec(plan, 'gpu-1')
    assert spec['ray_token'] and not spec['ssh_mesh'] and not spec['hostfile_wanted']
    assert '/etc/nimstack/nim/llm/ray-token:/run/secrets/nimstack-ray-token:ro' in spec['volumes']
    assert spec['env']['RAY_AUTH_MODE'] == 'token'
    assert spec['env']['RAY_AUTH_TOKEN_PATH'] == spec['ray_token_mount'] == '/run/secrets/nimstack-ray-token'
    off = _spec(plan, 'gpu-1', ray_auth='off')
    assert not off['ray_token'] and 'RAY_AUTH_MODE' not in off['env']
    assert all('ray-token' not in v for v in off['volumes'])
    assert off['group_spec']['ray_auth'] is False and spec['group_spec']['ray_auth'] is True


def test_the_env_is_the_plans_rank_env():
    plan = _plan()
    rank = plan['groups']['llm']['ranks'][1]
    spec = _spec(plan, 'gpu-1')
    assert spec['rank'] == rank and spec['env'] == rank['env']
    assert spec['labels'] == {'nimstack.managed': 'true', 'nimstack.group': 'llm', 'nimstack.rank': '1',
                              'nimstack.role': 'worker'}


@pytest.mark.parametrize('key_set, download, leader, ranks_get_key, env_file', [
    (True, True, True, False, True),     # the leader's downloader reads the key
    (True, True, False, False, False),   # a worker serves the filled cache without it
    (True, False, False, True, True),    # every rank downloads itself
    (False, False, True, False, False),  # no key, no file
])
def test_the_key_reaches_only_what_reads_it(key_set, download, leader, ranks_get_key, env_file):
    spec = _spec(_plan(), 'gpu-0' if leader else 'gpu-1', ngc_key_set=key_set, download_model=download)
    assert (spec['ranks_get_key'], spec['env_file_needed']) == (ranks_get_key, env_file)
    assert spec['group_spec']['ngc_key'] is ranks_get_key


def test_the_download_stamp_names_image_profile_and_cache():
    spec = _spec(_plan(), 'gpu-0')
    # An unset profile is None in the plan, and the stamp names it so, as earlier versions did.
    digest = hashlib.sha256(b'nvcr.io/nim/meta/llama-3.1-405b-instruct:1.8.4|None|/var/lib/nim/cache').hexdigest()
    assert spec['download_stamp'] == '/etc/nimstack/nim/llm/download-%s.done' % digest[:16]
    assert _spec(_plan(nim_model_profile='abc'), 'gpu-0')['download_stamp'] != spec['download_stamp']
    assert spec['download_image'] == spec['image']
    assert _spec(_plan(), 'gpu-0', download_image='dl:1')['download_image'] == 'dl:1'


def test_the_ready_timeout_is_the_roles_else_the_layouts():
    plan = _plan()
    assert _spec(plan, 'gpu-0')['ready_timeout'] == plan['groups']['llm']['layout']['mpi_start_timeout']
    assert _spec(plan, 'gpu-0', ready_timeout='120')['ready_timeout'] == 120


def test_the_group_spec_types_are_those_the_hash_was_made_of():
    spec = _spec(_plan(), 'gpu-0', secrets_gid=64910)
    assert spec['group_spec']['secrets_gid'] == '64910'
    assert spec['group_spec']['shm_size_gb'] == 64
    assert 'image_ids' not in spec['group_spec']


def test_a_host_outside_every_docker_group_has_an_empty_spec():
    plan = _plan()
    spec = _spec(plan, 'elsewhere')
    assert (spec['member'], spec['leader'], spec['image'], spec['volumes'], spec['env']) == (False, False, '', [], {})
    nodes = [{'host': 'k-0', 'address': 'k-0', 'group': 'k',
              'settings': dict(LLAMA_405B, nim_deployment_mode='kubernetes')}]
    assert _spec(build_plan(nodes), 'k-0')['member'] is False


def test_an_invalid_group_gives_an_empty_launch():
    plan = build_plan([{'host': 'gpu-0', 'address': '10.0.0.1', 'group': 'llm',
                        'settings': dict(LLAMA_405B, nim_tensor_parallel=3)}])
    assert not plan['valid']
    spec = _spec(plan, 'gpu-0')
    assert (spec['image'], spec['volumes'], spec['api_port']) == ('', [], None)


def test_every_option_is_needed():
    with pytest.raises(DockerSpecError, match='ready_timeout'):
        docker_rank_spec(_plan(), 'gpu-0', dict((k, OPTIONS[k]) for k in OPTION_NAMES if k != 'ready_timeout'))


def test_group_hash_is_that_of_to_json_sort_keys_hashed():
    from ansible.plugins.filter.core import get_hash, to_json
    from ansible_collections.nimstack.multinode.plugins.module_utils.docker_spec import group_hash
    spec = {'image': 'nvcr.io/nim/x:1', 'ranks': [{'rank': 0, 'env': {'B': '2', 'A': 'é'}, 'tp': 8}],
            'secrets_gid': '2000', 'ngc_key': False, 'ulimits': [{'name': 'memlock', 'soft': -1}]}
    # What earlier versions hashed in Jinja, so that an upgrade restarts no group:
    # (spec | combine({'image_ids': ids}) | to_json(sort_keys=true) | hash('sha256'))[:16]
    jinja = get_hash(to_json(dict(spec, image_ids=['sha256:1', '']), sort_keys=True), 'sha256')[:16]
    assert group_hash(spec, ['sha256:1', '']) == jinja
    assert group_hash(spec, ['sha256:2', '']) != group_hash(spec, ['sha256:1', ''])


def test_transfers_overlap_outside_check_mode_and_wait_for_the_image_where_the_leader_downloads_with_it():
    leader = _spec(_plan(), 'gpu-0')
    assert (leader['download_leader'], leader['download_early']) == (True, False)
    assert (leader['image_async'], leader['image_async_downloading'], leader['transfer_retries']) == (3600, 0, 360)
    own = _spec(_plan(), 'gpu-0', download_image='nvcr.io/nim/downloader:1')
    assert (own['download_early'], own['image_async_downloading']) == (True, 3600)
    checking = _spec(_plan(), 'gpu-0', check_mode=True, download_image='x:1')
    assert (checking['image_async'], checking['download_early']) == (0, False)
    worker = _spec(_plan(), 'gpu-1', transfer_timeout=95, transfer_poll_interval=10)
    assert (worker['download_leader'], worker['transfer_retries'], worker['from_archive']) == (False, 10, False)
    assert _spec(_plan(), 'gpu-1', image_archive='/srv/nim.tar')['from_archive'] is True


def test_offline_a_node_loads_the_bundle_s_archive_of_an_image_no_archive_carries_in():
    archived = _spec(_plan(), 'gpu-1', image_archive='/srv/images/nim.tar', bundle_url='http://b:8080')
    assert (archived['from_archive'], archived['from_bundle'], archived['image_file']) == (True, '', 'nim.tar')
    offline = _spec(_plan(), 'gpu-1', bundle_url='http://b:8080', download_image='nvcr.io/nim/dl:1')
    assert (offline['from_archive'], offline['from_bundle'], offline['image_file']) == (
        True, offline['image'].replace('/', '_').replace(':', '_') + '.tar', offline['from_bundle'])
    online = _spec(_plan(), 'gpu-1', download_image='nvcr.io/nim/dl:1')
    assert (online['from_archive'], online['from_bundle']) == (False, '')


def test_offline_the_leader_unpacks_the_bundle_s_model_and_runs_no_downloader():
    leader = _spec(_plan(), 'gpu-0', bundle_url='http://b:8080', ngc_key_set=True)
    assert leader['model_from_bundle'] == docker_spec_module.model_file(leader['image'], None)
    assert leader['model_from_bundle'].startswith(leader['image'].replace('/', '_').replace(':', '_') + '_')
    # No downloader, so no key file for it; the unpacking starts before the image transfers.
    assert (leader['downloader'], leader['download_leader'], leader['env_file_needed']) == (False, True, False)
    assert (leader['download_early'], leader['image_async_downloading']) == (True, 3600)
    worker = _spec(_plan(), 'gpu-1', bundle_url='http://b:8080')
    assert (worker['model_from_bundle'], worker['downloader']) == ('', False)
    online = _spec(_plan(), 'gpu-0', ngc_key_set=True)
    assert (online['model_from_bundle'], online['downloader'], online['env_file_needed']) == ('', True, True)
    # A cache filled beforehand: nothing to download, from anywhere.
    prefilled = _spec(_plan(), 'gpu-0', bundle_url='http://b:8080', download_model=False)
    assert (prefilled['model_from_bundle'], prefilled['downloader'], prefilled['download_leader']) == ('', False, False)


def test_a_model_file_names_its_image_and_profile():
    name = docker_spec_module.model_file('nvcr.io/nim/meta/llama:1.3.0', 'tp8-pp2')
    assert name.startswith('nvcr.io_nim_meta_llama_1.3.0_') and name.endswith('.tar')
    assert name != docker_spec_module.model_file('nvcr.io/nim/meta/llama:1.3.0', 'tp8-pp1')
    assert name != docker_spec_module.model_file('nvcr.io/nim/meta/llama:1.4.0', 'tp8-pp2')
    assert docker_spec_module.model_file('a:1', None) == docker_spec_module.model_file('a:1', '')


@pytest.mark.parametrize('value,safe', [('nvapi-abc_DEF.123', True), ('', True), ('two words', False),
                                        ('line\nbreak', False), ('tab\t', False), ('caf\u00e9', False)])
def test_env_file_safe(value, safe):
    assert docker_spec_module.env_file_safe(value) is safe


def test_the_options_are_those_the_role_hands_over():
    """OPTION_NAMES are the fields of nim_docker's _nim_docker_spec_options (roles/nim_docker/vars/main.yml)."""
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
    with open(os.path.join(repo, 'roles', 'nim_docker', 'vars', 'main.yml')) as handle:
        handed = yaml.safe_load(handle)['_nim_docker_spec_options']
    assert sorted(handed) == sorted(OPTION_NAMES)
