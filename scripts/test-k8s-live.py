#!/usr/bin/env python
"""The live stage of `make test`: the Kubernetes roles against a real API server, as a user runs them.

The cluster is scripts/k8s/cluster.sh's (the real control plane, kwok GPU nodes, the real
LeaderWorkerSet controller once the lws role installs it), or one's own (docs/testing.md). Every
step runs playbooks/deploy_kubernetes.yml as a subprocess and then reads the cluster with kubectl:

  refusals   a group one node short (the fifth node is tainted) and GPUs taken by another pod are
             refused by the capacity check before anything is applied, naming the group
  mpi        LWS installed from its release manifest, two groups Running and Ready, each in one rack;
             pods carry the planned env, args and resources; each Service selects its leader only
  re-run     changed=0 and no pod replaced; --check --diff of a changed setting shows it and
             applies nothing; applied, the change rolls every pod of both groups and the run returns
             on the new pods
  ray, leader_address   the running groups switched contract: new pods, nothing of mpi left
  secrets    the NGC key in no object but Secrets, in no event and not in -vvv output
  teardown   every object the collection made is gone, a LeaderWorkerSet and a ConfigMap of
             someone else's in the same namespace survive, a second teardown is changed=0; LWS
             removed keeps its CRDs and that LeaderWorkerSet
  helm       LWS installed from its chart (a local path) by the lws role alone, a LeaderWorkerSet
             accepted the moment it returns; a group deployed and removed, LWS removed
  finalizer  NIMService and NIMCache carrying the NIM Operator's finalizer, with no operator (the
             NIM Operator cannot be built here: its CRDs are stand-ins of ours): teardown takes the
             finalizer off instead of hanging on it

Numbers go to stdout and build/k8s-live/summary.json.

  scripts/test-k8s-live.py            # against build/k8s/kubeconfig (make k8s-cluster)
  NIMSTACK_LIVE_KUBECONFIG=~/.kube/config NIMSTACK_LIVE_STORAGE_CLASS=rwx [NIMSTACK_LIVE_TOPOLOGY_KEY=rack-label] \
      scripts/test-k8s-live.py        # one's own cluster: stage lws only, in a namespace of its own
"""

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOGS = os.path.join(REPO, 'build', 'k8s-live')
PLAYBOOK = os.path.join(REPO, 'playbooks', 'deploy_kubernetes.yml')
KEY = os.environ.get('NIMSTACK_LIVE_NGC_API_KEY') or 'nvapi-LIVE-' + secrets.token_hex(12)
MANAGED = 'app.kubernetes.io/managed-by=nimstack.multinode'
# One's own cluster (docs/testing.md): its kubeconfig, an RWX storage class, optionally a node label
# with one domain per group; LWS must be installed, and nothing outside the test's namespace changes.
OWN = os.environ.get('NIMSTACK_LIVE_KUBECONFIG', '')
if OWN:
    STATE = LOGS
    KUBECONFIG = os.path.abspath(os.path.expanduser(OWN))
    NS = 'nimstack-live-' + secrets.token_hex(3)
    RACK = os.environ.get('NIMSTACK_LIVE_TOPOLOGY_KEY', '')
    STORAGE_CLASS = os.environ.get('NIMSTACK_LIVE_STORAGE_CLASS', '')
    CACHE = subprocess.run([os.path.join(REPO, 'scripts', 'k8s', 'build.sh')], capture_output=True, text=True,
                           check=True).stdout.strip()
else:
    STATE = os.path.join(REPO, 'build', 'k8s')
    KUBECONFIG = os.path.join(STATE, 'kubeconfig')
    NS = 'nim-live'
    RACK = 'nimstack.test/rack'
    STORAGE_CLASS = 'nimstack-rwx'
    CACHE = open(os.path.join(STATE, 'run', 'cache'), encoding='utf-8').read().strip()
