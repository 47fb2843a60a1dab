#!/usr/bin/env python
"""Benchmark (not a test, not in `make test`): faults on the Kubernetes path, on the test cluster.

Run by benchmarks/bench-k8s-faults.sh, which starts a cluster of its own (tests/cluster/cluster.sh)
and takes it down. Two groups, alpha and beta (mpi, 2 pods of 8 GPUs each, raw LeaderWorkerSets,
one rack each), are deployed by playbooks/deploy_kubernetes.yml as test-k8s-live.py deploys them;
two spare nodes (rack-d) let a group move. Then, one at a time, each on group alpha:

  pod-deleted         the worker's pod deleted: LWS re-creates the whole group
                      (nim_k8s_restart_policy RecreateGroupOnPodRestart)
  apiserver-restarted the API server stopped for BENCH_K8S_DOWN_S (10) and started again while a
                      run rolls both groups (a changed setting): whether the run ends well, and a re-run
  lws-restarted       LWS's controller restarted (its pod deleted; the Deployment starts another)
                      once a run that rolls both groups applied its change: whether the run ends
                      well and the groups roll, and a re-run
  operator-restarted  the same with the NIM Operator, on a third group (gamma, NIMCache and
                      NIMService, on the spare rack) installed as test-k8s-live.py's operator stage
                      does; needs the operator built (NIMSTACK_NIM_OPERATOR_SRC), else its row
                      says skipped
  node-not-ready      the worker's node stops answering (kwok no longer keeps it: a kubelet lost);
                      Kubernetes marks it NotReady and evicts its pods after their toleration
                      (300 s by default), but a pod on a node that does not answer stays Terminating,
                      and the StatefulSet of LWS waits for it; after BENCH_K8S_NODE_WAIT_S (480) the
                      benchmark does what docs/operations.md tells a site to do (the node taken out
                      of service: node.kubernetes.io/out-of-service), and the group moves to rack-d

For each: the time until the group is Ready again (every pod Ready, the LeaderWorkerSet Available),
whether the other group's pods stayed the same, and a re-run of deploy_kubernetes.yml (its rc,
changed). One JSON row per fault in build/bench/k8s-faults/result.json.

  benchmarks/bench-k8s-faults.sh
  BENCH_K8S_FAULTS="pod-deleted apiserver-restarted" benchmarks/bench-k8s-faults.sh
"""

import importlib.util
import json
import os
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.environ.get('BENCH_K8S_OUT') or os.path.join(REPO, 'build', 'bench', 'k8s-faults')
os.environ.setdefault('NIMSTACK_LIVE_LOGS', os.path.join(OUT, 'logs'))
_SPEC = importlib.util.spec_from_file_location('k8s_live', os.path.join(REPO, 'tests', 'e2e', 'test-k8s-live.py'))
live = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(live)

GROUPS = ('alpha', 'beta')
SPARE_RACK = 'rack-d'
DOWN_S = int(os.environ.get('BENCH_K8S_DOWN_S', '10'))
NODE_WAIT_S = int(os.environ.get('BENCH_K8S_NODE_WAIT_S', '480'))
READY_BOUND_S = int(os.environ.get('BENCH_K8S_READY_BOUND_S', '300'))
FAULTS = os.environ.get('BENCH_K8S_FAULTS',
                        'pod-deleted apiserver-restarted lws-restarted operator-restarted node-not-ready').split()
KWOK = 'kwok.x-k8s.io/node'
OUT_OF_SERVICE = 'node.kubernetes.io/out-of-service'
# The NIM Operator's group of operator-restarted (on the spare rack).
OPERATOR_GROUP = 'gamma'


def say(message):
    print(message, flush=True)


