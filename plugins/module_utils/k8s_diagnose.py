# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""What a group's readiness wait is waiting on, and whether waiting can still help. A pure function
of the lists the Kubernetes API returns.

A group that is not ready says why only in its pods, its claims and their events: a pod Pending
with the scheduler's FailedScheduling message, a claim that no provisioner will ever fill, a
container that cannot pull its image. ``diagnose`` reads those as one look and answers
``ready``, ``waiting`` (with what it waits on) or ``hopeless``: a state no amount of waiting
clears, so that the wait stops at once instead of at the end of the start-up budget.

Hopeless only where it can be shown: a claim naming a storage class the cluster lacks (or none,
with no default class), a provisioner or binder still failing past a grace, a node selector or
node affinity no node of the cluster matches, a GPU request no node's allocatable holds, an image
that cannot be pulled past a grace. Transient states are reported and waited on: a claim waiting
for its first consumer, GPUs taken by other pods, untolerated taints (a node in maintenance), a
container restarting. A node selector that only a node still to come would match is not hopeless
where a cluster autoscaler says it is scaling up.

No Ansible imports: the module nim_k8s_group_info is a thin wrapper.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import calendar
import re
import time

from ansible_collections.nimstack.multinode.plugins.module_utils.k8s_capacity import (
    GPU_RESOURCE, pod_gpu_request, quantity)
from ansible_collections.nimstack.multinode.plugins.module_utils.k8s_rollout import rollout_problem

# Seconds an image may fail to pull (ErrImagePull, ImagePullBackOff) before the wait gives up:
# long enough for a registry's rate limit or a network blip to pass.
PULL_GRACE = 180
# Seconds a claim may stay Pending while its provisioner fails or no volume matches it.
CLAIM_GRACE = 120
DEFAULT_CLASS_ANNOTATIONS = ('storageclass.kubernetes.io/is-default-class',
                             'storageclass.beta.kubernetes.io/is-default-class')
_NEVER_PULLS = ('InvalidImageName', 'ErrImageNeverPull')
_PULL_FAILURES = ('ErrImagePull', 'ImagePullBackOff')
# Normal events worth showing beside the Warnings: what a claim or a scale-up waits for.
_NORMAL_SHOWN = ('WaitForFirstConsumer', 'ExternalProvisioning', 'FailedBinding', 'TriggeredScaleUp',
                 'NotTriggerScaleUp', 'Pulling')
_SELECTOR_MISMATCH = "didn't match Pod's node affinity/selector"
# What a call meets while the API server restarts, is overloaded or loses etcd for a moment (the
# messages of kubernetes.core's modules: urllib3's, the API server's status). Anything else (a
# refusal by the API server or a webhook, a bad object) is no reason to try again.
API_UNAVAILABLE = ('Connection refused', 'Connection reset', 'Connection aborted', 'RemoteDisconnected',
                   'timed out', 'TLS handshake timeout', 'Service Unavailable', 'Too Many Requests',
                   'EOF occurred', 'Max retries exceeded', 'the server is currently unable to handle the request',
                   'etcdserver: leader changed', 'etcdserver: request timed out')
_SHOWN_EVENTS = 8


def timestamp(value):
    """Seconds since the epoch of an RFC 3339 time as the API writes it, or None."""
    if not value:
        return None
    match = re.match(r'(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.\d+)?(Z|[+-]\d\d:\d\d)\Z', str(value))
    if not match:
        return None
    seconds = calendar.timegm(time.strptime(match.group(1), '%Y-%m-%dT%H:%M:%S'))
    zone = match.group(2)
    if zone != 'Z':
        sign = 1 if zone[0] == '+' else -1
        seconds -= sign * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    return seconds


def _event_times(event):
    """(first, last) seen of an event: the kubelet writes first/lastTimestamp, the scheduler eventTime
    and a series."""
    series = event.get('series') or {}
    first = timestamp(event.get('firstTimestamp')) or timestamp(event.get('eventTime'))
    last = (timestamp(event.get('lastTimestamp')) or timestamp(series.get('lastObservedTime'))
            or timestamp(event.get('eventTime')) or first)
    return first, last


def _latest(events):
    """The event last seen of ``events``, or None."""
    return max(events, key=lambda e: _event_times(e)[1] or 0) if events else None


def _event_count(event):
    return (event.get('series') or {}).get('count') or event.get('count') or 1


def _meta(obj):
    return obj.get('metadata') or {}


def _name(obj):
    return _meta(obj).get('name', '?')


