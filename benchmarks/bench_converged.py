# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Benchmark (not a test, not in `make test`): the controller's CPU of a converged site.yml on
the lab, for a base git ref and for the working tree, against the same lab, in one run.

The lab must already be up and converged (tests/lab/rollout.sh, the registry path). Each tree
runs site.yml with the inventories and the environment rollout.sh gives it (the lab's inventory,
inventories/lab, lab-docker, lab-registry, the stand-in's tag, NGC_API_KEY from the lab
registry), each from its own checkout (the base is a `git worktree` of the ref, removed after)
and with an empty fact cache of its own, the base first. Measured per tree: the CPU time (user +
sys) of ansible-playbook and every process it waited for (its workers, ssh), from
getrusage(RUSAGE_CHILDREN); the task visits of every host from the ansible.posix.json callback
(every task result of the host, skipped ones included, since a skipped task costs the
controller its templating too), the visits per role, and the changed count of the recap.

    NIMSTACK_LAB_PREFIX=... NIMSTACK_LAB_DIR=... python3 benchmarks/bench_converged.py [--keep DIR] [BASE_REF]

BASE_REF defaults to the merge base of HEAD and main; --keep DIR writes each tree's callback
document there (base.json, working_tree.json) to find where the visits go. Prints JSON: per tree the CPU-s, CPU-s per
host, visits per host, the roles visited most, changed; passed: the working tree converged with
changed=0 at no more than TARGET_CPU_S per host. ssh's ControlPersist masters run detached and
are not counted (they are the same for both trees).
"""

import collections
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A converged host costs the controller at most this many CPU seconds.
TARGET_CPU_S = 10.0
TOP_ROLES = 12


def git(*args):
    return subprocess.run(['git', '-C', REPO] + list(args), stdout=subprocess.PIPE, check=True,
                          universal_newlines=True).stdout.strip()


def lab_env():
    """The environment and extra arguments rollout.sh gives site.yml on the registry path."""
    lab_dir = os.environ.get('NIMSTACK_LAB_DIR', os.path.join(REPO, 'build', 'lab'))
    image = subprocess.run([os.path.join(REPO, 'tests/lab/build-standin.sh')], stdout=subprocess.PIPE,
                           check=True, universal_newlines=True).stdout.strip().splitlines()[-1]
    key_path = subprocess.run([os.path.join(REPO, 'tests/lab/registry.sh'), 'key'], stdout=subprocess.PIPE,
                              check=True, universal_newlines=True).stdout.strip()
    with open(key_path, encoding='utf-8') as handle:
        key = handle.read().strip()
    inventory = os.path.join(lab_dir, 'inventory.yml')
    if not os.path.exists(inventory):
        raise RuntimeError('no lab at %s: bring it up with tests/lab/rollout.sh first' % lab_dir)
    return inventory, image.rpartition(':')[2], key


def tree_of(ref, workdir):
    """A checkout of ref that resolves nimstack.multinode to itself, as `make deps` links it."""
    path = os.path.join(workdir, 'base')
    subprocess.run(['git', '-C', REPO, 'worktree', 'add', '--detach', '--quiet', path, ref], check=True)
    link_dir = os.path.join(path, 'build', 'collections', 'ansible_collections', 'nimstack')
    os.makedirs(link_dir)
    os.symlink(path, os.path.join(link_dir, 'multinode'))
    return path


def count_visits(document):
    """(visits per host, visits per role over all hosts, changed per host) from the
    ansible.posix.json document."""
    visits = collections.Counter()
    roles = collections.Counter()
    for play in document.get('plays', []):
        for task in play.get('tasks', []):
            name = task.get('task', {}).get('name', '')
            role = name.split(' : ', 1)[0] if ' : ' in name else '(play)'
            for host in task.get('hosts', {}):
                visits[host] += 1
                roles[role] += 1
    changed = dict((host, stats.get('changed', 0)) for host, stats in document.get('stats', {}).items())
    return dict(visits), roles, changed


def run_site(tree, workdir, name, inventory, tag, key, keep=None):
    env = dict(os.environ)
    env.update(ANSIBLE_CONFIG=os.path.join(tree, 'ansible.cfg'), ANSIBLE_STDOUT_CALLBACK='ansible.posix.json',
               ANSIBLE_NOCOLOR='1', ANSIBLE_CACHE_PLUGIN_CONNECTION=os.path.join(workdir, 'facts-' + name),
               NGC_API_KEY=key)
    command = [shutil.which('ansible-playbook') or 'ansible-playbook',
               '-i', inventory, '-i', 'inventories/lab', '-i', 'inventories/lab-docker',
               '-i', 'inventories/lab-registry', '-e', 'nim_image_tag=' + tag, 'playbooks/site.yml']
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.run(command, cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, check=False)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    out = proc.stdout
    try:
        document = json.loads(out[out.index('{'):])
    except ValueError:
        document = {}
    if proc.returncode != 0 or not document:
        raise RuntimeError('site.yml of %s failed (rc=%d): %s\n%s'
                           % (name, proc.returncode, proc.stderr[-2000:], out[-3000:]))
    if keep:
        with open(os.path.join(keep, name + '.json'), 'w', encoding='utf-8') as handle:
            json.dump(document, handle)
    visits, roles, changed = count_visits(document)
    hosts = sorted(h for h in visits if h != 'localhost')
    return {'tree': tree, 'cpu_s': round(cpu, 1), 'wall_s': round(wall, 1), 'hosts': len(hosts),
            'cpu_s_per_host': round(cpu / max(len(hosts), 1), 1),
            'visits_per_host': dict((h, visits[h]) for h in sorted(visits)),
            'visits_by_role': dict(roles.most_common(TOP_ROLES)),
            'changed': sum(changed.values()), 'changed_per_host': dict((h, c) for h, c in changed.items() if c)}


def main(argv):
    argv = list(argv)
    keep = None
    if argv[:1] == ['--keep']:
        keep = os.path.abspath(argv[1])
        os.makedirs(keep, exist_ok=True)
        argv = argv[2:]
    ref = argv[0] if argv else git('merge-base', 'HEAD', 'main')
    inventory, tag, key = lab_env()
    workdir = tempfile.mkdtemp(prefix='nimstack-bench-converged-')
    base = None
    try:
        base = tree_of(ref, workdir)
        results = {'base': run_site(base, workdir, 'base', inventory, tag, key, keep),
                   'working_tree': run_site(REPO, workdir, 'working_tree', inventory, tag, key, keep)}
    finally:
        if base:
            subprocess.run(['git', '-C', REPO, 'worktree', 'remove', '--force', base], check=False)
        shutil.rmtree(workdir, ignore_errors=True)
    results['base']['ref'] = git('rev-parse', '--short', ref)
    dirty = git('status', '--porcelain', '--untracked-files=no')
    results['working_tree']['ref'] = git('rev-parse', '--short', 'HEAD') + ('+dirty' if dirty else '')
    after = results['working_tree']
    json.dump({'results': results, 'target_cpu_s_per_host': TARGET_CPU_S,
               'passed': after['changed'] == 0 and after['cpu_s_per_host'] <= TARGET_CPU_S}, sys.stdout, indent=2)
    sys.stdout.write('\n')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