VERSIONS = dict(line.split('=', 1) for line in open(os.path.join(CACHE, 'versions.env'), encoding='utf-8').read().split())
LWS_VERSION = VERSIONS['LWS_VERSION']
BIN = os.path.dirname(sys.executable)  # the virtualenv of make deps: ansible-playbook, kubernetes
PATH = os.pathsep.join([os.path.join(CACHE, 'bin'), BIN, os.environ['PATH']])
# What the playbooks run with: Helm's and client-go's caches in the stage's state directory, never
# in the home directory (Helm writes its discovery cache to ~/.kube/cache unless KUBECACHEDIR says).
TOOL_ENV = dict(ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'), KUBECONFIG=KUBECONFIG, PATH=PATH,
                KUBECACHEDIR=os.path.join(STATE, 'kube-cache'),
                HELM_CACHE_HOME=os.path.join(STATE, 'helm', 'cache'),
                HELM_CONFIG_HOME=os.path.join(STATE, 'helm', 'config'),
                HELM_DATA_HOME=os.path.join(STATE, 'helm', 'data'))
SUMMARY = {'groups_ready': {}, 'seconds_to_ready': {}, 'changed': {}, 'objects_left': {}, 'refused': {}}


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


def say(message):
    print(message, flush=True)


def kubectl(*args, parse=True, check_rc=True, stdin=None):
    cmd = [os.path.join(CACHE, 'bin', 'kubectl'), '--kubeconfig', KUBECONFIG, '--cache-dir',
           os.path.join(STATE, 'cache')] + list(args)
    proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, check=False)
    if check_rc and proc.returncode != 0:
        raise Failure('kubectl %s: %s' % (' '.join(args), proc.stderr.strip()))
    if parse:
        return json.loads(proc.stdout) if proc.stdout.strip() else {}
    return proc


def items(kind, namespace=NS, selector=None):
    args = ['get', kind, '-o', 'json'] + (['-n', namespace] if namespace else ['-A'])
    if selector:
        args += ['-l', selector]
    return kubectl(*args).get('items', [])


def inventory(path, contract, groups, **extra):
    hosts = {}
    for group, size in groups.items():
        for rank in range(size):
            hosts['%s-%d' % (group, rank)] = {'nim_group': group}
    nodes_vars = {
        'nim_deployment_mode': 'kubernetes',
        'nim_image': 'nvcr.io/nim/meta/llama-3.1-70b-instruct',
        'nim_image_tag': '2.0.1' if contract == 'ray' else '1.3.0',
        'nim_model': 'llama-3.1-70b', 'nim_precision': 'bf16',
        'nim_tensor_parallel': 8, 'nim_pipeline_parallel': max(groups.values()), 'nim_gpus_per_node': 8,
        'nim_gpu_memory_gb': 80, 'nim_launch_contract': contract, 'nim_mpi_start_timeout': 3000,
        'nim_network_profile': 'tcp', 'nim_k8s_namespace': NS, 'nim_k8s_replicas': 1,
        'nim_ngc_api_key': "{{ lookup('ansible.builtin.env', 'NGC_API_KEY') }}",
    }
    if contract == 'leader_address':
        nodes_vars['nim_image'] = 'nvcr.io/nim/deepseek-ai/deepseek-r1'
        nodes_vars['nim_image_tag'] = '1.7.3'
        nodes_vars['nim_model'] = 'llama-3.1-70b'
        nodes_vars['nim_socket_ifname'] = 'eth0'
    nodes_vars.update(extra)
    data = {'all': {'children': {
        'nim_nodes': {'hosts': hosts, 'vars': nodes_vars},
        'controller': {'hosts': {'localhost': {'ansible_connection': 'local',
                                               'ansible_python_interpreter': sys.executable}}},
    }}}
    with open(path, 'w', encoding='utf-8') as handle:
        yaml.safe_dump(data, handle)
    return path


