# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0

"""Can the cluster hold every rank of a deployment group at once? A pure function of the API's lists.

A multi-node group serves only when all of its pods run: one that the scheduler can only half
place holds GPUs and never starts. Before anything is applied, the node and pod lists (as
``kubectl get nodes,pods -o json`` or kubernetes.core.k8s_info return them) are read and, for each
deployment group, the nodes that can take one rank are counted: Ready and schedulable, labels
matching the group's node selector, every NoSchedule / NoExecute taint tolerated, and enough
allocatable GPUs left after the requests of the pods already bound there (pods of the group
itself excepted: a re-run replaces them). With exclusive topology every LWS group must fit inside
one domain of the topology label, and each domain holds one group: LWS keeps a group's pods out of
a domain where any pod of another LWS group runs (anti-affinity on the group-key label, whatever
made that LeaderWorkerSet), so such a domain is not free either.

No Ansible imports: the module nim_k8s_capacity is a thin wrapper.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

GPU_RESOURCE = 'nvidia.com/gpu'
LWS_NAME_LABEL = 'leaderworkerset.sigs.k8s.io/name'
LWS_GROUP_KEY_LABEL = 'leaderworkerset.sigs.k8s.io/group-key'
_BLOCKING_EFFECTS = ('NoSchedule', 'NoExecute')
_DONE_PHASES = ('Succeeded', 'Failed')
_SUFFIXES = {'': 1, 'k': 10 ** 3, 'M': 10 ** 6, 'G': 10 ** 9, 'Ki': 2 ** 10, 'Mi': 2 ** 20, 'Gi': 2 ** 30}


class CapacityError(ValueError):
    """Input that is not in the shape the Kubernetes API returns."""


def quantity(value):
    """A device count from a Kubernetes quantity ('8', 8, '1k'); fractions of a device round down."""
    if value is None:
        return 0
    if isinstance(value, bool):
        raise CapacityError('not a quantity: %r' % (value,))
    if isinstance(value, (int, float)):
        return int(value)
    match = re.match(r'^\s*(\d+(?:\.\d+)?)\s*(m|k|M|G|Ki|Mi|Gi)?\s*\Z', str(value))
    if not match:
        raise CapacityError('not a quantity: %r' % (value,))
    number, suffix = float(match.group(1)), match.group(2) or ''
    if suffix == 'm':
        return int(number / 1000)
    return int(number * _SUFFIXES[suffix])


def _container_gpus(container, resource):
    resources = container.get('resources') or {}
    requests = resources.get('requests') or {}
    limits = resources.get('limits') or {}
    # Extended resources cannot be overcommitted: a limit alone is also the request.
    return quantity(requests.get(resource, limits.get(resource)))


def pod_gpu_request(pod, resource=GPU_RESOURCE):
    """GPUs a pod holds on its node: the larger of its containers' sum and its biggest init container."""
    spec = pod.get('spec') or {}
    running = sum(_container_gpus(c, resource) for c in spec.get('containers') or [])
    init = max([_container_gpus(c, resource) for c in spec.get('initContainers') or []] or [0])
    return max(running, init)


def _node_ready(node):
    for condition in (node.get('status') or {}).get('conditions') or []:
        if condition.get('type') == 'Ready':
            return condition.get('status') == 'True'
    return False


def tolerates(toleration, taint):
    """Kubernetes' rule: key (empty with Exists matches every key), operator/value, effect (empty: all)."""
    operator = toleration.get('operator') or 'Equal'
    key = toleration.get('key') or ''
    if key and key != taint.get('key'):
        return False
    if not key and operator != 'Exists':
        return False
    effect = toleration.get('effect') or ''
    if effect and effect != taint.get('effect'):
        return False
    if operator == 'Exists':
        return True
    return (toleration.get('value') or '') == (taint.get('value') or '')


def _taint_text(taint):
    value = taint.get('value')
    return '%s%s:%s' % (taint.get('key'), '=' + value if value else '', taint.get('effect'))


