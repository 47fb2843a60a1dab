# -*- coding: utf-8 -*-
"""The Kubernetes objects of a group, built from the plan and the nim_k8s settings (the render tests
in tests/k8s validate whole renders against the API's and the CRDs' schemas)."""

import copy
import hashlib
import os

import pytest
import yaml

from ansible_collections.nimstack.multinode.plugins.module_utils import k8s_objects, nim_alerts
from ansible_collections.nimstack.multinode.plugins.module_utils.k8s_objects import K8sObjectsError, group_spec, group_specs
from ansible_collections.nimstack.multinode.plugins.module_utils.nim_plan import build_plan
from ansible_collections.nimstack.multinode.tests.unit.models import LLAMA_405B

LWS = {'nim_k8s_backend': 'lws'}
OPERATOR = {'nim_k8s_backend': 'nim_operator'}


def _group(count=2, **settings):
    values = dict(LLAMA_405B, **settings)
    nodes = [{'host': 'gpu-%d' % i, 'address': '10.0.0.%d' % (11 + i), 'settings': dict(values)} for i in range(count)]
    plan = build_plan(nodes, deployment_mode='kubernetes')
    assert plan['valid'], plan['errors']
    return plan['groups']['default']


def _kinds(spec):
    return [obj['kind'] for obj in spec['objects']]


def _lws(spec):
    return [obj for obj in spec['objects'] if obj['kind'] == 'LeaderWorkerSet'][0]


def _pods(spec):
    template = _lws(spec)['spec']['leaderWorkerTemplate']
    return template['leaderTemplate']['spec'], template['workerTemplate']['spec']


def test_objects_by_backend_and_launch_in_the_order_they_are_applied():
    assert _kinds(group_spec(_group(), LWS)) == ['PersistentVolumeClaim', 'ConfigMap', 'LeaderWorkerSet', 'Service',
                                                 'PodMonitor']
    assert _kinds(group_spec(_group(), dict(LWS, nim_k8s_mpi_start_script='#!/bin/sh\n'))) == [
        'PersistentVolumeClaim', 'ConfigMap', 'ConfigMap', 'LeaderWorkerSet', 'Service', 'PodMonitor']
    # No hostfile under ray; a claim the site names is not ours to make.
    assert _kinds(group_spec(_group(nim_launch_contract='ray'), dict(LWS, nim_k8s_pvc_name='models'))) == [
        'LeaderWorkerSet', 'Service', 'PodMonitor']
    assert _kinds(group_spec(_group(), OPERATOR)) == ['NIMService', 'PodMonitor']
    assert _kinds(group_spec(_group(), dict(OPERATOR, nim_k8s_storage='nimcache'))) == [
        'NIMCache', 'NIMService', 'PodMonitor']
    # Monitoring off (a string, as an inventory may give it): no PodMonitor on either backend.
    for backend in (LWS, OPERATOR):
        assert 'PodMonitor' not in _kinds(group_spec(_group(), dict(backend, nim_k8s_monitoring='false')))


def _pod_monitor(spec):
    return [obj for obj in spec['objects'] if obj['kind'] == 'PodMonitor'][0]


@pytest.mark.parametrize('backend, lws_name', [(LWS, 'nim-default'), (OPERATOR, 'nim-default-lws')])
def test_the_pod_monitor_scrapes_the_leaders_with_the_contract_labels(backend, lws_name):
    group = _group(nim_image='nvcr.io/nim/meta/llama-3.1-405b-instruct')
    monitor = _pod_monitor(group_spec(group, dict(backend, nim_k8s_monitoring_labels={'release': 'prometheus'},
                                                  nim_k8s_monitoring_interval='15s')))
    assert monitor['apiVersion'] == 'monitoring.coreos.com/v1'
    assert monitor['metadata']['name'] == 'nim-default-metrics'
    # Ours (the mark every object of the group carries) and the Prometheus selector's label.
    assert monitor['metadata']['labels']['app.kubernetes.io/managed-by'] == 'nimstack.multinode'
    assert monitor['metadata']['labels']['nimstack.multinode/group'] == 'default'
    assert monitor['metadata']['labels']['release'] == 'prometheus'
    # The leader of each LWS group (worker index 0) of the LeaderWorkerSet that runs the group:
    # ours, or the one the operator builds for the NIMService.
    assert monitor['spec']['selector'] == {'matchLabels': {'leaderworkerset.sigs.k8s.io/name': lws_name,
                                                           'leaderworkerset.sigs.k8s.io/worker-index': '0'}}
    assert monitor['spec']['namespaceSelector'] == {'matchNames': [group['k8s']['namespace']]}
    endpoint, = monitor['spec']['podMetricsEndpoints']
    assert (endpoint['port'], endpoint['path'], endpoint['interval']) == ('api', '/v1/metrics', '15s')
    labels = dict((r['targetLabel'], r['replacement']) for r in endpoint['relabelings'])
    assert labels == {'job': 'nim', 'group': 'default', 'model': 'meta/llama-3.1-405b-instruct', 'rank': '0',
                      'role': 'leader'}
    # Written as the API server returns it (the action defaulted), so a re-apply changes nothing.
    assert all(r['action'] == 'replace' for r in endpoint['relabelings'])