class Play:
    """One ansible-playbook run of deploy_kubernetes.yml, its output kept under build/k8s-live."""
    count = 0

    def __init__(self, name, inv, extra=None, args=(), expect_rc=0):
        Play.count += 1
        self.name = name
        extra_vars = {
            'nim_k8s_backend': 'lws', 'lws_install_method': 'file',
            'lws_manifest_file': os.path.join(CACHE, 'share', 'lws', 'manifests.yaml'), 'lws_version': LWS_VERSION,
            'lws_wait_timeout': 120, 'nim_k8s_smoke_test': False, 'nim_k8s_storage_class': STORAGE_CLASS,
            'nim_k8s_storage_size': '1Ti', 'nim_k8s_exclusive_topology': RACK, 'nim_k8s_kubeconfig': KUBECONFIG,
            # Fake pods are Ready at once; a group that is not ready within 2 minutes never will be.
            'nim_k8s_startup_timeout': int(os.environ.get('NIMSTACK_LIVE_STARTUP_TIMEOUT', '120')),
            'lws_kubeconfig': KUBECONFIG, 'nim_operator_kubeconfig': KUBECONFIG,
        }
        if OWN:
            extra_vars['nim_k8s_install_components'] = False  # LWS as the cluster has it
        extra_vars.update(extra or {})
        env = dict(os.environ, NGC_API_KEY=KEY, ANSIBLE_FORCE_COLOR='0', **TOOL_ENV)
        cmd = ['ansible-playbook', '-i', inv, PLAYBOOK, '-e', json.dumps(extra_vars)] + list(args)
        start = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        self.seconds = round(time.monotonic() - start, 1)
        self.output = proc.stdout + proc.stderr
        self.rc = proc.returncode
        self.log = os.path.join(LOGS, '%02d-%s.log' % (Play.count, name))
        with open(self.log, 'w', encoding='utf-8') as handle:
            handle.write(self.output)
        self.changed = sum(int(n) for n in re.findall(r'\bchanged=(\d+)', self.output.split('PLAY RECAP')[-1]))
        if expect_rc is not None and (self.rc == 0) != (expect_rc == 0):
            tail = '\n'.join(self.output.splitlines()[-25:])
            raise Failure('%s: ansible-playbook exited %d (expected %s); %s\n%s'
                          % (name, self.rc, 'success' if expect_rc == 0 else 'failure', self.log, tail))
        say('   %s: rc=%d changed=%d in %.1f s (%s)'
            % (name, self.rc, self.changed, self.seconds, os.path.relpath(self.log, REPO)))


def group_pods(group):
    return items('pods', selector='leaderworkerset.sigs.k8s.io/name=nim-%s' % group)


def uids(groups):
    return {p['metadata']['name']: p['metadata']['uid'] for g in groups for p in group_pods(g)}


def ready(pod):
    return pod['status'].get('phase') == 'Running' and any(
        c['type'] == 'Ready' and c['status'] == 'True' for c in pod['status'].get('conditions', []))


def rendered(inv, extra):
    """The objects the same inventory renders (render-only mode): the plan, as the pods must carry it."""
    root = tempfile.mkdtemp(prefix='render-', dir=LOGS)
    Play('render', inv, dict(extra, nim_k8s_render_dir=root))
    out = {}
    for group in sorted(os.listdir(root)):
        path = os.path.join(root, group, 'LeaderWorkerSet-nim-%s.yaml' % group)
        if os.path.exists(path):
            with open(path, encoding='utf-8') as handle:
                out[group] = yaml.safe_load(handle)
    return out