def gpus_in_use(pods, skip=None, resource=GPU_RESOURCE):
    """Node name -> GPUs requested by the pods bound to it that still hold them.

    ``skip(pod)`` excepts pods (those of the group being deployed, which a re-run replaces).
    """
    used = {}
    for pod in pods:
        node = (pod.get('spec') or {}).get('nodeName')
        phase = (pod.get('status') or {}).get('phase')
        if not node or phase in _DONE_PHASES:
            continue
        if skip is not None and skip(pod):
            continue
        used[node] = used.get(node, 0) + pod_gpu_request(pod, resource)
    return used


def assess_nodes(nodes, used, gpus_per_rank, node_selector=None, tolerations=None, resource=GPU_RESOURCE):
    """Every node with whether it can hold one rank: a list of {name, labels, free, fits, reason}."""
    node_selector = node_selector or {}
    tolerations = tolerations or []
    result = []
    for node in nodes:
        metadata = node.get('metadata') or {}
        spec = node.get('spec') or {}
        name = metadata.get('name')
        if not name:
            raise CapacityError('a node without metadata.name')
        labels = metadata.get('labels') or {}
        allocatable = quantity(((node.get('status') or {}).get('allocatable') or {}).get(resource))
        free = allocatable - used.get(name, 0)
        reason = None
        mismatched = sorted(key for key, value in node_selector.items() if labels.get(key) != str(value))
        blocking = [taint for taint in spec.get('taints') or []
                    if taint.get('effect') in _BLOCKING_EFFECTS
                    and not any(tolerates(toleration, taint) for toleration in tolerations)]
        if spec.get('unschedulable'):
            reason = 'cordoned'
        elif not _node_ready(node):
            reason = 'not Ready'
        elif mismatched:
            reason = 'node selector %s does not match' % ', '.join(
                '%s=%s' % (key, node_selector[key]) for key in mismatched)
        elif blocking:
            reason = 'taint %s not tolerated' % ', '.join(_taint_text(taint) for taint in blocking)
        elif free < gpus_per_rank:
            reason = '%d of %d %s free' % (max(free, 0), allocatable, resource)
        result.append({'name': name, 'labels': labels, 'free': free, 'fits': reason is None, 'reason': reason})
    return sorted(result, key=lambda item: item['name'])


def _planned_pods(groups):
    """A test for the running pods of any planned group: this run keeps or replaces them itself."""
    owned = set((group.get('namespace'), group.get('lws_name') or group.get('object_name'))
                for group in groups if group.get('lws_name') or group.get('object_name'))

    def is_planned(pod):
        metadata = pod.get('metadata') or {}
        return (metadata.get('namespace'), (metadata.get('labels') or {}).get(LWS_NAME_LABEL)) in owned
    return is_planned


def _domains_of_other_groups(pods, nodes, topology_key, skip):
    """{domain: 'namespace/name' of a LeaderWorkerSet} for each domain of ``topology_key`` where a
    running pod of an LWS group that ``skip`` does not except is bound."""
    domain_of = {}
    for node in nodes:
        metadata = node.get('metadata') or {}
        domain = (metadata.get('labels') or {}).get(topology_key)
        if domain is not None:
            domain_of[metadata.get('name')] = domain
    held = {}
    for pod in pods:
        metadata = pod.get('metadata') or {}
        labels = metadata.get('labels') or {}
        node = (pod.get('spec') or {}).get('nodeName')
        if (LWS_GROUP_KEY_LABEL not in labels or node not in domain_of or skip(pod)
                or (pod.get('status') or {}).get('phase') in _DONE_PHASES):
            continue
        held.setdefault(domain_of[node], '%s/%s' % (metadata.get('namespace'), labels.get(LWS_NAME_LABEL, '?')))
    return held


