# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""What the nim_k8s role can deploy of a plan, and every problem with its settings.

Pure functions of the plan (nimstack.multinode.nim_plan: {groups, hosts}) and of the role's
settings (the nim_k8s_* variables, by name). The role's preflight fails once with every problem
k8s_problems() returns; the messages are quoted in docs/troubleshooting.md. Nothing here reads a
group's launch contract by name: what a backend can run is the launch data the plan gives
(launch.operator_multinode).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re

from ansible_collections.nimstack.multinode.plugins.module_utils import nim_alerts, settings as declared
from ansible_collections.nimstack.multinode.plugins.module_utils.group_members import groups_of
from ansible_collections.nimstack.multinode.plugins.module_utils.values import truthy as as_bool

SCHEDULERS = ('default', 'volcano', 'kai')
RESTART_POLICIES = ('RecreateGroupOnPodRestart', 'RecreateGroupAfterStart', 'None')
# A Kubernetes label key: an optional DNS-subdomain prefix and a name of up to 63 characters.
LABEL_KEY_RE = re.compile(r'^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?'
                          r'[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?\Z')
# An int-or-string of LWS: a whole number, or a percentage such as 25%.
INT_OR_PERCENT_RE = re.compile(r'^(0|[1-9][0-9]{0,5})%?\Z')
PARTITION_RE = re.compile(r'^(0|[1-9][0-9]{0,5})\Z')
PRIORITY_CLASS_RE = re.compile(r'^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?\Z')
# A label value (KAI reads the queue from the kai.scheduler/queue label): up to 63 characters.
LABEL_VALUE_RE = re.compile(r'^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?\Z')
# A Volcano queue is a cluster-scoped object: its name is a DNS subdomain.
QUEUE_NAME_RE = re.compile(r'^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?\Z')
# The LeaderWorkerSet settings a NIMService has no field for, with the defaults that leave them alone.
LWS_ONLY_DEFAULTS = (
    ('nim_k8s_restart_policy', 'RecreateGroupOnPodRestart'),
    ('nim_k8s_rollout_max_unavailable', '1'),
    ('nim_k8s_rollout_max_surge', '0'),
    ('nim_k8s_rollout_partition', '0'),
)

# The NIMService settings a LeaderWorkerSet of ours has no counterpart for, with their NIMService field,
# and the keys of each that the operator's CRD knows (a structural schema drops any other silently).
OPERATOR_ONLY = (
    ('nim_k8s_service_monitor', 'spec.metrics.serviceMonitor',
     ('interval', 'scrapeTimeout', 'additionalLabels', 'annotations')),
    ('nim_k8s_router', 'spec.expose.router', ('hostDomainName', 'annotations', 'ingress', 'gateway')),
    ('nim_k8s_compute_domain', 'spec.multiNode.computeDomain', ()),
)
# The label keys the collection marks what it makes with: a selector label must not replace them.
OWN_LABEL_PREFIXES = ('app.kubernetes.io/', 'nimstack.multinode/')
# A ComputeDomain to use by name (a DNS subdomain), or `create` for one per NIMService.
COMPUTE_DOMAIN_RE = re.compile(r'^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?\Z')

PROBLEM_SCHEDULER = 'nim_k8s_scheduler must be default, volcano or kai, got %s'
PROBLEM_KAI_QUEUE = ('nim_k8s_scheduler=kai needs nim_k8s_kai_queue, the KAI leaf queue of the groups (KAI '
                     'schedules only workloads of a queue)')
PROBLEM_QUEUE = '%s=%s is set but only applies to nim_k8s_scheduler=%s (got nim_k8s_scheduler=%s)'
PROBLEM_TOPOLOGY = 'nim_k8s_exclusive_topology=%s is not a node label key (such as topology.kubernetes.io/rack)'
PROBLEM_RESTART_POLICY = ('nim_k8s_restart_policy must be RecreateGroupOnPodRestart, RecreateGroupAfterStart '
                          'or None, got %s')
PROBLEM_INT_OR_PERCENT = '%s must be a whole number or a percentage such as 25%%, got %s'
PROBLEM_ROLLOUT_ZERO = ('nim_k8s_rollout_max_unavailable and nim_k8s_rollout_max_surge cannot both be 0: '
                        'no group could ever be replaced')
