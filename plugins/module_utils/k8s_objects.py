# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The Kubernetes objects of every deployment group, built from the plan and the role's settings.

The role nim_k8s applies what group_specs() returns and checks what is there; it builds no object
itself. Per group: the objects in the order they are applied (the claim, the NIMCache, the
NIMService, the MPI ConfigMaps, the LeaderWorkerSet and its Service, whichever the backend and the
launch need; docs/contracts.md), and the names and numbers the role's waits and clean-up read.

The paths in the containers come from the plan's launch mounts (nim_plan): the model store, the
MPI hostfile, the SSH key and client configuration and the workers' host key are mounted where the
Docker path mounts them, so that one table says where a rank finds each of them.

Values are written as the API server returns them (quantities as strings, int-or-string fields as
numbers where whole), so that a re-apply finds nothing to change. No Ansible imports: the filter
k8s_group_specs is a thin wrapper.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import base64
import hashlib
import json
import math
import posixpath
import re

from ansible_collections.nimstack.multinode.plugins.module_utils import k8s_preflight, nim_alerts, settings as declared
from ansible_collections.nimstack.multinode.plugins.module_utils.frontend import served_model
from ansible_collections.nimstack.multinode.plugins.module_utils.group_members import groups_of
from ansible_collections.nimstack.multinode.plugins.module_utils.values import ansible_int as as_int, truthy as as_bool
from ansible_collections.nimstack.multinode.plugins.module_utils.k8s_operator import template_safe_labels

# The role's settings the objects read, with their declared defaults (roles/nim_k8s/meta/argument_specs.yml):
# those of the preflight's rules and the objects' own.
SETTING_DEFAULTS = dict(k8s_preflight.SETTING_DEFAULTS, **declared.defaults((
    'nim_k8s_auth_secret', 'nim_k8s_pull_secret', 'nim_k8s_storage', 'nim_k8s_pvc_name', 'nim_k8s_storage_class',
    'nim_k8s_storage_size', 'nim_k8s_cache_profiles', 'nim_k8s_resources', 'nim_k8s_image_pull_policy',
    'nim_k8s_user_id', 'nim_k8s_group_id', 'nim_k8s_service_type', 'nim_k8s_startup_timeout',
    'nim_k8s_probe_period', 'nim_k8s_mpi_start_script',
)))

# The pod templates' schedulerName by nim_k8s_scheduler (docs/contracts.md, gang scheduling).
SCHEDULER_NAMES = {'volcano': 'volcano', 'kai': 'kai-scheduler'}
# Env the NIM Operator sets itself on multi-node pods (docs/contracts.md); a NIMService carries only
# what the plan adds beyond it (network profile, logging, extra env).
OPERATOR_ENV = frozenset((
    'NIM_MPI_ALLOW_RUN_AS_ROOT', 'NIM_NUM_COMPUTE_NODES', 'NIM_MULTI_NODE', 'NIM_TENSOR_PARALLEL_SIZE',
    'NIM_PIPELINE_PARALLEL_SIZE', 'NIM_NODE_RANK', 'NIM_LEADER_ROLE', 'OMPI_MCA_orte_keep_fqdn_hostnames',
    'OMPI_MCA_plm_rsh_args', 'GPUS_PER_NODE', 'CLUSTER_START_TIMEOUT', 'CLUSTER_SIZE', 'GROUP_INDEX',
    'LEADER_NAME', 'NAMESPACE', 'LWS_NAME', 'NIM_CACHE_PATH', 'NIM_SERVER_PORT', 'NIM_HTTP_API_PORT',
    'NGC_API_KEY'))
# A large model needs its MPI start timeout to gather the ranks and then this long to load the
# weights; the startup probe allows both before the kubelet restarts the leader (seconds).
LOAD_TIME = 1800
SHM_MOUNT = '/dev/shm'
# The Ray contract's worker has no HTTP endpoint; `ray status` tells whether it joined the head.
RAY_WORKER_PROBE = {'exec': {'command': ['/bin/sh', '-c', 'ray status']},
                    'initialDelaySeconds': 30, 'periodSeconds': 10, 'timeoutSeconds': 5, 'failureThreshold': 3}
_WHOLE = re.compile(r'^[0-9]+\Z')
# The Prometheus Operator's API (prometheus-operator v0.85.0, example/prometheus-operator-crd) and the
# CRD each kind of it needs: without them in the cluster the role skips those objects and says so.
MONITORING_API = 'monitoring.coreos.com/v1'
MONITORING_CRDS = {'PodMonitor': 'podmonitors.monitoring.coreos.com',
                   'PrometheusRule': 'prometheusrules.monitoring.coreos.com'}