def spare_nodes():
    """Two more fake nodes (rack-d), kept by kwok as the cluster's own, so that a group can move."""
    for name in ('gpu-d1', 'gpu-d2'):
        node = {'apiVersion': 'v1', 'kind': 'Node',
                'metadata': {'name': name, 'annotations': {KWOK: 'fake', 'node.alpha.kubernetes.io/ttl': '0'},
                             'labels': {'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux',
                                        'kubernetes.io/arch': 'amd64', 'type': 'kwok',
                                        'nvidia.com/gpu.present': 'true', 'nvidia.com/gpu.count': '8',
                                        live.RACK: SPARE_RACK}},
                'spec': {'taints': []},
                'status': {'allocatable': {'cpu': '64', 'memory': '1Ti', 'pods': '110', 'nvidia.com/gpu': '8'},
                           'capacity': {'cpu': '64', 'memory': '1Ti', 'pods': '110', 'nvidia.com/gpu': '8'}}}
        live.kubectl('apply', '-f', '-', stdin=json.dumps(node), parse=False)


def lws_available(group):
    found = live.kubectl('get', 'lws', 'nim-%s' % group, '-n', live.NS, '-o', 'json', check_rc=False)
    return any(c.get('type') == 'Available' and c.get('status') == 'True'
               for c in (found.get('status') or {}).get('conditions') or [])


def group_ready(group, size=2):
    pods = [p for p in live.group_pods(group) if not p['metadata'].get('deletionTimestamp')]
    return len(pods) == size and all(live.ready(p) for p in pods) and lws_available(group)


def wait(what, condition, bound, every=1.0):
    """Seconds until condition() holds, or None after bound seconds; API errors count as not yet."""
    start = time.monotonic()
    while time.monotonic() - start < bound:
        try:
            if condition():
                return round(time.monotonic() - start, 1)
        except live.Failure:
            pass
        time.sleep(every)
    say('   %s: not within %d s' % (what, bound))
    return None


def worker_pod(group):
    return next(p for p in live.group_pods(group)
                if p['metadata']['labels'].get('leaderworkerset.sigs.k8s.io/worker-index') != '0')