PROBLEM_OVER_100 = ('%s=%s is more than 100%%: LeaderWorkerSet refuses a percentage above 100%% (of the replicas) '
                    'for maxUnavailable and maxSurge')
PROBLEM_ROLLOUT_SCALED_ZERO = ("group '%s': nim_k8s_rollout_max_unavailable=%s and nim_k8s_rollout_max_surge=%s "
                               "come to 0 and 0 of its %d replica(s) (LeaderWorkerSet rounds maxUnavailable down "
                               "and maxSurge up): no LWS group could ever be replaced, and LeaderWorkerSet refuses "
                               "it; raise one of them")
PROBLEM_KAI_QUEUE_LABEL = ('nim_k8s_kai_queue=%s is not a label value (up to 63 letters, digits, -, _ and ., '
                           'starting and ending with a letter or digit): KAI reads the queue from the '
                           'kai.scheduler/queue label')
PROBLEM_VOLCANO_QUEUE_NAME = ('nim_k8s_volcano_queue=%s is not the name of a Volcano queue (a DNS subdomain: lower '
                              'case, digits, - and .)')
PROBLEM_PARTITION = 'nim_k8s_rollout_partition must be a whole number of LWS groups (0 updates all), got %s'
PROBLEM_PRIORITY_CLASS = ('nim_k8s_priority_class=%s is not the name of a PriorityClass '
                          '(a DNS subdomain: lower case, digits, - and .)')
PROBLEM_LWS_ONLY = ('%s=%s is a LeaderWorkerSet setting, but nim_k8s_backend=nim_operator builds its own '
                    'LeaderWorkerSet (a NIMService has no such field); leave it at its default (%s) or use '
                    'nim_k8s_backend=lws')
PROBLEM_OPERATOR_ONLY = ('%s is a NIMService setting (%s), but nim_k8s_backend=lws writes no NIMService; '
                         'leave it unset or use nim_k8s_backend=nim_operator')
PROBLEM_OPERATOR_KEYS = '%s: %s not among the keys of %s (%s)'
PROBLEM_COMPUTE_DOMAIN = ('nim_k8s_compute_domain=%s must be empty (none), create (the operator makes one per '
                          'NIMService) or the name of an existing ComputeDomain (a DNS subdomain)')
PROBLEM_MONITORING_INTERVAL = ("nim_k8s_monitoring_interval=%s is not a Prometheus duration of more than 0 (such as "
                               "30s, 1m or 1m30s; empty leaves it to the Prometheus's global scrape interval)")
PROBLEM_MONITORING_LABELS = 'nim_k8s_monitoring_labels must be a mapping of label keys to values, got %s'
PROBLEM_MONITORING_LABEL = ('nim_k8s_monitoring_labels: %s=%s is not a Kubernetes label (a key such as release or '
                            'example.com/team, a value of up to 63 letters, digits, -, _ and .)')
PROBLEM_MONITORING_OWN_LABEL = ('nim_k8s_monitoring_labels: %s is a key of the labels the collection marks its '
                                'objects with (app.kubernetes.io/*, nimstack.multinode/*); choose another key')
PROBLEM_ALERT_THRESHOLDS = 'nim_k8s_alert_thresholds: %s'
PROBLEM_MODE = "group '%s' was planned for nim_deployment_mode=%s; plan it with deployment_mode: kubernetes"
PROBLEM_CONTRACT = ("group '%s': nim_launch_contract=%s is not supported by nim_k8s_backend=nim_operator "
                    "(its spec.multiNode knows mpi and ray); use nim_k8s_backend=lws")
# The operator builds a LeaderWorkerSet of parallelism.pipeline pods, and none at all (a one-pod
# Deployment) when it is 1: tensor parallelism across nodes is beyond what a NIMService expresses.
PROBLEM_OPERATOR_LAYOUT = ("group '%s': nim_tensor_parallel=%s with nim_pipeline_parallel=%s spreads over %d "
                           "nodes, but nim_k8s_backend=nim_operator runs one pod per pipeline stage (%s), so the "
                           "NIM Operator would not make the group the plan needs; keep nim_tensor_parallel within "
                           "a node (nim_pipeline_parallel = nodes) or use nim_k8s_backend=lws, which runs any layout")
PROBLEM_RWX = ("group '%s' has %d ranks that all mount the model store: nim_k8s_storage_access_mode must be "
               "ReadWriteMany, got %s")

