#!/usr/bin/env python
"""The live stage of `make test`: the Kubernetes roles against a real API server, as a user runs them.

The cluster is tests/cluster/cluster.sh's (the real control plane, kwok GPU nodes, the real
LeaderWorkerSet controller and NIM Operator once the roles install them), or one's own
(docs/testing.md). Every
step runs playbooks/deploy_kubernetes.yml as a subprocess and then reads the cluster with kubectl:

  refusals   a group one node short (the fifth node is tainted) and GPUs taken by another pod are
             refused by the capacity check before anything is applied, naming the group; a group
             whose claim names a storage class the cluster lacks fails its readiness wait within
             2 minutes of a budget of 80 minutes, naming the claim, the class and the scheduler's message
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
  finalizer  NIMService and NIMCache carrying the NIM Operator's finalizer, with no operator (CRDs
             of ours stand in): teardown takes the finalizer off instead of hanging on it
  operator   the real NIM Operator, installed with LWS from an offline bundle (playbooks/bundle.yml made
             it twice, the second fetching nothing; a bundle without the chart is refused, naming it)
             with its webhooks on, under mpi and ray, two groups each: the NIMCache's caching Job completes (its profile picked from the
             model manifest the stand-in image prints) and the NIMCache is Ready before the
             NIMService is applied; the NIMService Ready, the operator's LeaderWorkerSet of size
             pipeline, its pods Ready, one rack per group; contract fidelity (each pod against its
             rank on the Docker path, every difference named in docs/contracts.md); re-run
             changed=0 with the same pods; --check --diff of a change applies nothing, the change
             rolls every pod and the run returns on the new ones (mpi); the key in Secrets only;
             teardown with the operator running (its finalizers honoured) spares a NIMService, a
             LeaderWorkerSet and a ConfigMap of someone else's, keeps the CRDs, and again changes
             nothing

A controller tests/cluster/build.sh was given no source for (LWS v0.10.0, the NIM Operator) is not in
the cluster: the stages that need it are reported as not run, by name, with the reason.

Numbers go to stdout and build/k8s-live/summary.json.

  tests/e2e/test-k8s-live.py            # against build/k8s/kubeconfig (make k8s-cluster)
  NIMSTACK_LIVE_KUBECONFIG=~/.kube/config NIMSTACK_LIVE_STORAGE_CLASS=rwx [NIMSTACK_LIVE_TOPOLOGY_KEY=rack-label] \
      tests/e2e/test-k8s-live.py        # one's own cluster: stage lws only, in a namespace of its own
"""

import functools
import http.server
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# NIMSTACK_LIVE_LOGS and NIMSTACK_K8S_STATE place a second run beside the first, on a cluster of its own.
LOGS = os.environ.get('NIMSTACK_LIVE_LOGS') or os.path.join(REPO, 'build', 'k8s-live')
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
    CACHE = subprocess.run([os.path.join(REPO, 'tests', 'cluster', 'build.sh')], capture_output=True, text=True,
                           check=True).stdout.strip()
else:
    STATE = os.environ.get('NIMSTACK_K8S_STATE') or os.path.join(REPO, 'build', 'k8s')
    KUBECONFIG = os.path.join(STATE, 'kubeconfig')
    NS = 'nim-live'
    RACK = 'nimstack.test/rack'
    STORAGE_CLASS = 'nimstack-rwx'
    CACHE = open(os.path.join(STATE, 'run', 'cache'), encoding='utf-8').read().strip()
VERSIONS = dict(line.split('=', 1) for line in open(os.path.join(CACHE, 'versions.env'), encoding='utf-8').read().split())
LWS_VERSION = VERSIONS.get('LWS_VERSION', '')
OPERATOR_VERSION = VERSIONS.get('NIM_OPERATOR_VERSION', '')
BIN = os.path.dirname(sys.executable)  # the virtualenv of make deps: ansible-playbook, kubernetes
PATH = os.pathsep.join([os.path.join(CACHE, 'bin'), BIN, os.environ['PATH']])
# What the playbooks run with: Helm's and client-go's caches in the stage's state directory, never
# in the home directory (Helm writes its discovery cache to ~/.kube/cache unless KUBECACHEDIR says).
TOOL_ENV = dict(ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'), KUBECONFIG=KUBECONFIG, PATH=PATH,
                KUBECACHEDIR=os.path.join(STATE, 'kube-cache'),
                HELM_CACHE_HOME=os.path.join(STATE, 'helm', 'cache'),
                HELM_CONFIG_HOME=os.path.join(STATE, 'helm', 'config'),
                HELM_DATA_HOME=os.path.join(STATE, 'helm', 'data'))
SUMMARY = {'groups_ready': {}, 'seconds_to_ready': {}, 'changed': {}, 'objects_left': {}, 'refused': {},
           'pods_replaced': {}, 'not_run': {}, 'contract_fidelity': {}}


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


# The runs after a stage's first deploy and its re-run change groups only: they leave LWS and the
# NIM Operator as those two runs installed and proved converged (on a cluster of one's own, every
# run does so). Each of them is spared the components' applies and waits, about 15 s of a 40 s run.
INSTALLED = {'nim_k8s_install_components': False}


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
            extra_vars.update(INSTALLED)  # LWS as the cluster has it
        extra_vars.update(extra or {})
        # The cluster reaches the playbook only through the roles' kubeconfig variables: with no
        # KUBECONFIG in its environment, on a machine without ~/.kube/config (the test cluster's), a
        # task that ignored them fails.
        env = dict(os.environ, NGC_API_KEY=KEY, ANSIBLE_FORCE_COLOR='0', **TOOL_ENV)
        del env['KUBECONFIG']
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


# Objects of someone else's in the test's namespace, which no teardown of ours may touch.
FOREIGN = [
    {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'team-config', 'namespace': NS},
     'data': {'owner': 'another team'}},
    {'apiVersion': 'leaderworkerset.x-k8s.io/v1', 'kind': 'LeaderWorkerSet',
     'metadata': {'name': 'team-lws', 'namespace': NS},
     'spec': {'replicas': 1, 'leaderWorkerTemplate': {'size': 1, 'workerTemplate': {'spec': {
         'containers': [{'name': 'c', 'image': 'team/app:1'}]}}}}},
]


# A PrometheusRule of someone else's in the same namespace (where the Prometheus Operator's CRDs are served).
FOREIGN_MONITORING = [
    {'apiVersion': 'monitoring.coreos.com/v1', 'kind': 'PrometheusRule', 'metadata': {'name': 'team-rules', 'namespace': NS},
     'spec': {'groups': [{'name': 'team', 'rules': [{'alert': 'TeamDown', 'expr': 'up{job="team"} == 0'}]}]}},
]


def group_pods(group):
    return items('pods', selector='leaderworkerset.sigs.k8s.io/name=nim-%s' % group)


def uids(groups):
    return {p['metadata']['name']: p['metadata']['uid'] for g in groups for p in group_pods(g)}


def uids_of(found, group):
    """The part of uids() that is one group's pods (named after its LeaderWorkerSet, nim-<group>)."""
    return {name: uid for name, uid in found.items() if name.startswith('nim-%s-' % group)}


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


def snapshot():
    """The test namespace in a few lines: each pod's node, phase, readiness and restarts, each
    workload's state."""
    lines = []
    for kind in ('pods', 'leaderworkersets', 'nimcaches', 'nimservices'):
        try:
            found = items(kind)
        except Failure as error:
            lines.append('no %s: %s' % (kind, str(error)[:100]))
            continue
        for obj in found:
            status = obj.get('status') or {}
            if kind == 'pods':
                restarts = sum(c.get('restartCount', 0) for c in status.get('containerStatuses') or [])
                lines.append('Pod %s on %s: %s, ready %s, restarts %d%s' % (
                    obj['metadata']['name'], obj['spec'].get('nodeName', '-'), status.get('phase'), ready(obj),
                    restarts, ', deleting' if obj['metadata'].get('deletionTimestamp') else ''))
            else:
                lines.append('%s %s: state %s, conditions %s' % (
                    obj['kind'], obj['metadata']['name'], status.get('state', '-'),
                    ', '.join('%s=%s' % (c['type'], c['status']) for c in status.get('conditions') or [])))
    return lines[:30]