# The scrape job of the leaders' /v1/metrics and the labels every target carries, as on bare metal
# (docs/operations.md, the monitoring picture): the alert rules select job="nim" and read them.
METRICS_JOB = 'nim'
METRICS_PATH = '/v1/metrics'
# The one PrometheusRule of a deployment (the same alert groups as bare metal's rule file).
ALERTS_NAME = 'nimstack-nim-alerts'


class K8sObjectsError(Exception):
    """A group or a setting the objects cannot be built from."""


def quantities(resources, name):
    """Resource quantities as the API server returns them: every value a string."""
    if not isinstance(resources, dict):
        raise K8sObjectsError('%s must be a mapping of resource names to quantities, got %s'
                              % (name, type(resources).__name__))
    out = {}
    for key, value in resources.items():
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise K8sObjectsError('%s: %s=%r is not a quantity (a number or a string such as 500m or 64Gi)'
                                  % (name, key, value))
        out[key] = str(value)
    return out


def _int_or_percent(value):
    """LWS's int-or-string: a whole number as a number, a percentage as the string."""
    return int(value) if _WHOLE.match(str(value)) else value


def _settings(settings):
    merged = dict(SETTING_DEFAULTS)
    merged.update((k, v) for k, v in (settings or {}).items() if k in SETTING_DEFAULTS)
    return merged


def _mount_targets(group):
    """Where the ranks find each file of the launch (nim_plan's launch mounts): {path or base: target}."""
    targets = {}
    for mount in (group.get('launch') or {}).get('mounts') or []:
        targets[mount.get('path') or mount['base']] = mount['target']
    return targets


class _Group(object):
    """One group's names and the parts its objects share."""

    def __init__(self, group, s):
        self.group = group
        self.s = s
        k8s = group['k8s']
        self.name = k8s['name']
        self.namespace = k8s['namespace']
        self.layout = group['layout']
        self.api_port = as_int(group['ports']['api'])
        launch = group.get('launch') or {}
        self.ssh_mesh = bool(launch.get('ssh_mesh'))
        self.hostfile = bool(launch.get('hostfile'))
        self.script = self.hostfile and len(s['nim_k8s_mpi_start_script']) > 0
        self.cache_name = '%s-%s' % (self.name, hashlib.sha256(group['image'].encode('utf-8')).hexdigest()[:10])
        self.pvc = s['nim_k8s_pvc_name'] or self.name + '-model-store'
        self.service = self.name + '-api'
        self.ssh_secret = self.name + '-ssh-pk'
        # Where the ranks find the SSH key Secret's entries (its known_hosts and client configuration
        # name them there); empty where the launch needs no SSH trust.
        self.targets = _mount_targets(group)
        self.ssh_key_dir = posixpath.dirname(self.targets.get('private.key', ''))
        self.labels = {
            'app.kubernetes.io/name': 'nim',
            'app.kubernetes.io/instance': self.name,
            'app.kubernetes.io/part-of': 'nimstack',
            'app.kubernetes.io/managed-by': 'nimstack.multinode',
            'nimstack.multinode/group': group['name'],
        }
        scheduler = s['nim_k8s_scheduler']
        self.scheduler_name = SCHEDULER_NAMES.get(scheduler, '')
        # KAI reads the queue from the workload's labels; the pods carry it too.
        self.workload_labels = {'kai.scheduler/queue': s['nim_k8s_kai_queue']} if scheduler == 'kai' else {}
        # On the LeaderWorkerSet (the NIMService's spec.annotations, which the operator puts on the
        # LeaderWorkerSet it builds). LWS copies volcano.sh/ annotations and the queue to the PodGroup.
        self.workload_annotations = {}
        if scheduler == 'volcano' and s['nim_k8s_volcano_queue']:
            self.workload_annotations['scheduling.volcano.sh/queue-name'] = s['nim_k8s_volcano_queue']
        if s['nim_k8s_exclusive_topology']:
            self.workload_annotations['leaderworkerset.sigs.k8s.io/exclusive-topology'] = s['nim_k8s_exclusive_topology']
        timeout = as_int(s['nim_k8s_startup_timeout'])
        self.startup_budget = timeout if timeout > 0 else as_int(self.layout.get('mpi_start_timeout')) + LOAD_TIME
        self.probes = self._probes()

    def metadata(self, name, labels=None):
        return {'name': name, 'namespace': self.namespace, 'labels': dict(labels or self.labels)}

    def _probes(self):
        period = as_int(self.s['nim_k8s_probe_period'])

        def http(path, seconds, failures):
            return {'httpGet': {'path': path, 'port': self.api_port}, 'periodSeconds': seconds,
                    'timeoutSeconds': 5, 'failureThreshold': failures}
        return {'startup': http('/v1/health/ready', period, int(math.ceil(self.startup_budget / float(period)))),
                'readiness': http('/v1/health/ready', 10, 3),
                'liveness': http('/v1/health/live', 30, 3)}

    def limits(self, rank):
        merged = {'nvidia.com/gpu': as_int(self.layout['gpus_per_rank'])}
        merged.update(rank.get('resources') or {})
        merged.update(self.s['nim_k8s_resources'].get('limits') or {})
        return quantities(merged, 'nim_k8s_resources.limits')

    def requests(self):
        return quantities(self.s['nim_k8s_resources'].get('requests') or {}, 'nim_k8s_resources.requests')

    def shm_size(self):
        return '%sGi' % (self.group['settings']['nim_shm_size_gb'],)


