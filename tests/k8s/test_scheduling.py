"""Gang scheduling and topology (docs/contracts.md, gang scheduling) in render-only output: scheduler, queue, topology, LWS install."""

import hashlib
import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml

from k8s_render import KAI, LWS_MANIFEST, RACK, SCENARIOS, run_render
from k8s_schema import REPO, validate

EXCLUSIVE = 'leaderworkerset.sigs.k8s.io/exclusive-topology'
VOLCANO_QUEUE = 'scheduling.volcano.sh/queue-name'
KAI_QUEUE = 'kai.scheduler/queue'
CHECKSUM = 'nimstack.multinode/lws-config-checksum'
GANG = {'gangSchedulingManagement': {'schedulerProvider': 'volcano'}}


def _templates(render):
    lws = render.one('LeaderWorkerSet')
    template = lws['spec']['leaderWorkerTemplate']
    return lws, template['leaderTemplate'], template['workerTemplate']


def _docs(render, path):
    with open(os.path.join(render.root, path), encoding='utf-8') as handle:
        return [doc for doc in yaml.safe_load_all(handle) if doc]


def _checksum(config):
    # What the role hashes: the configuration it sets, as JSON with sorted keys.
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()


@pytest.mark.parametrize('name, scheduler', [('lws-volcano', 'volcano'), ('lws-kai', 'kai-scheduler'),
                                             ('lws-volcano-file', 'volcano')])
def test_lws_pod_templates_carry_the_scheduler(renders, name, scheduler):
    render = renders[name]
    assert render.rc == 0, render.output[-4000:]
    lws, leader, worker = _templates(render)
    assert leader['spec']['schedulerName'] == scheduler
    assert worker['spec']['schedulerName'] == scheduler
    validate(lws)


def test_default_scheduler_leaves_the_templates_alone(renders):
    lws, leader, worker = _templates(renders['lws-tp8pp2'])
    assert 'schedulerName' not in leader['spec'] and 'schedulerName' not in worker['spec']
    assert 'annotations' not in lws['metadata']
    assert KAI_QUEUE not in lws['metadata']['labels']
    assert 'schedulerName' not in renders['operator-tp8pp2'].one('NIMService')['spec']


def test_volcano_queue_and_exclusive_topology_on_the_leaderworkerset(renders):
    lws, leader, worker = _templates(renders['lws-volcano'])
    assert lws['metadata']['annotations'] == {VOLCANO_QUEUE: 'nim-inference', EXCLUSIVE: RACK}
    for template in (leader, worker):
        assert KAI_QUEUE not in template['metadata']['labels']
    # The contract is unchanged by scheduling: ray here, so no MPI objects.
    assert [obj['kind'] for obj in renders['lws-volcano'].manifests().values() if obj['kind'] == 'ConfigMap'] == []


def test_kai_queue_label_on_the_workload_and_its_pods(renders):
    lws, leader, worker = _templates(renders['lws-kai'])
    assert lws['metadata']['labels'][KAI_QUEUE] == 'team-a'
    assert leader['metadata']['labels'][KAI_QUEUE] == 'team-a'
    assert worker['metadata']['labels'][KAI_QUEUE] == 'team-a'
    assert lws['metadata']['annotations'] == {EXCLUSIVE: KAI['nim_k8s_exclusive_topology']}
    # The leader Service still selects the leader only, not everything in the queue.
    assert renders['lws-kai'].one('Service')['spec']['selector'] == {
        'leaderworkerset.sigs.k8s.io/name': 'nim-default', 'leaderworkerset.sigs.k8s.io/worker-index': '0'}