def check_racks(label, racks):
    """Each group in one rack ({group: racks of its pods}), no two groups in the same one."""
    for group, where in racks.items():
        check(len(where) == 1, '%s: group %s spans racks %s' % (label, group, sorted(where)))
    check(len({next(iter(r)) for r in racks.values()}) == len(racks), '%s: two groups share a rack: %s' % (label, racks))


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
    check_racks(label, racks)
    SUMMARY['groups_ready'][label] = len(groups)
    say('   %s: %d groups Running and Ready (%s), env/args/resources as planned, API Service -> leader only, '
        'LWS headless Service -> every pod, one rack each (%s)'
        % (label, len(groups), ', '.join('%s: %d pods' % (g, len(group_pods(g))) for g in groups),
           ', '.join('%s=%s' % (g, next(iter(r))) for g, r in sorted(racks.items()))))


def ours(namespace=NS):
    """Objects the collection made (its label) in the namespace, by kind/name."""
    kinds = 'leaderworkersets,configmaps,secrets,services,persistentvolumeclaims,pods,statefulsets'
    if monitoring_served():
        kinds += ',podmonitors,prometheusrules'
    found = items(kinds, namespace=namespace, selector=MANAGED)
    return sorted('%s/%s' % (o['kind'], o['metadata']['name']) for o in found)


MONITORING_CRDS = ('podmonitors.monitoring.coreos.com', 'prometheusrules.monitoring.coreos.com')
# What the role says when the cluster has no Prometheus Operator CRDs (roles/nim_k8s/tasks/preflight.yml).
MONITORING_SKIPPED = ('nim_k8s_monitoring: the cluster has no CRD %s (the Prometheus Operator\'s, '
                      'monitoring.coreos.com/v1)' % ', '.join(MONITORING_CRDS))


def monitoring_served():
    return all(kubectl('get', 'crd', crd, parse=False, check_rc=False).returncode == 0 for crd in MONITORING_CRDS)


def install_monitoring_crds():
    """The Prometheus Operator's CRDs, from the cluster build's cache (tests/cluster/build.sh,
    share/crds, keyed by its version): what a cluster with a Prometheus Operator serves."""
    t = time.monotonic()
    for name in sorted(os.listdir(os.path.join(CACHE, 'share', 'crds'))):
        if name.startswith('monitoring.coreos.com_'):
            kubectl('apply', '--server-side', '-f', os.path.join(CACHE, 'share', 'crds', name), parse=False)
    kubectl('wait', '--for=condition=Established', '--timeout=60s', *['crd/' + c for c in MONITORING_CRDS], parse=False)
    return time.monotonic() - t


def check_monitoring(label, groups, lws_name, play):
    """Each group's PodMonitor selects its leader pod alone (worker index 0 of the LeaderWorkerSet that
    runs it) and relabels the contract's labels in; one PrometheusRule holds the nine alerts; the run
    did not say it skipped them."""
    check('nim_k8s_monitoring: the cluster has no CRD' not in play.output, '%s: the run skipped monitoring: %s' % (label, play.log))
    for group in groups:
        monitor = kubectl('get', 'podmonitor', 'nim-%s-metrics' % group, '-n', NS, '-o', 'json')
        selector = monitor['spec']['selector']['matchLabels']
        pods = items('pods', selector='leaderworkerset.sigs.k8s.io/name=%s' % lws_name(group))
        selected = sorted(p['metadata']['name'] for p in pods
                          if all(p['metadata']['labels'].get(k) == v for k, v in selector.items()))
        check(len(pods) == 2 and selected == ['%s-0' % lws_name(group)],
              '%s: PodMonitor nim-%s-metrics selects %s of %s' % (label, group, selected, [p['metadata']['name'] for p in pods]))
        endpoint = monitor['spec']['podMetricsEndpoints'][0]
        relabelled = {r['targetLabel']: r.get('replacement') for r in endpoint['relabelings']}
        check(relabelled.get('job') == 'nim' and relabelled.get('group') == group and relabelled.get('role') == 'leader'
              and endpoint['path'] == '/v1/metrics' and endpoint['port'] == 'api'
              and monitor['metadata']['labels'].get('app.kubernetes.io/managed-by') == 'nimstack.multinode',
              '%s: PodMonitor nim-%s-metrics %s' % (label, group, monitor))
    rules = items('prometheusrules', selector=MANAGED)
    alerts = sorted(r['alert'] for rule in rules for g in rule['spec']['groups'] for r in g['rules'])
    check(len(rules) == 1 and len(alerts) == 9, '%s: PrometheusRules of ours %s with alerts %s'
          % (label, [r['metadata']['name'] for r in rules], alerts))
    SUMMARY.setdefault('monitoring', {})[label] = {'podmonitors': len(groups), 'alerts': len(alerts)}
    say('   %s: PodMonitor per group selecting its leader alone (%s), job nim with group/model/rank/role; '
        'PrometheusRule %s with %d alerts' % (label, ', '.join('%s-0' % lws_name(g) for g in groups),
                                              rules[0]['metadata']['name'], len(alerts)))


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
    if LWS_VERSION:
        unbindable_claim(tmp)
    else:
        SUMMARY['not_run']['unbindable_claim'] = 'LWS not built (NIMSTACK_LWS_SRC)'


