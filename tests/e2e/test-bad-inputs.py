#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The bad-input suite: every case of tests/bad_inputs/cases.yml through the real playbooks.

Each case is an inventory of its own (the valid base below, changed as the case says), run with
`ansible-playbook -i <inv> playbooks/preflight.yml`, or for `playbook: render` the render-only
Kubernetes deploy, or for `playbook: site` site.yml itself (whose first play after the preflight
contacts the nodes, so a case must be refused by then). The nodes use the default ssh connection, and `ssh`, `scp` and `sftp` on PATH
are shims that record every attempt and fail: preflight must never try to reach a node.

A case fails when an SSH attempt was recorded, when the output holds "Traceback", when the NGC
key of the inventory appears in the output, when a refused case passes or its failure does not
name each of its variables (as a whole word), when an accepted case fails, or (render) when a user's own file in the render
directory is gone. Cases run two at a time; the last line sums them up.

  tests/e2e/test-bad-inputs.py                     # every case, this checkout
  tests/e2e/test-bad-inputs.py -k cache-path       # the cases whose name contains cache-path
  tests/e2e/test-bad-inputs.py --repo /tmp/old     # the same cases against another checkout
"""

from __future__ import absolute_import, division, print_function

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BASE_KEY = 'nvapi-suite-base-key-0123456789'
SECRET_MARKS = (BASE_KEY, 'SUITE-SECRET')
NODES = {'gpu-1': {'ansible_host': '10.255.0.1'}, 'gpu-2': {'ansible_host': '10.255.0.2'}}
NFS = {'nfs-1': {'ansible_host': '10.255.0.9'}}
DOOR = {'door-1': {'ansible_host': '10.255.0.10'}}
BASE_VARS = {
    'nim_deployment_mode': 'docker',
    'nim_image': 'nvcr.io/nim/meta/llama-3.1-405b-instruct',
    'nim_image_tag': '1.3.0',
    'nim_model': {'params_b': 405, 'layers': 128, 'attention_heads': 128, 'kv_heads': 8, 'precision': 'fp8'},
    'nim_tensor_parallel': 8,
    'nim_pipeline_parallel': 2,
    'nim_gpus_per_node': 8,
    'nim_gpu_memory_gb': 80,
    'nim_launch_contract': 'mpi',
    'nim_network_profile': 'tcp',
    'nim_cache_path': '/mnt/nim-cache',
    'nim_k8s_namespace': 'nim',
    'nim_ngc_api_key': BASE_KEY,
}
USER_FILE = 'default/my-own-networkpolicy.yaml'
USER_CONTENT = 'apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: mine}\n'
STALE_FILE = 'default/ConfigMap-nim-default-stale.yaml'
_ERROR_LINE = re.compile(r'^([A-Za-z_][\w.]*(?:Error|Exception)): .*$', re.M)
SHIM = '#!/bin/sh\necho "$(basename "$0") $*" >> "$NIMSTACK_SSH_LOG"\nexit 255\n'


def write_inventory(case, folder):
    nodes = {} if case.get('empty_nodes') else json.loads(json.dumps(NODES))
    nodes.update(json.loads(json.dumps(case.get('nodes') or {})))
    for host, values in (case.get('host_vars') or {}).items():
        nodes[host].update(values)
    nfs = json.loads(json.dumps(NFS))
    nfs['nfs-1'].update(case.get('nfs_vars') or {})
    door = json.loads(json.dumps(DOOR))
    door['door-1'].update(case.get('frontend_vars') or {})
    door.update(json.loads(json.dumps(case.get('frontend_nodes') or {})))
    inventory = {'all': {'children': {'nim_nodes': {'hosts': nodes or None}, 'nfs_server': {'hosts': nfs},
                                      'nim_frontend': {'hosts': door}}}}
    if case.get('monitoring_nodes'):
        inventory['all']['children']['nim_monitoring'] = {'hosts': dict((host, {}) for host in case['monitoring_nodes'])}
    group_vars = dict(BASE_VARS)
    group_vars.update(case.get('vars') or {})
    # What raw sets is YAML's own reading of the text, so the base must not set it too.
    for name in list(case.get('unset') or []) + list(yaml.safe_load(case.get('raw') or '{}') or {}):
        group_vars.pop(name, None)
    os.makedirs(os.path.join(folder, 'group_vars'))
    with open(os.path.join(folder, 'hosts.yml'), 'w') as handle:
        yaml.safe_dump(inventory, handle, default_flow_style=False)
    with open(os.path.join(folder, 'group_vars', 'nim_nodes.yml'), 'w') as handle:
        handle.write(yaml.safe_dump(group_vars, default_flow_style=False) + (case.get('raw') or ''))
    return os.path.join(folder, 'hosts.yml')


def python_errors(text):
    """The Python errors of a traceback that are not Ansible's own failure types.

    With ANSIBLE_DISPLAY_TRACEBACK=error every failed task carries a traceback, a refusal by
    assert or fail included (AnsibleActionFail ...); a bug is a TypeError, KeyError and the like
    raised below it in a module, filter or plugin.
    """
    found = []
    for match in _ERROR_LINE.finditer(text):
        name = match.group(1)
        if not (name.startswith('ansible') or name.split('.')[-1].startswith('Ansible')):
            found.append(match.group(0).strip())
    return found


def read_results(stdout):
    """(failure messages, exceptions) from the ansible.posix.json document, ([], []) without one.

    ANSIBLE_DISPLAY_TRACEBACK=error puts the traceback of every failure in ``exception``: an
    exception of Python itself in it is a crash, not a refusal (see python_errors).
    """
    try:
        document, _end = json.JSONDecoder().raw_decode(stdout, stdout.index('{'))
    except ValueError:
        return [], []
    messages, exceptions = [], []
    for play in document.get('plays', []):
        for task in play.get('tasks', []):
            for host, result in task.get('hosts', {}).items():
                for item in [result] + [r for r in result.get('results') or [] if isinstance(r, dict)]:
                    crash = python_errors(item.get('exception') or '')
                    if crash:
                        exceptions.append('%s: %s: %s' % (task['task']['name'], host, crash[0]))
                    if item.get('failed') or item.get('unreachable'):
                        messages.append(str(item.get('msg')))
    return messages, exceptions


def expected_variables(case):
    """The variables a refused case's failure must name: `variables`, or the one `variable`."""
    return list(case.get('variables') or [case['variable']])