class Bench:
    def __init__(self):
        os.makedirs(live.LOGS, exist_ok=True)
        self.rows = []
        self.inv = live.inventory(os.path.join(OUT, 'bench.yml'), 'mpi', {g: 2 for g in GROUPS})
        self.extra = {}

    def rerun(self, name, extra=None):
        play = live.Play(name, self.inv, dict(self.extra, **(extra or {})), expect_rc=None)
        return {'rc': play.rc, 'changed': play.changed, 'seconds': play.seconds, 'log': os.path.relpath(play.log, REPO),
                'failed_task': failed_task(play.output)}

    def row(self, fault, **values):
        row = dict({'fault': fault, 'group': 'alpha'}, **values)
        self.rows.append(row)
        say('   ' + json.dumps(row))

    def fault_pod_deleted(self):
        other = live.uids(['beta'])
        before = live.uids(['alpha'])
        pod = worker_pod('alpha')['metadata']['name']
        struck = time.monotonic()
        live.kubectl('delete', 'pod', pod, '-n', live.NS, '--wait=false', parse=False)
        ready = wait('alpha ready again', lambda: group_ready('alpha') and not set(live.uids(['alpha']).values())
                     & set(before.values()), READY_BOUND_S)
        self.row('pod-deleted', deleted=pod, ready_again_s=ready,
                 replaced=len(set(before.values()) - set(live.uids(['alpha']).values())),
                 other_group_unchanged=live.uids(['beta']) == other,
                 seconds=round(time.monotonic() - struck, 1), rerun=self.rerun('rerun-pod-deleted'))

    def fault_apiserver_restarted(self):
        other_before = live.uids(['beta'])
        level = 'DEBUG' if self.extra.get('nim_log_level') != 'DEBUG' else 'INFO'
        self.extra['nim_log_level'] = level
        generation = live.kubectl('get', 'lws', 'nim-alpha', '-n', live.NS, '-o', 'json')['metadata']['generation']
        result = {}
        runner = threading.Thread(target=lambda: result.update(self.rerun('apiserver-restart-run')))
        runner.start()
        # The fault strikes once the run applied the change (a new generation) and waits on the rollout.
        rolled = wait('the run applies the change', lambda: live.kubectl(
            'get', 'lws', 'nim-alpha', '-n', live.NS, '-o', 'json')['metadata']['generation'] > generation, 600, 0.5)
        struck = time.monotonic()
        proc = cluster('restart', 'kube-apiserver', down_s=DOWN_S)
        back = wait('the API server answers again', lambda: live.kubectl(
            'get', '--raw', '/readyz', parse=False, check_rc=False).returncode == 0, 300, 0.5)
        back = None if back is None else round(time.monotonic() - struck, 1)
        runner.join()
        # What the outage left not ready: the node controller marks the pods of a node whose lease
        # it did not see not ready; a kubelet reports them ready again, kwok does not, so the
        # benchmark does it for the running ones once every node is Ready again.
        wait('every node Ready', lambda: all(any(c['type'] == 'Ready' and c['status'] == 'True'
                                                 for c in n['status'].get('conditions', []))
                                             for n in live.kubectl('get', 'nodes', '-o', 'json')['items']), 300)
        unready = [p for p in live.items('pods', namespace=None)
                   if not live.ready(p) and p['status'].get('phase') == 'Running' and not p['metadata'].get('deletionTimestamp')]
        for pod in unready:
            live.kubectl('patch', 'pod', pod['metadata']['name'], '-n', pod['metadata']['namespace'], '--subresource=status',
                         '--type=strategic', '-p', json.dumps({'status': {'conditions': [
                             {'type': 'Ready', 'status': 'True'}, {'type': 'ContainersReady', 'status': 'True'}]}}),
                         parse=False, check_rc=False)
        unready = ['%s/%s on %s' % (p['metadata']['namespace'], p['metadata']['name'], p['spec'].get('nodeName', '-'))
                   for p in unready]
        ready = {g: wait('%s ready' % g, lambda g=g: group_ready(g), READY_BOUND_S) for g in GROUPS}
        self.row('apiserver-restarted', change_applied_after_s=rolled, down_s=DOWN_S,
                 restart_rc=proc.returncode, api_back_after_s=back, run=result, ready_after_run_s=ready,
                 pods_made_ready_by_the_benchmark=unready,
                 other_group_replaced=live.uids(['beta']) != other_before,
                 rerun=self.rerun('rerun-apiserver-restarted'))

    def restart_during_rollout(self, fault, namespace, kind, name, inv, extra, groups, ready, pods_of):
        """A run that rolls `groups` (NIM_LOG_LEVEL changed); once it applied the change (a new
        generation of kind/name), every pod of the controller in `namespace` deleted (its Deployment
        starts a new one, which the cluster's agent runs): whether the run ends well, and when."""
        level = 'DEBUG' if extra.get('nim_log_level') != 'DEBUG' else 'INFO'
        extra['nim_log_level'] = level

        def uids(group):
            return {p['metadata']['name']: p['metadata']['uid'] for p in pods_of(group)}

        before = {g: uids(g) for g in groups}

        def generation():
            return live.kubectl('get', kind, name, '-n', live.NS, '-o', 'json')['metadata']['generation']

        first = generation()
        result = {}

        def run():
            play = live.Play('%s-run' % fault, inv, extra, expect_rc=None)
            result.update(rc=play.rc, changed=play.changed, seconds=play.seconds, log=os.path.relpath(play.log, REPO),
                          failed_task=failed_task(play.output))

        runner = threading.Thread(target=run)
        runner.start()
        applied = wait('the run applies the change', lambda: generation() > first, 600, 0.5)
        struck = time.monotonic()
        old = {p['metadata']['uid'] for p in live.items('pods', namespace=namespace)}
        for pod in live.items('pods', namespace=namespace):
            live.kubectl('delete', 'pod', pod['metadata']['name'], '-n', namespace, '--wait=false', parse=False)
        back = wait('a new controller pod Running', lambda: any(
            p['metadata']['uid'] not in old and p['status'].get('phase') == 'Running'
            for p in live.items('pods', namespace=namespace)), 300, 0.5)
        runner.join()
        ready_after = {g: wait('%s ready' % g, lambda g=g: ready(g), READY_BOUND_S) for g in groups}
        self.row(fault, group=','.join(groups), change_applied_after_s=applied, controller_back_after_s=back,
                 run=result, ready_after_run_s=ready_after,
                 pods_replaced={g: len(set(before[g].values()) - set(uids(g).values())) for g in groups},
                 env_now={g: sorted({e.get('value') for p in pods_of(g) for c in p['spec']['containers']
                                     for e in c.get('env', []) if e['name'] == 'NIM_LOG_LEVEL'}) for g in groups},
                 seconds=round(time.monotonic() - struck, 1),
                 rerun=rerun_of(fault, inv, extra))

    def fault_lws_restarted(self):
        self.restart_during_rollout('lws-restarted', 'lws-system', 'lws', 'nim-alpha', self.inv, self.extra, GROUPS,
                                    group_ready, live.group_pods)

    def fault_operator_restarted(self):
        if not live.OPERATOR_VERSION:
            self.row('operator-restarted', group=OPERATOR_GROUP,
                     skipped='the NIM Operator is not built: tests/cluster/build.sh had no NIMSTACK_NIM_OPERATOR_SRC')
            return
        # A group of the NIM Operator (NIMCache, then NIMService with multiNode) beside the raw ones,
        # installed as test-k8s-live.py's operator stage installs it.
        for name in sorted(os.listdir(os.path.join(live.CACHE, 'share', 'crds'))):
            live.kubectl('apply', '--server-side', '-f', os.path.join(live.CACHE, 'share', 'crds', name), parse=False)
        if live.kubectl('get', 'secret', live.OPERATOR_TLS, '-n', live.OPERATOR_NS, parse=False,
                        check_rc=False).returncode != 0:
            live.operator_tls()
        extra = live.operator_extra()
        live.standin_manifest(live.OPERATOR_IMAGES['mpi'], 8, 2)
        inv = live.inventory(os.path.join(OUT, 'operator.yml'), 'mpi', {OPERATOR_GROUP: 2})
        live.Play('operator-deploy', inv, extra)
        live.check(operator_ready(OPERATOR_GROUP), 'group %s is not ready after its first run' % OPERATOR_GROUP)
        self.restart_during_rollout('operator-restarted', live.OPERATOR_NS, 'nimservice', 'nim-%s' % OPERATOR_GROUP,
                                    inv, extra, (OPERATOR_GROUP,), operator_ready, live.operator_pods)

    def fault_node_not_ready(self):
        other = live.uids(['beta'])
        worker = worker_pod('alpha')
        node, pod = worker['spec']['nodeName'], worker['metadata']['name']
        struck = time.monotonic()
        # kwok keeps the nodes it took on; started again, it takes only those still annotated.
        live.kubectl('annotate', 'node', node, KWOK + '-', parse=False)
        cluster('restart', 'kwok')

        def node_ready():
            found = live.kubectl('get', 'node', node, '-o', 'json')
            return any(c['type'] == 'Ready' and c['status'] == 'True' for c in found['status'].get('conditions', []))

        not_ready = wait('%s NotReady' % node, lambda: not node_ready(), 300)
        evicted = wait('%s marked for deletion' % pod, lambda: any(
            p['metadata']['name'] == pod and p['metadata'].get('deletionTimestamp') for p in live.group_pods('alpha')),
            NODE_WAIT_S)
        alone = wait('alpha ready again without help', lambda: group_ready('alpha'), max(0, NODE_WAIT_S - (
            time.monotonic() - struck)))
        stuck = [('%s on %s: %s%s' % (p['metadata']['name'], p['spec'].get('nodeName', '-'), p['status'].get('phase'),
                                      ', terminating' if p['metadata'].get('deletionTimestamp') else ''))
                 for p in live.group_pods('alpha')]
        helped = None
        if alone is None:
            # What docs/operations.md tells a site: take the node out of service; Kubernetes then
            # force-deletes its pods (non-graceful node shutdown) and the group starts elsewhere.
            live.kubectl('taint', 'node', node, OUT_OF_SERVICE + '=nodeshutdown:NoExecute', parse=False)
            helped = wait('alpha ready again after the out-of-service taint', lambda: group_ready('alpha'), READY_BOUND_S)
        racks = sorted({live.kubectl('get', 'node', p['spec']['nodeName'], '-o', 'json')['metadata']['labels'].get(live.RACK)
                        for p in live.group_pods('alpha') if p['spec'].get('nodeName')})
        seconds = round(time.monotonic() - struck, 1)
        # The node back, as it was.
        live.kubectl('annotate', 'node', node, KWOK + '=fake', '--overwrite', parse=False)
        live.kubectl('taint', 'node', node, OUT_OF_SERVICE + '-', parse=False, check_rc=False)
        cluster('restart', 'kwok')
        wait('%s Ready again' % node, node_ready, 300)
        self.row('node-not-ready', node=node, not_ready_after_s=not_ready, pod_evicted_after_s=evicted,
                 ready_again_alone_s=alone, while_waiting=stuck, ready_after_out_of_service_s=helped,
                 racks_after=racks, other_group_unchanged=live.uids(['beta']) == other, seconds=seconds,
                 rerun=self.rerun('rerun-node-not-ready'))

    def run(self):
        spare_nodes()
        say('== deploy: groups %s, LWS installed from its manifest' % ', '.join(GROUPS))
        first = live.Play('deploy', self.inv)
        for group in GROUPS:
            live.check(group_ready(group), 'group %s is not ready after the first run: %s' % (group, first.log))
        for fault in FAULTS:
            say('== %s' % fault)
            getattr(self, 'fault_' + fault.replace('-', '_'))()
            with open(os.path.join(OUT, 'result.json'), 'w', encoding='utf-8') as handle:
                json.dump({'faults': self.rows}, handle, indent=2)


