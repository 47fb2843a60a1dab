# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Benchmark (not a test, not in `make test`): the controller-side stages on a large generated
inventory, contacting no host.

For each size GROUPSxHOSTS it writes an inventory of GROUPS deployment groups of HOSTS hosts each
(addresses in 198.18.0.0/15, the benchmarking range, reached over SSH with a 1 s timeout: any
attempt to contact a host fails the run), then runs and times:

- preflight.yml without the doctor and the OS check: inventory validation, the plan of every
  group with the env of every rank, the Docker path's input checks;
- deploy_kubernetes.yml render-only (lws backend): the plan for Kubernetes and the manifests of
  every group.

Module calls are counted from the ansible.posix.json callback: every task result of a host that
was not skipped (set_fact and assert included). Prints JSON: per size, the wall time and module
calls of each stage, their totals, and the calls per group and per host.

    python3 benchmarks/bench_controller.py                 125x8 and 125x4 and 63x8
    python3 benchmarks/bench_controller.py 125x8 10x8      other sizes
    python3 benchmarks/bench_controller.py --stages preflight 125x8
                                                        one stage (preflight, kubernetes_render)

ANSIBLE_FORKS, ANSIBLE_STRATEGY and the like pass through to ansible-playbook.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_SIZES = ('125x8', '125x4', '63x8')
GROUP_VARS = {
    'nim_deployment_mode': 'docker',
    'nim_image': 'nvcr.io/nim/meta/llama-3.1-405b-instruct',
    'nim_image_tag': '1.3.0',
    'nim_model': {'params_b': 405, 'layers': 128, 'attention_heads': 128, 'kv_heads': 8, 'precision': 'fp8'},
    'nim_tensor_parallel': 8,
    'nim_gpus_per_node': 8,
    'nim_gpu_memory_gb': 80,
    'nim_interconnect': 'ib_ndr',
    'nim_launch_contract': 'mpi',
    'nim_mpi_start_timeout': 3000,
    'nim_network_profile': 'tcp',
    'nim_cache_path': '/mnt/nim-cache',
    'nim_shm_size_gb': 64,
    'nim_k8s_namespace': 'nim',
    # Archive on the nodes: the Docker preflight needs no NGC key and no file on the controller.
    'nim_docker_image_archive': '/srv/nim.tar',
    'nim_docker_image_archive_on_nodes': True,
    'ansible_user': 'bench',
    'ansible_ssh_common_args': '-o ConnectTimeout=1 -o BatchMode=yes',
}


def parse_size(text):
    groups, _sep, hosts = text.partition('x')
    if not (groups.isdigit() and hosts.isdigit() and int(groups) > 0 and int(hosts) > 0):
        raise ValueError('size %r: expected GROUPSxHOSTS, e.g. 125x8' % text)
    return int(groups), int(hosts)