def names(text, variable):
    """Whether text names the variable as a whole word (nim_frontend is not named by nim_frontend_port)."""
    return re.search(r'(?<![\w])%s(?![\w])' % re.escape(variable), text) is not None


def run_case(repo, case, workdir, shim_dir):
    folder = os.path.join(workdir, case['name'])
    os.makedirs(folder)
    inventory = write_inventory(case, os.path.join(folder, 'inventory'))
    ssh_log = os.path.join(folder, 'ssh-attempts.log')
    env = dict(os.environ)
    env.update(PATH=shim_dir + os.pathsep + env.get('PATH', ''), ANSIBLE_CONFIG=os.path.join(repo, 'ansible.cfg'),
               ANSIBLE_STDOUT_CALLBACK='ansible.posix.json', ANSIBLE_DISPLAY_TRACEBACK='error', ANSIBLE_NOCOLOR='1',
               ANSIBLE_FORCE_COLOR='0', ANSIBLE_CACHE_PLUGIN_CONNECTION=os.path.join(folder, 'facts'),
               ANSIBLE_LOCAL_TEMP=os.path.join(folder, 'tmp'), ANSIBLE_RETRY_FILES_ENABLED='0',
               KUBECONFIG=os.path.join(folder, 'no-kubeconfig'), NIMSTACK_SSH_LOG=ssh_log)
    render = case.get('playbook') == 'render'
    render_dir = os.path.join(folder, 'render')
    if render:
        os.makedirs(os.path.join(render_dir, 'default'))
        with open(os.path.join(render_dir, USER_FILE), 'w') as handle:
            handle.write(USER_CONTENT)
        with open(os.path.join(render_dir, STALE_FILE), 'w') as handle:
            handle.write('# Rendered by nimstack.multinode (role nim_k8s, backend lws). Do not edit:\nkind: ConfigMap\n')
        command = ['ansible-playbook', '-i', inventory, os.path.join(repo, 'playbooks', 'deploy_kubernetes.yml'),
                   '-e', 'nim_k8s_backend=lws', '-e', 'nim_k8s_install_components=false', '-e', 'nim_k8s_render_dir=' + render_dir]
    else:
        playbook = 'site.yml' if case.get('playbook') == 'site' else 'preflight.yml'
        command = ['ansible-playbook', '-i', inventory, os.path.join(repo, 'playbooks', playbook)]
    if case.get('extra_vars'):
        extra = os.path.join(folder, 'extra-vars.json')
        with open(extra, 'w') as handle:
            json.dump(case['extra_vars'], handle)
        command += ['-e', '@' + extra]
    for option in ('limit', 'tags'):
        if case.get(option):
            command += ['--' + option, case[option]]
    if case.get('check'):
        command.append('--check')
    started = time.time()
    try:
        proc = subprocess.run(command, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=240, check=False)
        rc, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        rc, stdout, stderr = 'timeout', exc.stdout or '', exc.stderr or ''
    seconds = time.time() - started
    output = stdout + stderr
    with open(os.path.join(folder, 'output.log'), 'w') as handle:
        handle.write(output)
    messages, exceptions = read_results(stdout)
    # Where a refusal must name its variable: the failed results, and what ansible-playbook
    # itself printed as an error (an inventory it cannot read).
    failures = '\n'.join(messages) + '\n' + stderr

    problems = []
    if os.path.exists(ssh_log) and os.path.getsize(ssh_log) > 0:
        with open(ssh_log) as handle:
            problems.append('contacted a host: %s' % handle.readline().strip()[:120])
    crashes = exceptions + python_errors(stderr)
    if crashes:
        problems.append('a Python exception (Traceback): %s' % crashes[0][:200])
    if any(mark in output for mark in SECRET_MARKS):
        problems.append('the output shows the NGC key')
    if case['expect'] == 'refused':
        unnamed = [v for v in expected_variables(case) if not names(failures, v)]
        if rc == 0:
            problems.append('accepted, but should be refused naming %s' % ', '.join(expected_variables(case)))
        elif unnamed:
            problems.append('refused (rc=%s) without naming %s' % (rc, ', '.join(unnamed)))
        lines = failures.splitlines()
        apart = [words for words in case.get('together') or []
                 if not any(all(names(line, word) for word in words) for line in lines)]
        if rc != 0 and apart:
            problems.append('refused without one line naming %s (and %d more such)' % (' and '.join(apart[0]), len(apart) - 1))
    elif rc != 0:
        lines = [line for line in failures.splitlines() if line.strip()][:3]
        problems.append('refused (rc=%s), but should be accepted: %s' % (rc, ' | '.join(lines)[:300]))
    if render:
        kept = os.path.join(render_dir, USER_FILE)
        if not os.path.exists(kept) or open(kept).read() != USER_CONTENT:
            problems.append("the render removed or changed the user's own file %s" % USER_FILE)
        stale = os.path.exists(os.path.join(render_dir, STALE_FILE))
        if case.get('other_group_untouched'):
            if not stale:
                problems.append('the render removed %s of group default, which --limit left out' % STALE_FILE)
        elif rc == 0 and stale:
            problems.append('the render kept its own stale file %s' % STALE_FILE)
        wanted = case.get('rendered_contains')
        if wanted and rc == 0:
            rendered = ''
            for root, _dirs, files in os.walk(render_dir):
                for name in files:
                    with open(os.path.join(root, name)) as handle:
                        rendered += handle.read()
            if wanted not in rendered:
                problems.append('no rendered file holds %s' % wanted)
    return case, problems, seconds