def unbindable_claim(tmp):
    """A group whose claim names a storage class the cluster does not have: the readiness wait stops
    on it long before the start-up budget (the MPI start timeout plus 1,800 s), naming the claim, the
    class and the scheduler's message. What the run applied (its namespace, and LWS from its release
    manifest, CRDs included) is then deleted with kubectl, faster than two more playbook runs would:
    the stages after this one find a cluster that never had LWS."""
    say('== a claim that cannot bind: the wait stops early and says why')
    missing = 'nimstack-missing-class'
    inv = inventory(os.path.join(tmp, 'unbindable.yml'), 'mpi', {'delta': 2})
    try:
        play = Play('refuse-unbindable-claim', inv, {'nim_k8s_storage_class': missing, 'nim_k8s_startup_timeout': 0},
                    expect_rc=1)
        joined = ' '.join(play.output.split())
        stopped = re.search(r'Group delta \(LeaderWorkerSet %s/nim-delta\) cannot become ready, so the wait stopped '
                            r'after (\d+) s of its (\d+) s: (.*?) What the last look found' % NS, joined)
        check(stopped, 'the wait did not stop as hopeless: %s' % play.log)
        waited, budget, reason = int(stopped.group(1)), int(stopped.group(2)), stopped.group(3)
        check(waited < 120 and budget >= 3000, 'the wait stopped after %d s of %d s' % (waited, budget))
        for words in ('claim nim-delta-model-store names storage class %s, which the cluster does not have' % missing,
                      'the scheduler: 0/', 'pod has unbound immediate PersistentVolumeClaims'):
            check(words in reason, 'the failure does not say %r: %s' % (words, reason))
        SUMMARY['refused']['unbindable_claim'] = {'waited_s': waited, 'budget_s': budget, 'run_s': play.seconds,
                                                  'reason': reason[:400]}
        say('   stopped after %d s of its %d s: %s' % (waited, budget, reason[:300]))
    finally:
        t = time.monotonic()
        kubectl('delete', 'namespace', NS, '--ignore-not-found', '--wait=true', '--timeout=120s', parse=False)
        kubectl('delete', '--ignore-not-found', '--wait=true', '--timeout=120s', '-f',
                os.path.join(CACHE, 'share', 'lws', 'manifests.yaml'), parse=False)
        say('   namespace %s and LWS (its manifest, CRDs included) deleted in %.1f s' % (NS, time.monotonic() - t))
    left = kubectl('get', 'crd', '-o', 'name', parse=False).stdout.split()
    check(nothing_applied() and not [c for c in left if 'leaderworkerset' in c or 'disaggregatedset' in c],
          'the scenario left its namespace, lws-system or an LWS CRD: %s' % left)


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
    if not monitoring_served():
        # No Prometheus Operator: the run names the CRDs it lacks and what it skipped, and goes on.
        line = next((l for l in play.output.splitlines() if 'nim_k8s_monitoring: the cluster has no CRD' in l), '')
        # The output callback folds long messages: read it with its whitespace joined.
        joined = ' '.join(play.output.split())
        check(MONITORING_SKIPPED in joined and 'skipped and the deployment goes on' in joined
              and joined.count(MONITORING_SKIPPED) == 1,
              'mpi: not one message about the missing monitoring CRDs: %s' % play.log)
        SUMMARY.setdefault('monitoring', {})['skipped_without_crds'] = line.strip()[:300]
        say('   without the Prometheus Operator\'s CRDs: %s' % line.strip().strip('"')[:200])
    before = uids(groups)

    say('== --check --diff of a changed setting: shown, not applied')
    generations = {g: kubectl('get', 'lws', 'nim-%s' % g, '-n', NS, '-o', 'json')['metadata']['generation'] for g in groups}
    play = Play('check-diff-log-level', inv, dict(INSTALLED, nim_log_level='DEBUG'), args=['--check', '--diff'])
    plays.append(play)
    SUMMARY['changed']['check_diff'] = play.changed
    check(play.changed >= 2, 'check mode reported %d changes for two groups' % play.changed)
    check(re.search(r'^\+.*DEBUG', play.output, re.M), 'the diff does not show the new NIM_LOG_LEVEL: %s' % play.log)
    after = {g: kubectl('get', 'lws', 'nim-%s' % g, '-n', NS, '-o', 'json')['metadata']['generation'] for g in groups}
    check(after == generations and uids(groups) == before, 'check mode applied something')
    say('   diff shows NIM_LOG_LEVEL DEBUG; generations %s unchanged, no pod replaced' % generations)

    # A limit to one group's hosts (they are never contacted: they name the group) deploys that
    # group alone, as the whole run would; the other group is not touched.
    say('== --limit to one of the two groups: it changes, the other is left alone')
    play = Play('limit-alpha-log-level', inv, dict(INSTALLED, nim_log_level='DEBUG'), args=['--limit', 'alpha-*'])
    plays.append(play)
    SUMMARY['changed']['limit_alpha'] = play.changed
    after = {g: kubectl('get', 'lws', 'nim-%s' % g, '-n', NS, '-o', 'json') for g in groups}
    alpha_env = json.dumps(after['alpha']['spec'])
    check('{"name": "NIM_LOG_LEVEL", "value": "DEBUG"}' in alpha_env,
          'the limited run did not apply NIM_LOG_LEVEL DEBUG to alpha: %s' % play.log)
    check(after['beta']['metadata']['generation'] == generations['beta'] and uids(['beta']) == uids_of(before, 'beta'),
          'the run limited to alpha changed beta: %s' % play.log)
    replaced = uids(['alpha'])
    check(not set(replaced.values()) & set(uids_of(before, 'alpha').values()),
          'alpha\'s pods were not replaced: %s' % play.log)
    say('   alpha: NIM_LOG_LEVEL DEBUG, %d pods replaced; beta: generation %s, %d pods unchanged'
        % (len(replaced), generations['beta'], len(uids(['beta']))))
    before = uids(groups)

    # Each switch is a change of the running groups' pod template: the first one also carries
    # the log level the dry run above showed, so it proves that a change is applied too (every
    # pod of both groups replaced, the run returning on the new pods).
    for contract in ('ray', 'leader_address'):
        if contract == 'leader_address' and not OWN:
            # From here on the cluster serves the Prometheus Operator's CRDs: the next run makes the
            # monitoring objects, the re-run below leaves them alone, the teardown removes them.
            seconds = install_monitoring_crds()
            SUMMARY['seconds_to_ready']['monitoring_crds'] = round(seconds, 1)
            say('== the Prometheus Operator\'s CRDs installed (%.1f s)' % seconds)
        say('== %s: the running groups switched contract' % contract)
        inv = inventory(os.path.join(tmp, '%s.yml' % contract), contract, {'alpha': 2, 'beta': 2}, nim_log_level='DEBUG')
        plan = rendered(inv, {})
        play = Play('switch-%s' % contract, inv, INSTALLED)
        plays.append(play)
        SUMMARY['seconds_to_ready'][contract] = play.seconds
        check_groups(contract, groups, plan)
        if monitoring_served():
            check_monitoring(contract, groups, lambda group: 'nim-%s' % group, play)
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
    foreign = FOREIGN + (FOREIGN_MONITORING if monitoring_served() else [])
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
    say('   %d objects of ours left; %s survive; second teardown changed=0'
        % (len(left), ', '.join(o['metadata']['name'] for o in foreign)))

    if OWN:
        return
    say('== LWS removed: its CRDs and the LeaderWorkerSet of someone else stay')
    lws_remove(inv)
    kubectl('get', 'crd', 'leaderworkersets.leaderworkerset.x-k8s.io', parse=False)
    kubectl('get', 'leaderworkerset', 'team-lws', '-n', NS, parse=False)
    check(not items('pods', namespace='lws-system'), 'the LWS controller is still there')
    say('   CRD leaderworkersets.leaderworkerset.x-k8s.io and team-lws still there; lws-system empty')
    # Someone else's objects have made their point: gone, so that the stages after this one find the
    # cluster as they would alone (a pod of team-lws would keep exclusive-topology groups off its rack).
    for obj in foreign:
        kubectl('delete', obj['kind'].lower(), obj['metadata']['name'], '-n', NS, '--wait=true', '--timeout=120s',
                parse=False)


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
        for kind, name in (('nimservice', 'nim-delta'), ('nimcache', group_caches('delta')[0]['metadata']['name'])):
            kubectl('patch', kind, name, '-n', NS, '--type=merge', '-p',
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


OPERATOR_NS = 'nim-operator'
OPERATOR_TLS = 'nim-operator-webhook-tls'
OPERATOR_SERVICE = 'nim-operator-k8s-nim-operator-webhook-service'  # the chart's fullname for release nim-operator


def operator_extra():
    """The settings that install the NIM Operator from the chart build.sh packaged from its tree, with
    its admission webhooks on and served with a certificate of the site's (the test CA's)."""
    with open(os.path.join(STATE, 'pki', 'ca.crt'), 'rb') as handle:
        ca_bundle = __import__('base64').b64encode(handle.read()).decode()
    return {
        'nim_k8s_backend': 'nim_operator', 'nim_k8s_storage': 'nimcache',
        'nim_operator_helm_chart_file': os.path.join(CACHE, 'share', 'nim-operator',
                                                     'k8s-nim-operator-chart-%s.tgz' % OPERATOR_VERSION),
        'nim_operator_version': OPERATOR_VERSION, 'nim_operator_namespace': OPERATOR_NS,
        'nim_operator_wait_timeout': 180,
        'nim_operator_helm_values': {'operator': {'admissionController': {'enabled': True, 'tls': {
            'mode': 'secret', 'secret': {'name': OPERATOR_TLS, 'caBundle': ca_bundle}}}}},
    }


def operator_tls():
    """The webhook's serving certificate, as a site provides it (the chart's tls.mode secret)."""
    pki = os.path.join(STATE, 'pki')
    work = tempfile.mkdtemp(prefix='tls-', dir=LOGS)
    names = ['%s.%s.svc' % (OPERATOR_SERVICE, OPERATOR_NS), '%s.%s.svc.cluster.local' % (OPERATOR_SERVICE, OPERATOR_NS)]
    ext = os.path.join(work, 'ext')
    with open(ext, 'w', encoding='utf-8') as handle:
        handle.write('basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\nsubjectAltName=%s\n'
                     % ','.join('DNS:' + n for n in names))

    def run(*cmd):
        subprocess.run(cmd, check=True, capture_output=True)

    run('openssl', 'req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=' + names[0], '-keyout',
        os.path.join(work, 'tls.key'), '-out', os.path.join(work, 'tls.csr'))
    run('openssl', 'x509', '-req', '-in', os.path.join(work, 'tls.csr'), '-CA', os.path.join(pki, 'ca.crt'),
        '-CAkey', os.path.join(pki, 'ca.key'), '-CAcreateserial', '-CAserial', os.path.join(work, 'ca.srl'),
        '-days', '30', '-extfile', ext, '-out', os.path.join(work, 'tls.crt'))
    if kubectl('get', 'namespace', OPERATOR_NS, parse=False, check_rc=False).returncode != 0:
        kubectl('create', 'namespace', OPERATOR_NS, parse=False)
    kubectl('create', 'secret', 'tls', OPERATOR_TLS, '-n', OPERATOR_NS, '--cert', os.path.join(work, 'tls.crt'),
            '--key', os.path.join(work, 'tls.key'), parse=False)
    shutil.rmtree(work)


def standin_manifest(image, tensor, pipeline):
    """What the NIM image's model-manifest container prints (the operator reads it from the pod's log
    to pick the profiles its NIMCache downloads): a profile for the group's layout, one that must not
    be picked, in the manifest format of NIM 1.x images (schema v1: profile id -> model, tags)."""
    model, release = image.split('/', 2)[-1].rsplit(':', 1)
    profiles = {}
    for tp, pp, precision in ((tensor, pipeline, 'bf16'), (tensor // 2, pipeline * 2, 'fp8')):
        profiles['standin-tp%d-pp%d-%s' % (tp, pp, precision)] = {
            'model': model, 'release': release,
            'tags': {'feat_lora': 'false', 'gpu': 'H100', 'llm_engine': 'tensorrt_llm', 'pp': str(pp),
                     'precision': precision, 'profile': 'throughput', 'tp': str(tp)}}
    directory = os.path.join(STATE, 'container-logs')
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, image.replace('/', '_').replace(':', '_')), 'w', encoding='utf-8') as handle:
        yaml.safe_dump(profiles, handle)
    return 'standin-tp%d-pp%d-bf16' % (tensor, pipeline)


OPERATOR_GROUPS = {'mpi': ('epsilon', 'zeta'), 'ray': ('eta', 'theta')}
OPERATOR_IMAGES = {'mpi': 'nvcr.io/nim/meta/llama-3.1-70b-instruct:1.3.0', 'ray': 'nvcr.io/nim/meta/llama-3.1-70b-instruct:2.0.1'}


def operator_pods(group):
    return items('pods', selector='leaderworkerset.sigs.k8s.io/name=nim-%s-lws' % group)


def group_caches(group):
    """The NIMCaches of a group (one per image it ran, named after the image)."""
    return items('nimcaches', selector='nimstack.multinode/group=%s' % group)


def operator_uids(groups):
    return {p['metadata']['name']: p['metadata']['uid'] for g in groups for p in operator_pods(g)}


def docker_plan(contract, groups, extra):
    """What the planner gives every rank of the same groups on the Docker path (the same inventory
    settings with nim_deployment_mode docker): the reference the operator's pods are compared with."""
    sys.path.insert(0, os.path.join(REPO, 'build', 'collections'))
    from ansible_collections.nimstack.multinode.plugins.module_utils import nim_plan  # pylint: disable=import-outside-toplevel
    path = inventory(os.path.join(LOGS, 'docker-plan.yml'), contract, {g: 2 for g in groups}, **extra)
    with open(path, encoding='utf-8') as handle:
        data = yaml.safe_load(handle)['all']['children']['nim_nodes']
    settings = {k: v for k, v in data['vars'].items() if k != 'nim_ngc_api_key'}
    settings['nim_deployment_mode'] = 'docker'
    nodes = [dict(host=host, address='10.1.%d.%d' % (index // 2, index % 2 + 1), group=hv['nim_group'], rank=None,
                  settings=dict(settings, **hv)) for index, (host, hv) in enumerate(data['hosts'].items())]
    plan = nim_plan.build_plan(nodes)
    check(plan['valid'], 'the Docker plan of the same groups is invalid: %s' % plan['errors'])
    return plan['groups']


def contract_differences():
    """The differences between the Docker path and the operator that docs/contracts.md names, with
    their reasons: {(contract, rank, what): reason}."""
    with open(os.path.join(REPO, 'docs', 'contracts.md'), encoding='utf-8') as handle:
        text = handle.read()
    section = text.split('### Where the Docker path and the operator differ', 1)[1].split('\n## ', 1)[0]
    known = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) == 6 and cells[0] in ('mpi', 'ray', 'every') and cells[1] in ('leader', 'worker', 'both'):
            known[(cells[0], cells[1], cells[2].strip('`'))] = cells[5]
    return known


def field(pod, path):
    """What the kubelet puts in an env var from a fieldRef: metadata.name, .namespace, .labels['k'],
    .annotations['k']."""
    match = re.match(r"metadata\.(labels|annotations)\['([^']+)'\]$", path)
    if match:
        return (pod['metadata'].get(match.group(1)) or {}).get(match.group(2), '')
    return pod['metadata'].get(path.split('.', 1)[1], '') if path.startswith('metadata.') else '(%s)' % path


def pod_facts(pod):
    """What a rank gets, read from a live pod as its container sees it: env (fieldRefs resolved, a
    Secret's key named), command, ports, probes, the files and directories mounted (a ConfigMap or
    Secret volume as the files it holds) and GPUs."""
    container = pod['spec']['containers'][0]
    env = {}
    for item in container.get('env', []):
        if 'value' in item:
            env[item['name']] = item['value']
        elif 'fieldRef' in item.get('valueFrom', {}):
            env[item['name']] = field(pod, item['valueFrom']['fieldRef']['fieldPath'])
        else:
            ref = item.get('valueFrom', {}).get('secretKeyRef', {})
            env[item['name']] = '(Secret %s)' % ref.get('name', '?')
    probes = {kind: (probe.get('httpGet') or {}).get('path') or ' '.join((probe.get('exec') or {}).get('command', []))
              for kind, probe in (('startup', container.get('startupProbe')), ('readiness', container.get('readinessProbe')),
                                  ('liveness', container.get('livenessProbe'))) if probe}
    volumes = {v['name']: v for v in pod['spec'].get('volumes', [])}
    mounts = set()
    for mount in container.get('volumeMounts', []):
        volume = volumes.get(mount['name'], {})
        keys = []
        if not mount.get('subPath'):
            if 'configMap' in volume:
                keys = sorted(kubectl('get', 'configmap', volume['configMap']['name'], '-n', NS, '-o', 'json')
                              .get('data', {}))
            elif 'secret' in volume:
                keys = sorted(kubectl('get', 'secret', volume['secret']['secretName'], '-n', NS, '-o', 'json')
                              .get('data', {}))
        mounts.update(['%s/%s' % (mount['mountPath'], k) for k in keys] or [mount['mountPath']])
    return {'env': env, 'command': container.get('command', []) + container.get('args', []),
            'ports': sorted(p['containerPort'] for p in container.get('ports', [])),
            'probes': probes, 'mounts': sorted(mounts),
            'gpus': str(container.get('resources', {}).get('limits', {}).get('nvidia.com/gpu', ''))}


def rank_facts(group, rank):
    """The same, from the Docker plan of a rank."""
    role = 'leader' if rank['rank'] == 0 else 'worker'
    mounts = sorted({m['target'] for m in group['launch']['mounts'] if m['target']
                     and m['ranks'] in ('all', role)})
    ports = sorted({v for k, v in group['ports'].items() if k == 'api' and role == 'leader' or k == 'ray'})
    return {'env': dict(rank['env']), 'command': rank.get('command', []), 'ports': ports,
            'probes': {'readiness': '/v1/health/ready'} if role == 'leader' else {},
            'mounts': mounts, 'gpus': str(group['layout']['gpus_per_rank'])}


FIDELITY_ROWS_SEEN = set()


def fidelity(contract, groups, docker):
    """Compare each operator pod with its rank on the Docker path; print the differences, each with
    the reason docs/contracts.md gives, and fail on one it does not name."""
    known = contract_differences()
    rows = {}
    for group in groups:
        for pod in operator_pods(group):
            index = int(pod['metadata']['labels']['leaderworkerset.sigs.k8s.io/worker-index'])
            role = 'leader' if index == 0 else 'worker'
            have = pod_facts(pod)
            want = rank_facts(docker[group], docker[group]['ranks'][index])
            diffs = []
            for name in sorted(set(have['env']) | set(want['env'])):
                if have['env'].get(name) != want['env'].get(name):
                    diffs.append(('env ' + name, want['env'].get(name, '-'), have['env'].get(name, '-')))
            for aspect in ('command', 'ports', 'probes', 'mounts', 'gpus'):
                if aspect == 'mounts':
                    for path in sorted(set(have['mounts']) ^ set(want['mounts'])):
                        diffs.append(('mount ' + path, 'yes' if path in want['mounts'] else '-',
                                      'yes' if path in have['mounts'] else '-'))
                elif aspect == 'probes':
                    for kind in sorted(set(have['probes']) | set(want['probes'])):
                        if have['probes'].get(kind) != want['probes'].get(kind):
                            diffs.append(('probe ' + kind, want['probes'].get(kind, '-'), have['probes'].get(kind, '-')))
                elif have[aspect] != want[aspect]:
                    diffs.append((aspect, str(want[aspect])[:60], str(have[aspect])[:60]))
            for what, docker_value, operator_value in diffs:
                rows[(role, what)] = (docker_value, operator_value)
    unexplained = []
    lines = []
    for (role, what), (docker_value, operator_value) in sorted(rows.items()):
        candidates = ((contract, role, what), (contract, 'both', what), ('every', role, what), ('every', 'both', what))
        key = next((k for k in candidates if k in known), None)
        reason = known.get(key)
        FIDELITY_ROWS_SEEN.add(key)
        if reason is None:
            unexplained.append('%s %s %s: Docker %r, operator %r' % (contract, role, what, docker_value, operator_value))
        lines.append('   | %-6s | %-34s | %-28s | %-28s | %s'
                     % (role, what, docker_value[:28], operator_value[:28], (reason or 'UNEXPLAINED')[:70]))
    say('   contract fidelity, %s: %d differences between the Docker path and the operator\'s pods, %d unexplained'
        % (contract, len(rows), len(unexplained)))
    say('   | %-6s | %-34s | %-28s | %-28s | %s' % ('rank', 'what', 'Docker path', 'operator', 'why (docs/contracts.md)'))
    for line in lines:
        say(line)
    SUMMARY['contract_fidelity'][contract] = {'differences': len(rows), 'unexplained': unexplained}
    check(not unexplained, '%s: differences docs/contracts.md does not name: %s' % (contract, unexplained))


def check_operator_groups(label, contract, groups, claim=None):
    """Each NIMService Ready on a Ready NIMCache that finished first, with the profile of its layout (or,
    offline, on the site's claim filled beforehand, with no NIMCache); the operator's LeaderWorkerSet of
    size pipeline, its pods Running and Ready, one rack per group."""
    nodes = kubectl('get', 'nodes', '-o', 'json')['items']
    rack_of = {n['metadata']['name']: n['metadata']['labels'].get(RACK) for n in nodes}
    racks = {}
    for group in groups:
        service = kubectl('get', 'nimservice', 'nim-%s' % group, '-n', NS, '-o', 'json')
        caches = group_caches(group)
        check(service['status'].get('state') == 'Ready', '%s: NIMService nim-%s is %s' % (label, group, service['status']))
        if claim:
            check(service['spec']['storage'].get('pvc') == {'name': claim} and not caches,
                  '%s: NIMService nim-%s reads %s, NIMCaches %s'
                  % (label, group, service['spec']['storage'], [c['metadata']['name'] for c in caches]))
        else:
            check_cache(label, group, service, caches)
        lws = kubectl('get', 'lws', 'nim-%s-lws' % group, '-n', NS, '-o', 'json')
        size = lws['spec']['leaderWorkerTemplate']['size']
        check(size == 2, '%s: the operator\'s LeaderWorkerSet nim-%s-lws has size %s, pipeline is 2' % (label, group, size))
        pods = operator_pods(group)
        check(len(pods) == 2 and all(ready(p) for p in pods),
              '%s: group %s has %d pods, ready: %s' % (label, group, len(pods), [ready(p) for p in pods]))
        for pod in pods:
            check(pod['spec'].get('schedulerName') == 'default-scheduler',
                  '%s: pod %s scheduler %s' % (label, pod['metadata']['name'], pod['spec'].get('schedulerName')))
            if claim:
                claims = [v['persistentVolumeClaim']['claimName'] for v in pod['spec'].get('volumes', [])
                          if 'persistentVolumeClaim' in v]
                check(claims == [claim], '%s: pod %s mounts the claims %s' % (label, pod['metadata']['name'], claims))
            if RACK:
                racks.setdefault(group, set()).add(rack_of[pod['spec']['nodeName']])
    check_racks(label, racks)
    SUMMARY['groups_ready'][label] = len(groups)
    say('   %s: %d NIMServices Ready, %s, LeaderWorkerSet size 2, pods Running and Ready, default scheduler, one rack '
        'each (%s)' % (label, len(groups), 'each reading the claim %s filled beforehand, no NIMCache' % claim if claim else
                       'each on a NIMCache Ready before it was applied (profile standin-tp8-pp2-bf16 of two)',
                       ', '.join('%s=%s' % (g, next(iter(r))) for g, r in sorted(racks.items()))))


def check_cache(label, group, service, caches):
    """The group's one NIMCache, Ready before its NIMService was applied, with the profile of its layout."""
    check(len(caches) == 1, '%s: group %s has NIMCaches %s' % (label, group, [c['metadata']['name'] for c in caches]))
    cache = caches[0]
    check(service['spec']['storage']['nimCache']['name'] == cache['metadata']['name'],
          '%s: NIMService nim-%s uses NIMCache %s' % (label, group, service['spec']['storage']))
    check(cache['status'].get('state') == 'Ready', '%s: NIMCache nim-%s is %s' % (label, group, cache['status']))
    done = [c['lastTransitionTime'] for c in cache['status'].get('conditions', []) if c['type'] == 'NIM_CACHE_JOB_COMPLETED']
    check(done and done[0] <= service['metadata']['creationTimestamp'],
          '%s: NIMService nim-%s was applied at %s, before its NIMCache was Ready (%s)'
          % (label, group, service['metadata']['creationTimestamp'], done))
    # A set: the operator may list a profile twice (docs/contracts.md).
    profiles = sorted({p['name'] for p in cache['status'].get('profiles', [])})
    check(profiles == ['standin-tp8-pp2-bf16'] or OWN and profiles,
          '%s: NIMCache nim-%s selected %s' % (label, group, profiles))


def section_changed(output, task):
    """Whether a task of a run reported changed (its section of the output)."""
    parts = output.split('TASK [')
    return any(p.split(']', 1)[0].endswith(task) and re.search(r'^changed:', p, re.M) for p in parts)


def operator_upgrade(tmp, extra):
    """A new image tag for a group of two replicas: a new NIMCache, the NIMService moved to it once it
    is Ready, the old NIMCache and its claim removed after, and a Ready replica all along."""
    label, group = 'operator-upgrade', 'iota'
    old_image, new_image = OPERATOR_IMAGES['mpi'], OPERATOR_IMAGES['mpi'].rsplit(':', 1)[0] + ':1.3.1'
    say('== %s: group %s of 2 replicas from %s to %s' % (label, group, old_image.rsplit(':', 1)[1],
                                                         new_image.rsplit(':', 1)[1]))
    inv = inventory(os.path.join(tmp, '%s-old.yml' % label), 'mpi', {group: 2}, nim_k8s_replicas=2)
    Play('%s-deploy' % label, inv, dict(extra, **INSTALLED))
    old = group_caches(group)
    check(len(old) == 1, '%s: NIMCaches %s' % (label, [c['metadata']['name'] for c in old]))
    old_cache = old[0]['metadata']['name']
    old_claim = old[0]['status'].get('pvc')
    lws = kubectl('get', 'lws', 'nim-%s-lws' % group, '-n', NS, '-o', 'json')
    check(lws['status'].get('readyReplicas') == 2, '%s: %s' % (label, lws['status']))

    standin_manifest(new_image, 8, 2)
    seen = []
    done = threading.Event()

    def watch():
        while not done.is_set():
            status = kubectl('get', 'lws', 'nim-%s-lws' % group, '-n', NS, '-o', 'json', check_rc=False).get('status', {})
            seen.append(status.get('readyReplicas') or 0)
            done.wait(0.5)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        inv = inventory(os.path.join(tmp, '%s-new.yml' % label), 'mpi', {group: 2}, nim_k8s_replicas=2,
                        nim_image_tag=new_image.rsplit(':', 1)[1])
        play = Play('%s-apply' % label, inv, dict(extra, **INSTALLED))
    finally:
        done.set()
        watcher.join(10)
    SUMMARY['seconds_to_ready'][label] = play.seconds
    caches = group_caches(group)
    check([c['metadata']['name'] for c in caches] != [old_cache] and len(caches) == 1,
          '%s: NIMCaches after the upgrade: %s (old %s)' % (label, [c['metadata']['name'] for c in caches], old_cache))
    cache = caches[0]
    check(cache['spec']['source']['ngc']['modelPuller'] == new_image and cache['status'].get('state') == 'Ready',
          '%s: the new NIMCache %s: %s, %s' % (label, cache['metadata']['name'], cache['spec']['source'], cache['status']))
    service = kubectl('get', 'nimservice', 'nim-%s' % group, '-n', NS, '-o', 'json', '--show-managed-fields')
    check(service['spec']['storage']['nimCache']['name'] == cache['metadata']['name'],
          '%s: the NIMService uses %s' % (label, service['spec']['storage']))
    done = [c['lastTransitionTime'] for c in cache['status'].get('conditions', []) if c['type'] == 'NIM_CACHE_JOB_COMPLETED']
    moved = max(f['time'] for f in service['metadata']['managedFields']
                if f.get('subresource') != 'status' and 'f:spec' in json.dumps(f.get('fieldsV1', {})))
    check(done and done[0] <= moved, '%s: the NIMService\'s spec was last written at %s, its new NIMCache Ready at %s'
          % (label, moved, done))
    claims = [c['metadata']['name'] for c in items('persistentvolumeclaims')]
    check(old_claim and old_claim not in claims, '%s: the old NIMCache\'s claim %s is left: %s' % (label, old_claim, claims))
    pods = operator_pods(group)
    check(len(pods) == 4 and all(ready(p) and p['spec']['containers'][0]['image'] == new_image for p in pods),
          '%s: pods %s' % (label, [(p['metadata']['name'], p['spec']['containers'][0]['image'], ready(p)) for p in pods]))
    check(seen and min(seen) >= 1, '%s: the group had %s Ready replicas during the upgrade' % (label, min(seen or [0])))
    SUMMARY['groups_ready'][label] = 1
    SUMMARY['pods_replaced'][label] = len(pods)
    say('   %s in %.1f s: NIMCache %s -> %s (Ready before the NIMService moved), old NIMCache and its claim %s gone, '
        '4 pods on %s; Ready replicas during the run: min %d of 2 (%d looks)'
        % (play.name, play.seconds, old_cache, cache['metadata']['name'], old_claim, new_image.rsplit(':', 1)[1],
           min(seen), len(seen)))
    play = Play('%s-teardown' % label, inv, dict(extra, nim_k8s_state='absent', nim_k8s_keep_storage=False))
    left = ours() + [c['metadata']['name'] for c in group_caches(group)] + [p['metadata']['name'] for p in operator_pods(group)]
    check(not left, '%s: teardown left %s' % (label, left))


def operator_features(tmp, extra):
    """The operator's own features, set from the inventory, on one mpi group: a ServiceMonitor (the
    Prometheus Operator's CRDs installed), an Ingress, a PriorityClass, and a ComputeDomain (its CRD
    installed, no DRA driver: the pods cannot be placed, so the run does not wait for them)."""
    label, group = 'operator-features', 'lambda'
    say('== %s: ServiceMonitor, router, PriorityClass and ComputeDomain of group %s' % (label, group))
    kubectl('apply', '-f', '-', parse=False, stdin=json.dumps({
        'apiVersion': 'scheduling.k8s.io/v1', 'kind': 'PriorityClass', 'metadata': {'name': 'nim-serving'},
        'value': 1000}))
    settings = {'nim_k8s_service_monitor': {'interval': '30s', 'additionalLabels': {'release': 'prometheus'}},
                'nim_k8s_router': {'hostDomainName': 'nim.example.test', 'ingress': {'ingressClass': 'nginx'}},
                'nim_k8s_priority_class': 'nim-serving', 'nim_k8s_compute_domain': 'create', 'nim_k8s_wait': False}
    standin_manifest(OPERATOR_IMAGES['mpi'], 8, 2)
    inv = inventory(os.path.join(tmp, '%s.yml' % label), 'mpi', {group: 2})
    play = Play('%s-deploy' % label, inv, dict(extra, **INSTALLED, **settings))
    found = {}
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        found = {kind: [o['metadata']['name'] for o in items(kind)]
                 for kind in ('servicemonitors', 'ingresses', 'computedomains', 'leaderworkersets')}
        if all(found.values()):
            break
        time.sleep(2)
    check(all(found.values()), '%s: the operator made %s' % (label, found))
    monitor = items('servicemonitors')[0]
    check(monitor['spec']['endpoints'][0].get('interval') == '30s'
          and monitor['metadata']['labels'].get('release') == 'prometheus',
          '%s: ServiceMonitor %s' % (label, monitor))
    domain = items('computedomains')[0]
    check(int(domain['spec']['numNodes']) == 2, '%s: ComputeDomain %s' % (label, domain['spec']))
    ingress = items('ingresses')[0]
    check(ingress['spec'].get('ingressClassName') == 'nginx'
          and ingress['spec']['rules'][0]['host'].endswith('nim.example.test'), '%s: Ingress %s' % (label, ingress['spec']))
    template = kubectl('get', 'lws', 'nim-%s-lws' % group, '-n', NS, '-o', 'json')['spec']['leaderWorkerTemplate']
    check(template['leaderTemplate']['spec'].get('priorityClassName') == 'nim-serving',
          '%s: the leader template has priority class %s' % (label, template['leaderTemplate']['spec'].get('priorityClassName')))
    claims = template['workerTemplate']['spec'].get('resourceClaims') or []
    check(claims, '%s: the worker template claims no ComputeDomain channel' % label)
    say('   %s: the operator made ServiceMonitor %s (interval 30s), Ingress %s (%s), ComputeDomain %s (numNodes 2, '
        'claimed by the pods), and a LeaderWorkerSet with priority class nim-serving'
        % (play.name, found['servicemonitors'][0], found['ingresses'][0], ingress['spec']['rules'][0]['host'],
           found['computedomains'][0]))
    again = Play('%s-rerun' % label, inv, dict(extra, **INSTALLED, **settings))
    check(again.changed == 0, '%s: the re-run changed %d' % (label, again.changed))
    Play('%s-teardown' % label, inv, dict(extra, nim_k8s_state='absent', nim_k8s_keep_storage=False, **settings))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        left = {kind: [o['metadata']['name'] for o in items(kind)] for kind in found}
        if not any(left.values()):
            break
        time.sleep(2)
    check(not any(left.values()), '%s: teardown left %s' % (label, left))
    kubectl('delete', 'priorityclass', 'nim-serving', parse=False)
    say('   re-run changed=0; teardown: the ServiceMonitor, Ingress, ComputeDomain and LeaderWorkerSet went with the '
        'NIMService')


class Served(object):
    """A directory served over HTTP on a port of the loopback address, each path asked kept."""

    def __init__(self, root):
        self.asked = []
        asked = self.asked

        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):
                asked.append(self.path)
        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), functools.partial(Handler, directory=root))
        self.url = 'http://127.0.0.1:%d' % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def operator_bundle(inv, extra):
    """A Kubernetes site's offline bundle, made by playbooks/bundle.yml (no packages, no images):
    LeaderWorkerSet's release manifest and the NIM Operator's chart, fetched from stand-ins of their
    sources (the manifest at a URL of its own, the chart from a Helm repository whose index.yaml helm
    wrote), made twice (the second fetches nothing); then the sources go and the bundle is served
    over HTTP. The settings of a run from it: the NIM Operator from the bundle's chart (no chart
    file), LWS by the manifest method from the bundle's copy, and the bundle's server."""
    source = os.path.join(LOGS, 'bundle-sources')
    os.makedirs(os.path.join(source, 'lws', LWS_VERSION))
    os.makedirs(os.path.join(source, 'nvidia'))
    shutil.copy(os.path.join(CACHE, 'share', 'lws', 'manifests.yaml'), os.path.join(source, 'lws', LWS_VERSION))
    shutil.copy(os.path.join(CACHE, 'share', 'nim-operator', 'k8s-nim-operator-chart-%s.tgz' % OPERATOR_VERSION),
                os.path.join(source, 'nvidia'))
    subprocess.run(['helm', 'repo', 'index', os.path.join(source, 'nvidia')], check=True, capture_output=True,
                   env=dict(os.environ, **TOOL_ENV))
    sources = Served(source)
    bundle_dir = os.path.join(LOGS, 'bundle')
    # The controller's collections are the lab test's to carry (tests/e2e/test-lab.sh installs them offline).
    made = dict(extra, nimstack_bundle_dir=bundle_dir, nimstack_bundle_platforms=[], nimstack_bundle_images=[],
                nimstack_bundle_collections=[], nimstack_bundle_kubernetes=True, lws_install_method='manifest', lws_version=LWS_VERSION,
                lws_manifest_url='%s/lws/%s/manifests.yaml' % (sources.url, LWS_VERSION),
                nim_operator_helm_repo_url=sources.url + '/nvidia')
    made.pop('nim_operator_helm_chart_file')
    times = []
    try:
        for attempt in ('made', 'again'):
            start = time.monotonic()
            proc = subprocess.run(['ansible-playbook', '-i', inv, os.path.join(REPO, 'playbooks', 'bundle.yml'),
                                   '-e', json.dumps(made)], capture_output=True, text=True, check=False,
                                  env=dict(os.environ, **TOOL_ENV))
            times.append(time.monotonic() - start)
            log = os.path.join(LOGS, 'bundle-%s.log' % attempt)
            with open(log, 'w', encoding='utf-8') as handle:
                handle.write(proc.stdout + proc.stderr)
            check(proc.returncode == 0, 'playbooks/bundle.yml failed: %s' % log)
            report = re.search(r'; files (.*?); manifest ', ' '.join(proc.stdout.split()))
            check(report, 'playbooks/bundle.yml reported nothing: %s' % log)
            fetched = report.group(1)
            if attempt == 'made':
                check(len(fetched.split(', ')) == 2, 'the bundle fetched %s, not the two files' % fetched)
            else:
                check(fetched == 'none fetched', 'the bundle made again fetched %s' % fetched)
    finally:
        sources.stop()
    with open(os.path.join(bundle_dir, 'manifest.json'), encoding='utf-8') as handle:
        held = json.load(handle)['files']
    say('   bundle: %s made in %.1f s, again in %.1f s fetching nothing; sources down'
        % (', '.join('%s (%d bytes)' % (f['path'], f['size']) for f in held), times[0], times[1]))
    served = Served(bundle_dir)
    # The model offline: a claim of the site's filled beforehand (the operator's air-gap path), which the
    # NIMServices read, no NIMCache.
    run = dict(extra, lws_install_method='manifest', lws_manifest_file='', nimstack_bundle_url=served.url,
               nim_k8s_storage='pvc', nim_k8s_pvc_name=AIRGAP_CLAIM['metadata']['name'])
    run.pop('nim_operator_helm_chart_file')
    return run, served, held