# The role's settings k8s_problems() reads, with their declared defaults (roles/nim_k8s/meta/argument_specs.yml).
SETTING_DEFAULTS = declared.defaults((
    'nim_k8s_render_dir', 'nim_k8s_backend', 'nim_k8s_scheduler', 'nim_k8s_kai_queue', 'nim_k8s_volcano_queue',
    'nim_k8s_exclusive_topology', 'nim_k8s_restart_policy', 'nim_k8s_rollout_max_unavailable',
    'nim_k8s_rollout_max_surge', 'nim_k8s_rollout_partition', 'nim_k8s_priority_class',
    'nim_k8s_storage_access_mode', 'nim_k8s_node_selector', 'nim_k8s_tolerations', 'nim_k8s_service_monitor',
    'nim_k8s_router', 'nim_k8s_compute_domain', 'nim_k8s_monitoring', 'nim_k8s_monitoring_labels',
    'nim_k8s_monitoring_interval', 'nim_k8s_alert_thresholds',
))


def _text(value):
    """A value as Jinja's string filter writes it (True, None and numbers as Python prints them)."""
    return value if isinstance(value, str) else str(value)


def _matches(regex, value):
    return not isinstance(value, bool) and regex.match(_text(value)) is not None


def _settings(settings):
    merged = dict(SETTING_DEFAULTS)
    merged.update(dict((k, v) for k, v in (settings or {}).items() if k in SETTING_DEFAULTS))
    return merged


def k8s_groups(plan):
    """The groups of the plan planned for Kubernetes, sorted by name."""
    return [group for _name, group in groups_of((plan or {}).get('groups'), 'kubernetes')]


def limited_groups(plan, play_hosts):
    """What a run limited to play_hosts (the hosts --limit leaves in the play) does with each
    Kubernetes group of the plan: {'whole': names of the groups whose every host is in the play,
    'split': {name: {'selected': [...], 'missing': [...]}} of those only some of whose hosts are}.
    A group's hosts are never contacted: they only name the group, so a limit to them is how a run
    is narrowed to it."""
    selected = set(play_hosts or [])
    whole, split = [], {}
    for group in k8s_groups(plan):
        hosts = list(group.get('hosts') or [])
        chosen = [host for host in hosts if host in selected]
        if chosen and len(chosen) == len(hosts):
            whole.append(group['name'])
        elif chosen:
            split[group['name']] = {'selected': chosen, 'missing': [host for host in hosts if host not in selected]}
    return {'whole': whole, 'split': split}


def k8s_group_hosts(plan, name):
    return list((((plan or {}).get('groups') or {}).get(name) or {}).get('hosts') or [])


def limit_problems(plan, play_hosts, limit=None, inventory_groups=None):
    """A Kubernetes group is deployed whole: each one --limit splits, named with what the limit
    selected of it and what to write instead (an inventory group of exactly its hosts, from
    inventory_groups {name: hosts}, else its host names)."""
    split = limited_groups(plan, play_hosts)['split']
    problems = []
    for name, part in sorted(split.items()):
        hosts = k8s_group_hosts(plan, name)
        exact = sorted(group for group, members in (inventory_groups or {}).items()
                       if group not in ('all', 'ungrouped') and set(members or []) == set(hosts))
        problems.append("%s selects %s of Kubernetes group '%s' but not %s: a Kubernetes group is deployed, "
                        'rendered or removed whole, so limit to all of its hosts (--limit %s) or to none of them'
                        % ("--limit '%s'" % limit if limit else 'the play', ', '.join(part['selected']), name, ', '.join(part['missing']),
                           exact[0] if exact else ','.join(hosts)))
    return problems


def plan_groups(plan, names, exclude=False):
    """The plan with only the Kubernetes groups named (nim_k8s_groups), or with exclude every one
    but those; an empty names keeps every group. Groups of the other modes are kept as they are.
    Raises ValueError naming what is not a Kubernetes group of the plan."""
    names = list(names or [])
    if not names:
        return plan
    known = [group['name'] for group in k8s_groups(plan)]
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError('nim_k8s_groups names %s, which %s no Kubernetes group of the plan (its Kubernetes groups: %s)'
                         % (', '.join(map(str, unknown)), 'is' if len(unknown) == 1 else 'are', ', '.join(known) or 'none'))
    groups = plan.get('groups') or {}
    kept = dict((name, group) for name, group in groups.items()
                if group.get('mode') != 'kubernetes' or (name in names) != bool(exclude))
    return dict(plan, groups=kept)