def check_group(group, nodes, pods, resource=GPU_RESOURCE, reserved=None, taken_domains=None, skip=None):
    """One deployment group against the cluster: a dict with the counts and ``errors`` (strings).

    ``group``: name, size (pods per LWS group), replicas (LWS groups), gpus_per_rank, and optional
    node_selector, tolerations, topology_key (LWS exclusive topology), namespace, object_name and
    lws_name (the LeaderWorkerSet whose running pods are the group's, not counted as used; default
    object_name: the NIM Operator names the one it builds <NIMService>-lws).
    ``reserved`` (node -> GPUs) and ``taken_domains`` ({topology key: set of domains}) hold what the
    groups placed before this one take; they are updated with this group's placement when it fits.
    ``skip(pod)`` excepts pods from the GPUs in use (default: this group's own).
    """
    name = group['name']
    size = int(group['size'])
    replicas = int(group.get('replicas') or 1)
    per_rank = int(group['gpus_per_rank'])
    topology_key = group.get('topology_key') or ''
    reserved = {} if reserved is None else reserved
    taken_domains = {} if taken_domains is None else taken_domains
    used = gpus_in_use(pods, skip=skip or _planned_pods([group]), resource=resource)
    for node, gpus in reserved.items():
        used[node] = used.get(node, 0) + gpus
    assessed = assess_nodes(nodes, used, per_rank, group.get('node_selector'), group.get('tolerations'), resource)
    taken = taken_domains.get(topology_key, set()) if topology_key else set()
    held = _domains_of_other_groups(pods, nodes, topology_key, skip or _planned_pods([group])) if topology_key else {}
    for node in assessed:
        domain = node['labels'].get(topology_key) if topology_key else None
        if node['fits'] and domain in held:
            node['fits'] = False
            node['reason'] = ('its %s domain runs pods of LeaderWorkerSet %s, which exclusive topology keeps '
                              'other groups away from' % (topology_key, held[domain]))
        elif node['fits'] and topology_key and domain in taken:
            node['fits'] = False
            node['reason'] = 'its %s domain is taken by a group placed before' % topology_key
        elif not node['fits'] and reserved.get(node['name']):
            node['reason'] += ' (%d taken by groups placed before)' % reserved[node['name']]
    fitting = [node for node in assessed if node['fits']]
    report = {'group': name, 'needed_nodes': size * replicas, 'qualifying_nodes': len(fitting),
              'nodes': dict((node['name'], node['reason'] or 'fits') for node in assessed), 'errors': []}
    need = '%d node(s) with %d free %s each (%d rank(s) x %d LWS group(s))' % (
        size * replicas, per_rank, resource, size, replicas)
    excluded = '; '.join('%s: %s' % (node['name'], node['reason']) for node in assessed if not node['fits'])
    found_tail = ' (excluded: %s)' % excluded if excluded else ''

    if not topology_key:
        if len(fitting) < size * replicas:
            report['errors'].append(
                "group '%s' cannot be placed: it needs %s, but %d of %d node(s) qualify%s" % (
                    name, need, len(fitting), len(assessed), found_tail))
            return report
        # Best fit: the nodes with the fewest free GPUs that still hold a rank, leaving the larger
        # ones to the groups after it.
        for node in sorted(fitting, key=lambda item: (item['free'], item['name']))[:size * replicas]:
            reserved[node['name']] = reserved.get(node['name'], 0) + per_rank
        return report

    domains = {}
    unlabelled = []
    members = {}
    for node in fitting:
        domain = node['labels'].get(topology_key)
        if domain is None:
            unlabelled.append(node['name'])
        else:
            domains[domain] = domains.get(domain, 0) + 1
            members.setdefault(domain, []).append(node)
    for node in assessed:
        if not node['fits'] and topology_key in node['labels']:
            domains.setdefault(node['labels'][topology_key], 0)
    report['domains'] = domains
    full = sorted(domain for domain, count in domains.items() if count >= size)
    report['qualifying_domains'] = full
    if len(full) < replicas:
        per_domain = ', '.join('%s=%s: %d' % (topology_key, domain, count) for domain, count in sorted(domains.items()))
        report['errors'].append(
            "group '%s' cannot be placed with nim_k8s_exclusive_topology=%s: each of its %d LWS group(s) "
            "needs %d node(s) with %d free %s inside one %s domain, but %d domain(s) have that; qualifying "
            "nodes per domain: %s%s%s" % (
                name, topology_key, replicas, size, per_rank, resource, topology_key, len(full),
                per_domain or 'no node carries the label',
                '; qualifying but without the label: %s' % ', '.join(unlabelled) if unlabelled else '',
                found_tail))
        return report
    # Exclusive topology: each LWS group holds a whole domain, which no other group may share.
    for domain in full[:replicas]:
        taken_domains.setdefault(topology_key, set()).add(domain)
        for node in members[domain][:size]:
            reserved[node['name']] = reserved.get(node['name'], 0) + per_rank
    return report