def check_groups(label, groups, plan):
    """Every group Running and Ready, as planned, in one rack each, its Service on the leader only."""
    racks = {}
    for group in groups:
        pods = group_pods(group)
        check(len(pods) == 2 and all(ready(p) for p in pods),
              '%s: group %s has %d pods, ready: %s' % (label, group, len(pods), [ready(p) for p in pods]))
        template = plan[group]['spec']['leaderWorkerTemplate']
        nodes = kubectl('get', 'nodes', '-o', 'json')['items']
        rack_of = {n['metadata']['name']: n['metadata']['labels'].get(RACK) for n in nodes}
        for pod in pods:
            index = pod['metadata']['labels']['leaderworkerset.sigs.k8s.io/worker-index']
            want = template['leaderTemplate' if index == '0' else 'workerTemplate']['spec']['containers'][0]
            have = pod['spec']['containers'][0]
            have_env = {e['name']: e for e in have.get('env', [])}
            for env in want.get('env', []):
                if 'fieldRef' in env.get('valueFrom', {}):  # the API server defaults its apiVersion
                    env = {'name': env['name'], 'valueFrom': {'fieldRef': dict({'apiVersion': 'v1'}, **env['valueFrom']['fieldRef'])}}
                check(have_env.get(env['name']) == env,
                      '%s: pod %s env %s is %s, planned %s' % (label, pod['metadata']['name'], env['name'],
                                                               have_env.get(env['name']), env))
            check(have.get('args') == want.get('args'), '%s: pod %s args %s, planned %s'
                  % (label, pod['metadata']['name'], have.get('args'), want.get('args')))
            # Requests default to the limits of extended resources such as GPUs.
            requests = dict(want['resources'].get('limits', {}), **want['resources'].get('requests', {}))
            planned = dict(want['resources'], requests=requests)
            check(have['resources'] == planned, '%s: pod %s resources %s, planned %s'
                  % (label, pod['metadata']['name'], have['resources'], planned))
            check(have_env['NIM_LEADER_ROLE']['value'] == ('1' if index == '0' else '0'),
                  '%s: pod %s NIM_LEADER_ROLE wrong' % (label, pod['metadata']['name']))
            if RACK:
                racks.setdefault(group, set()).add(rack_of[pod['spec']['nodeName']])

        def endpoints(name):
            slices = items('endpointslices', selector='kubernetes.io/service-name=%s' % name)
            return sorted(a for s in slices for e in s.get('endpoints') or [] for a in e['addresses'])

        # The API Service reaches the leader alone; LWS's headless Service (the LeaderWorkerSet's
        # name) still covers every pod, so the workers' DNS names in the hostfile resolve.
        service = kubectl('get', 'service', 'nim-%s-api' % group, '-n', NS, '-o', 'json')
        selector = service['spec']['selector']
        selected = [p['metadata']['name'] for p in pods
                    if all(p['metadata']['labels'].get(k) == v for k, v in selector.items())]
        check(selected == ['nim-%s-0' % group], '%s: Service nim-%s-api selects %s, not the leader alone'
              % (label, group, selected))
        leader_ip = next(p['status']['podIP'] for p in pods if p['metadata']['name'] == 'nim-%s-0' % group)
        check(endpoints('nim-%s-api' % group) == [leader_ip], '%s: Service nim-%s-api endpoints %s, leader %s'
              % (label, group, endpoints('nim-%s-api' % group), leader_ip))
        headless = kubectl('get', 'service', 'nim-%s' % group, '-n', NS, '-o', 'json')
        check(headless['spec'].get('clusterIP') == 'None'
              and headless['metadata'].get('ownerReferences', [{}])[0].get('kind') == 'LeaderWorkerSet',
              '%s: Service nim-%s is not the LeaderWorkerSet\'s headless Service: %s' % (label, group, headless['spec']))
        every_ip = sorted(p['status']['podIP'] for p in pods)
        check(endpoints('nim-%s' % group) == every_ip, '%s: headless Service nim-%s covers %s, pods are %s'
              % (label, group, endpoints('nim-%s' % group), every_ip))
    for group, where in racks.items():
        check(len(where) == 1, '%s: group %s spans racks %s' % (label, group, sorted(where)))
    check(len({next(iter(r)) for r in racks.values()}) == len(racks), '%s: two groups share a rack: %s' % (label, racks))
    SUMMARY['groups_ready'][label] = len(groups)
    say('   %s: %d groups Running and Ready (%s), env/args/resources as planned, API Service -> leader only, '
        'LWS headless Service -> every pod, one rack each (%s)'
        % (label, len(groups), ', '.join('%s: %d pods' % (g, len(group_pods(g))) for g in groups),
           ', '.join('%s=%s' % (g, next(iter(r))) for g, r in sorted(racks.items()))))


def ours(namespace=NS):
    """Objects the collection made (its label) in the namespace, by kind/name."""
    kinds = 'leaderworkersets,configmaps,secrets,services,persistentvolumeclaims,pods,statefulsets'
    found = items(kinds, namespace=namespace, selector=MANAGED)
    return sorted('%s/%s' % (o['kind'], o['metadata']['name']) for o in found)


def no_key_anywhere(label, outputs):
    kinds = kubectl('api-resources', '--verbs=list', '-o', 'name', parse=False).stdout.split()
    kinds = [k for k in kinds if k not in ('secrets', 'bindings', 'componentstatuses', 'tokenreviews',
                                           'selfsubjectreviews')]
    dump = kubectl('get', ','.join(kinds), '-A', '-o', 'json', parse=False).stdout
    check(KEY not in dump, '%s: the NGC key is in an object that is not a Secret' % label)
    events = kubectl('get', 'events', '-A', '-o', 'json', parse=False).stdout
    check(KEY not in events, '%s: the NGC key is in an event' % label)
    secret_holders = [s['metadata']['name'] for s in items('secrets') if KEY in json.dumps(s) or
                      any(KEY in __import__('base64').b64decode(v).decode('utf-8', 'replace')
                          for v in (s.get('data') or {}).values())]
    check(secret_holders, '%s: no Secret holds the key at all (the check would prove nothing)' % label)
    for play in outputs:
        check(KEY not in play.output, '%s: the NGC key is in the output of %s (%s)' % (label, play.name, play.log))
    say('   %s: the key is in Secrets %s only: not in %d kinds of object (%d bytes), %d bytes of events, %d runs\' output (-vvv included)'
        % (label, secret_holders, len(kinds), len(dump), len(events), len(outputs)))