def _is_default_class(storage_class):
    annotations = _meta(storage_class).get('annotations') or {}
    return any(annotations.get(key) == 'true' for key in DEFAULT_CLASS_ANNOTATIONS)


def _ago(now, then):
    return '%d s ago' % max(0, int(now - then)) if then is not None else 'time unknown'


class _Look(object):
    """One look at a group: its objects, and the events that concern them."""

    def __init__(self, pods, claims, events):
        self.pods = pods
        self.claims = claims
        uids = dict((('Pod', _name(p)), _meta(p).get('uid')) for p in pods)
        uids.update((('PersistentVolumeClaim', _name(c)), _meta(c).get('uid')) for c in claims)
        self.by_object = {}
        for event in events:
            involved = event.get('involvedObject') or event.get('regarding') or {}
            key = (involved.get('kind'), involved.get('name'))
            if key not in uids:
                continue
            # A pod LWS recreated keeps its name, and so does a claim made again: the events of the
            # one before do not count.
            if involved.get('uid') and uids[key] and involved['uid'] != uids[key]:
                continue
            self.by_object.setdefault(key, []).append(event)

    def events(self, kind, name, reasons=None):
        found = self.by_object.get((kind, name), [])
        return [e for e in found if reasons is None or e.get('reason') in reasons]


def _pod_line(pod):
    status = pod.get('status') or {}
    spec = pod.get('spec') or {}
    ready = any(c.get('type') == 'Ready' and c.get('status') == 'True' for c in status.get('conditions') or [])
    statuses = (status.get('initContainerStatuses') or []) + (status.get('containerStatuses') or [])
    restarts = sum(c.get('restartCount') or 0 for c in statuses)
    parts = ['pod %s: %s' % (_name(pod), status.get('phase') or 'unknown'), 'ready' if ready else 'not ready',
             'node %s' % spec['nodeName'] if spec.get('nodeName') else 'no node', '%d restarts' % restarts]
    for container in statuses:
        waiting = (container.get('state') or {}).get('waiting') or {}
        if waiting.get('reason') and waiting['reason'] not in ('ContainerCreating', 'PodInitializing'):
            said = ' (%s)' % waiting['message'][:200] if waiting.get('message') else ''
            parts.append('container %s %s%s' % (container.get('name'), waiting['reason'], said))
    if _meta(pod).get('deletionTimestamp'):
        parts.append('being deleted')
    return ', '.join(parts)


def _claim_line(claim):
    spec = claim.get('spec') or {}
    klass = spec.get('storageClassName')
    if klass is None:
        klass = 'no storage class'
    else:
        klass = 'storage class %s' % klass if klass else 'storage class "" (static volumes only)'
    return 'claim %s: %s, %s' % (_name(claim), (claim.get('status') or {}).get('phase') or 'Pending', klass)


def _event_line(event, now):
    involved = event.get('involvedObject') or event.get('regarding') or {}
    source = event.get('reportingComponent') or (event.get('source') or {}).get('component') or '?'
    last = _event_times(event)[1]
    count = _event_count(event)
    return 'event %s %s %s (%s%s, %s): %s' % (
        involved.get('kind'), involved.get('name'), event.get('reason'), source,
        ', %dx' % count if count > 1 else '', _ago(now, last), ' '.join((event.get('message') or '').split())[:400])


def _shown_events(look, now):
    """The last event of each object and reason still worth reading, newest first."""
    latest = {}
    for (kind, name), events in look.by_object.items():
        for event in events:
            if event.get('type') != 'Warning' and event.get('reason') not in _NORMAL_SHOWN:
                continue
            key = (kind, name, event.get('reason'))
            if key not in latest or (_event_times(event)[1] or 0) >= (_event_times(latest[key])[1] or 0):
                latest[key] = event
    placed = set(_name(p) for p in look.pods if (p.get('spec') or {}).get('nodeName'))
    bound = set(_name(c) for c in look.claims if (c.get('status') or {}).get('phase') == 'Bound')
    shown = [e for (kind, name, reason), e in latest.items()
             if not (kind == 'Pod' and name in placed and reason == 'FailedScheduling')
             and not (kind == 'PersistentVolumeClaim' and name in bound)]
    shown.sort(key=lambda e: -(_event_times(e)[1] or 0))
    return [_event_line(e, now) for e in shown[:_SHOWN_EVENTS]]