def test_nimservice_carries_scheduler_queue_and_topology(renders):
    volcano = renders['operator-volcano'].one('NIMService')
    validate(volcano)
    assert volcano['spec']['schedulerName'] == 'volcano'
    assert volcano['spec']['annotations'] == {VOLCANO_QUEUE: 'nim-inference', EXCLUSIVE: RACK}
    assert 'labels' not in volcano['spec']
    assert 'mpi' in volcano['spec']['multiNode'] and 'ray' not in volcano['spec']['multiNode']

    kai = renders['operator-kai'].one('NIMService')
    validate(kai)
    assert kai['spec']['schedulerName'] == 'kai-scheduler'
    assert kai['spec']['labels'] == {KAI_QUEUE: 'team-a'}
    assert kai['spec']['annotations'] == {EXCLUSIVE: KAI['nim_k8s_exclusive_topology']}
    assert kai['spec']['multiNode']['ray'] == {'rayPort': 6379}
    assert 'mpi' not in kai['spec']['multiNode']


@pytest.mark.parametrize('name', ['lws-volcano', 'operator-kai', 'lws-tp8pp2'])
def test_render_only_says_it_skipped_the_cluster_checks(renders, name):
    output = ' '.join(renders[name].output.split())
    assert 'Render-only: no cluster was contacted, so the checks that need one were skipped' in output
    assert 'default:2:1:8 as group:size:replicas:GPUs per rank' in output
    if SCENARIOS[name][1].get('nim_k8s_scheduler'):
        assert 'the CRDs of nim_k8s_scheduler=%s exist' % SCENARIOS[name][1]['nim_k8s_scheduler'] in output
    if SCENARIOS[name][1].get('nim_k8s_exclusive_topology'):
        assert 'one %s domain per LWS group' % SCENARIOS[name][1]['nim_k8s_exclusive_topology'] in output


def test_lws_helm_install_turns_on_gang_scheduling(renders):
    render = renders['lws-volcano']
    values = render.load('_cluster/lws/values.yaml')
    assert values['gangSchedulingManagement'] == {'schedulerProvider': 'volcano'}
    # The restart trigger: a checksum of the setting on the controller's pod template.
    assert values['podAnnotations'] == {CHECKSUM: _checksum(GANG)}
    record = render.load('_cluster/lws/install.yaml')
    assert record['gang_scheduling'] == 'volcano'
    assert record['manager_config'] == GANG
    assert record['config_checksum'] == _checksum(GANG)
    # The chart grants the PodGroup permissions itself: no RBAC file for the Helm method.
    assert sorted(path for path in render.paths() if path.startswith('_cluster/')) == [
        '_cluster/lws/install.yaml', '_cluster/lws/values.yaml']


def test_lws_manifest_install_edits_the_config_and_adds_the_volcano_rbac(renders):
    render = renders['lws-volcano-file']
    assert render.rc == 0, render.output[-4000:]
    assert sorted(path for path in render.paths() if path.startswith('_cluster/')) == [
        '_cluster/lws/install.yaml', '_cluster/lws/manifests.yaml', '_cluster/lws/rbac-volcano.yaml']
    with open(LWS_MANIFEST, encoding='utf-8') as handle:
        upstream = [doc for doc in yaml.safe_load_all(handle) if doc]
    applied = _docs(render, '_cluster/lws/manifests.yaml')
    by_kind = dict(((obj['kind'], obj['metadata']['name']), obj) for obj in applied)

    config = yaml.safe_load(by_kind[('ConfigMap', 'lws-manager-config')]['data']['controller_manager_config.yaml'])
    assert config == {'apiVersion': 'config.lws.x-k8s.io/v1alpha1', 'kind': 'Configuration',
                      'leaderElection': {'leaderElect': True}, 'internalCertManagement': {'enable': True},
                      'gangSchedulingManagement': {'schedulerProvider': 'volcano'}}
    deployment = by_kind[('Deployment', 'lws-controller-manager')]
    assert deployment['spec']['template']['metadata']['annotations'] == {
        'kubectl.kubernetes.io/default-container': 'manager', CHECKSUM: _checksum(GANG)}
    # Everything else is applied as released.
    for obj in upstream:
        if obj['kind'] not in ('ConfigMap', 'Deployment'):
            assert by_kind[(obj['kind'], obj['metadata']['name'])] == obj
    original = [obj for obj in upstream if obj['kind'] == 'Deployment'][0]
    assert deployment['spec']['template']['spec'] == original['spec']['template']['spec']

    rbac = _docs(render, '_cluster/lws/rbac-volcano.yaml')
    assert [obj for obj in applied if obj['kind'].startswith('ClusterRole')] == rbac
    role, binding = rbac
    assert role['rules'] == [{'apiGroups': ['scheduling.volcano.sh'], 'resources': ['podgroups'],
                              'verbs': ['create', 'get', 'list', 'watch']}]
    assert binding['roleRef']['name'] == role['metadata']['name']
    assert binding['subjects'] == [{'kind': 'ServiceAccount', 'name': 'lws-controller-manager', 'namespace': 'lws-system'}]
    for obj in applied:
        validate(obj)