def nothing_applied():
    """No namespace of ours, no LWS installed: the run stopped before its first apply."""
    return (kubectl('get', 'namespace', NS, parse=False, check_rc=False).returncode != 0
            and kubectl('get', 'namespace', 'lws-system', parse=False, check_rc=False).returncode != 0)


def stage_refusals(tmp):
    say('== refusals: the capacity check reads the real nodes and pods before anything is applied')
    inv = inventory(os.path.join(tmp, 'five.yml'), 'mpi', {'wide': 5})
    play = Play('refuse-one-node-short', inv, {'nim_k8s_exclusive_topology': ''}, expect_rc=1)
    check("group 'wide'" in play.output, 'refusal does not name the group: %s' % play.log)
    check('gpu-c1' in play.output and 'taint' in play.output, 'refusal does not name the tainted node: %s' % play.log)
    check(nothing_applied(), 'something was applied before the refusal')
    line = next((l for l in play.output.splitlines() if "group 'wide'" in l), '')
    SUMMARY['refused']['one_node_short'] = line.strip()[:300]
    say('   refused: %s' % line.strip()[:240])

    holder = {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': 'gpu-holder', 'namespace': 'default'},
              'spec': {'nodeName': 'gpu-a1', 'tolerations': [{'operator': 'Exists'}],
                       'containers': [{'name': 'c', 'image': 'busy', 'resources': {'limits': {'nvidia.com/gpu': '8'}}}]}}
    kubectl('apply', '-f', '-', stdin=json.dumps(holder), parse=False)
    try:
        inv = inventory(os.path.join(tmp, 'two.yml'), 'mpi', {'alpha': 2, 'beta': 2})
        play = Play('refuse-gpus-taken', inv, expect_rc=1)
        line = next((l for l in play.output.splitlines() if 'gpu-a1' in l), '')
        check('gpu-a1' in play.output, 'refusal does not name the node whose GPUs are taken: %s' % play.log)
        check(nothing_applied(), 'something was applied before the refusal')
        SUMMARY['refused']['gpus_taken'] = line.strip()[:300]
        say('   refused: %s' % line.strip()[:240])
    finally:
        kubectl('delete', 'pod', 'gpu-holder', '-n', 'default', '--wait=true', parse=False)