def _pvc(g):
    s = g.s
    spec = {'accessModes': [s['nim_k8s_storage_access_mode']],
            'resources': {'requests': {'storage': str(s['nim_k8s_storage_size'])}}}
    if s['nim_k8s_storage_class']:
        spec['storageClassName'] = s['nim_k8s_storage_class']
    return {'apiVersion': 'v1', 'kind': 'PersistentVolumeClaim', 'metadata': g.metadata(g.pvc), 'spec': spec}


def _nimcache(g):
    """Downloads the model once into ReadWriteMany storage that every rank of the group mounts."""
    s = g.s
    if s['nim_k8s_cache_profiles']:
        model = {'profiles': s['nim_k8s_cache_profiles']}
    else:
        model = {'tensorParallelism': str(g.layout['tensor_parallel'])}
        if g.layout.get('precision'):
            model['precision'] = g.layout['precision']
    pvc = {'create': True, 'size': str(s['nim_k8s_storage_size']), 'volumeAccessMode': s['nim_k8s_storage_access_mode']}
    if s['nim_k8s_storage_class']:
        pvc['storageClass'] = s['nim_k8s_storage_class']
    return {
        'apiVersion': 'apps.nvidia.com/v1alpha1', 'kind': 'NIMCache', 'metadata': g.metadata(g.cache_name),
        'spec': {
            'source': {'ngc': {'modelPuller': g.group['image'], 'pullSecret': s['nim_k8s_pull_secret'],
                               'authSecret': s['nim_k8s_auth_secret'], 'model': model}},
            'storage': {'pvc': pvc},
            'userID': as_int(s['nim_k8s_user_id']), 'groupID': as_int(s['nim_k8s_group_id']),
            'nodeSelector': s['nim_k8s_node_selector'], 'tolerations': s['nim_k8s_tolerations'],
        },
    }