# nim_k8s_scheduler -> (pod schedulerName, CRDs that show it is installed, what to install).
SCHEDULERS = {
    'default': ('default-scheduler', (), ''),
    'volcano': ('volcano', ('podgroups.scheduling.volcano.sh', 'queues.scheduling.volcano.sh'),
                'Volcano (role nimstack.multinode.volcano, or its Helm chart)'),
    'kai': ('kai-scheduler', ('queues.scheduling.run.ai', 'podgroups.scheduling.run.ai'),
            'NVIDIA KAI Scheduler (its Helm chart)'),
}


def check_scheduler(scheduler, crds):
    """Errors when the CRDs of ``scheduler`` (a nim_k8s_scheduler value) are not among ``crds``.

    ``crds``: CustomResourceDefinition objects (or their names) that exist in the cluster.
    """
    if scheduler not in SCHEDULERS:
        return ['nim_k8s_scheduler must be one of %s, got %r' % (', '.join(sorted(SCHEDULERS)), scheduler)]
    present = set()
    for crd in crds:
        present.add(crd if isinstance(crd, str) else ((crd or {}).get('metadata') or {}).get('name'))
    _name, required, component = SCHEDULERS[scheduler]
    missing = [name for name in required if name not in present]
    if not missing:
        return []
    return ['nim_k8s_scheduler=%s needs %s, but the cluster has no CRD %s: install it first, or set '
            'nim_k8s_scheduler=default' % (scheduler, component, ', '.join(missing))]


def check_capacity(groups, nodes, pods, resource=GPU_RESOURCE):
    """Every group, together: ({group name: report}, [every error]).

    The groups are placed one after another (the largest ranks first), each on what the ones
    before it left, on the nodes with the fewest GPUs that hold a rank: two groups
    that each fit alone are refused when the cluster cannot hold both. The running pods of every
    planned group are left out of the GPUs in use, since this run keeps or replaces them.
    """
    if not isinstance(nodes, list) or not isinstance(pods, list):
        raise CapacityError('nodes and pods must be lists of objects (the items of a Kubernetes list)')
    reports = {}
    errors = []
    reserved = {}
    taken_domains = {}
    planned = _planned_pods(groups)
    # The largest ranks and groups first, as one packs a bin: small ones fit around them.
    order = sorted(groups, key=lambda g: (-int(g['gpus_per_rank']), -int(g['size']) * int(g.get('replicas') or 1)))
    for group in order:
        report = check_group(group, nodes, pods, resource, reserved, taken_domains, skip=planned)
        reports[group['name']] = report
        errors.extend(report['errors'])
    return reports, errors


def items(document, kind=None):
    """The objects of a ``kubectl get -o json`` answer (a List's items, or a list as is) of one kind.

    ``kubectl get nodes,pods -o json`` answers one List holding both kinds; objects without a
    kind (as some callers strip it) are kept.
    """
    if isinstance(document, dict):
        found = list(document.get('items') or []) if 'items' in document else [document]
    elif isinstance(document, list):
        found = document
    else:
        raise CapacityError('expected a Kubernetes List or a list of objects, got %s' % type(document).__name__)
    for obj in found:
        if not isinstance(obj, dict):
            raise CapacityError('expected Kubernetes objects, got %s' % type(obj).__name__)
    return [obj for obj in found if kind is None or obj.get('kind') in (None, kind)]
