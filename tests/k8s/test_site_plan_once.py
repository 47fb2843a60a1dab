"""playbooks/site.yml plans once, validates once, and takes each group by its own mode.

Runs site.yml as a user would, with the ansible.posix.json callback, and reads every task result:
- on an inventory whose groups are all Kubernetes, render-only: the nim_plan module and the
  validate_inventory check each have exactly one result that was not skipped, the files are
  rendered, and no host of nim_nodes is contacted (every result on one of them is a
  controller-side action);
- on an inventory with a Docker group and a Kubernetes group: the plan holds both modes, and the
  plays that contact hosts (OS facts, the doctor, ...) reach the Docker group's hosts only. The
  Docker hosts here refuse every connection (a closed local port), so the run stops at the first
  play that contacts them: what the lab proves (tests/e2e/test-lab.sh) is that both modes deploy.
"""

import json
import os
import subprocess

from k8s_render import playbook_env, write_inventory
from k8s_schema import REPO

SITE = os.path.join(REPO, 'playbooks', 'site.yml')
PLAN_ACTION = 'nimstack.multinode.nim_plan'
VALIDATE_TASK = 'Stop on an unusable inventory or controller, naming every problem'
# What a play over nim_nodes may run without contacting the host (an include_role only loads the
# role's tasks, each of which has a result of its own here).
CONTROLLER_SIDE = {PLAN_ACTION, 'ansible.builtin.set_fact', 'ansible.builtin.debug', 'ansible.builtin.add_host',
                   'ansible.builtin.fail', 'ansible.builtin.assert', 'ansible.builtin.meta',
                   'ansible.builtin.include_role'}
# The Kubernetes play runs on the controller (connection local) in the name of the first host of its
# groups: its roles' argument checks and the render are the controller's too. A host these tests
# give is a closed port: a real contact would show as unreachable.
KUBERNETES_PLAY_SIDE = CONTROLLER_SIDE | {'ansible.builtin.validate_argument_spec', 'nimstack.multinode.nim_render_files'}


def _hosts(prefix, count):
    # A closed port on the loopback: a connection attempt fails at once, and shows as unreachable.
    return dict(('%s%d' % (prefix, index), {'ansible_host': '127.0.0.1', 'ansible_port': 9})
                for index in range(1, count + 1))


def _site(workdir, inventory, render_dir, *args):
    env = playbook_env(workdir, ANSIBLE_STDOUT_CALLBACK='ansible.posix.json', ANSIBLE_HOST_KEY_CHECKING='0',
                       ANSIBLE_TIMEOUT='5')
    proc = subprocess.run(
        ['ansible-playbook', '-i', inventory, SITE, '-e', 'nim_k8s_backend=lws', '-e', 'nim_k8s_render_dir=' + render_dir,
         '-e', 'nim_k8s_ssh_key_dir=' + os.path.join(workdir, 'keys')] + list(args),
        cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True, timeout=300, check=False)
    try:
        return proc.returncode, json.loads(proc.stdout), proc.stderr
    except ValueError:
        raise AssertionError('no JSON from the callback (rc %d):\n%s\n%s'
                             % (proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:]))


def _results(run):
    """(play name, task name, host, result) of every task result of the run."""
    for play in run['plays']:
        for task in play['tasks']:
            for host, result in task['hosts'].items():
                yield play['play']['name'], task['task']['name'], host, result


def _ran(run, match):
    return [r for r in _results(run) if match(r) and not r[3].get('skipped')]


def _plan(run):
    planned = _ran(run, lambda r: r[3].get('action') == PLAN_ACTION)
    return planned, planned[0][3] if planned else None


def test_site_plans_once_and_validates_once_on_a_kubernetes_inventory(workdir):
    groups = {'llama': {'hosts': _hosts('k', 2), 'vars': {'nim_group': 'llama', 'nim_deployment_mode': 'kubernetes'}},
              'other': {'hosts': _hosts('o', 2), 'vars': {'nim_group': 'other', 'nim_deployment_mode': 'kubernetes',
                                                          'nim_k8s_namespace': 'nim-other'}}}
    render_dir = os.path.join(workdir, 'out', 'site-k8s')
    rc, run, stderr = _site(workdir, write_inventory(workdir, 'site-k8s', groups), render_dir)
    assert rc == 0, stderr[-3000:]
    planned, plan = _plan(run)
    assert len(planned) == 1, planned
    assert len(_ran(run, lambda r: r[1].endswith(VALIDATE_TASK))) == 1
    assert sorted(plan['groups']) == ['llama', 'other']
    assert set(entry['mode'] for entry in plan['hosts'].values()) == {'kubernetes'}
    # Both groups rendered from the one plan.
    for group in ('llama', 'other'):
        assert os.path.exists(os.path.join(render_dir, group, 'LeaderWorkerSet-nim-%s.yaml' % group))
    # No node contacted: every result on a node is an action that runs on the controller.
    nodes = set(plan['hosts'])
    contacted = [r[:3] + (r[3].get('action'),) for r in _results(run)
                 if r[2] in nodes and not r[3].get('skipped') and r[3].get('action') not in KUBERNETES_PLAY_SIDE]
    assert not contacted
    assert not any(stats.get('unreachable') or stats.get('failures') for stats in run['stats'].values())