def _nimservice(g):
    """The operator builds the LeaderWorkerSet, hostfile, SSH key and Service from this
    (docs/contracts.md, NIMService). spec.multiNode carries mpi or ray, never both; autoscaling
    stays off (the planner refuses it)."""
    s = g.s
    group = g.group
    leader = group['ranks'][0]
    layout = g.layout
    multinode = {'backendType': 'lws',
                 'parallelism': {'tensor': as_int(layout['tensor_parallel']), 'pipeline': as_int(layout['pipeline_parallel'])}}
    # The key of spec.multiNode that runs the group's launch is the plan's launch data (preflight
    # refuses a launch without one).
    launcher = group['launch']['operator_multinode']
    if launcher == 'mpi':
        multinode['mpi'] = {'mpiStartTimeout': as_int(layout['mpi_start_timeout'])}
    elif launcher == 'ray':
        multinode['ray'] = {'rayPort': as_int(group['ports'].get('ray', 0))}
    else:
        raise K8sObjectsError("group '%s': its launch has no spec.multiNode key for a NIMService" % group['name'])
    domain = s['nim_k8s_compute_domain']
    if domain:
        multinode['computeDomain'] = {'create': True} if domain == 'create' else {'create': False, 'name': domain}
    expose = {'service': {'type': s['nim_k8s_service_type'], 'port': g.api_port}}
    if s['nim_k8s_router']:
        expose['router'] = s['nim_k8s_router']
    if s['nim_k8s_storage'] == 'nimcache':
        storage = {'nimCache': {'name': g.cache_name}}
    elif s['nim_k8s_pvc_name']:
        storage = {'pvc': {'name': s['nim_k8s_pvc_name']}}
    else:
        # The operator creates the claim; every rank mounts it, hence ReadWriteMany.
        storage = {'pvc': {'create': True, 'name': g.pvc, 'size': str(s['nim_k8s_storage_size']),
                           'volumeAccessMode': s['nim_k8s_storage_access_mode']}}
        if s['nim_k8s_storage_class']:
            storage['pvc']['storageClass'] = s['nim_k8s_storage_class']
    storage['sharedMemorySizeLimit'] = g.shm_size()
    resources = {'limits': g.limits(leader)}
    if 'requests' in s['nim_k8s_resources']:
        resources['requests'] = g.requests()
    spec = {}
    if g.scheduler_name:
        spec['schedulerName'] = g.scheduler_name
    if s['nim_k8s_priority_class']:
        spec['priorityClassName'] = s['nim_k8s_priority_class']
    # The operator puts these on the LeaderWorkerSet (and its pods) it builds from the NIMService.
    if g.workload_annotations:
        spec['annotations'] = dict(g.workload_annotations)
    if g.workload_labels:
        spec['labels'] = dict(g.workload_labels)
    spec.update({
        'image': {'repository': group['operator_image']['repository'], 'tag': group['operator_image']['tag'],
                  'pullPolicy': s['nim_k8s_image_pull_policy'], 'pullSecrets': [s['nim_k8s_pull_secret']]},
        'authSecret': s['nim_k8s_auth_secret'],
        'storage': storage,
        'replicas': as_int(group['k8s']['replicas']),
        'resources': resources,
    })
    env = [e for e in leader['env_list'] if 'value' in e and e['name'] not in OPERATOR_ENV]
    if env:
        spec['env'] = env
    spec.update({
        # The operator writes the node selector into its pod templates unquoted: values such as
        # 'true' are handed over quoted so that they come back as strings (module_utils/k8s_operator.py).
        'nodeSelector': template_safe_labels(s['nim_k8s_node_selector']),
        'tolerations': s['nim_k8s_tolerations'],
        'userID': as_int(s['nim_k8s_user_id']),
        'groupID': as_int(s['nim_k8s_group_id']),
        'expose': expose,
    })
    if s['nim_k8s_service_monitor']:
        spec['metrics'] = {'enabled': True, 'serviceMonitor': s['nim_k8s_service_monitor']}
    spec.update({
        'startupProbe': {'enabled': True, 'probe': g.probes['startup']},
        'readinessProbe': {'enabled': True, 'probe': g.probes['readiness']},
        'livenessProbe': {'enabled': True, 'probe': g.probes['liveness']},
        'multiNode': multinode,
    })
    return {'apiVersion': 'apps.nvidia.com/v1alpha1', 'kind': 'NIMService', 'metadata': g.metadata(g.name), 'spec': spec}


def _mpi_config(g):
    """The leader of LWS group i mounts <hostfile directory>/hostfile-<i> (docs/contracts.md)."""
    hostfiles = g.group['k8s']['hostfiles']
    return {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': g.metadata(g.name + '-mpi-config'),
            'data': dict((key, '\n'.join(hostfiles[key]) + '\n') for key in sorted(hostfiles, key=str.lower))}


def _mpi_start_script(g):
    return {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': g.metadata(g.name + '-mpi-start-script'),
            'data': {'start-mpi-cluster.sh': g.s['nim_k8s_mpi_start_script']}}