def test_the_pod_monitor_names_the_model_the_group_serves():
    group = _group(nim_frontend_model='llama-405b')
    endpoint, = _pod_monitor(group_spec(group, LWS))['spec']['podMetricsEndpoints']
    assert {'targetLabel': 'model', 'replacement': 'llama-405b', 'action': 'replace'} in endpoint['relabelings']
    # No interval: the Prometheus's global one.
    endpoint, = _pod_monitor(group_spec(group, dict(LWS, nim_k8s_monitoring_interval='')))['spec']['podMetricsEndpoints']
    assert 'interval' not in endpoint


def test_one_alert_rule_for_the_deployment_with_the_bare_metal_alert_groups():
    nodes = [{'host': 'gpu-%d' % i, 'address': '10.0.0.%d' % (11 + i), 'group': group,
              'settings': dict(LLAMA_405B, nim_k8s_namespace=namespace)}
             for i, (group, namespace) in enumerate([('beta', 'nim-b'), ('beta', 'nim-b'), ('alpha', 'nim-z'),
                                                     ('alpha', 'nim-z')])]
    plan = build_plan(nodes, deployment_mode='kubernetes')
    assert plan['valid'], plan['errors']
    rule = k8s_objects.alert_rule(plan, dict(LWS, nim_k8s_monitoring_labels={'release': 'kps'},
                                             nim_k8s_alert_thresholds={'kv_cache_fraction': 0.8}))
    assert (rule['apiVersion'], rule['kind']) == ('monitoring.coreos.com/v1', 'PrometheusRule')
    # The first namespace by name, whichever group comes first.
    assert (rule['metadata']['namespace'], rule['metadata']['name']) == ('nim-b', 'nimstack-nim-alerts')
    assert rule['metadata']['labels']['release'] == 'kps'
    assert rule['metadata']['labels']['nimstack.multinode/component'] == 'alerts'
    assert rule['spec']['groups'] == nim_alerts.rule_groups({'kv_cache_fraction': 0.8})
    assert rule['spec']['groups'] != nim_alerts.rule_groups()
    alerts = [r['alert'] for g in rule['spec']['groups'] for r in g['rules']]
    assert sorted(alerts) == sorted(nim_alerts.ALERTS)
    assert k8s_objects.alert_rule(plan, dict(LWS, nim_k8s_monitoring=False)) is None
    with pytest.raises(K8sObjectsError, match='nim_k8s_alert_thresholds: .*kv_cache_fraction'):
        k8s_objects.alert_rule(plan, dict(LWS, nim_k8s_alert_thresholds={'kv_cache_fraction': 2}))


def test_the_pods_mount_what_the_plan_s_launch_mounts_where_it_mounts_it():
    group = _group()
    leader, worker = _pods(group_spec(group, LWS))
    leader_mounts = dict((m['mountPath'], m) for m in leader['containers'][0]['volumeMounts'])
    worker_mounts = dict((m['mountPath'], m) for m in worker['containers'][0]['volumeMounts'])
    assert set(leader_mounts) == {'/model-store', '/dev/shm', '/etc/mpi', '/opt/nim/llm/.ssh', '/opt/nim/llm/pk',
                                  '/opt/nim/llm/.ssh/config'}
    assert worker_mounts['/ssh-confs/ssh_host_ed25519_key'] == {
        'name': 'ssh-pk', 'mountPath': '/ssh-confs/ssh_host_ed25519_key', 'subPath': 'ssh_host_ed25519_key'}
    assert leader_mounts['/opt/nim/llm/.ssh/config']['subPath'] == 'config'
    # One table: a target moved in the plan's launch mounts moves in the pods.
    moved = copy.deepcopy(group)
    for mount in moved['launch']['mounts']:
        if mount['path'] == 'private.key':
            mount['target'] = '/etc/nim-ssh/private.key'
        if mount['base'] == 'cache':
            mount['target'] = '/models'
    spec = group_spec(moved, LWS)
    leader, _worker = _pods(spec)
    paths = [m['mountPath'] for m in leader['containers'][0]['volumeMounts']]
    assert '/etc/nim-ssh' in paths and '/models' in paths and '/opt/nim/llm/pk' not in paths
    assert spec['ssh_key_dir'] == '/etc/nim-ssh'