def render_dir_problems(path, exists=os.path.exists, isdir=os.path.isdir,
                        writable=lambda folder: os.access(folder, os.W_OK | os.X_OK)):
    """Whether render-only mode can write its tree below nim_k8s_render_dir on the controller: an
    existing, writable directory, or one that can be made (its nearest existing parent is a writable
    directory). Checked before anything is written; the callables read the controller's disk."""
    if not isinstance(path, str) or not path:
        return []
    if any(ord(char) < 32 or ord(char) == 127 for char in path):
        return ['nim_k8s_render_dir=%r holds a control character (a newline, a tab...): name a directory' % (path,)]
    if exists(path):
        if not isdir(path):
            return ['nim_k8s_render_dir=%s is not a directory (a file is there): render-only mode writes a tree of '
                    'files below it; name a directory, or one to be made' % (path,)]
        if not writable(path):
            return ['nim_k8s_render_dir=%s is a directory this user cannot write to' % (path,)]
        return []
    parent = os.path.dirname(os.path.abspath(path))
    while parent and not exists(parent) and parent != os.path.dirname(parent):
        parent = os.path.dirname(parent)
    if not isdir(parent):
        return ['nim_k8s_render_dir=%s cannot be made: %s is not a directory' % (path, parent)]
    if not writable(parent):
        return ['nim_k8s_render_dir=%s cannot be made: this user cannot write to %s' % (path, parent)]
    return []


def run_scope(plan, names, state='present', monitoring=True):
    """What a run of the role touches when it handles the plan's Kubernetes groups named
    (nim_k8s_groups; empty: every one) with nim_k8s_state, the others left as they are:

    run_plan: the plan narrowed to those groups; kept_plan: the plan without them; alert_plan: the
    groups the deployment's PrometheusRule covers (its expressions cover every group: those there
    after the run, every one when present, the kept ones when absent); namespaces: the groups';
    freed_namespaces: those that state=absent cleans (no kept group uses them); rule_namespaces:
    where the rule is looked for and which namespaces are ensured (the groups', and the rule's, the
    first of the alert plan's, where monitoring is on)."""
    run_plan = plan_groups(plan, names)
    kept_plan = plan_groups(plan, [group['name'] for group in k8s_groups(run_plan)], exclude=True)
    alert_plan = plan if state == 'present' else kept_plan
    spaces = _namespaces(run_plan)
    rule_space = _namespaces(alert_plan)[:1] if as_bool(monitoring) else []
    return {'run_plan': run_plan, 'kept_plan': kept_plan, 'alert_plan': alert_plan, 'namespaces': spaces,
            'freed_namespaces': [name for name in spaces if name not in _namespaces(kept_plan)],
            'rule_namespaces': sorted(set(spaces + rule_space))}


def _namespaces(plan):
    return sorted(set(group['k8s']['namespace'] for group in k8s_groups(plan)))