def _volumes(g):
    """(leader volumes, leader mounts, worker volumes, worker mounts), at the launch mounts' targets."""
    targets = g.targets
    volumes = [{'name': 'model-store', 'persistentVolumeClaim': {'claimName': g.pvc}},
               {'name': 'dshm', 'emptyDir': {'medium': 'Memory', 'sizeLimit': g.shm_size()}}]
    mounts = [{'name': 'model-store', 'mountPath': targets['cache']},
              {'name': 'dshm', 'mountPath': SHM_MOUNT}]
    leader_volumes, leader_mounts = list(volumes), list(mounts)
    worker_volumes, worker_mounts = list(volumes), list(mounts)
    if g.hostfile:
        leader_volumes.append({'name': 'mpi-config', 'configMap': {'name': g.name + '-mpi-config', 'defaultMode': 0o555}})
        leader_mounts.append({'name': 'mpi-config', 'mountPath': posixpath.dirname(targets['hostfile'])})
    if g.ssh_mesh:
        pk_volume = {'name': 'ssh-pk', 'secret': {'secretName': g.ssh_secret, 'defaultMode': 0o400}}
        # The Secret's entries (the key, known_hosts, the client configuration) where the key goes.
        pk_mount = {'name': 'ssh-pk', 'mountPath': g.ssh_key_dir}
        ssh_dir = {'name': 'ssh-dotfiles', 'mountPath': posixpath.dirname(targets['ssh_config'])}
        # The client configuration pins the workers' host key (the Secret's known_hosts); the workers serve it.
        ssh_config = {'name': 'ssh-pk', 'mountPath': targets['ssh_config'], 'subPath': 'config'}
        host_key = targets['ssh_host_ed25519_key']
        leader_volumes += [{'name': 'ssh-dotfiles', 'emptyDir': {}}, pk_volume]
        leader_mounts += [ssh_dir, pk_mount, ssh_config]
        worker_volumes += [{'name': 'ssh-confs', 'emptyDir': {}}, {'name': 'ssh-dotfiles', 'emptyDir': {}}, pk_volume]
        worker_mounts += [{'name': 'ssh-confs', 'mountPath': posixpath.dirname(host_key)},
                          {'name': 'ssh-pk', 'mountPath': host_key, 'subPath': posixpath.basename(host_key)},
                          ssh_dir, pk_mount, ssh_config]
    if g.script:
        script = [{'name': 'start-mpi-script', 'configMap': {'name': g.name + '-mpi-start-script', 'defaultMode': 0o555}}]
        script_mount = [{'name': 'start-mpi-script', 'mountPath': '/opt/nim/start-mpi-cluster.sh',
                         'subPath': 'start-mpi-cluster.sh'}]
        leader_volumes += script
        worker_volumes += script
        leader_mounts += script_mount
        worker_mounts += script_mount
    return leader_volumes, leader_mounts, worker_volumes, worker_mounts


def _pod_spec(g, container, volumes):
    s = g.s
    spec = {}
    if g.scheduler_name:
        spec['schedulerName'] = g.scheduler_name
    if s['nim_k8s_priority_class']:
        spec['priorityClassName'] = s['nim_k8s_priority_class']
    gid = as_int(s['nim_k8s_group_id'])
    spec.update({
        'securityContext': {'runAsUser': as_int(s['nim_k8s_user_id']), 'runAsGroup': gid, 'fsGroup': gid},
        'imagePullSecrets': [{'name': s['nim_k8s_pull_secret']}],
        'nodeSelector': s['nim_k8s_node_selector'],
        'tolerations': s['nim_k8s_tolerations'],
        'containers': [container],
        'volumes': volumes,
    })
    return spec


def _container(g, name, rank, ports, mounts):
    s = g.s
    container = {'name': name, 'image': g.group['image'], 'imagePullPolicy': s['nim_k8s_image_pull_policy']}
    if rank['command']:
        container['args'] = rank['command']
    ngc_env = {'name': 'NGC_API_KEY', 'valueFrom': {'secretKeyRef': {'name': s['nim_k8s_auth_secret'], 'key': 'NGC_API_KEY'}}}
    container['env'] = list(rank['env_list']) + [ngc_env]
    if ports:
        container['ports'] = ports
    resources = {'limits': g.limits(rank), 'requests': g.requests()}
    container['resources'] = dict((k, v) for k, v in resources.items() if v != {})
    container['volumeMounts'] = mounts
    return container


def _leaderworkerset(g):
    """What the NIM Operator would build for a multi-node NIMService, written by us (docs/contracts.md):
    one LWS group of `size` pods per replica, leader = worker index 0, env and args from the plan."""
    s = g.s
    group = g.group
    ranks = group['ranks']
    leader, worker = ranks[0], ranks[1] if len(ranks) > 1 else ranks[0]
    ports = [{'name': name, 'containerPort': as_int(number), 'protocol': 'TCP'}
             for name, number in sorted(group['ports'].items(), key=lambda item: item[0].lower())]
    # The leader serves the API (and the Ray head or the rendezvous); workers run sshd or Ray.
    leader_ports = [p for p in ports if p['name'] != 'ssh']
    worker_ports = [p for p in ports if p['name'] not in ('api', 'master')]
    leader_volumes, leader_mounts, worker_volumes, worker_mounts = _volumes(g)
    leader_container = _container(g, 'nim-leader', leader, leader_ports, leader_mounts)
    leader_container.update(startupProbe=g.probes['startup'], readinessProbe=g.probes['readiness'],
                            livenessProbe=g.probes['liveness'])
    worker_container = _container(g, 'nim-worker', worker, worker_ports, worker_mounts)
    # Workers that join the leader (a Ray head) serve no HTTP: `ray status` tells whether they joined.
    if 'workers_reach_leader' in group['launch']['steps']:
        worker_container['startupProbe'] = RAY_WORKER_PROBE
    metadata = g.metadata(g.name, dict(g.labels, **g.workload_labels))
    if g.workload_annotations:
        metadata['annotations'] = dict(g.workload_annotations)

    def template(role, container, volumes):
        labels = dict(g.labels, **g.workload_labels)
        labels['nimstack.multinode/role'] = role
        return {'metadata': {'labels': labels}, 'spec': _pod_spec(g, container, volumes)}
    return {
        'apiVersion': 'leaderworkerset.x-k8s.io/v1', 'kind': 'LeaderWorkerSet', 'metadata': metadata,
        'spec': {
            'replicas': as_int(group['k8s']['replicas']),
            'startupPolicy': 'LeaderCreated',
            'rolloutStrategy': {'type': 'RollingUpdate', 'rollingUpdateConfiguration': {
                'maxUnavailable': _int_or_percent(s['nim_k8s_rollout_max_unavailable']),
                'maxSurge': _int_or_percent(s['nim_k8s_rollout_max_surge']),
                'partition': as_int(s['nim_k8s_rollout_partition'])}},
            'leaderWorkerTemplate': {
                'size': as_int(group['size']),
                # A dead rank breaks the whole group: by default every pod of it is recreated, not
                # only the one that died (RecreateGroupAfterStart: only once the group has
                # started; None: the pod alone).
                'restartPolicy': s['nim_k8s_restart_policy'],
                'leaderTemplate': template('leader', leader_container, leader_volumes),
                'workerTemplate': template('worker', worker_container, worker_volumes),
            },
        },
    }