def test_a_ray_group_has_no_ssh_trust_and_its_workers_prove_they_joined():
    spec = group_spec(_group(nim_launch_contract='ray'), LWS)
    leader, worker = _pods(spec)
    names = [v['name'] for v in leader['volumes'] + worker['volumes']]
    assert 'ssh-pk' not in names and 'mpi-config' not in names
    assert worker['containers'][0]['startupProbe'] == k8s_objects.RAY_WORKER_PROBE
    assert 'startupProbe' not in _pods(group_spec(_group(), LWS))[1]['containers'][0]
    assert spec['ssh_key_dir'] == ''


def test_each_rank_gets_its_env_and_command_from_the_plan_and_the_key_from_the_secret():
    group = _group()
    leader, worker = _pods(group_spec(group, dict(LWS, nim_k8s_auth_secret='ngc')))
    for pod, rank in ((leader, group['ranks'][0]), (worker, group['ranks'][1])):
        container = pod['containers'][0]
        assert container['env'][:-1] == rank['env_list']
        assert container['env'][-1] == {'name': 'NGC_API_KEY',
                                        'valueFrom': {'secretKeyRef': {'name': 'ngc', 'key': 'NGC_API_KEY'}}}
        assert container.get('args', []) == rank['command']


def test_quantities_are_strings_and_a_non_quantity_is_refused_by_name():
    settings = dict(LWS, nim_k8s_resources={'limits': {'memory': '512Gi', 'cpu': 32}, 'requests': {'cpu': 16}})
    leader, _worker = _pods(group_spec(_group(), settings))
    assert leader['containers'][0]['resources'] == {
        'limits': {'nvidia.com/gpu': '8', 'memory': '512Gi', 'cpu': '32'}, 'requests': {'cpu': '16'}}
    # No requests given: none written (an empty mapping would differ from what the API returns).
    assert 'requests' not in _pods(group_spec(_group(), LWS))[0]['containers'][0]['resources']
    with pytest.raises(K8sObjectsError, match=r'nim_k8s_resources.limits: cpu=True is not a quantity'):
        group_spec(_group(), dict(LWS, nim_k8s_resources={'limits': {'cpu': True}}))


def test_rollout_numbers_as_numbers_percentages_as_strings():
    settings = dict(LWS, nim_k8s_rollout_max_unavailable='50%', nim_k8s_rollout_max_surge='2', nim_k8s_rollout_partition='1')
    assert _lws(group_spec(_group(), settings))['spec']['rolloutStrategy']['rollingUpdateConfiguration'] == {
        'maxUnavailable': '50%', 'maxSurge': 2, 'partition': 1}


def test_the_startup_probe_allows_the_mpi_start_and_the_load():
    group = _group(nim_mpi_start_timeout=3000)
    spec = group_spec(group, dict(LWS, nim_k8s_probe_period=7))
    assert spec['startup_budget'] == 3000 + k8s_objects.LOAD_TIME
    probe = _pods(spec)[0]['containers'][0]['startupProbe']
    assert probe['periodSeconds'] == 7 and probe['failureThreshold'] == 686  # ceil(4800 / 7)
    assert group_spec(group, dict(LWS, nim_k8s_startup_timeout=600))['startup_budget'] == 600


def test_the_nimservice_carries_only_the_env_the_operator_does_not_set_and_quoted_selectors():
    group = _group(nim_extra_env={'NIM_FOO': 'bar'})
    service = group_spec(group, OPERATOR)['objects'][0]
    names = [e['name'] for e in service['spec'].get('env', [])]
    assert 'NIM_FOO' in names
    assert not set(names) & k8s_objects.OPERATOR_ENV
    assert service['spec']['nodeSelector'] == {'nvidia.com/gpu.present': '"true"'}
    assert service['spec']['multiNode']['mpi'] == {'mpiStartTimeout': group['layout']['mpi_start_timeout']}
    ray = group_spec(_group(nim_launch_contract='ray'), OPERATOR)['objects'][0]['spec']['multiNode']
    assert ray['ray'] == {'rayPort': 6379} and 'mpi' not in ray