def inventory(groups, hosts):
    """The inventory as a dict: one child group of nim_nodes per deployment group."""
    children = {}
    index = 0
    for g in range(groups):
        members = {}
        for _host in range(hosts):
            members['n%05d' % index] = {'ansible_host': '198.18.%d.%d' % (index // 250, index % 250 + 1)}
            index += 1
        children['g%04d' % g] = {'hosts': members,
                                 'vars': {'nim_group': 'g%04d' % g, 'nim_pipeline_parallel': hosts}}
    return {'all': {'children': {'nim_nodes': {'vars': dict(GROUP_VARS), 'children': children}}}}


def count_calls(callback_json):
    """(module calls, tasks) from the ansible.posix.json document: every task result of a host
    that was not skipped, and every item of a loop that was not skipped (a loop over the groups is
    one call per group)."""
    calls = tasks = 0
    for play in callback_json.get('plays', []):
        for task in play.get('tasks', []):
            tasks += 1
            for result in task.get('hosts', {}).values():
                if result.get('skipped'):
                    continue
                items = result.get('results')
                if isinstance(items, list):
                    calls += sum(1 for item in items if not item.get('skipped'))
                else:
                    calls += 1
    return calls, tasks


def run_stage(workdir, name, inventory_path, playbook, extra):
    env = dict(os.environ)
    env.update(ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'), ANSIBLE_STDOUT_CALLBACK='ansible.posix.json',
               ANSIBLE_NOCOLOR='1', ANSIBLE_CACHE_PLUGIN_CONNECTION=os.path.join(workdir, 'facts'),
               ANSIBLE_LOCAL_TEMP=os.path.join(workdir, 'tmp'), KUBECONFIG=os.path.join(workdir, 'none'))
    vars_file = os.path.join(workdir, 'vars-%s.json' % name)
    with open(vars_file, 'w', encoding='utf-8') as handle:
        json.dump(extra, handle)
    started = time.monotonic()
    proc = subprocess.run(['ansible-playbook', '-i', inventory_path, os.path.join(REPO, playbook),
                           '-e', '@' + vars_file] + (['--skip-tags', 'doctor'] if 'preflight' in playbook else []),
                          cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=900, check=False)
    wall = time.monotonic() - started
    out = proc.stdout
    try:
        document = json.loads(out[out.index('{'):])
    except ValueError:
        document = {}
    if proc.returncode != 0:
        raise RuntimeError('%s failed (rc=%d): %s\n%s' % (playbook, proc.returncode, proc.stderr[-2000:], out[-3000:]))
    calls, tasks = count_calls(document)
    unreachable = sum(s.get('unreachable', 0) for s in document.get('stats', {}).values())
    if unreachable:
        raise RuntimeError('%s contacted a host' % playbook)
    return {'wall_s': round(wall, 1), 'module_calls': calls, 'tasks': tasks}


STAGES = ('preflight', 'kubernetes_render')
# Both stages of up to 1,000 hosts, plan and render, in under this many seconds.
TARGET_S = 30


def bench(size, workdir, stages=STAGES):
    groups, hosts = parse_size(size)
    import yaml  # pylint: disable=import-outside-toplevel
    path = os.path.join(workdir, 'inventory-%s.yml' % size)
    with open(path, 'w', encoding='utf-8') as handle:
        yaml.safe_dump(inventory(groups, hosts), handle)
    render_dir = os.path.join(workdir, 'render-%s' % size)
    runs = {
        'preflight': lambda: run_stage(workdir, 'preflight-' + size, path, 'playbooks/preflight.yml',
                                       {'validate_inventory_check_os': False}),
        'kubernetes_render': lambda: run_stage(workdir, 'k8s-' + size, path, 'playbooks/deploy_kubernetes.yml',
                                               {'nim_k8s_backend': 'lws', 'nim_k8s_render_dir': render_dir,
                                                'nim_k8s_ssh_key_dir': os.path.join(workdir, 'keys')}),
    }
    stages = dict((name, runs[name]()) for name in stages)
    manifests = sum(len(files) for _root, _dirs, files in os.walk(render_dir))
    wall = sum(s['wall_s'] for s in stages.values())
    calls = sum(s['module_calls'] for s in stages.values())
    return {'size': size, 'groups': groups, 'hosts': groups * hosts, 'stages': stages,
            'wall_s': round(wall, 1), 'module_calls': calls, 'rendered_files': manifests,
            'calls_per_group': round(calls / groups, 2), 'calls_per_host': round(calls / (groups * hosts), 3)}


def parse_args(argv):
    """(sizes, stages) from the command line."""
    argv = list(argv)
    stages = STAGES
    if argv[:1] == ['--stages']:
        if len(argv) < 2:
            raise ValueError('--stages needs a list')
        stages = tuple(argv[1].split(','))
        argv = argv[2:]
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        raise ValueError('unknown stage(s) %s; known: %s' % (', '.join(unknown), ', '.join(STAGES)))
    sizes = argv or list(DEFAULT_SIZES)
    for size in sizes:
        parse_size(size)
    return sizes, stages


def main(argv):
    sizes, stages = parse_args(argv)
    workdir = tempfile.mkdtemp(prefix='nimstack-bench-controller-')
    try:
        results = [bench(size, workdir, stages) for size in sizes]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    json.dump({'results': results, 'target_s': TARGET_S, 'stages': list(stages),
               'forks': os.environ.get('ANSIBLE_FORKS', 'ansible.cfg'),
               'strategy': os.environ.get('ANSIBLE_STRATEGY', 'linear'),
               'passed': all(r['wall_s'] < TARGET_S for r in results if r['hosts'] <= 1000)}, sys.stdout, indent=2)
    sys.stdout.write('\n')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