def _service(g):
    """Only the leader (worker index 0) serves HTTP. Not named after the LeaderWorkerSet: LWS keeps a
    headless Service of that name over all of the group's pods, which gives the workers the DNS
    names the hostfile uses (<lws>-<group>-<index>.<lws>.<namespace>.svc)."""
    return {'apiVersion': 'v1', 'kind': 'Service', 'metadata': g.metadata(g.service),
            'spec': {'type': g.s['nim_k8s_service_type'],
                     'selector': {'leaderworkerset.sigs.k8s.io/name': g.name,
                                  'leaderworkerset.sigs.k8s.io/worker-index': '0'},
                     'ports': [{'name': 'api', 'port': g.api_port, 'targetPort': 'api', 'protocol': 'TCP'}]}}


def _relabel(target, value):
    return {'action': 'replace', 'targetLabel': target, 'replacement': value}


def _pod_monitor(g):
    """Prometheus scrapes each leader's /v1/metrics (worker index 0 of every LWS group: the workers
    of a multi-node NIM serve no HTTP), under job nim with the group's labels, as bare metal's
    file_sd targets carry them. The pods are found by LWS's own labels, on the group's
    LeaderWorkerSet or on the one the NIM Operator builds for the NIMService, so one object serves
    both backends. The operator's own ServiceMonitor (nim_k8s_service_monitor) scrapes the same
    endpoint under the Service's name as job, without these labels."""
    s = g.s
    settings = g.group.get('settings') or {}
    model = served_model(settings.get('nim_image') or g.group['image'], settings.get('nim_frontend_model'))
    endpoint = {'port': 'api', 'path': METRICS_PATH,
                'relabelings': [_relabel('job', METRICS_JOB), _relabel('group', g.group['name']),
                                _relabel('model', model), _relabel('rank', '0'), _relabel('role', 'leader')]}
    if s['nim_k8s_monitoring_interval']:
        endpoint['interval'] = s['nim_k8s_monitoring_interval']
    labels = dict(s['nim_k8s_monitoring_labels'], **g.labels)
    return {'apiVersion': MONITORING_API, 'kind': 'PodMonitor', 'metadata': g.metadata(g.name + '-metrics', labels),
            'spec': {'selector': {'matchLabels': {
                'leaderworkerset.sigs.k8s.io/name': k8s_preflight.lws_name(g.group, s),
                'leaderworkerset.sigs.k8s.io/worker-index': '0'}},
                'namespaceSelector': {'matchNames': [g.namespace]},
                'podMetricsEndpoints': [endpoint]}}