def test_the_nimcache_is_named_after_its_image():
    group = _group()
    spec = group_spec(group, dict(OPERATOR, nim_k8s_storage='nimcache'))
    expected = 'nim-default-' + hashlib.sha256(group['image'].encode()).hexdigest()[:10]
    assert spec['cache_name'] == expected == spec['objects'][0]['metadata']['name']
    assert spec['objects'][1]['spec']['storage']['nimCache'] == {'name': expected}


def test_scheduling_labels_and_annotations():
    settings = dict(LWS, nim_k8s_scheduler='volcano', nim_k8s_volcano_queue='q', nim_k8s_exclusive_topology='rack')
    lws = _lws(group_spec(_group(), settings))
    assert lws['metadata']['annotations'] == {'scheduling.volcano.sh/queue-name': 'q',
                                              'leaderworkerset.sigs.k8s.io/exclusive-topology': 'rack'}
    assert _pods(group_spec(_group(), settings))[0]['schedulerName'] == 'volcano'
    kai = _lws(group_spec(_group(), dict(LWS, nim_k8s_scheduler='kai', nim_k8s_kai_queue='team-a')))
    assert kai['metadata']['labels']['kai.scheduler/queue'] == 'team-a'
    assert kai['spec']['leaderWorkerTemplate']['workerTemplate']['metadata']['labels']['kai.scheduler/queue'] == 'team-a'


def test_group_specs_takes_the_kubernetes_groups_the_planner_could_plan():
    def node(host, group, **settings):
        return {'host': host, 'address': '10.0.0.%d' % (len(host) + 10), 'group': group,
                'settings': dict(LLAMA_405B, nim_pipeline_parallel=2, **settings)}
    plan = build_plan([node('a1', 'k', nim_deployment_mode='kubernetes'), node('a2', 'k', nim_deployment_mode='kubernetes'),
                       node('b1', 'd'), node('b2', 'd'),
                       node('c1', 'bad', nim_deployment_mode='kubernetes', nim_tensor_parallel=6)])
    assert plan['groups']['k']['valid'] and not plan['groups']['bad']['valid']
    assert list(group_specs(plan, LWS)) == ['k']
    assert group_specs({}, LWS) == {}


def test_the_defaults_are_the_role_s():
    path = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'roles', 'nim_k8s', 'defaults', 'main.yml')
    with open(path) as handle:
        defaults = yaml.safe_load(handle)
    assert dict((k, defaults[k]) for k in k8s_objects.SETTING_DEFAULTS) == k8s_objects.SETTING_DEFAULTS


# The namespaces, NGC Secrets, SSH Secret, kept and removed objects the role reads by name.

def _plan_of(*groups):
    return {'groups': dict((g['name'], g) for g in groups), 'hosts': {}}


def _named(group, name, namespace):
    group = copy.deepcopy(group)
    group['name'] = name
    group['k8s'] = dict(group['k8s'], name=name, namespace=namespace)
    return group


def test_namespaces_once_each_sorted():
    group = _group()
    plan = _plan_of(_named(group, 'b', 'nim-b'), _named(group, 'a', 'nim-a'), _named(group, 'c', 'nim-a'))
    assert k8s_objects.namespaces(plan) == ['nim-a', 'nim-b']
    objects = k8s_objects.namespace_objects(['nim-a'])
    assert objects == [{'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': 'nim-a', 'labels': {
        'app.kubernetes.io/part-of': 'nimstack', 'app.kubernetes.io/managed-by': 'nimstack.multinode'}}}]


def test_ngc_secrets_hold_the_key_and_the_registry_login_as_ansible_wrote_them():
    from ansible.plugins.filter.core import b64encode, to_json
    key = 'nvapi-0123'
    secrets = k8s_objects.ngc_secret_objects(['ns1', 'ns2'], 'ngc-api', 'ngc-secret', 'nvcr.io', key)
    assert [(s['metadata']['namespace'], s['metadata']['name'], s['type']) for s in secrets] == [
        ('ns1', 'ngc-api', 'Opaque'), ('ns1', 'ngc-secret', 'kubernetes.io/dockerconfigjson'),
        ('ns2', 'ngc-api', 'Opaque'), ('ns2', 'ngc-secret', 'kubernetes.io/dockerconfigjson')]
    assert secrets[0]['data'] == {'NGC_API_KEY': b64encode(key)}
    # Byte for byte what the role's Jinja wrote before (to_json | b64encode): a re-run changes nothing.
    login = {'auths': {'nvcr.io': {'username': '$oauthtoken', 'password': key, 'auth': b64encode('$oauthtoken:' + key)}}}
    assert secrets[1]['data'] == {'.dockerconfigjson': b64encode(to_json(login))}