def _scheduler_verdict(message):
    """(nodes, {reason: count}) of a FailedScheduling message such as '0/5 nodes are available:
    3 Insufficient nvidia.com/gpu, 2 node(s) didn't match Pod's node affinity/selector. preemption: ...'."""
    match = re.match(r'0/(\d+) nodes are available: (.*?)(?:\.\s|\.?\Z)', ' '.join((message or '').split()))
    if not match:
        return None, {}
    reasons = {}
    for part in match.group(2).split(', '):
        counted = re.match(r'(\d+) (.*)\Z', part.strip())
        if counted:
            reasons[counted.group(2)] = reasons.get(counted.group(2), 0) + int(counted.group(1))
        elif part.strip():
            reasons[part.strip()] = None
    return int(match.group(1)), reasons


def _scheduler_message(pod, look):
    """The scheduler's last word on an unplaced pod: its last FailedScheduling event, else the message of
    the pod's PodScheduled condition (events expire after an hour, the condition stays)."""
    event = _latest(look.events('Pod', _name(pod), ('FailedScheduling',)))
    if event:
        return ' '.join((event.get('message') or '').split())
    for condition in (pod.get('status') or {}).get('conditions') or []:
        if condition.get('type') == 'PodScheduled' and condition.get('reason') == 'Unschedulable':
            return ' '.join((condition.get('message') or '').split())
    return ''


def _claim_problem(claim, classes, look, now, claim_grace):
    """Why a Pending claim can never bind, or None."""
    if (claim.get('status') or {}).get('phase') not in (None, 'Pending') or (claim.get('spec') or {}).get('volumeName'):
        return None
    name = _name(claim)
    klass = (claim.get('spec') or {}).get('storageClassName')
    age = now - (timestamp(_meta(claim).get('creationTimestamp')) or now)
    if classes is not None:
        names = sorted(_name(c) for c in classes)
        have = ', '.join(names) or 'none'
        if klass and klass not in names:
            return ('claim %s names storage class %s, which the cluster does not have (it has: %s)'
                    % (name, klass, have))
        if klass is None and not any(_is_default_class(c) for c in classes) and age >= claim_grace:
            return ('claim %s names no storage class and the cluster has no default one (it has: %s), '
                    'and no volume has bound it in %d s' % (name, have, age))
    for event in look.events('PersistentVolumeClaim', name, ('ProvisioningFailed', 'FailedBinding')):
        message = ' '.join((event.get('message') or '').split())
        missing_class = re.search(r'storageclass\.storage\.k8s\.io "[^"]*" not found', message)
        if event.get('reason') == 'ProvisioningFailed' and missing_class:
            return 'claim %s cannot be provisioned: %s' % (name, message)
        first = _event_times(event)[0]
        if first is not None and now - first >= claim_grace:
            return 'claim %s is still Pending %d s after %s: %s' % (name, now - first, event.get('reason'), message)
    return None


def _matching_nodes(pod, nodes):
    selector = (pod.get('spec') or {}).get('nodeSelector') or {}
    return [n for n in nodes if all(((_meta(n).get('labels') or {}).get(k)) == str(v) for k, v in selector.items())]


def _pod_problem(pod, nodes, look, now, started, pull_grace, resource):
    """Why a pod can never start, or None."""
    name = _name(pod)
    spec = pod.get('spec') or {}
    if not spec.get('nodeName') and (pod.get('status') or {}).get('phase') in (None, 'Pending'):
        if look.events('Pod', name, ('TriggeredScaleUp',)):
            return None
        if nodes is not None:
            matching = _matching_nodes(pod, nodes)
            selector = spec.get('nodeSelector') or {}
            if selector and not matching:
                return ('pod %s has node selector %s, which no node of the cluster (%d) matches'
                        % (name, ', '.join('%s=%s' % kv for kv in sorted(selector.items())), len(nodes)))
            wanted = pod_gpu_request(pod, resource)
            most = max([quantity(((n.get('status') or {}).get('allocatable') or {}).get(resource)) for n in matching] or [0])
            if wanted and most < wanted:
                return ('pod %s requests %d %s, but no node it may run on has that many allocatable (the most is %d)'
                        % (name, wanted, resource, most))
        message = _scheduler_message(pod, look)
        total, reasons = _scheduler_verdict(message)
        if total and sum(n or 0 for r, n in reasons.items() if _SELECTOR_MISMATCH in r) == total:
            return 'pod %s: no node of the cluster matches its node selector or affinity: %s' % (name, message)
    statuses = (pod.get('status') or {}).get('initContainerStatuses') or []
    statuses = statuses + ((pod.get('status') or {}).get('containerStatuses') or [])
    for container in statuses:
        waiting = (container.get('state') or {}).get('waiting') or {}
        reason = waiting.get('reason')
        if reason in _NEVER_PULLS:
            return 'pod %s: container %s %s: %s' % (name, container.get('name'), reason, waiting.get('message', ''))
        if reason in _PULL_FAILURES:
            failed = [t for t in (_event_times(e)[0] for e in look.events('Pod', name, ('Failed', 'BackOff'))
                                  if 'pull' in (e.get('message') or '').lower()) if t is not None]
            since = min(failed) if failed else started
            if since is not None and now - since >= pull_grace:
                return ('pod %s cannot pull image %s (%s for %d s): %s'
                        % (name, container.get('image'), reason, now - since, waiting.get('message', '')))
    return None