def test_lws_rerun_with_unchanged_settings_restarts_nothing(renders, workdir):
    first = renders['lws-volcano-file']
    snapshot = dict((path, open(os.path.join(first.root, path), 'rb').read()) for path in first.paths())
    again = run_render(workdir, 'lws-volcano-file-again', 'lws', SCENARIOS['lws-volcano-file'][1], render_dir=first.root)
    assert again.rc == 0, again.output[-4000:]
    # Nothing changed, so the controller's pod template (what a restart hangs on) is the same.
    assert again.changed() == 0
    assert dict((path, open(os.path.join(again.root, path), 'rb').read()) for path in again.paths()) == snapshot


def test_lws_gang_setting_change_changes_the_restart_trigger(renders, workdir):
    root = os.path.join(workdir, 'out', 'lws-gang-off')
    shutil.copytree(renders['lws-volcano-file'].root, root)
    extra = dict(SCENARIOS['lws-volcano-file'][1], nim_k8s_scheduler='default', nim_k8s_volcano_queue='')
    off = run_render(workdir, 'lws-gang-off', 'lws', extra, render_dir=root)
    assert off.rc == 0, off.output[-4000:]
    record = off.load('_cluster/lws/install.yaml')
    assert record['gang_scheduling'] == 'none'
    assert record['config_checksum'] == ''
    # Without gang scheduling the release manifest is applied as it is: the edited copy and the
    # RBAC file would be stale, so they are gone.
    assert sorted(path for path in off.paths() if path.startswith('_cluster/')) == ['_cluster/lws/install.yaml']
    assert off.changed() > 0


def _volcano_play(workdir, name, extra):
    play = os.path.join(workdir, 'volcano-%s.yml' % name)
    with open(play, 'w', encoding='utf-8') as handle:
        yaml.safe_dump([{'name': 'Render Volcano', 'hosts': 'localhost', 'connection': 'local',
                         'gather_facts': False, 'roles': [{'role': 'nimstack.multinode.volcano'}]}], handle)
    render_dir = os.path.join(workdir, 'out', 'volcano-%s' % name)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(workdir, 'collections'), ANSIBLE_NOCOLOR='1',
               KUBECONFIG=os.path.join(workdir, 'no-such-kubeconfig'))
    extra = dict(extra, volcano_render_dir=render_dir, ansible_python_interpreter=sys.executable)
    args = ['ansible-playbook', '-i', 'localhost,', play, '-e', json.dumps(extra)]
    proc = subprocess.run(args, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=300, check=False)
    return proc, os.path.join(render_dir, '_cluster', 'volcano')