def generated_cases():
    """Cases made from the declarations, not by hand: every one-line string setting at a value its
    rule accepts, spoilt by a trailing newline (a YAML | block) in one case, by an escape in another
    and, where it reaches a file's grammar, by a character that file reads specially in a third, each
    refused naming every variable (tests/bad_inputs/samples.py)."""
    sys.path.insert(0, os.path.join(REPO, 'build', 'collections'))
    sys.path.insert(0, os.path.join(REPO, 'tests', 'bad_inputs'))
    from ansible_collections.nimstack.multinode.plugins.module_utils.input_checks import (
        GID_PURPOSE, GID_SECRETS, GIDS, LISTENERS, RULES, check_value)
    import samples
    # The base's hosts set ansible_host themselves (a host's value wins over the group's).
    found = [(name, value) for name, value in samples.string_samples(RULES, check_value)
             if value is not None and name != 'ansible_host']
    cases = []
    for case_name, spoil, skip in (('every-string-setting-with-a-trailing-newline', '\n', samples.MULTILINE),
                                   ('every-string-setting-with-an-escape', '\x1b[0m', ())):
        spoilt = dict((name, value + spoil) for name, value in found if name not in skip)
        cases.append({'name': case_name, 'family': 'every kind', 'vars': spoilt, 'expect': 'refused',
                      'variables': sorted(spoilt)})
    special = [(name, value) for name, value in samples.special_samples(RULES, check_value)
               if value is not None and name != 'ansible_host']
    cases.append({'name': 'every-string-setting-with-a-character-its-file-reads-specially', 'family': 'every kind',
                  'vars': dict(special), 'expect': 'refused', 'variables': sorted(name for name, _value in special)})
    cases.append(clash_case(LISTENERS))
    cases.append(gid_case([gid[0] for gid in GIDS], GID_PURPOSE, GID_SECRETS))
    return cases


