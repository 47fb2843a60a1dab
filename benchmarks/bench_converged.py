# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Benchmark (not a test, not in `make test`): the controller's CPU of a converged site.yml on
the lab, for a base git ref and for the working tree, against the same lab, in one run, and as a
ratio to a floor play timed in the same run.

The lab must already be up and converged (tests/lab/rollout.sh, the registry path). Each tree
runs site.yml with the inventories and the environment rollout.sh gives it (the lab's inventory,
inventories/lab, lab-docker, lab-registry, the stand-in's tag, NGC_API_KEY from the lab
registry), each from its own checkout (the base is a `git worktree` of the ref, removed after)
and with an empty fact cache of its own, base and working tree in turn, RUNS times each (the
machine's load drifts between runs; the median of each tree is what is compared). Measured per
run: the CPU time (user + sys) of ansible-playbook and every process it waited for (its workers,
ssh), from getrusage(RUSAGE_CHILDREN), with the output a user gets (the default callback: a
callback that keeps every result, such as ansible.posix.json, costs the controller about 0.6
CPU-s per host itself); the task visits of every host from the recap (ok, failed, skipped and
unreachable: a skipped task costs the controller its worker too) and the changed count; per role,
the visits counted from the task headers and host lines of the output. Each round also runs the
floor play (benchmarks/floor.yml: facts and one module per host, the least any playbook costs)
against the same hosts, so that each tree's CPU reads as a multiple of the floor, which does not
depend on how fast the machine is (machines differ 2.5x for the same converged run).

    NIMSTACK_LAB_PREFIX=... NIMSTACK_LAB_DIR=... python3 benchmarks/bench_converged.py [--runs N] [--keep DIR] [BASE_REF]

BASE_REF defaults to the merge base of HEAD and main; --runs defaults to 3; --keep DIR writes
each run's output there (base-1.log, working_tree-1.log, ...). Prints JSON: per tree the median
CPU-s and CPU-s per host, every run's, the visits per host, the roles visited most, changed;
floor: the floor play's median CPU-s per host; passed: the working tree converged with changed=0 in
every run at no more than TARGET_RATIO times the floor (its median; TARGET_CPU_S per host is
reported beside it, on this kind of machine). ssh's ControlPersist masters run detached and are not counted (they are the
same for both trees).
"""

import collections
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A converged host costs the controller at most this many CPU seconds on the machine the target was
# set on, and at most this many times the floor play on any machine.
TARGET_CPU_S = 10.0
TARGET_RATIO = 10.0
FLOOR_PLAY = os.path.join(REPO, 'benchmarks', 'floor.yml')
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


RECAP = re.compile(r'^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)')
TASK = re.compile(r'^(?:TASK|RUNNING HANDLER) \[(.*)\] \*+$')
RESULT = re.compile(r'^(?:ok|changed|skipping|failed|fatal): \[([^\]]+)\]')
INCLUDED = re.compile(r'^included: .* for (.+)$')


def count_visits(output):
    """(visits per host, visits per role over all hosts, changed per host) from the default
    callback's output: the recap's counts, and per task header the hosts its result lines name
    (a loop's items are one visit)."""
    visits, changed = {}, {}
    roles = collections.Counter()
    role, hosts = '(play)', set()
    for line in output.splitlines() + ['TASK [end] ***']:
        recap = RECAP.match(line)
        if recap:
            host, ok, chg, unreachable, failed, skipped = recap.groups()
            visits[host] = int(ok) + int(unreachable) + int(failed) + int(skipped)
            changed[host] = int(chg)
            continue
        task = TASK.match(line)
        result = RESULT.match(line)
        included = INCLUDED.match(line)
        if task:
            roles[role] += len(hosts)
            name, hosts = task.group(1), set()
            role = name.split(' : ', 1)[0] if ' : ' in name else '(play)'
        elif result:
            hosts.add(result.group(1).split(' -> ')[0])
        elif included:
            hosts.update(h.strip() for h in included.group(1).split(','))
    return visits, roles, changed


def run_site(tree, workdir, name, inventory, tag, key, log_path=None, playbook='playbooks/site.yml'):
    env = dict(os.environ)
    env.update(ANSIBLE_CONFIG=os.path.join(tree, 'ansible.cfg'), ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0',
               ANSIBLE_CACHE_PLUGIN_CONNECTION=os.path.join(workdir, 'facts-' + name), NGC_API_KEY=key)
    for setting in ('ANSIBLE_STDOUT_CALLBACK', 'ANSIBLE_CALLBACKS_ENABLED', 'ANSIBLE_DISPLAY_SKIPPED_HOSTS'):
        env.pop(setting, None)
    shutil.rmtree(env['ANSIBLE_CACHE_PLUGIN_CONNECTION'], ignore_errors=True)
    command = [shutil.which('ansible-playbook') or 'ansible-playbook',
               '-i', inventory, '-i', 'inventories/lab', '-i', 'inventories/lab-docker',
               '-i', 'inventories/lab-registry', '-e', 'nim_image_tag=' + tag, playbook]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.run(command, cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if log_path:
        with open(log_path, 'w', encoding='utf-8') as handle:
            handle.write(proc.stdout)
    visits, roles, changed = count_visits(proc.stdout)
    if proc.returncode != 0 or not visits:
        raise RuntimeError('%s of %s failed (rc=%d):\n%s' % (playbook, name, proc.returncode, proc.stdout[-4000:]))
    hosts = sorted(h for h in visits if h != 'localhost')
    return {'cpu_s': round(cpu, 1), 'wall_s': round(wall, 1), 'hosts': len(hosts),
            'cpu_s_per_host': round(cpu / max(len(hosts), 1), 2),
            'visits_per_host': dict((h, visits[h]) for h in sorted(visits)),
            'visits_by_role': dict(roles.most_common(TOP_ROLES)),
            'changed': sum(changed.values()), 'changed_per_host': dict((h, c) for h, c in changed.items() if c)}


def summary(tree, runs):
    """The median run of a tree, with every run's CPU."""
    ordered = sorted(runs, key=lambda run: run['cpu_s'])
    median = dict(ordered[len(ordered) // 2])
    median.update(tree=tree, runs_cpu_s_per_host=[run['cpu_s_per_host'] for run in runs],
                  changed=max(run['changed'] for run in runs))
    return median


def main(argv):
    argv = list(argv)
    keep = None
    runs = 3
    while argv[:1] in (['--keep'], ['--runs']):
        if argv[0] == '--keep':
            keep = os.path.abspath(argv[1])
            os.makedirs(keep, exist_ok=True)
        else:
            runs = max(int(argv[1]), 1)
        argv = argv[2:]
    ref = argv[0] if argv else git('merge-base', 'HEAD', 'main')
    inventory, tag, key = lab_env()
    workdir = tempfile.mkdtemp(prefix='nimstack-bench-converged-')
    base = None
    measured = {'base': [], 'working_tree': [], 'floor': []}
    try:
        base = tree_of(ref, workdir)
        for number in range(1, runs + 1):
            for name, tree in (('base', base), ('working_tree', REPO)):
                measured[name].append(run_site(tree, workdir, name, inventory, tag, key,
                                               os.path.join(keep, '%s-%d.log' % (name, number)) if keep else None))
            measured['floor'].append(run_site(REPO, workdir, 'floor', inventory, tag, key,
                                              os.path.join(keep, 'floor-%d.log' % number) if keep else None,
                                              playbook=FLOOR_PLAY))
    finally:
        if base:
            subprocess.run(['git', '-C', REPO, 'worktree', 'remove', '--force', base], check=False)
        shutil.rmtree(workdir, ignore_errors=True)
    results = {'base': summary(ref, measured['base']), 'working_tree': summary('working tree', measured['working_tree'])}
    results['base']['ref'] = git('rev-parse', '--short', ref)
    dirty = git('status', '--porcelain', '--untracked-files=no')
    results['working_tree']['ref'] = git('rev-parse', '--short', 'HEAD') + ('+dirty' if dirty else '')
    floor = summary('floor play', measured['floor'])
    for result in results.values():
        result['x_floor'] = round(result['cpu_s_per_host'] / max(floor['cpu_s_per_host'], 0.01), 1)
    after = results['working_tree']
    json.dump({'results': results, 'runs': runs,
               'floor': {'cpu_s_per_host': floor['cpu_s_per_host'], 'runs_cpu_s_per_host': floor['runs_cpu_s_per_host']},
               'target_x_floor': TARGET_RATIO, 'target_cpu_s_per_host': TARGET_CPU_S,
               'passed': after['changed'] == 0 and after['x_floor'] <= TARGET_RATIO}, sys.stdout, indent=2)
    sys.stdout.write('\n')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