def settings_problems(settings):
    """The problems of the role's own settings, whatever the groups."""
    s = _settings(settings)
    problems = render_dir_problems(s['nim_k8s_render_dir'])
    scheduler = s['nim_k8s_scheduler']
    if scheduler not in SCHEDULERS:
        problems.append(PROBLEM_SCHEDULER % scheduler)
    if scheduler == 'kai' and len(s['nim_k8s_kai_queue']) == 0:
        problems.append(PROBLEM_KAI_QUEUE)
    if len(s['nim_k8s_kai_queue']) > 0 and not _matches(LABEL_VALUE_RE, s['nim_k8s_kai_queue']):
        problems.append(PROBLEM_KAI_QUEUE_LABEL % (s['nim_k8s_kai_queue'],))
    if len(s['nim_k8s_volcano_queue']) > 0 and not _matches(QUEUE_NAME_RE, s['nim_k8s_volcano_queue']):
        problems.append(PROBLEM_VOLCANO_QUEUE_NAME % (s['nim_k8s_volcano_queue'],))
    for var, wanted in (('nim_k8s_kai_queue', 'kai'), ('nim_k8s_volcano_queue', 'volcano')):
        if len(s[var]) > 0 and scheduler != wanted:
            problems.append(PROBLEM_QUEUE % (var, s[var], wanted, scheduler))
    topology = s['nim_k8s_exclusive_topology']
    if len(topology) > 0 and not LABEL_KEY_RE.match(topology):
        problems.append(PROBLEM_TOPOLOGY % topology)
    if s['nim_k8s_restart_policy'] not in RESTART_POLICIES:
        problems.append(PROBLEM_RESTART_POLICY % (s['nim_k8s_restart_policy'],))
    for var in ('nim_k8s_rollout_max_unavailable', 'nim_k8s_rollout_max_surge'):
        if not _matches(INT_OR_PERCENT_RE, s[var]):
            problems.append(PROBLEM_INT_OR_PERCENT % (var, s[var]))
        elif _text(s[var]).endswith('%') and int(_text(s[var])[:-1]) > 100:
            problems.append(PROBLEM_OVER_100 % (var, s[var]))
    if (_text(s['nim_k8s_rollout_max_unavailable']) in ('0', '0%')
            and _text(s['nim_k8s_rollout_max_surge']) in ('0', '0%')):
        problems.append(PROBLEM_ROLLOUT_ZERO)
    if not _matches(PARTITION_RE, s['nim_k8s_rollout_partition']):
        problems.append(PROBLEM_PARTITION % (s['nim_k8s_rollout_partition'],))
    priority = s['nim_k8s_priority_class']
    if len(priority) > 0 and not PRIORITY_CLASS_RE.match(priority):
        problems.append(PROBLEM_PRIORITY_CLASS % priority)
    for var, field, keys in OPERATOR_ONLY:
        value = s[var]
        if value in ({}, '', None):
            continue
        if s['nim_k8s_backend'] != 'nim_operator':
            problems.append(PROBLEM_OPERATOR_ONLY % (var, field))
        if keys and isinstance(value, dict) and set(value) - set(keys):
            problems.append(PROBLEM_OPERATOR_KEYS % (var, ', '.join(sorted(set(value) - set(keys))), field,
                                                     ', '.join(keys)))
    domain = s['nim_k8s_compute_domain']
    if domain not in ('', None) and not _matches(COMPUTE_DOMAIN_RE, domain):
        problems.append(PROBLEM_COMPUTE_DOMAIN % (domain,))
    problems.extend(monitoring_problems(s))
    if s['nim_k8s_backend'] == 'nim_operator':
        for var, default in LWS_ONLY_DEFAULTS:
            value = s[var] if var == 'nim_k8s_restart_policy' else _text(s[var])
            if value != default:
                problems.append(PROBLEM_LWS_ONLY % (var, value, default))
    return problems


def monitoring_problems(settings):
    """The problems of the monitoring settings (the PodMonitors' labels and interval, the alert
    thresholds of the PrometheusRule); checked whether monitoring is on or not, so that turning it
    on never meets a mistake made earlier."""
    s = _settings(settings)
    problems = []
    interval = s['nim_k8s_monitoring_interval']
    # A Prometheus duration (the Prometheus Operator's Duration pattern, monitoring.coreos.com_podmonitors.yaml
    # of prometheus-operator v0.85.0, is the same grammar), and not a zero one.
    if interval not in ('', None) and not (_matches(nim_alerts.DURATION_RE, interval) and re.search('[1-9]', _text(interval))):
        problems.append(PROBLEM_MONITORING_INTERVAL % (interval,))
    labels = s['nim_k8s_monitoring_labels']
    if not isinstance(labels, dict):
        problems.append(PROBLEM_MONITORING_LABELS % (type(labels).__name__,))
        labels = {}
    for key in sorted(labels, key=_text):
        value = labels[key]
        if not (isinstance(key, str) and LABEL_KEY_RE.match(key) and _matches(LABEL_VALUE_RE, value)
                and isinstance(value, str)):
            problems.append(PROBLEM_MONITORING_LABEL % (key, value))
        elif key.startswith(OWN_LABEL_PREFIXES):
            problems.append(PROBLEM_MONITORING_OWN_LABEL % (key,))
    problems.extend(PROBLEM_ALERT_THRESHOLDS % problem
                    for problem in nim_alerts.threshold_problems(s['nim_k8s_alert_thresholds']))
    return problems