def test_the_ssh_secret_pins_the_workers_host_key_under_one_alias():
    spec = group_spec(_group(), LWS)
    assert spec['ssh_host_key_alias'] == 'nimstack-%s-%s-workers' % (spec['namespace'], spec['name'])
    secret = k8s_objects.ssh_secret_object(spec, 'UFJJVg==', 'SE9TVA==', 'ssh-ed25519 AAAA')
    assert secret['metadata'] == {'name': spec['ssh_secret'], 'namespace': spec['namespace'], 'labels': spec['labels']}
    data = secret['data']
    assert (data['private.key'], data['ssh_host_ed25519_key']) == ('UFJJVg==', 'SE9TVA==')
    assert k8s_objects.base64.b64decode(data['known_hosts']).decode() == spec['ssh_host_key_alias'] + ' ssh-ed25519 AAAA\n'
    config = k8s_objects.base64.b64decode(data['config']).decode()
    assert 'HostKeyAlias %s\n' % spec['ssh_host_key_alias'] in config
    assert '  IdentityFile %s/private.key\n' % spec['ssh_key_dir'] in config
    assert '  StrictHostKeyChecking yes\n' in config and config.startswith('# Made by nimstack.multinode')


def test_kept_and_removed_objects_with_and_without_the_storage():
    spec = group_spec(_group(), LWS)
    kinds = _kinds(spec)
    found = k8s_objects.group_objects(spec, 'lws', [], keep_storage=True)
    assert found['objects'] == spec['objects']
    assert found['kept'] == ['%s/%s' % (o['kind'], o['metadata']['name']) for o in spec['objects']] + ['Secret/' + spec['ssh_secret']]
    assert [o['kind'] for o in found['removed']] == [k for k in reversed(kinds) if k != 'PersistentVolumeClaim'] + ['Secret']
    assert 'data' not in found['removed'][-1]
    dropped = k8s_objects.group_objects(spec, 'lws', [], keep_storage=False)
    assert [o['kind'] for o in dropped['removed']] == list(reversed(kinds)) + ['Secret']


def test_the_operator_backend_keeps_no_ssh_secret():
    spec = group_spec(_group(), OPERATOR)
    found = k8s_objects.group_objects(spec, 'nim_operator', [], keep_storage=False)
    assert not any(k.startswith('Secret/') for k in found['kept'])
    assert [o['kind'] for o in found['removed']] == list(reversed(_kinds(spec)))


def test_kinds_whose_crd_is_missing_are_left_out():
    assert k8s_objects.missing_monitoring(None) == {'kinds': [], 'crds': []}
    assert k8s_objects.missing_monitoring(['podmonitors.monitoring.coreos.com']) == {
        'kinds': ['PrometheusRule'], 'crds': ['prometheusrules.monitoring.coreos.com']}
    spec = group_spec(_group(), LWS)
    assert 'PodMonitor' in _kinds(spec)
    found = k8s_objects.group_objects(spec, 'lws', ['PodMonitor', 'PrometheusRule'])
    assert 'PodMonitor' not in [o['kind'] for o in found['objects']]
    assert not any(k.startswith('PodMonitor/') for k in found['kept'])


def test_the_operator_runs_only_with_a_ready_deployment():
    assert not k8s_objects.operator_running([])
    assert not k8s_objects.operator_running([{'status': {}}, {'status': {'readyReplicas': 0}}])
    assert k8s_objects.operator_running([{'status': {'readyReplicas': 1}}])


def test_render_files_and_ssh_secret_groups():
    specs = {'b': {'files': [{'path': 'b/1'}]}, 'a': {'files': [{'path': 'a/1'}, {'path': 'a/2'}]}}
    assert [f['path'] for f in k8s_objects.render_files(specs)] == ['a/1', 'a/2', 'b/1']
    plan = _plan_of(_group())
    assert [g['name'] for g in k8s_objects.ssh_secret_groups(plan, 'lws', True)] == ['default']
    assert k8s_objects.ssh_secret_groups(plan, 'lws', False) == []
    assert k8s_objects.ssh_secret_groups(plan, 'nim_operator', True) == []
    ray = _plan_of(_group(nim_launch_contract='ray'))
    assert k8s_objects.ssh_secret_groups(ray, 'lws', True) == []