def test_volcano_role_renders_a_pinned_install_and_is_idempotent(workdir):
    proc, path = _volcano_play(workdir, 'helm', {'volcano_helm_values': {'custom': {'metrics': {'enable': True}}}})
    assert proc.returncode == 0, proc.stdout[-4000:]
    with open(os.path.join(path, 'install.yaml'), encoding='utf-8') as handle:
        record = yaml.safe_load(handle)
    assert record['version'] == 'v1.12.1'
    assert record['helm']['chart_version'] == '1.12.1'
    assert record['helm']['repository'] == 'https://volcano-sh.github.io/helm-charts'
    assert record['crds'] == ['podgroups.scheduling.volcano.sh', 'queues.scheduling.volcano.sh']
    assert record['scheduler'] == 'volcano-system/volcano-scheduler'
    with open(os.path.join(path, 'values.yaml'), encoding='utf-8') as handle:
        assert yaml.safe_load(handle) == {'custom': {'metrics': {'enable': True}}}

    again, _path = _volcano_play(workdir, 'helm', {'volcano_helm_values': {'custom': {'metrics': {'enable': True}}}})
    assert again.returncode == 0, again.stdout[-4000:]
    assert 'changed=0' in again.stdout

    airgap, path = _volcano_play(workdir, 'file', {'volcano_install_method': 'file',
                                                   'volcano_manifest_file': '/srv/volcano-development.yaml'})
    assert airgap.returncode == 0, airgap.stdout[-4000:]
    assert sorted(os.listdir(path)) == ['install.yaml']
    with open(os.path.join(path, 'install.yaml'), encoding='utf-8') as handle:
        assert yaml.safe_load(handle)['manifest'] == '/srv/volcano-development.yaml'


def test_volcano_role_refuses_bad_settings(workdir):
    proc, path = _volcano_play(workdir, 'bad', {'volcano_install_method': 'file', 'volcano_version': '1.12'})
    assert proc.returncode != 0
    assert 'volcano_install_method=file needs volcano_manifest_file' in ' '.join(proc.stdout.split())
    assert not os.path.exists(path)


def _task_headers(output):
    return [line.split('TASK [', 1)[1].split(']', 1)[0] for line in output.splitlines() if line.startswith('TASK [')]


# A kubeconfig of nim_k8s_kubeconfig's own, whose server refuses at once (port 9 of this machine).
REFUSING_KUBECONFIG = {
    'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'refusing',
    'clusters': [{'name': 'refusing', 'cluster': {'server': 'https://127.0.0.1:9', 'insecure-skip-tls-verify': True}}],
    'users': [{'name': 'refusing', 'user': {'token': 'not-a-token'}}],
    'contexts': [{'name': 'refusing', 'context': {'cluster': 'refusing', 'user': 'refusing'}}],
}


@pytest.mark.parametrize('scheduler', ['volcano', 'default'])
def test_live_mode_reads_the_cluster_before_installing_or_applying_anything(workdir, scheduler):
    # No cluster here: KUBECONFIG names nothing, nim_k8s_kubeconfig a server that refuses. The play
    # must stop at its first read of the cluster, in the preflight (its first pass runs outside the
    # role's main tasks), before any component is installed or any object applied, and that read
    # must go to the cluster of nim_k8s_kubeconfig, not to KUBECONFIG's.
    kubeconfig = os.path.join(workdir, 'kubeconfig-%s' % scheduler)
    with open(kubeconfig, 'w', encoding='utf-8') as handle:
        yaml.safe_dump(REFUSING_KUBECONFIG, handle)
    extra = {'nim_k8s_scheduler': scheduler, 'nim_k8s_exclusive_topology': RACK, 'nim_k8s_kubeconfig': kubeconfig}
    run = run_render(workdir, 'live-%s' % scheduler, 'lws', extra, live=True)
    assert run.rc != 0
    tasks = _task_headers(run.output)
    assert tasks[-1] == ('nimstack.multinode.nim_k8s : Check that the scheduler runs and every rank of each group '
                         'can be placed at once'), tasks[-6:]
    assert "port=9" in run.output and 'No configuration found' not in run.output, run.output[-3000:]
    assert not [task for task in tasks if task.startswith(('nimstack.multinode.lws', 'nimstack.multinode.volcano'))]
    assert not [task for task in tasks if 'Apply the objects' in task or 'Ensure each namespace' in task]
    assert 'Render-only: no cluster was contacted' not in run.output