def operator_ready(group):
    """The NIM Operator's group: its NIMService Ready, both pods of its LeaderWorkerSet Ready."""
    service = live.kubectl('get', 'nimservice', 'nim-%s' % group, '-n', live.NS, '-o', 'json', check_rc=False)
    pods = [p for p in live.operator_pods(group) if not p['metadata'].get('deletionTimestamp')]
    return ((service.get('status') or {}).get('state') == 'Ready' and len(pods) == 2
            and all(live.ready(p) for p in pods))


def rerun_of(name, inv, extra):
    play = live.Play('rerun-%s' % name, inv, extra, expect_rc=None)
    return {'rc': play.rc, 'changed': play.changed, 'seconds': play.seconds, 'log': os.path.relpath(play.log, REPO),
            'failed_task': failed_task(play.output)}


def cluster(*args, down_s=0):
    """tests/cluster/cluster.sh with these arguments (restart NAME: down_s seconds between stop and start)."""
    return subprocess.run([os.path.join(REPO, 'tests', 'cluster', 'cluster.sh')] + list(args),
                          env=dict(os.environ, NIMSTACK_K8S_DOWN_S=str(down_s)), capture_output=True, text=True,
                          check=False)


def failed_task(output):
    """The name of the task a run failed in, from its output ('' when none failed)."""
    task = ''
    for line in output.splitlines():
        if line.startswith('TASK ['):
            task = line[len('TASK ['):].split(']')[0]
        elif line.startswith('fatal:') or line.startswith('failed:'):
            return task
    return ''


def main():
    for name in FAULTS:
        if not hasattr(Bench, 'fault_' + name.replace('-', '_')):
            sys.exit('no such fault: %s' % name)
    bench = Bench()
    bench.run()
    say('bench_k8s_faults.py: %d fault(s); %s' % (len(bench.rows), os.path.relpath(os.path.join(OUT, 'result.json'), REPO)))


if __name__ == '__main__':
    main()
