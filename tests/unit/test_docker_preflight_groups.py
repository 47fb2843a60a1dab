"""The Docker preflight judges every group by its own inputs, in one task on one host.

playbooks/preflight.yml runs on a generated inventory of two groups of two unroutable hosts, with
the OS check and the doctor left out, so no host is contacted: the preflight either names the
groups whose NGC key is missing or lets the play through. The key is read per group although the
task runs on the first host only (plugins/module_utils/docker_preflight.py, preflight_inputs).
"""

import concurrent.futures
import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, 'benchmarks'))

import bench_controller  # noqa: E402  pylint: disable=wrong-import-position

MISSING = "group '%s': nim_ngc_api_key (nim_docker_ngc_api_key) is empty"
STOP = 'Stop before any host changes when an input is wrong, naming every problem'

# name -> (group vars per group, extra vars, groups named as missing a key). g0000 holds the
# first host of the play, where the preflight task runs.
CASES = {
    'key-in-the-first-group-only': ({'g0000': {'nim_ngc_api_key': 'nvapi-only-g0000'}}, {}, ['g0001']),
    'key-in-the-second-group-only': ({'g0001': {'nim_ngc_api_key': 'nvapi-only-g0001'}}, {}, ['g0000']),
    'no-key-anywhere': ({}, {}, ['g0000', 'g0001']),
    'key-as-an-extra-var': ({}, {'nim_ngc_api_key': 'nvapi-extra'}, []),
    'role-input-as-an-extra-var': ({}, {'nim_docker_ngc_api_key': 'nvapi-role'}, []),
    'an-inventory-key-for-the-role-input': ({'g0001': {'nim_docker_ngc_api_key': 'nvapi-role-g0001'},
                                             'g0000': {'nim_ngc_api_key': 'nvapi-g0000'}}, {}, []),
}


def _run(tmp, name, group_vars, extra):
    inventory = bench_controller.inventory(2, 2)
    nodes = inventory['all']['children']['nim_nodes']
    # Pulled from the registry: the key is needed.
    del nodes['vars']['nim_docker_image_archive'], nodes['vars']['nim_docker_image_archive_on_nodes']
    for group, values in group_vars.items():
        nodes['children'][group]['vars'].update(values)
    path = os.path.join(tmp, name + '.json')
    with open(path, 'w', encoding='utf-8') as handle:
        json.dump(inventory, handle)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_STDOUT_CALLBACK='ansible.posix.json',
               ANSIBLE_CACHE_PLUGIN_CONNECTION=os.path.join(tmp, 'facts-' + name),
               ANSIBLE_LOCAL_TEMP=os.path.join(tmp, 'tmp'))
    playbook = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    extra = dict(extra, validate_inventory_check_os=False)
    proc = subprocess.run([playbook, '-i', path, os.path.join(REPO, 'playbooks', 'preflight.yml'),
                           '--skip-tags', 'doctor', '-e', json.dumps(extra)],
                          cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=300, check=False)
    return proc.returncode, proc.stdout


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp('preflight'))
    with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
        futures = dict((name, pool.submit(_run, tmp, name, group_vars, extra))
                       for name, (group_vars, extra, _missing) in CASES.items())
        return dict((name, future.result()) for name, future in futures.items())


def _document(output):
    # The ansible.posix.json document; warnings may precede it.
    document, _end = json.JSONDecoder().raw_decode(output, output.index('{'))
    return document


@pytest.mark.parametrize('name', sorted(CASES))
def test_each_group_is_judged_by_its_own_ngc_key(runs, name):
    rc, output = runs[name]
    missing = CASES[name][2]
    document = _document(output)
    stop = [task for play in document['plays'] for task in play['tasks'] if task['task']['name'].endswith(STOP)]
    assert len(stop) == 1, output[-3000:]
    result = list(stop[0]['hosts'].values())[0]
    if missing:
        assert rc == 2, output[-3000:]
        message = result['msg']
        for group in ('g0000', 'g0001'):
            assert ((MISSING % group) in message) == (group in missing), message
    else:
        assert rc == 0, output[-3000:]
        assert result.get('skipped'), result
    assert not any(stats.get('unreachable') for stats in document['stats'].values())
    assert 'nvapi-' not in output