# The site's claim that holds the model in the offline scenario, filled beforehand (kwok's pods read nothing).
AIRGAP_CLAIM = {'apiVersion': 'v1', 'kind': 'PersistentVolumeClaim', 'metadata': {'name': 'site-models', 'namespace': NS},
                'spec': {'accessModes': ['ReadWriteMany'], 'storageClassName': STORAGE_CLASS,
                         'resources': {'requests': {'storage': '1Ti'}}}}


def bundle_refused(inv, extra, held):
    """A run from a bundle that does not serve the operator's chart is refused before anything is applied, naming it."""
    chart = [f['path'] for f in held if f['path'].endswith('.tgz')][0]
    path = os.path.join(LOGS, 'bundle', chart)
    os.rename(path, path + '.away')
    try:
        play = Play('operator-bundle-refused', inv, extra, expect_rc=2)
    finally:
        os.rename(path + '.away', path)
    check('does not serve it with its size' in play.output and chart in play.output,
          'a bundle without %s was not refused naming it: %s' % (chart, play.log))
    check(kubectl('get', 'namespace', OPERATOR_NS, parse=False, check_rc=False).returncode != 0
          or not items('deployments', namespace=OPERATOR_NS), 'the refused run installed the operator')
    say('   a bundle without %s: refused before anything was applied, naming it (%.1f s)' % (chart, play.seconds))