def stage_lws(tmp):
    plays = []
    groups = ['alpha', 'beta']
    say('== mpi: LWS from its release manifest, two groups')
    inv = inventory(os.path.join(tmp, 'mpi.yml'), 'mpi', {'alpha': 2, 'beta': 2})
    plan = rendered(inv, {})
    play = Play('deploy-mpi', inv)
    plays.append(play)
    SUMMARY['seconds_to_ready']['mpi_first_run'] = play.seconds
    check_groups('mpi', groups, plan)
    before = uids(groups)

    say('== --check --diff of a changed setting: shown, not applied')
    generations = {g: kubectl('get', 'lws', 'nim-%s' % g, '-n', NS, '-o', 'json')['metadata']['generation'] for g in groups}
    play = Play('check-diff-log-level', inv, {'nim_log_level': 'DEBUG'}, args=['--check', '--diff'])
    plays.append(play)
    SUMMARY['changed']['check_diff'] = play.changed
    check(play.changed >= 2, 'check mode reported %d changes for two groups' % play.changed)
    check(re.search(r'^\+.*DEBUG', play.output, re.M), 'the diff does not show the new NIM_LOG_LEVEL: %s' % play.log)
    after = {g: kubectl('get', 'lws', 'nim-%s' % g, '-n', NS, '-o', 'json')['metadata']['generation'] for g in groups}
    check(after == generations and uids(groups) == before, 'check mode applied something')
    say('   diff shows NIM_LOG_LEVEL DEBUG; generations %s unchanged, no pod replaced' % generations)

    # Each switch is a change of the running groups' pod template: the first one also carries
    # the log level the dry run above showed, so it proves that a change is applied too (every
    # pod of both groups replaced, the run returning on the new pods).
    for contract in ('ray', 'leader_address'):
        say('== %s: the running groups switched contract' % contract)
        inv = inventory(os.path.join(tmp, '%s.yml' % contract), contract, {'alpha': 2, 'beta': 2}, nim_log_level='DEBUG')
        plan = rendered(inv, {})
        play = Play('switch-%s' % contract, inv)
        plays.append(play)
        SUMMARY['seconds_to_ready'][contract] = play.seconds
        check_groups(contract, groups, plan)
        left = [o for o in ours() if o.endswith('-mpi-config') or o.endswith('-ssh-pk')]
        check(not left, '%s: objects of the mpi contract are left: %s' % (contract, left))
        say('   nothing of mpi left (hostfile ConfigMaps, SSH key Secrets)')
        if contract == 'ray':
            SUMMARY['seconds_to_ready']['rolling_change'] = play.seconds
            now = uids(groups)
            check(set(now) == set(before) and not set(now.values()) & set(before.values()),
                  'not every pod was replaced: %s -> %s' % (before, now))
            waits = len(re.findall(r'FAILED - RETRYING: .*Wait until it is ready', play.output))
            say('   %d of %d pods replaced, NIM_LOG_LEVEL DEBUG applied; the run waited %d extra looks for the new '
                'pods' % (len(now), len(before), waits))

    # One re-run, after the last switch, at -vvv: a switched deployment converges, nothing
    # restarts, and the most verbose output holds no key (the secrets check below reads it).
    say('== re-run at -vvv: nothing changes, nothing restarts')
    before = uids(groups)
    play = Play('rerun-leader_address-vvv', inv, args=['-vvv'])
    plays.append(play)
    SUMMARY['changed']['rerun'] = play.changed
    check(play.changed == 0, 'the re-run changed %d (%s)' % (play.changed, play.log))
    check(uids(groups) == before, 'the re-run replaced pods')
    say('   pods unchanged: %d UIDs identical' % len(before))

    say('== secrets')
    no_key_anywhere('secrets', plays)

    say('== teardown: ours removed, a LeaderWorkerSet and a ConfigMap of someone else survive')
    foreign = [
        {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'team-config', 'namespace': NS},
         'data': {'owner': 'another team'}},
        {'apiVersion': 'leaderworkerset.x-k8s.io/v1', 'kind': 'LeaderWorkerSet',
         'metadata': {'name': 'team-lws', 'namespace': NS},
         'spec': {'replicas': 1, 'leaderWorkerTemplate': {'size': 1, 'workerTemplate': {'spec': {
             'containers': [{'name': 'c', 'image': 'team/app:1'}]}}}}},
    ]
    for obj in foreign:
        kubectl('apply', '-f', '-', stdin=json.dumps(obj), parse=False)
    inv = os.path.join(tmp, 'leader_address.yml')
    play = Play('teardown', inv, {'nim_k8s_state': 'absent', 'nim_k8s_keep_storage': False})
    left = ours()
    SUMMARY['objects_left']['after_teardown'] = left
    check(not left, 'teardown left objects of ours: %s' % left)
    for obj in foreign:
        kubectl('get', obj['kind'].lower(), obj['metadata']['name'], '-n', NS, parse=False)
    again = Play('teardown-again', inv, {'nim_k8s_state': 'absent', 'nim_k8s_keep_storage': False})
    SUMMARY['changed']['teardown_again'] = again.changed
    check(again.changed == 0, 'a second teardown changed %d' % again.changed)
    say('   %d objects of ours left; team-config and team-lws survive; second teardown changed=0' % len(left))

    if OWN:
        kubectl('delete', 'namespace', NS, '--wait=false', parse=False)
        return
    say('== LWS removed: its CRDs and the LeaderWorkerSet of someone else stay')
    lws_remove(inv)
    kubectl('get', 'crd', 'leaderworkersets.leaderworkerset.x-k8s.io', parse=False)
    kubectl('get', 'leaderworkerset', 'team-lws', '-n', NS, parse=False)
    check(not items('pods', namespace='lws-system'), 'the LWS controller is still there')
    say('   CRD leaderworkersets.leaderworkerset.x-k8s.io and team-lws still there; lws-system empty')