def group_problems(group, settings):
    """The problems of one group of the plan: its planner errors and what the backend cannot run."""
    s = _settings(settings)
    operator = s['nim_k8s_backend'] == 'nim_operator'
    problems = list(group.get('errors') or [])
    valid = group.get('valid')
    name = group.get('name')
    if valid and group.get('mode') != 'kubernetes':
        problems.append(PROBLEM_MODE % (name, group.get('mode')))
    launch = group.get('launch')
    if operator and launch is not None and not launch.get('operator_multinode'):
        problems.append(PROBLEM_CONTRACT % (name, group.get('contract')))
    size = group.get('size')
    layout = group.get('layout') or {}
    if valid and operator and size and size != int(layout.get('pipeline_parallel')):
        problems.append(PROBLEM_OPERATOR_LAYOUT % (name, layout.get('tensor_parallel'), layout.get('pipeline_parallel'),
                                                   size, layout.get('pipeline_parallel')))
    if size and size > 1 and s['nim_k8s_storage_access_mode'] != 'ReadWriteMany':
        problems.append(PROBLEM_RWX % (name, size, s['nim_k8s_storage_access_mode']))
    replicas = ((group.get('k8s') or {}).get('replicas'))
    if valid and not operator and replicas and _rollout_stalls(s, int(replicas)):
        problems.append(PROBLEM_ROLLOUT_SCALED_ZERO % (name, s['nim_k8s_rollout_max_unavailable'],
                                                       s['nim_k8s_rollout_max_surge'], int(replicas)))
    return problems


def _scaled(value, replicas, round_up):
    """An int-or-percent as LeaderWorkerSet scales it to the replicas (None: not a valid one)."""
    text = _text(value)
    if not _matches(INT_OR_PERCENT_RE, value):
        return None
    if not text.endswith('%'):
        return int(text)
    share = int(text[:-1]) * replicas
    return -(-share // 100) if round_up else share // 100


def _rollout_stalls(s, replicas):
    """Whether maxUnavailable (rounded down) and maxSurge (rounded up) both come to 0 for these
    replicas, where neither is a literal 0 (settings_problems names that case once)."""
    unavailable = _scaled(s['nim_k8s_rollout_max_unavailable'], replicas, False)
    surge = _scaled(s['nim_k8s_rollout_max_surge'], replicas, True)
    literal_zero = (_text(s['nim_k8s_rollout_max_unavailable']) in ('0', '0%')
                    and _text(s['nim_k8s_rollout_max_surge']) in ('0', '0%'))
    return unavailable == 0 and surge == 0 and not literal_zero


def k8s_problems(plan, settings):
    """Every problem of the role's settings and of the plan's Kubernetes groups, in order: the
    settings first, then each group by name. A plan with no Kubernetes group at all names every
    group it planned for another mode."""
    problems = settings_problems(settings)
    groups = k8s_groups(plan)
    if not groups:
        planned = (plan or {}).get('groups') or {}
        groups = [planned[name] for name in sorted(planned)]
    for group in groups:
        problems.extend(group_problems(group, settings))
    return problems


def capacity_groups(plan, settings):
    """What the capacity check (nimstack.multinode.nim_k8s_capacity) needs of each Kubernetes group."""
    s = _settings(settings)
    return [{'name': group['name'], 'size': int(group['size']), 'replicas': int(group['k8s']['replicas']),
             'gpus_per_rank': int(group['layout']['gpus_per_rank']),
             'node_selector': s['nim_k8s_node_selector'], 'tolerations': s['nim_k8s_tolerations'],
             'topology_key': s['nim_k8s_exclusive_topology'], 'namespace': group['k8s']['namespace'],
             'object_name': group['k8s']['name'], 'lws_name': lws_name(group, s)}
            for group in k8s_groups(plan)]


def lws_name(group, settings):
    """The LeaderWorkerSet that runs a Kubernetes group: the group's own with the lws backend; with
    nim_operator, the one the operator builds for the NIMService, named <NIMService>-lws
    (GetLWSName, api/apps/v1alpha1/nimservice_types.go of k8s-nim-operator)."""
    name = group['k8s']['name']
    return name + '-lws' if _settings(settings)['nim_k8s_backend'] == 'nim_operator' else name