def group_spec(group, settings):
    """What the role applies for one Kubernetes group of the plan and the names its waits read:
    {objects, cache_name, pvc, service, ssh_secret, ssh_key_dir, labels, startup_budget}."""
    s = _settings(settings)
    g = _Group(group, s)
    lws = s['nim_k8s_backend'] == 'lws'
    objects = []
    if lws and not s['nim_k8s_pvc_name']:
        objects.append(_pvc(g))
    if not lws:
        if s['nim_k8s_storage'] == 'nimcache':
            objects.append(_nimcache(g))
        objects.append(_nimservice(g))
    if lws and g.hostfile:
        objects.append(_mpi_config(g))
        if g.script:
            objects.append(_mpi_start_script(g))
    if lws:
        objects += [_leaderworkerset(g), _service(g)]
    if as_bool(s['nim_k8s_monitoring']):
        objects.append(_pod_monitor(g))
    alias = ssh_host_key_alias(g.namespace, g.name)
    return {'objects': objects, 'cache_name': g.cache_name, 'pvc': g.pvc, 'service': g.service,
            'ssh_secret': g.ssh_secret, 'ssh_key_dir': g.ssh_key_dir, 'labels': g.labels, 'startup_budget': g.startup_budget,
            'name': g.name, 'namespace': g.namespace, 'ssh_mesh': g.ssh_mesh, 'ssh_host_key_alias': alias,
            'ssh_client_config': ssh_client_config(g.ssh_key_dir, alias)}


def group_specs(plan, settings):
    """group_spec() of every Kubernetes group of the plan, by group name. A group the planner could
    not plan has nothing to build (the role's preflight names its errors)."""
    return dict((name, group_spec(group, settings))
                for name, group in groups_of((plan or {}).get('groups'), 'kubernetes', valid=True))


def alert_rule(plan, settings):
    """The PrometheusRule of the deployment: the alert groups of nim_alerts.rule_groups() (the
    same as bare metal's rule file), with nim_k8s_alert_thresholds. One for all groups, in the first
    of their namespaces by name: its expressions cover every group, so a second copy would evaluate
    each alert twice. None when monitoring is off or no group is built."""
    s = _settings(settings)
    specs = group_specs(plan, s)
    if not as_bool(s['nim_k8s_monitoring']) or not specs:
        return None
    groups = (plan or {}).get('groups') or {}
    namespace = sorted(groups[name]['k8s']['namespace'] for name in specs)[0]
    try:
        rules = nim_alerts.rule_groups(s['nim_k8s_alert_thresholds'] or None)
    except nim_alerts.AlertConfigError as exc:
        raise K8sObjectsError('nim_k8s_alert_thresholds: %s' % exc)
    labels = dict(s['nim_k8s_monitoring_labels'], **{
        'app.kubernetes.io/name': 'nim', 'app.kubernetes.io/part-of': 'nimstack',
        'app.kubernetes.io/managed-by': 'nimstack.multinode', 'nimstack.multinode/component': 'alerts'})
    return {'apiVersion': MONITORING_API, 'kind': 'PrometheusRule',
            'metadata': {'name': ALERTS_NAME, 'namespace': namespace, 'labels': labels},
            'spec': {'groups': rules}}


# What the role makes per namespace carries these labels.
NAMESPACE_LABELS = {'app.kubernetes.io/part-of': 'nimstack', 'app.kubernetes.io/managed-by': 'nimstack.multinode'}
# Storage survives nim_k8s_state=absent unless asked: it holds a model that took hours to download.
STORAGE_KINDS = ('PersistentVolumeClaim', 'NIMCache')
# NGC's registry takes the literal user name $oauthtoken with the API key as password.
NGC_REGISTRY_USER = '$oauthtoken'


def _b64(text):
    return base64.b64encode(text.encode('utf-8')).decode('ascii')


def namespaces(plan):
    """Every namespace of the plan's Kubernetes groups, once each, sorted."""
    return sorted(set(group['k8s']['namespace'] for group in k8s_preflight.k8s_groups(plan)))


def namespace_objects(names):
    return [{'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': name, 'labels': dict(NAMESPACE_LABELS)}}
            for name in names]


def ngc_secret_objects(names, auth_secret, pull_secret, registry, key):
    """The NGC Secrets of every namespace: the API key (NGC_API_KEY) and the registry's pull secret
    (kubernetes.io/dockerconfigjson). They hold the key: only tasks with no_log read them."""
    auth = {'username': NGC_REGISTRY_USER, 'password': key, 'auth': _b64('%s:%s' % (NGC_REGISTRY_USER, key))}
    docker_config = _b64(json.dumps({'auths': {registry: auth}}))
    objects = []
    for name in names:
        metadata = {'namespace': name, 'labels': dict(NAMESPACE_LABELS)}
        objects.append({'apiVersion': 'v1', 'kind': 'Secret', 'type': 'Opaque',
                        'metadata': dict(metadata, name=auth_secret), 'data': {'NGC_API_KEY': _b64(key)}})
        objects.append({'apiVersion': 'v1', 'kind': 'Secret', 'type': 'kubernetes.io/dockerconfigjson',
                        'metadata': dict(metadata, name=pull_secret), 'data': {'.dockerconfigjson': docker_config}})
    return objects