def lws_remove(inv, method='file'):
    """The lws role alone with lws_state=absent, as a user removes LWS."""
    lws_role(inv, {'lws_state': 'absent', 'lws_install_method': method}, 'lws-absent-%s' % method)


def lws_role(inv, settings, name):
    """The lws role alone, as a user installs or removes LWS without deploying anything."""
    play_path = os.path.join(LOGS, 'lws-only.yml')
    with open(play_path, 'w', encoding='utf-8') as handle:
        handle.write('- hosts: localhost\n  gather_facts: false\n  roles:\n    - nimstack.multinode.lws\n')
    env = dict(os.environ, **TOOL_ENV)
    extra = dict({'lws_version': LWS_VERSION, 'lws_wait_timeout': 120,
                  'lws_manifest_file': os.path.join(CACHE, 'share', 'lws', 'manifests.yaml')}, **settings)
    start = time.monotonic()
    proc = subprocess.run(['ansible-playbook', '-i', inv, play_path, '-e', json.dumps(extra)],
                          capture_output=True, text=True, env=env, check=False)
    log = os.path.join(LOGS, '%s.log' % name)
    with open(log, 'w', encoding='utf-8') as handle:
        handle.write(proc.stdout + proc.stderr)
    check(proc.returncode == 0, '%s failed: %s' % (name, log))
    say('   %s: rc=0 in %.1f s' % (name, time.monotonic() - start))
    return proc.stdout


def stage_helm(tmp):
    say('== helm: LWS from its chart (a local path), one leader_address group, then all removed')
    chart = os.path.join(CACHE, 'share', 'lws', 'lws-chart-%s.tgz' % LWS_VERSION)
    inv = inventory(os.path.join(tmp, 'helm.yml'), 'leader_address', {'gamma': 2})
    plan = rendered(inv, {'lws_install_method': 'helm', 'lws_helm_chart_path': chart})
    # The role's wait ends when LWS accepts LeaderWorkerSets: one applied the moment it returns
    # goes through the webhooks (the controller pod is Ready before they serve).
    output = lws_role(inv, {'lws_install_method': 'helm', 'lws_helm_chart_path': chart}, 'lws-helm-install')
    probe = {'apiVersion': 'leaderworkerset.x-k8s.io/v1', 'kind': 'LeaderWorkerSet',
             'metadata': {'name': 'right-after-install', 'namespace': 'default'},
             'spec': {'replicas': 1, 'leaderWorkerTemplate': {'size': 2, 'workerTemplate': {'spec': {
                 'containers': [{'name': 'c', 'image': 'team/app:1'}]}}}}}
    created = kubectl('apply', '-f', '-', stdin=json.dumps(probe), parse=False, check_rc=False)
    check(created.returncode == 0, 'a LeaderWorkerSet applied right after the lws role returned was refused: %s'
          % created.stderr.strip())
    retries = len(re.findall(r'FAILED - RETRYING: .*webhooks answer', output))
    say('   a LeaderWorkerSet applied the moment the role returned was accepted (the role waited %d extra looks '
        'for the webhooks)' % retries)
    kubectl('delete', 'leaderworkerset', 'right-after-install', '-n', 'default', parse=False)
    play = Play('deploy-helm', inv, {'lws_install_method': 'helm', 'lws_helm_chart_path': chart})
    SUMMARY['seconds_to_ready']['helm_leader_address'] = play.seconds
    check_groups('helm', ['gamma'], plan)
    again = Play('rerun-helm', inv, {'lws_install_method': 'helm', 'lws_helm_chart_path': chart})
    check(again.changed == 0, 'helm re-run changed %d' % again.changed)
    Play('teardown-helm', inv, {'nim_k8s_state': 'absent', 'nim_k8s_keep_storage': False})
    check(not ours(), 'helm teardown left %s' % ours())
    lws_remove(inv, method='helm')
    kubectl('get', 'crd', 'leaderworkersets.leaderworkerset.x-k8s.io', parse=False)