def test_site_takes_each_group_by_its_mode_on_a_mixed_inventory(workdir):
    groups = {'dock': {'hosts': _hosts('d', 2), 'vars': {'nim_group': 'dock', 'nim_deployment_mode': 'docker'}},
              'llama': {'hosts': _hosts('k', 2), 'vars': {'nim_group': 'llama', 'nim_deployment_mode': 'kubernetes'}}}
    render_dir = os.path.join(workdir, 'out', 'site-mixed')
    rc, run, _stderr = _site(workdir, write_inventory(workdir, 'site-mixed', groups), render_dir)
    planned, plan = _plan(run)
    assert len(planned) == 1, planned
    assert len(_ran(run, lambda r: r[1].endswith(VALIDATE_TASK))) == 1
    assert dict((name, group['mode']) for name, group in plan['groups'].items()) == {
        'dock': 'docker', 'llama': 'kubernetes'}
    # The first play that contacts hosts (the OS facts) reaches the Docker hosts, and only them.
    assert rc != 0
    unreachable = sorted(host for host, stats in run['stats'].items() if stats.get('unreachable'))
    assert unreachable == ['d1', 'd2']
    contacted = set(r[2] for r in _results(run) if not r[3].get('skipped') and r[3].get('action') not in KUBERNETES_PLAY_SIDE)
    assert not contacted & {'k1', 'k2'}


def _files(root):
    found = {}
    for folder, _dirs, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, encoding='utf-8') as handle:
                found[os.path.relpath(path, root)] = handle.read()
    return found


def test_a_limit_to_one_kubernetes_group_renders_it_as_the_whole_run_would_and_nothing_else(workdir):
    llama = {'hosts': _hosts('k', 2), 'vars': {'nim_group': 'llama', 'nim_deployment_mode': 'kubernetes'}}
    other = {'hosts': _hosts('o', 2), 'vars': {'nim_group': 'other', 'nim_deployment_mode': 'kubernetes',
                                               'nim_k8s_namespace': 'nim-other'}}
    dock = {'hosts': _hosts('d', 2), 'vars': {'nim_group': 'dock', 'nim_deployment_mode': 'docker'}}
    whole_dir = os.path.join(workdir, 'out', 'whole')
    rc, _run, stderr = _site(workdir, write_inventory(workdir, 'k8s-pair', {'llama': llama, 'other': other}), whole_dir)
    assert rc == 0, stderr[-3000:]
    # The command: a Docker group first, then the Kubernetes groups; the limit leaves the
    # controller (and the Docker group) out of the run.
    mixed = write_inventory(workdir, 'limit-mixed', {'dock': dock, 'llama': llama, 'other': other})
    limited_dir = os.path.join(workdir, 'out', 'limited')
    rc, run, stderr = _site(workdir, mixed, limited_dir, '--limit', 'llama')
    assert rc == 0, stderr[-3000:]
    whole, limited = _files(whole_dir), _files(limited_dir)
    # llama's objects, the cluster's files and llama's namespace, which also holds the one
    # PrometheusRule of the deployment (the first namespace of all groups): as the whole run wrote them.
    assert sorted(limited) == sorted(p for p in whole if not p.startswith(('other/', '_namespaces/nim-other/')))
    assert all(limited[path] == whole[path] for path in limited)
    assert any(p.startswith('llama/LeaderWorkerSet-') for p in limited)
    assert any(p.startswith('_namespaces/nim/PrometheusRule-') for p in limited)
    # No host contacted, and the Docker group's not even in the run.
    assert not set(run['stats']) & {'d1', 'd2', 'o1', 'o2'}
    assert [r[:3] + (r[3].get('action'),) for r in _results(run)
            if not r[3].get('skipped') and r[3].get('action') not in KUBERNETES_PLAY_SIDE] == []
    assert not any(stats.get('unreachable') or stats.get('failures') for stats in run['stats'].values())
    # A second run changes nothing.
    rc, run, stderr = _site(workdir, mixed, limited_dir, '--limit', 'llama')
    assert rc == 0, stderr[-3000:]
    assert sum(stats.get('changed', 0) for stats in run['stats'].values()) == 0
    assert _files(limited_dir) == limited