def ssh_host_key_alias(namespace, name):
    """The one name the leader's known_hosts pins the workers' host key under."""
    return 'nimstack-%s-%s-workers' % (namespace, name)


def ssh_client_config(key_dir, alias):
    """The ssh client config of the mpi contract's SSH Secret: every worker of the group serves the
    group's pinned host key (docs/contracts.md)."""
    options = [('IdentityFile', key_dir + '/private.key'), ('IdentitiesOnly', 'yes'), ('HostKeyAlias', alias),
               ('UserKnownHostsFile', key_dir + '/known_hosts'), ('GlobalKnownHostsFile', '/dev/null'),
               ('StrictHostKeyChecking', 'yes'), ('CheckHostIP', 'no'), ('UpdateHostKeys', 'no'),
               ('BatchMode', 'yes'), ('PasswordAuthentication', 'no'), ('KbdInteractiveAuthentication', 'no'),
               ('ForwardAgent', 'no'), ('ForwardX11', 'no')]
    return ''.join(['# Made by nimstack.multinode: every worker of the group serves the group\'s pinned host key.\n',
                    'Host *\n'] + ['  %s %s\n' % option for option in options])


def _ssh_secret_metadata(spec):
    return {'name': spec['ssh_secret'], 'namespace': spec['namespace'], 'labels': spec['labels']}


def ssh_secret_object(spec, private_key, host_key, host_public):
    """The group's SSH key Secret of the mpi contract (mounted at the ssh-pk volume): the key
    (private_key, base64), the workers' sshd host key (host_key, base64) and, in clear text made
    base64 here, the leader's known_hosts line of its public half and the client config. It holds
    keys: only tasks with no_log read it."""
    known_hosts = '%s %s\n' % (spec['ssh_host_key_alias'], host_public or '')
    return {'apiVersion': 'v1', 'kind': 'Secret', 'metadata': _ssh_secret_metadata(spec), 'type': 'Opaque',
            'data': {'private.key': private_key or '', 'ssh_host_ed25519_key': host_key or '',
                     'known_hosts': _b64(known_hosts), 'config': _b64(spec['ssh_client_config'])}}


def missing_monitoring(crds):
    """The monitoring kinds whose CRD the cluster lacks (crds: the names it has; None where the
    role did not look, render-only) and those CRDs' names: {kinds, crds}."""
    if crds is None:
        return {'kinds': [], 'crds': []}
    kinds = [kind for kind in sorted(MONITORING_CRDS) if MONITORING_CRDS[kind] not in set(crds)]
    return {'kinds': kinds, 'crds': [MONITORING_CRDS[kind] for kind in kinds]}


def group_objects(spec, backend, missing_kinds=(), keep_storage=False):
    """What the role applies of one group and what it keeps and removes:
    objects: the spec's objects less the kinds whose CRD the cluster lacks; kept: Kind/name of
    every object the group is made of now (its SSH Secret included where the lws backend mounts
    one), everything else of its own is removed; removed: what nim_k8s_state=absent deletes, the
    last applied first, its storage left where keep_storage (references only: no Secret data)."""
    objects = [o for o in spec['objects'] if o['kind'] not in set(missing_kinds or ())]
    secret = {'apiVersion': 'v1', 'kind': 'Secret', 'metadata': _ssh_secret_metadata(spec)}
    lws = backend == 'lws'
    kept = [o['kind'] + '/' + o['metadata']['name'] for o in objects + ([secret] if lws and spec['ssh_mesh'] else [])]
    removed = [o for o in reversed(objects) if not (keep_storage and o['kind'] in STORAGE_KINDS)]
    return {'objects': objects, 'kept': kept, 'removed': removed + ([secret] if lws else [])}


def render_files(specs):
    """The files render-only mode writes of every group's objects (the specs' files), in one list."""
    return [entry for name in sorted(specs) for entry in specs[name].get('files') or []]


def operator_running(deployments):
    """Whether a NIM Operator runs to honour its finalizers: a ready Deployment of its chart."""
    return any(((d or {}).get('status') or {}).get('readyReplicas', 0) > 0 for d in deployments or [])


def ssh_secret_groups(plan, backend, render_secrets):
    """The groups whose SSH key Secret render-only mode writes: with render_secrets, on the lws
    backend, those whose launch has an SSH mesh."""
    if not render_secrets or backend != 'lws':
        return []
    return [group for group in k8s_preflight.k8s_groups(plan) if (group.get('launch') or {}).get('ssh_mesh')]