def stage_finalizer(tmp):
    say('== finalizer: NIMService and NIMCache with the operator\'s finalizer and no operator')
    crds = []
    for kind, plural in (('NIMService', 'nimservices'), ('NIMCache', 'nimcaches')):
        crds.append({
            'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition',
            'metadata': {'name': '%s.apps.nvidia.com' % plural, 'labels': {'nimstack.test/stand-in': 'true'}},
            'spec': {'group': 'apps.nvidia.com', 'scope': 'Namespaced',
                     'names': {'kind': kind, 'plural': plural, 'singular': kind.lower(), 'listKind': kind + 'List'},
                     'versions': [{'name': 'v1alpha1', 'served': True, 'storage': True,
                                   'subresources': {'status': {}},
                                   'schema': {'openAPIV3Schema': {'type': 'object',
                                                                  'x-kubernetes-preserve-unknown-fields': True}}}]}})
    for crd in crds:
        kubectl('apply', '-f', '-', stdin=json.dumps(crd), parse=False)
    kubectl('wait', '--for=condition=Established', 'crd/nimservices.apps.nvidia.com', 'crd/nimcaches.apps.nvidia.com',
            '--timeout=60s', parse=False)
    try:
        inv = inventory(os.path.join(tmp, 'operator.yml'), 'mpi', {'delta': 2})
        extra = {'nim_k8s_backend': 'nim_operator', 'nim_k8s_storage': 'nimcache', 'nim_k8s_install_components': False,
                 'nim_k8s_wait': False}
        Play('deploy-operator-objects', inv, extra)
        for kind in ('nimservice', 'nimcache'):
            kubectl('patch', kind, 'nim-delta', '-n', NS, '--type=merge', '-p',
                    json.dumps({'metadata': {'finalizers': ['finalizer.%s.apps.nvidia.com' % kind]}}), parse=False)
        start = time.monotonic()
        Play('teardown-operator-objects', inv, dict(extra, nim_k8s_state='absent', nim_k8s_keep_storage=False))
        seconds = round(time.monotonic() - start, 1)
        left = [o['metadata']['name'] for k in ('nimservices', 'nimcaches') for o in items(k)]
        check(not left, 'NIMService/NIMCache left hanging: %s' % left)
        say('   teardown returned in %.1f s with no operator; NIMService and NIMCache gone' % seconds)
        SUMMARY['seconds_to_ready']['finalizer_teardown'] = seconds
    finally:
        for crd in crds:
            kubectl('delete', 'crd', crd['metadata']['name'], '--wait=true', parse=False, check_rc=False)


def main():
    os.makedirs(LOGS, exist_ok=True)
    for name in os.listdir(LOGS):
        path = os.path.join(LOGS, name)
        if os.path.isdir(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    start = time.monotonic()
    tmp = tempfile.mkdtemp(prefix='inv-', dir=LOGS)
    # On one's own cluster only what stays inside the test's namespace: no refusal scenario built on
    # this cluster's five nodes, no LWS (un)install, no stand-in CRDs.
    stages = [stage_lws] if OWN else [stage_refusals, stage_lws, stage_helm, stage_finalizer]
    if OWN:
        check(STORAGE_CLASS, 'NIMSTACK_LIVE_STORAGE_CLASS must name a ReadWriteMany storage class of the cluster')
        kubectl('get', 'crd', 'leaderworkersets.leaderworkerset.x-k8s.io', parse=False)
        say('== against %s, namespace %s, storage class %s, topology key %s'
            % (KUBECONFIG, NS, STORAGE_CLASS, RACK or '(none)'))
    only = os.environ.get('LIVE_ONLY')
    failed = []
    for stage in stages:
        if only and stage.__name__ not in only.split(','):
            continue
        t = time.monotonic()
        try:
            stage(tmp)
            say('== %s passed in %.0f s' % (stage.__name__, time.monotonic() - t))
        except Failure as error:
            say('== %s FAILED: %s' % (stage.__name__, error))
            failed.append(stage.__name__)
            break
    SUMMARY['seconds'] = round(time.monotonic() - start, 1)
    SUMMARY['playbook_runs'] = Play.count
    with open(os.path.join(LOGS, 'summary.json'), 'w', encoding='utf-8') as handle:
        json.dump(SUMMARY, handle, indent=2, sort_keys=True)
    print(json.dumps(SUMMARY, indent=2, sort_keys=True))
    if failed:
        sys.exit('test-k8s-live: FAILED: %s' % ', '.join(failed))
    say('test-k8s-live: every stage passed in %.0f s, %d playbook runs' % (SUMMARY['seconds'], Play.count))


if __name__ == '__main__':
    main()