def stage_operator(tmp):
    missing = [name for name, version in (('the NIM Operator', OPERATOR_VERSION), ('LWS v0.10.0', LWS_VERSION))
               if not version and not OWN]
    if missing:
        why = ('%s not built: tests/cluster/build.sh had no source for it (NIMSTACK_NIM_OPERATOR_SRC, '
               'NIMSTACK_LWS_SRC; see docs/testing.md)' % ' and '.join(missing))
        for contract in OPERATOR_GROUPS:
            for scenario in ('deploy', 'contract fidelity', 're-run', 'teardown') + (
                    ('check-diff', 'change') if contract == 'mpi' else ()):
                SUMMARY['not_run']['operator %s %s' % (contract, scenario)] = why
        for scenario in ('operator upgrade', 'operator features'):
            SUMMARY['not_run'][scenario] = why
        say('== operator: NOT RUN (%d scenarios: %s): %s' % (len(SUMMARY['not_run']), ', '.join(SUMMARY['not_run']), why))
        return
    if OWN:
        # The cluster's own operator, as installed; the NIM images print their real model manifests.
        say('== operator: the cluster\'s NIM Operator turns NIMCache and NIMService into groups')
        extra = {'nim_k8s_backend': 'nim_operator', 'nim_k8s_storage': 'nimcache'}
    else:
        say('== operator: the real NIM Operator %s turns NIMCache and NIMService into groups' % OPERATOR_VERSION)
        # CRDs the operator uses when they are there when it starts: the Prometheus Operator's, and the
        # DRA driver's ComputeDomain.
        for name in sorted(os.listdir(os.path.join(CACHE, 'share', 'crds'))):
            kubectl('apply', '--server-side', '-f', os.path.join(CACHE, 'share', 'crds', name), parse=False)
        operator_tls()
        extra = operator_extra()
    plays = []
    served = None
    for contract, groups in OPERATOR_GROUPS.items():
        label = 'operator-%s' % contract
        if not OWN:
            standin_manifest(OPERATOR_IMAGES[contract], 8, 2)
        say('== %s: two groups, NIMCache then NIMService' % label)
        inv = inventory(os.path.join(tmp, '%s.yml' % label), contract, {g: 2 for g in groups})
        # The first contract's deploy installs the components and its re-run proves them converged:
        # from an offline bundle (a site without a way out), on the cluster of make test.
        runs_extra = extra if not plays else dict(extra, **INSTALLED)
        if not plays and not OWN:
            say('== %s: LWS and the NIM Operator from an offline bundle, the model from a claim filled beforehand' % label)
            runs_extra, served, held = operator_bundle(inv, extra)
            bundle_refused(inv, runs_extra, held)
            kubectl('create', 'namespace', NS, parse=False)
            kubectl('apply', '-f', '-', stdin=json.dumps(AIRGAP_CLAIM), parse=False)
        play = Play('%s-deploy' % label, inv, runs_extra)
        plays.append(play)
        SUMMARY['seconds_to_ready'][label] = play.seconds
        if served:
            fetched = sorted(set(p for p in served.asked if p.startswith('/files/')))
            check(fetched == sorted(['/files/SHA256SUMS'] + ['/' + f['path'] for f in held]),
                  '%s: the run from the bundle fetched %s of it' % (label, fetched))
            say('   installed from the bundle at %s: fetched %s (checked against SHA256SUMS)' % (served.url, ', '.join(fetched)))
        airgap = runs_extra.get('nim_k8s_pvc_name')
        check_operator_groups(label, contract, groups, claim=airgap)
        if monitoring_served():
            check_monitoring(label, groups, lambda group: 'nim-%s-lws' % group, play)
        fidelity(contract, groups, docker_plan(contract, groups, {}))

        before = operator_uids(groups)
        play = Play('%s-rerun' % label, inv, runs_extra)
        plays.append(play)
        SUMMARY['changed']['%s_rerun' % label] = play.changed
        check(play.changed == 0, '%s: the re-run changed %d (%s)' % (label, play.changed, play.log))
        check(operator_uids(groups) == before, '%s: the re-run replaced pods' % label)
        SUMMARY['pods_replaced']['%s_rerun' % label] = 0
        say('   re-run: changed=0, %d pod UIDs unchanged' % len(before))

        if contract == 'mpi':
            generations = {g: kubectl('get', 'nimservice', 'nim-%s' % g, '-n', NS, '-o', 'json')['metadata']['generation']
                           for g in groups}
            inv_debug = inventory(os.path.join(tmp, '%s-debug.yml' % label), contract, {g: 2 for g in groups},
                                  nim_log_level='DEBUG')
            play = Play('%s-check-diff' % label, inv_debug, dict(extra, **INSTALLED), args=['--check', '--diff'])
            plays.append(play)
            SUMMARY['changed']['%s_check_diff' % label] = play.changed
            check(play.changed >= 2, '%s: check mode reported %d changes for two groups' % (label, play.changed))
            check(re.search(r'^\+.*DEBUG', play.output, re.M), '%s: the diff does not show DEBUG: %s' % (label, play.log))
            after = {g: kubectl('get', 'nimservice', 'nim-%s' % g, '-n', NS, '-o', 'json')['metadata']['generation']
                     for g in groups}
            check(after == generations and operator_uids(groups) == before, '%s: check mode applied something' % label)
            say('   --check --diff: NIM_LOG_LEVEL DEBUG shown, NIMService generations %s unchanged, no pod replaced'
                % generations)
            play = Play('%s-change' % label, inv_debug, dict(extra, **INSTALLED))
            plays.append(play)
            now = operator_uids(groups)
            replaced = len(set(before.values()) - set(now.values()))
            SUMMARY['pods_replaced']['%s_change' % label] = replaced
            SUMMARY['seconds_to_ready']['%s_change' % label] = play.seconds
            check(set(now) == set(before) and replaced == len(before),
                  '%s: the change did not replace every pod: %s -> %s' % (label, before, now))
            for group in groups:
                for pod in operator_pods(group):
                    check(ready(pod), '%s: the run returned with pod %s not Ready' % (label, pod['metadata']['name']))
                    env = {e['name']: e.get('value') for e in pod['spec']['containers'][0].get('env', [])}
                    check(env.get('NIM_LOG_LEVEL') == 'DEBUG', '%s: pod %s has NIM_LOG_LEVEL %s'
                          % (label, pod['metadata']['name'], env.get('NIM_LOG_LEVEL')))
            say('   applied: the operator rolled both groups, %d of %d pods replaced, all Ready with DEBUG when the '
                'run returned (%.1f s)' % (replaced, len(before), play.seconds))
            inv = inv_debug

        no_key_anywhere(label, plays)
        say('== %s: teardown while the operator runs' % label)
        foreign = FOREIGN + (FOREIGN_MONITORING if monitoring_served() else []) + [
            {'apiVersion': 'apps.nvidia.com/v1alpha1', 'kind': 'NIMService',
             'metadata': {'name': 'team-nim', 'namespace': NS},
             'spec': {'image': {'repository': 'nvcr.io/nim/team/model', 'tag': '1.0.0'}, 'authSecret': 'team-ngc',
                      'storage': {'pvc': {'name': 'team-models'}}, 'replicas': 1,
                      'expose': {'service': {'type': 'ClusterIP', 'port': 8000}}}},
        ]
        for obj in foreign:
            kubectl('apply', '-f', '-', stdin=json.dumps(obj), parse=False)
        finalizers = {'nimservice': kubectl('get', 'nimservice', 'nim-%s' % groups[0], '-n', NS, '-o', 'json')
                      ['metadata'].get('finalizers', []),
                      'nimcache': group_caches(groups[0])[0]['metadata'].get('finalizers', [])}
        check(all(finalizers.values()), '%s: the operator put no finalizer on %s' % (label, finalizers))
        play = Play('%s-teardown' % label, inv, dict(extra, nim_k8s_state='absent', nim_k8s_keep_storage=False))
        plays.append(play)
        SUMMARY['seconds_to_ready']['%s_teardown' % label] = play.seconds
        check(not section_changed(play.output, "Take the NIM Operator's finalizer off the objects of group %s" % groups[0]),
              '%s: teardown took the operator\'s finalizers off while it runs' % label)
        left = ours() + ['%s/%s' % (o['kind'], o['metadata']['name']) for k in ('nimservices', 'nimcaches')
                         for o in items(k) if o['metadata']['name'].startswith('nim-')]
        left += ['Pod/' + p['metadata']['name'] for g in groups for p in operator_pods(g)]
        left += ['PersistentVolumeClaim/' + c['metadata']['name'] for c in items('persistentvolumeclaims')
                 if any(c['metadata']['name'].startswith('nim-%s-' % g) for g in groups)]
        SUMMARY['objects_left']['%s_teardown' % label] = left
        check(not left, '%s: teardown left %s' % (label, left))
        for obj in foreign + ([AIRGAP_CLAIM] if airgap else []):
            kubectl('get', obj['kind'].lower(), obj['metadata']['name'], '-n', NS, parse=False)
        for crd in ('nimservices.apps.nvidia.com', 'nimcaches.apps.nvidia.com'):
            kubectl('get', 'crd', crd, parse=False)
        again = Play('%s-teardown-again' % label, inv, dict(extra, nim_k8s_state='absent', nim_k8s_keep_storage=False))
        plays.append(again)
        SUMMARY['changed']['%s_teardown_again' % label] = again.changed
        check(again.changed == 0, '%s: a second teardown changed %d' % (label, again.changed))
        say('   teardown in %.1f s with the operator running (finalizers %s honoured, not stripped): nothing of ours '
            'left (the NIMCaches\' claims included), team-config, team-lws and team-nim%s survive, CRDs kept; second teardown '
            'changed=0' % (play.seconds, sorted(set(f for v in finalizers.values() for f in v)),
                           ' and the site\'s model claim %s' % airgap if airgap else ''))
        for obj in foreign + ([AIRGAP_CLAIM] if airgap else []):
            kubectl('delete', obj['kind'].lower(), obj['metadata']['name'], '-n', NS, '--wait=true', parse=False)
    if served:
        served.stop()
    operator_upgrade(tmp, extra)
    if not OWN:
        operator_features(tmp, extra)
    stale = sorted('%s | %s | %s' % k for k in set(contract_differences()) - FIDELITY_ROWS_SEEN)
    check(not stale, 'docs/contracts.md names differences the operator\'s pods no longer show: %s' % stale)


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
    own = [stage_lws] + ([stage_operator] if os.environ.get('NIMSTACK_LIVE_OPERATOR') else [])
    stages = own if OWN else [stage_refusals, stage_lws, stage_helm, stage_finalizer, stage_operator]
    only = os.environ.get('LIVE_ONLY')
    if only:
        stages = [stage for stage in stages if stage.__name__ in only.split(',')]
    if not LWS_VERSION and not OWN:
        why = 'LWS %s not built: tests/cluster/build.sh had no source for it (NIMSTACK_LWS_SRC; see docs/testing.md)'
        for stage in (stage_lws, stage_helm):
            if stage in stages:
                SUMMARY['not_run'][stage.__name__] = why % 'v0.10.0'
                say('== %s: NOT RUN: %s' % (stage.__name__, why % 'v0.10.0'))
        stages = [s for s in stages if s not in (stage_lws, stage_helm)]
    if OWN:
        check(STORAGE_CLASS, 'NIMSTACK_LIVE_STORAGE_CLASS must name a ReadWriteMany storage class of the cluster')
        kubectl('get', 'crd', 'leaderworkersets.leaderworkerset.x-k8s.io', parse=False)
        say('== against %s, namespace %s, storage class %s, topology key %s'
            % (KUBECONFIG, NS, STORAGE_CLASS, RACK or '(none)'))
    failed = []
    for stage in stages:
        t = time.monotonic()
        try:
            stage(tmp)
            say('== %s passed in %.0f s' % (stage.__name__, time.monotonic() - t))
        except Failure as error:
            say('== %s FAILED: %s' % (stage.__name__, error))
            failed.append('%s: %s' % (stage.__name__, error))
            break
    if OWN:
        kubectl('delete', 'namespace', NS, '--wait=false', parse=False, check_rc=False)
    SUMMARY['seconds'] = round(time.monotonic() - start, 1)
    SUMMARY['playbook_runs'] = Play.count
    with open(os.path.join(LOGS, 'summary.json'), 'w', encoding='utf-8') as handle:
        json.dump(SUMMARY, handle, indent=2, sort_keys=True)
    print(json.dumps(SUMMARY, indent=2, sort_keys=True))
    if failed:
        # Last, where a CI log's tail shows it: what the cluster held, then what failed.
        for line in snapshot():
            say('   ' + line)
        sys.exit('test-k8s-live: FAILED: %s' % ''.join(failed)[:1500])
    say('test-k8s-live: every stage that ran passed in %.0f s, %d playbook runs' % (SUMMARY['seconds'], Play.count))
    for name, why in sorted(SUMMARY['not_run'].items()):
        say('test-k8s-live: NOT RUN: %s (%s)' % (name, why))


if __name__ == '__main__':
    main()