def gid_case(names, purpose, secrets):
    """One host per pair of gids that clash (input_checks.GIDS): every secrets gid against every
    workload gid at one value (the secrets gids agreeing), and the secrets gids against each other
    at two values; each line of the refusal must name the host and both variables."""
    secret_names = [n for n in names if purpose[n] == secrets]
    nodes, together, pairs = {}, [], []
    for i, first in enumerate(names):
        for second in names[i + 1:]:
            kinds = (purpose[first] == secrets, purpose[second] == secrets)
            if any(kinds):
                pairs.append((first, second, kinds == (True, True)))
    for number, (first, second, split) in enumerate(pairs):
        host = 'gid-%d' % number
        gid = 5000 + 2 * number
        node = {'nim_group': host, 'nim_tensor_parallel': 8, 'nim_pipeline_parallel': 1, 'nim_launch_contract': 'mpi'}
        node.update((name, gid) for name in secret_names)
        node.update({first: gid, second: gid + 1 if split else gid})
        nodes[host] = node
        together.append([host, first, second])
    return {'name': 'every-pair-of-gids-that-clash', 'family': 'gid clashes', 'nodes': nodes, 'expect': 'refused',
            'variables': sorted(set(names)), 'together': together}


def clash_case(listeners):
    """One host per pair of listeners a host can hold (input_checks.LISTENERS), each a one-node group
    of contract auto that is also a front door and the monitoring host, with the two on one port:
    each line of the refusal must name the host and both variables."""
    names = [listener[0] for listener in listeners]
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    nodes, together = {}, []
    for number, (first, second) in enumerate(pairs):
        host = 'clash-%d' % number
        nodes[host] = {'nim_group': host, 'nim_tensor_parallel': 8, 'nim_pipeline_parallel': 1,
                       'nim_launch_contract': 'auto', first: 30000 + number, second: 30000 + number}
        together.append([host, first, second])
    return {'name': 'every-pair-of-listeners-on-one-port', 'family': 'port clashes', 'nodes': nodes,
            'frontend_nodes': dict((host, {}) for host in nodes), 'monitoring_nodes': sorted(nodes),
            'expect': 'refused', 'variables': sorted(set(names)), 'together': together}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', maxsplit=1)[0])
    parser.add_argument('--repo', default=REPO, help='the checkout whose playbooks run (default: this one)')
    parser.add_argument('--cases', default=os.path.join(REPO, 'tests', 'bad_inputs', 'cases.yml'))
    parser.add_argument('-k', dest='only', default='', help='run only the cases whose name contains this')
    parser.add_argument('-j', dest='jobs', type=int, default=2, help='cases at once (default 2)')
    parser.add_argument('--keep', action='store_true', help='keep the work directory (inventories and logs)')
    args = parser.parse_args()
    with open(args.cases) as handle:
        cases = [c for c in yaml.safe_load(handle) + generated_cases() if args.only in c['name']]
    names = [c['name'] for c in cases]
    if len(set(names)) != len(names):
        sys.exit('test-bad-inputs: case names must be unique')
    for case in cases:
        if case.get('expect') not in ('refused', 'accepted') or not case.get('family') \
                or (case['expect'] == 'refused' and not (case.get('variable') or case.get('variables'))):
            sys.exit('test-bad-inputs: case %s needs a family and expect refused (with variable or variables) or '
                     'accepted' % case['name'])

    workdir = tempfile.mkdtemp(prefix='nimstack-bad-inputs-')
    shim_dir = os.path.join(workdir, 'shim')
    os.makedirs(shim_dir)
    for tool in ('ssh', 'scp', 'sftp'):
        path = os.path.join(shim_dir, tool)
        with open(path, 'w') as handle:
            handle.write(SHIM)
        os.chmod(path, 0o755)

    started = time.time()
    failed = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(run_case, os.path.abspath(args.repo), case, workdir, shim_dir) for case in cases]
        for future in concurrent.futures.as_completed(futures):
            case, problems, seconds = future.result()
            status = 'FAIL' if problems else 'ok'
            details = ''.join('\n       - ' + p for p in problems)
            print('%-4s %-32s %-16s %-8s %5.1f s%s' % (status, case['name'], case['family'], case['expect'], seconds, details))
            sys.stdout.flush()
            if problems:
                failed.append(case['name'])
    seconds = time.time() - started
    refused = sum(1 for c in cases if c['expect'] == 'refused')
    families = len(set(c['family'] for c in cases))
    print('bad-inputs: %d cases (%d refused, %d accepted, %d families): %d passed, %d failed in %.0f s'
          % (len(cases), refused, len(cases) - refused, families, len(cases) - len(failed), len(failed), seconds))
    if args.keep or failed:
        print('bad-inputs: inventories and logs in %s' % workdir)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