def diagnose(workloads, pods, claims, storage_classes, nodes, events, now, started=None,
             pull_grace=PULL_GRACE, claim_grace=CLAIM_GRACE, resource=GPU_RESOURCE):
    """One look at a group: {state: ready | waiting | hopeless, reason, waiting_on, summary}.

    ``workloads``: [{kind, namespace, name, resources}] in the order they must roll out (a
    NIMService, then the LeaderWorkerSet the operator made of it), ``resources`` as k8s_info
    returns them. ``pods``, ``claims`` (the group's PersistentVolumeClaims), ``events`` (of the
    namespace): API objects. ``storage_classes`` and ``nodes``: API objects, or None where they
    could not be read (then only the events tell). ``now``, ``started``: seconds since the epoch,
    ``started`` when the wait began.
    """
    problem, waiting_on = '', ''
    for workload in workloads:
        problem = rollout_problem(workload.get('resources') or [])
        if problem:
            waiting_on = '%s %s/%s' % (workload['kind'], workload['namespace'], workload['name'])
            break
    if not problem:
        return {'state': 'ready', 'reason': '', 'waiting_on': '', 'summary': []}
    look = _Look(pods, claims, events)
    summary = ['%s: %s' % (waiting_on, problem)]
    summary += [_pod_line(p) for p in sorted(pods, key=_name)]
    summary += [_claim_line(c) for c in sorted(claims, key=_name)]
    summary += _shown_events(look, now)
    if storage_classes is None or nodes is None:
        summary.append('could not read the cluster\'s %s: only the events tell why'
                       % ' and '.join(w for w, v in (('storage classes', storage_classes), ('nodes', nodes)) if v is None))
    hopeless = [p for p in (_claim_problem(c, storage_classes, look, now, claim_grace) for c in sorted(claims, key=_name)) if p]
    hopeless += [p for p in (_pod_problem(pod, nodes, look, now, started, pull_grace, resource)
                             for pod in sorted(pods, key=_name)) if p]
    failed = [w for w in workloads if w['kind'] == 'NIMCache'
              and ((w.get('resources') or [{}])[0].get('status') or {}).get('state') == 'Failed']
    if failed:
        hopeless.insert(0, 'NIMCache %s/%s failed (its caching Job gave up): %s'
                        % (failed[0]['namespace'], failed[0]['name'], problem))
    if workloads and workloads[0]['kind'] == 'Job' and problem.startswith('it failed'):
        hopeless.insert(0, '%s %s' % (waiting_on, problem[len('it '):]))
    if hopeless:
        scheduler = [m for m in (_scheduler_message(p, look) for p in pods if not (p.get('spec') or {}).get('nodeName')) if m]
        reason = '; '.join(hopeless)
        if scheduler and not any(s in reason for s in scheduler):
            reason += '; the scheduler: %s' % scheduler[0]
        return {'state': 'hopeless', 'reason': reason.rstrip('.'), 'waiting_on': waiting_on, 'summary': summary}
    return {'state': 'waiting', 'reason': problem, 'waiting_on': waiting_on, 'summary': summary}


def api_unavailable(result):
    """Whether a task's result (a registered dict) failed only because the API server could not be
    reached or answered that it could not serve now: then the call is worth trying again."""
    if not isinstance(result, dict) or not result.get('failed'):
        return False
    text = ' '.join(str(result.get(key) or '') for key in ('msg', 'reason', 'error')).strip()
    if not text:
        # ansible-core 2.19 keeps the message of a module that failed with an exception (as
        # kubernetes.core's do) out of reach of `until`: a refused connection cannot be told from
        # a refusal then, and the call is tried again.
        return True
    return any(marker in text for marker in API_UNAVAILABLE)
