"""Render-only output of playbooks/deploy_kubernetes.yml: valid, faithful to docs/contracts.md, deterministic."""

import base64
import copy
import importlib.util
import os
import shutil
import stat

import pytest
import yaml

from k8s_render import DEEPSEEK_R1, FAKE_NGC_KEY, GROUPED, SCENARIOS, run_render
from k8s_schema import REPO, Invalid, validate


def _module(path):
    """A module of the collection that imports nothing of it (this suite runs without the collection
    on sys.path: the playbooks find it through their own collections path)."""
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], os.path.join(REPO, path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


nim_alerts = _module('plugins/module_utils/nim_alerts.py')

# Every scenario that writes no Secret (the default), a run of its own or a group of a shared run.
ALL_SCENARIOS = sorted(list(SCENARIOS) + [name for _b, extra, groups in GROUPED.values()
                                          if not extra.get('nim_k8s_render_secrets') for name in groups])


def _env(container):
    return dict((item['name'], item.get('value', item.get('valueFrom'))) for item in container['env'])


def _mounts(container):
    return dict((m['mountPath'], m['name']) for m in container['volumeMounts'])


def _lws_parts(render):
    lws = render.one('LeaderWorkerSet')
    template = lws['spec']['leaderWorkerTemplate']
    return lws, template, template['leaderTemplate']['spec'], template['workerTemplate']['spec']


@pytest.mark.parametrize('name', ALL_SCENARIOS)
def test_scenario_renders_and_every_object_validates(renders, name):
    render = renders[name]
    assert render.rc == 0, render.output[-4000:]
    manifests = render.manifests()
    assert manifests, 'nothing rendered'
    problems = []
    for path, obj in sorted(manifests.items()):
        try:
            validate(obj)
        except Invalid as exc:
            problems.append('%s:\n  %s' % (path, '\n  '.join(exc.problems)))
        kind, name_part = os.path.basename(path)[:-len('.yaml')].split('-', 1)
        assert (kind, name_part) == (obj['kind'], obj['metadata']['name']), path
    assert not problems, '\n'.join(problems)


@pytest.mark.parametrize('name', ALL_SCENARIOS)
def test_no_secret_is_rendered_or_printed_by_default(renders, name):
    render = renders[name]
    assert FAKE_NGC_KEY not in render.output
    for path in render.paths():
        with open(os.path.join(render.root, path), encoding='utf-8') as handle:
            text = handle.read()
        assert FAKE_NGC_KEY not in text, path
        assert 'PRIVATE KEY' not in text, path
    assert not [obj for obj in render.manifests().values() if obj['kind'] == 'Secret']
    assert 'Render-only: the manifests reference Secrets that were not written' in render.output


def test_every_deployment_group_gets_its_own_objects(renders):
    render = renders['lws-two-groups']
    assert render.rc == 0, render.output[-4000:]
    manifests = render.manifests()
    for obj in manifests.values():
        validate(obj)
    assert sorted(path for path in manifests if path.startswith('_namespaces/')) == [
        '_namespaces/nim-r1/Namespace-nim-r1.yaml', '_namespaces/nim/Namespace-nim.yaml',
        # One PrometheusRule for both groups, in the first namespace by name: a copy per namespace
        # would evaluate every alert twice.
        '_namespaces/nim/PrometheusRule-nimstack-nim-alerts.yaml']
    assert sorted(path for path in manifests if '/PodMonitor-' in path) == [
        'llama/PodMonitor-nim-llama-metrics.yaml', 'r1/PodMonitor-nim-r1-metrics.yaml']
    llama = render.load('llama/LeaderWorkerSet-nim-llama.yaml')
    r1 = render.load('r1/LeaderWorkerSet-nim-r1.yaml')
    assert llama['metadata']['namespace'] == 'nim'
    assert r1['metadata']['namespace'] == 'nim-r1'
    assert llama['spec']['leaderWorkerTemplate']['leaderTemplate']['spec']['containers'][0]['image'] == (
        'nvcr.io/nim/meta/llama-3.1-405b-instruct:1.3.0')
    r1_leader = r1['spec']['leaderWorkerTemplate']['leaderTemplate']['spec']['containers'][0]
    assert r1_leader['image'] == 'nvcr.io/nim/deepseek-ai/deepseek-r1:1.7.3'
    assert _env(r1_leader)['CLUSTER_START_TIMEOUT'] == '6000'
    assert render.load('r1/ConfigMap-nim-r1-mpi-config.yaml')['data']['hostfile-0'].splitlines()[1] == (
        'nim-r1-0-1.nim-r1.nim-r1.svc slots=8')


def test_file_layout_of_the_lws_backend(renders):
    assert renders['lws-tp8pp2'].paths() == [
        '_cluster/lws/install.yaml',
        '_cluster/lws/values.yaml',
        '_namespaces/nim/Namespace-nim.yaml',
        '_namespaces/nim/PrometheusRule-nimstack-nim-alerts.yaml',
        'default/ConfigMap-nim-default-mpi-config.yaml',
        'default/LeaderWorkerSet-nim-default.yaml',
        'default/PersistentVolumeClaim-nim-default-model-store.yaml',
        'default/PodMonitor-nim-default-metrics.yaml',
        'default/Service-nim-default-api.yaml',
    ]


def test_file_layout_of_the_operator_backend(renders):
    # The operator builds a LeaderWorkerSet for a multi-node NIMService, and watches LeaderWorkerSets
    # only if their CRD existed when it started: LWS is installed too, and first.
    assert renders['operator-tp8pp2'].paths() == [
        '_cluster/lws/install.yaml',
        '_cluster/lws/values.yaml',
        '_cluster/nim-operator/install.yaml',
        '_cluster/nim-operator/values.yaml',
        '_namespaces/nim/Namespace-nim.yaml',
        '_namespaces/nim/PrometheusRule-nimstack-nim-alerts.yaml',
        'default/NIMService-nim-default.yaml',
        'default/PodMonitor-nim-default-metrics.yaml',
    ]


def test_lws_install_record_pins_the_release(renders):
    render = renders['lws-tp8pp2']
    record = render.load('_cluster/lws/install.yaml')
    assert record['version'] == 'v0.10.0'
    assert record['helm']['chart'] == 'oci://registry.k8s.io/lws/charts/lws'
    assert record['helm']['chart_version'] == '0.10.0'
    assert record['controller'] == 'lws-system/lws-controller-manager'
    assert record['crd'] == 'leaderworkersets.leaderworkerset.x-k8s.io'
    assert render.load('_cluster/lws/values.yaml') == {'image': {'manager': {'tag': 'v0.10.0', 'pullPolicy': 'IfNotPresent'}}}


@pytest.mark.parametrize('name, pp', [('lws-tp8pp2', 2), ('lws-4node', 4), ('lws-deepseek', 2)])
def test_lws_group_follows_the_operator_mpi_contract(renders, name, pp):
    render = renders[name]
    group = render.group or 'default'
    lws, template, leader, worker = _lws_parts(render)
    assert template['size'] == pp
    assert template['restartPolicy'] == 'RecreateGroupOnPodRestart'
    assert lws['spec']['replicas'] == 1

    lead, work = leader['containers'][0], worker['containers'][0]
    common = {'NIM_MPI_ALLOW_RUN_AS_ROOT': '0', 'NIM_NUM_COMPUTE_NODES': str(pp), 'NIM_MULTI_NODE': '1',
              'NIM_TENSOR_PARALLEL_SIZE': '8', 'NIM_PIPELINE_PARALLEL_SIZE': str(pp),
              'NIM_CACHE_PATH': '/model-store', 'NIM_SERVER_PORT': '8000', 'NIM_HTTP_API_PORT': '8000'}
    rank_ref = {'fieldRef': {'fieldPath': "metadata.labels['leaderworkerset.sigs.k8s.io/worker-index']"}}
    for container in (lead, work):
        env = _env(container)
        for key, value in common.items():
            assert env[key] == value, (container['name'], key)
        assert env['NIM_NODE_RANK'] == rank_ref
        assert env['NGC_API_KEY'] == {'secretKeyRef': {'name': 'ngc-api-key', 'key': 'NGC_API_KEY'}}
        assert container['resources']['limits']['nvidia.com/gpu'] == '8'
    lead_env, work_env = _env(lead), _env(work)
    timeout = str(DEEPSEEK_R1['nim_mpi_start_timeout']) if name == 'lws-deepseek' else '3000'
    assert lead_env['NIM_LEADER_ROLE'] == '1'
    assert lead_env['GPUS_PER_NODE'] == '8'
    assert lead_env['CLUSTER_START_TIMEOUT'] == timeout
    assert lead_env['OMPI_MCA_orte_keep_fqdn_hostnames'] == 'true'
    assert lead_env['CLUSTER_SIZE'] == {'fieldRef': {'fieldPath': "metadata.annotations['leaderworkerset.sigs.k8s.io/size']"}}
    assert work_env['NIM_LEADER_ROLE'] == '0'
    assert work_env['LEADER_NAME'] == {'fieldRef': {'fieldPath': "metadata.annotations['leaderworkerset.sigs.k8s.io/leader-name']"}}

    assert _mounts(lead) == {'/model-store': 'model-store', '/dev/shm': 'dshm', '/etc/mpi': 'mpi-config',
                             '/opt/nim/llm/.ssh': 'ssh-dotfiles', '/opt/nim/llm/pk': 'ssh-pk',
                             '/opt/nim/llm/.ssh/config': 'ssh-pk'}
    assert _mounts(work) == {'/model-store': 'model-store', '/dev/shm': 'dshm', '/ssh-confs': 'ssh-confs',
                             '/opt/nim/llm/.ssh': 'ssh-dotfiles', '/opt/nim/llm/pk': 'ssh-pk',
                             '/opt/nim/llm/.ssh/config': 'ssh-pk', '/ssh-confs/ssh_host_ed25519_key': 'ssh-pk'}
    volumes = dict((v['name'], v) for v in leader['volumes'] + worker['volumes'])
    assert volumes['dshm']['emptyDir'] == {'medium': 'Memory', 'sizeLimit': '64Gi'}
    assert volumes['ssh-pk']['secret'] == {'secretName': 'nim-%s-ssh-pk' % group, 'defaultMode': 0o400}
    assert volumes['mpi-config']['configMap']['name'] == 'nim-%s-mpi-config' % group
    assert volumes['model-store']['persistentVolumeClaim'] == {'claimName': 'nim-%s-model-store' % group}
    for spec in (leader, worker):
        assert spec['nodeSelector'] == {'nvidia.com/gpu.present': 'true'}
        assert spec['tolerations'] == [{'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}]
        assert spec['imagePullSecrets'] == [{'name': 'ngc-registry'}]

    hostfile = render.one('ConfigMap')['data']['hostfile-0']
    assert hostfile.splitlines() == ['localhost slots=8'] + [
        'nim-%s-0-%d.nim-%s.nim.svc slots=8' % (group, rank, group) for rank in range(1, pp)]
    assert render.one('PersistentVolumeClaim')['spec']['accessModes'] == ['ReadWriteMany']


@pytest.mark.parametrize('name', ['lws-tp8pp2', 'lws-secrets'])
def test_lws_workers_serve_the_pinned_host_key_and_the_leader_checks_it(renders, name):
    """Every worker's sshd serves the group's host key from the Secret, and the ssh config of every
    rank (the leader's mpirun, a worker's tree spawn) checks it strictly against the Secret's
    known_hosts: a pod answering a worker's name without that key gets nothing."""
    _lws, _template, leader, worker = _lws_parts(renders[name])
    sub_paths = dict(((m['mountPath'], m['name']), m.get('subPath')) for spec in (leader, worker)
                     for m in spec['containers'][0]['volumeMounts'])
    assert sub_paths[('/ssh-confs/ssh_host_ed25519_key', 'ssh-pk')] == 'ssh_host_ed25519_key'
    assert sub_paths[('/opt/nim/llm/.ssh/config', 'ssh-pk')] == 'config'
    for spec in (leader, worker):
        expected = {'/opt/nim/llm/pk': None, '/opt/nim/llm/.ssh/config': 'config'}
        if spec is worker:
            expected['/ssh-confs/ssh_host_ed25519_key'] = 'ssh_host_ed25519_key'
        assert dict((m['mountPath'], m.get('subPath')) for m in spec['containers'][0]['volumeMounts']
                    if m['name'] == 'ssh-pk') == expected


def test_lws_leader_probes_are_sized_for_a_large_model(renders):
    _lws, _template, leader, _worker = _lws_parts(renders['lws-deepseek'])
    startup = leader['containers'][0]['startupProbe']
    assert startup['httpGet'] == {'path': '/v1/health/ready', 'port': 8000}
    # mpiStartTimeout 6000 s plus 1800 s of weight loading, probed every 10 s.
    assert startup['periodSeconds'] * startup['failureThreshold'] == 7800
    assert leader['containers'][0]['livenessProbe']['httpGet']['path'] == '/v1/health/live'


def test_lws_service_selects_only_the_leader(renders):
    service = renders['lws-tp8pp2'].one('Service')
    # Not the LeaderWorkerSet's name: that is LWS's headless Service over every pod of the group,
    # which the hostfile's worker names resolve through (found on a live cluster, where ours had
    # taken it over and narrowed it to the leader).
    assert service['metadata']['name'] == 'nim-default-api'
    assert service['spec']['selector'] == {'leaderworkerset.sigs.k8s.io/name': 'nim-default',
                                           'leaderworkerset.sigs.k8s.io/worker-index': '0'}
    assert service['spec']['ports'] == [{'name': 'api', 'port': 8000, 'targetPort': 'api', 'protocol': 'TCP'}]


def test_lws_ray_contract_has_no_ssh_and_probes_the_worker(renders):
    render = renders['lws-ray']
    assert [obj['kind'] for obj in render.manifests().values() if obj['kind'] == 'ConfigMap'] == []
    _lws, _template, leader, worker = _lws_parts(render)
    lead, work = leader['containers'][0], worker['containers'][0]
    assert lead['args'] == ['nim-serve-ray', '--head', '--port', '6379']
    assert work['args'] == ['nim-serve-ray', '--head-address', '$(LWS_LEADER_ADDRESS):6379']
    assert {'name': 'ray', 'containerPort': 6379, 'protocol': 'TCP'} in work['ports']
    assert work['startupProbe']['exec']['command'] == ['/bin/sh', '-c', 'ray status']
    assert _env(lead)['NIM_JSONL_LOGGING'] == '0'
    # No rank reports Ray's usage statistics outside the site.
    assert _env(lead)['RAY_USAGE_STATS_ENABLED'] == _env(work)['RAY_USAGE_STATS_ENABLED'] == '0'
    assert set(_mounts(lead)) == set(_mounts(work)) == {'/model-store', '/dev/shm'}


def test_lws_ray_contract_follows_the_operator_values(renders):
    _lws, _template, leader, worker = _lws_parts(renders['lws-ray'])
    lead, work = leader['containers'][0], worker['containers'][0]
    # docs/contracts.md, launch contracts: container port named ray, and the worker's startup probe `ray status`
    # (initial 30 s, period 10 s, timeout 5 s, 3 failures).
    assert {'name': 'ray', 'containerPort': 6379, 'protocol': 'TCP'} in lead['ports']
    assert work['startupProbe'] == {'exec': {'command': ['/bin/sh', '-c', 'ray status']}, 'initialDelaySeconds': 30,
                                    'periodSeconds': 10, 'timeoutSeconds': 5, 'failureThreshold': 3}
    # The env is the operator's common/leader/worker env (docs/contracts.md, launch contracts); what differs is no SSH.
    for container in (lead, work):
        assert 'ssh' not in [port['name'] for port in container.get('ports', [])]
    assert set(volume['name'] for volume in leader['volumes'] + worker['volumes']) == {'model-store', 'dshm'}


@pytest.mark.parametrize('name', ['lws-ray-secrets', 'lws-leader-address-secrets'])
def test_contracts_without_ssh_have_no_mpi_configmap_key_secret_or_hostfile(renders, name):
    render = renders[name]
    assert render.rc == 0, render.output[-4000:]
    kinds = sorted((obj['kind'], obj['metadata']['name']) for obj in render.manifests().values())
    # Secrets were asked for, so a key Secret would be here if the contract had one.
    assert [item for item in kinds if item[0] == 'Secret'] == [('Secret', 'ngc-api-key'), ('Secret', 'ngc-registry')]
    assert [item for item in kinds if item[0] == 'ConfigMap'] == []
    assert not os.path.exists(os.path.join(render.root, render.group, 'Secret-nim-%s-ssh-pk.yaml' % render.group))
    _lws, _template, leader, worker = _lws_parts(render)
    for spec in (leader, worker):
        for container in spec['containers']:
            assert not [m for m in container['volumeMounts'] if m['mountPath'] in ('/etc/mpi', '/opt/nim/llm/pk')]
    for obj in render.manifests().values():
        validate(obj)


def test_auto_contract_on_a_2x_image_writes_ray_never_mpi(renders):
    render = renders['operator-auto-ray']
    assert render.rc == 0, render.output[-4000:]
    multinode = render.one('NIMService')['spec']['multiNode']
    assert multinode['ray'] == {'rayPort': 6379}
    assert 'mpi' not in multinode


def test_lws_leader_address_contract_uses_the_lws_leader_address(renders):
    _lws, _template, leader, worker = _lws_parts(renders['lws-leader-address'])
    for container in (leader['containers'][0], worker['containers'][0]):
        env = _env(container)
        assert env['NIM_LEADER_IP_ADDRESS'] == '$(LWS_LEADER_ADDRESS)'
        assert env['MASTER_ADDR'] == '$(LWS_LEADER_ADDRESS)'
        assert env['MASTER_PORT'] == '50000'
        # RoCE profile (docs/contracts.md, network profiles): the RDMA device and the GID index ride on every rank.
        assert env['NCCL_IB_GID_INDEX'] == '3'
        assert env['NCCL_SOCKET_IFNAME'] == 'eth0'
        assert container['resources']['limits'] == {'nvidia.com/gpu': '8', 'rdma/rdma_shared_device_a': '1'}


@pytest.mark.parametrize('name, pp', [('operator-tp8pp2', 2), ('operator-4node', 4)])
def test_nimservice_carries_the_layout(renders, name, pp):
    spec = renders[name].one('NIMService')['spec']
    assert spec['multiNode'] == {'backendType': 'lws', 'parallelism': {'tensor': 8, 'pipeline': pp},
                                 'mpi': {'mpiStartTimeout': 3000}}
    assert spec['authSecret'] == 'ngc-api-key'
    assert spec['image'] == {'repository': 'nvcr.io/nim/meta/llama-3.1-405b-instruct', 'tag': '1.3.0',
                             'pullPolicy': 'IfNotPresent', 'pullSecrets': ['ngc-registry']}
    assert 'scale' not in spec
    names = set(item['name'] for item in spec.get('env', []))
    # The operator sets the multi-node contract itself; the NIMService must not fight it.
    assert not names & {'NIM_NODE_RANK', 'NIM_LEADER_ROLE', 'CLUSTER_SIZE', 'NGC_API_KEY', 'NIM_TENSOR_PARALLEL_SIZE'}


def test_deepseek_r1_seed_nimservice(renders):
    spec = renders['operator-deepseek'].one('NIMService')['spec']
    assert spec['image']['repository'] == 'nvcr.io/nim/deepseek-ai/deepseek-r1'
    assert spec['multiNode']['parallelism'] == {'tensor': 8, 'pipeline': 2}
    assert spec['multiNode']['mpi'] == {'mpiStartTimeout': 6000}
    assert 'ray' not in spec['multiNode']
    assert spec['resources']['limits']['nvidia.com/gpu'] == '8'
    assert spec['storage']['pvc']['volumeAccessMode'] == 'ReadWriteMany'
    assert spec['storage']['pvc']['create'] is True
    assert spec['storage']['sharedMemorySizeLimit'] == '64Gi'
    startup = spec['startupProbe']
    assert startup['enabled'] is True
    assert startup['probe']['periodSeconds'] * startup['probe']['failureThreshold'] == 7800


def test_an_image_pinned_by_digest_is_pulled_by_digest(renders):
    # The operator pulls repository:tag, so a digest splits as repo@sha256 and the hex.
    digest = 'sha256:' + 'ab' * 32
    image = renders['operator-digest'].one('NIMService')['spec']['image']
    assert (image['repository'], image['tag']) == ('nvcr.io/nim/meta/llama-3.1-405b-instruct@sha256', 'ab' * 32)
    assert '%s:%s' % (image['repository'], image['tag']) == 'nvcr.io/nim/meta/llama-3.1-405b-instruct@' + digest
    lws = renders['lws-digest'].one('LeaderWorkerSet')['spec']['leaderWorkerTemplate']
    for template in ('leaderTemplate', 'workerTemplate'):
        assert lws[template]['spec']['containers'][0]['image'] == 'nvcr.io/nim/meta/llama-3.1-405b-instruct@' + digest


def test_nimservice_ray_contract_sets_ray_never_mpi(renders):
    spec = renders['operator-ray'].one('NIMService')['spec']
    assert spec['multiNode']['ray'] == {'rayPort': 6379}
    assert 'mpi' not in spec['multiNode']
    assert {'name': 'NIM_JSONL_LOGGING', 'value': '0'} in spec['env']
    assert {'name': 'RAY_USAGE_STATS_ENABLED', 'value': '0'} in spec['env']
    # AWS EFA profile: 4 EFA devices per GPU on p5.48xlarge, so 32 for the 8 GPUs of a pod.
    assert spec['resources']['limits'] == {'nvidia.com/gpu': '8', 'vpc.amazonaws.com/efa': '32'}
    assert {'name': 'FI_PROVIDER', 'value': 'efa'} in spec['env']


def test_cel_rejects_autoscaling_with_multinode(renders):
    nimservice = copy.deepcopy(renders['operator-tp8pp2'].one('NIMService'))
    nimservice['spec']['scale'] = {'enabled': True, 'hpa': {'maxReplicas': 4}}
    with pytest.raises(Invalid) as raised:
        validate(nimservice)
    assert any('autoScaling must be nil or disabled when multiNode is set' in p for p in raised.value.problems)


def test_cel_rejects_mpi_and_ray_together(renders):
    nimservice = copy.deepcopy(renders['operator-tp8pp2'].one('NIMService'))
    nimservice['spec']['multiNode']['ray'] = {'rayPort': 6379}
    with pytest.raises(Invalid) as raised:
        validate(nimservice)
    assert raised.value.problems == [
        'self.spec.multiNode: mpi and ray are mutually exclusive (CEL: !(has(self.mpi) && has(self.ray)))']


def test_schema_validation_refuses_unknown_fields(renders):
    lws = copy.deepcopy(renders['lws-tp8pp2'].one('LeaderWorkerSet'))
    lws['spec']['leaderWorkerTemplate']['workerTemplate']['spec']['containers'][0]['gpus'] = 8
    with pytest.raises(Invalid, match="'gpus' was unexpected"):
        validate(lws)
    service = copy.deepcopy(renders['lws-tp8pp2'].one('Service'))
    service['spec']['ports'][0]['port'] = 'eight thousand'
    with pytest.raises(Invalid):
        validate(service)


def test_switching_contract_removes_stale_files(renders, workdir):
    root = os.path.join(workdir, 'out', 'switch')
    shutil.copytree(renders['lws-tp8pp2'].root, root)
    switched = run_render(workdir, 'switch', 'lws', {'nim_launch_contract': 'ray'}, render_dir=root)
    assert switched.rc == 0, switched.output[-4000:]
    assert 'default/ConfigMap-nim-default-mpi-config.yaml' not in switched.paths()
    assert 'default/LeaderWorkerSet-nim-default.yaml' in switched.paths()


@pytest.mark.parametrize('name, message', [
    ('rejected-plan', "group 'tp6': nim_tensor_parallel=6: the model's 128 attention heads are not divisible by 6"),
    ('rejected-plan', "group 'autoscaling': nim_k8s_autoscaling=true, nodes=2: a multi-node deployment cannot autoscale"),
    ('rejected-plan', "nim_launch_contract=auto cannot tell the NIM version from nim_image_tag='latest'"),
    ('rejected-lws-settings', 'nim_k8s_scheduler=kai needs nim_k8s_kai_queue, the KAI leaf queue of the groups'),
    ('rejected-lws-settings',
     'nim_k8s_volcano_queue=q is set but only applies to nim_k8s_scheduler=volcano (got nim_k8s_scheduler=kai)'),
    ('rejected-lws-settings', 'nim_k8s_rollout_max_unavailable and nim_k8s_rollout_max_surge cannot both be 0'),
    ('rejected-values', 'nim_k8s_exclusive_topology="not a label" holds characters its use does not allow; '
                        'accepted: a Kubernetes label key such as topology.kubernetes.io/rack, or empty'),
    ('rejected-values', 'nim_k8s_restart_policy="Always" is not one of the accepted values; accepted: '
                        'one of RecreateGroupOnPodRestart, RecreateGroupAfterStart, None'),
    ('rejected-values', 'nim_k8s_rollout_partition=-1 is out of range; accepted: a whole number from 0'),
    ('rejected-values', 'nim_k8s_priority_class="Not_A_Name" is not a DNS name'),
    ('rejected-operator',
     "group 'leader-address': nim_launch_contract=leader_address is not supported by nim_k8s_backend=nim_operator"),
    ('rejected-operator',
     "group 'tp-across-nodes': nim_tensor_parallel=16 with nim_pipeline_parallel=1 spreads over 2 nodes, but "
     "nim_k8s_backend=nim_operator runs one pod per pipeline stage (1)"),
    ('rejected-operator', 'use nim_k8s_backend=lws, which runs any layout'),
    ('rejected-operator', 'nim_k8s_restart_policy=None is a LeaderWorkerSet setting, but '
                          'nim_k8s_backend=nim_operator builds its own LeaderWorkerSet'),
    ('rejected-operator', 'nim_k8s_rollout_partition=1 is a LeaderWorkerSet setting'),
])
def test_rejected_deployment_fails_before_anything_is_written(renders, name, message):
    render = renders[name]
    assert render.rc != 0
    assert message in render.output
    assert not os.path.exists(render.root)


def test_secrets_render_only_on_request(renders, workdir):
    keys = os.path.join(workdir, 'keys')
    render = renders['lws-secrets']
    assert render.rc == 0, render.output[-4000:]
    assert FAKE_NGC_KEY not in render.output
    secrets = dict((path, obj) for path, obj in render.manifests().items() if obj['kind'] == 'Secret')
    assert sorted(secrets) == ['_namespaces/nim/Secret-ngc-api-key.yaml', '_namespaces/nim/Secret-ngc-registry.yaml',
                               'default/Secret-nim-default-ssh-pk.yaml']
    for path, obj in secrets.items():
        validate(obj)
        assert stat.S_IMODE(os.stat(os.path.join(render.root, path)).st_mode) == 0o600
    auth = secrets['_namespaces/nim/Secret-ngc-api-key.yaml']
    assert base64.b64decode(auth['data']['NGC_API_KEY']).decode() == FAKE_NGC_KEY
    assert secrets['_namespaces/nim/Secret-ngc-registry.yaml']['type'] == 'kubernetes.io/dockerconfigjson'
    key = base64.b64decode(secrets['default/Secret-nim-default-ssh-pk.yaml']['data']['private.key']).decode()
    assert key.startswith('-----BEGIN RSA PRIVATE KEY-----')
    assert open(os.path.join(keys, 'nim-nim-default', 'id_rsa')).read() == key


def _ssh_secret_data(render):
    data = render.load('default/Secret-nim-default-ssh-pk.yaml')['data']
    return dict((name, base64.b64decode(value).decode()) for name, value in data.items())


def test_the_ssh_secret_pins_the_workers_host_key(renders, workdir):
    keys = os.path.join(workdir, 'keys', 'nim-nim-default')
    data = _ssh_secret_data(renders['lws-secrets'])
    assert sorted(data) == ['config', 'known_hosts', 'private.key', 'ssh_host_ed25519_key']
    host_key = data['ssh_host_ed25519_key']
    assert host_key.startswith('-----BEGIN OPENSSH PRIVATE KEY-----')
    assert open(os.path.join(keys, 'ssh_host_ed25519_key')).read() == host_key
    public = open(os.path.join(keys, 'ssh_host_ed25519_key.pub')).read().split()
    alias = 'nimstack-nim-nim-default-workers'
    # One line: the alias every worker is checked under, and the host key the workers serve.
    assert data['known_hosts'].splitlines() == ['%s %s %s' % (alias, public[0], public[1])]
    config = dict(line.strip().split(None, 1) for line in data['config'].splitlines()
                  if line.strip() and not line.strip().startswith('#'))
    assert config['Host'] == '*'
    assert config['HostKeyAlias'] == alias
    assert config['StrictHostKeyChecking'] == 'yes'
    assert config['UserKnownHostsFile'] == '/opt/nim/llm/pk/known_hosts'
    assert config['GlobalKnownHostsFile'] == '/dev/null'
    assert config['IdentityFile'] == '/opt/nim/llm/pk/private.key'


def test_a_re_render_is_byte_identical_and_keeps_the_ssh_keys(renders, workdir):
    first = renders['lws-secrets-run']
    snapshot = dict((path, open(os.path.join(first.root, path), 'rb').read()) for path in first.paths())
    before = _ssh_secret_data(renders['lws-secrets'])
    # A second render into the same directory (three groups, one per launch contract, and their
    # Secrets): every file is compared with what it would write, so changed=0 means byte-identical
    # output, and the bytes are checked on top.
    again = run_render(workdir, 'lws-secrets-again', 'lws', GROUPED['lws-secrets-run'][1], render_dir=first.root,
                       inventory=first.inventory)
    assert again.rc == 0, again.output[-4000:]
    assert again.changed() == 0
    assert dict((path, open(os.path.join(again.root, path), 'rb').read()) for path in again.paths()) == snapshot
    assert _ssh_secret_data(again.of_group('default')) == before


def test_lws_rollout_restart_and_priority_settings(renders):
    lws, template, leader, worker = _lws_parts(renders['lws-rollout'])
    assert lws['spec']['replicas'] == 3
    assert template['restartPolicy'] == 'RecreateGroupAfterStart'
    assert lws['spec']['rolloutStrategy'] == {
        'type': 'RollingUpdate',
        'rollingUpdateConfiguration': {'maxSurge': 1, 'maxUnavailable': '50%', 'partition': 2}}
    for role in ('leaderTemplate', 'workerTemplate'):
        assert template[role]['spec']['priorityClassName'] == 'nim-serving'


def test_lws_defaults_recreate_the_whole_group_one_lws_group_at_a_time(renders):
    lws, template, _leader, _worker = _lws_parts(renders['lws-tp8pp2'])
    assert template['restartPolicy'] == 'RecreateGroupOnPodRestart'
    assert lws['spec']['rolloutStrategy']['rollingUpdateConfiguration'] == {
        'maxSurge': 0, 'maxUnavailable': 1, 'partition': 0}
    assert 'priorityClassName' not in template['leaderTemplate']['spec']


def test_a_nimcache_per_image_and_the_nimservice_on_it(renders):
    # A NIMCache's modelPuller cannot change: each image has a NIMCache of its own, named after it,
    # and the NIMService names the one of its image.
    caches = {}
    for name in ('operator-nimcache', 'operator-nimcache-new-tag'):
        render = renders[name]
        assert render.rc == 0, render.output[-3000:]
        cache, service = render.one('NIMCache'), render.one('NIMService')
        assert service['spec']['storage']['nimCache'] == {'name': cache['metadata']['name']}
        assert cache['metadata']['name'].startswith(service['metadata']['name'] + '-')
        assert cache['spec']['source']['ngc']['modelPuller'] == '%s:%s' % (service['spec']['image']['repository'],
                                                                           service['spec']['image']['tag'])
        caches[name] = cache['metadata']['name']
    assert caches['operator-nimcache'] != caches['operator-nimcache-new-tag']


def test_the_operators_own_features_from_the_inventory(renders):
    spec = renders['operator-features'].one('NIMService')['spec']
    assert spec['metrics'] == {'enabled': True, 'serviceMonitor': {'interval': '30s',
                                                                   'additionalLabels': {'release': 'prometheus'}}}
    assert spec['expose']['router'] == {'hostDomainName': 'nim.example.com', 'ingress': {'ingressClass': 'nginx'}}
    assert spec['expose']['service']['port'] == 8000
    assert spec['multiNode']['computeDomain'] == {'create': True}
    assert spec['priorityClassName'] == 'nim-serving'
    named = renders['operator-compute-domain-name'].one('NIMService')['spec']
    assert named['multiNode']['computeDomain'] == {'create': False, 'name': 'gb200-rack-1'}
    assert 'metrics' not in named and 'router' not in named['expose']


def _operator_pod_template(node_selector):
    """The NIM Operator's pod templates (manifests/lws.yaml, manifests/deployment.yaml of
    k8s-nim-operator 3.1.2) write the node selector as `{{ $key }}: {{ $value }}`, unquoted, and
    parse the result as YAML: what the pods get."""
    text = 'nodeSelector:\n' + ''.join('  %s: %s\n' % (key, value) for key, value in sorted(node_selector.items()))
    return yaml.safe_load(text)['nodeSelector']


@pytest.mark.parametrize('name', ['operator-tp8pp2', 'operator-4node'])
def test_the_operator_puts_the_nimservice_node_selector_on_the_pods_unchanged(renders, name):
    # With the default selector nvidia.com/gpu.present=true the operator's pods got the bool true and
    # no LeaderWorkerSet was built at all: the NIMService must carry the value so that the
    # operator's unquoted template writes the string back.
    spec = renders[name].one('NIMService')['spec']
    assert _operator_pod_template(spec['nodeSelector']) == {'nvidia.com/gpu.present': 'true'}
    # A NIMCache's Job is built from the Go object, not from a template: it carries the plain value.
    for obj in renders[name].manifests().values():
        if obj['kind'] == 'NIMCache':
            assert obj['spec']['nodeSelector'] == {'nvidia.com/gpu.present': 'true'}


@pytest.mark.parametrize('name, lws_name', [('lws-monitoring', 'nim-default'), ('operator-monitoring', 'nim-default-lws')])
def test_monitoring_objects_on_both_backends(renders, name, lws_name):
    render = renders[name]
    assert render.rc == 0, render.output[-4000:]
    monitor = render.load('default/PodMonitor-nim-default-metrics.yaml')
    validate(monitor)
    assert monitor['metadata']['labels']['release'] == 'prometheus'
    assert monitor['spec']['selector']['matchLabels'] == {'leaderworkerset.sigs.k8s.io/name': lws_name,
                                                          'leaderworkerset.sigs.k8s.io/worker-index': '0'}
    endpoint, = monitor['spec']['podMetricsEndpoints']
    assert (endpoint['port'], endpoint['path'], endpoint['interval']) == ('api', '/v1/metrics', '1m')
    assert dict((r['targetLabel'], r['replacement']) for r in endpoint['relabelings']) == {
        'job': 'nim', 'group': 'default', 'model': 'meta/llama-3.1-405b-instruct', 'rank': '0', 'role': 'leader'}
    rule = render.load('_namespaces/nim/PrometheusRule-nimstack-nim-alerts.yaml')
    validate(rule)
    assert rule['metadata']['labels']['release'] == 'prometheus'
    rules = dict((r['alert'], r) for g in rule['spec']['groups'] for r in g['rules'])
    assert sorted(rules) == sorted(nim_alerts.ALERTS)
    # The threshold of the inventory, not the default.
    assert rule['spec']['groups'] == nim_alerts.rule_groups({'kv_cache_fraction': 0.95})
    # What the pods are labelled with, on the lws backend, is what the PodMonitor's labels come from
    # too: the leader template of our LeaderWorkerSet is the leader's (LWS adds the worker index).
    if name == 'lws-monitoring':
        leader = render.load('default/LeaderWorkerSet-nim-default.yaml')['spec']['leaderWorkerTemplate']['leaderTemplate']
        assert leader['metadata']['labels']['nimstack.multinode/role'] == 'leader'
        assert {'name': 'api', 'containerPort': 8000, 'protocol': 'TCP'} in leader['spec']['containers'][0]['ports']


def test_monitoring_off_renders_no_monitoring_object(renders):
    render = renders['lws-monitoring-off']
    assert render.rc == 0, render.output[-4000:]
    assert not [path for path in render.paths() if 'PodMonitor' in path or 'PrometheusRule' in path]


def test_turning_monitoring_off_removes_the_rendered_monitoring_files_only(renders, workdir):
    root = os.path.join(workdir, 'out', 'monitoring-toggle')
    shutil.copytree(renders['lws-tp8pp2'].root, root)
    rule = '_namespaces/nim/PrometheusRule-nimstack-nim-alerts.yaml'
    assert os.path.exists(os.path.join(root, rule))
    assert os.path.exists(os.path.join(root, 'default', 'PodMonitor-nim-default-metrics.yaml'))
    # A rule file of someone else's beside ours: not the collection's to remove.
    theirs = os.path.join(root, '_namespaces', 'nim', 'PrometheusRule-team.yaml')
    with open(theirs, 'w') as handle:
        handle.write('apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\n')
    off = run_render(workdir, 'monitoring-toggle', 'lws', {'nim_k8s_monitoring': False}, render_dir=root)
    assert off.rc == 0, off.output[-4000:]
    assert not [path for path in off.paths() if 'PodMonitor' in path or path == rule]
    assert '_namespaces/nim/PrometheusRule-team.yaml' in off.paths()
