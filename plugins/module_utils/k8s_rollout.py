# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Whether a Deployment, a LeaderWorkerSet or a NIMService has finished rolling out, and if not, why.

A condition alone does not say it: a Deployment stays Available, and a LeaderWorkerSet too, while
the old pods still serve and the new ones start. Rolled out means the controller has seen the
current generation, every replica runs the current template, no old or surge replica is left,
and every replica is ready.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type


def _condition(obj, kind):
    for condition in (obj.get('status') or {}).get('conditions') or []:
        if condition.get('type') == kind:
            return condition.get('status')
    return None


def _messages(obj):
    """': ' and the messages of the object's true conditions, or ''."""
    found = [c.get('message') for c in (obj.get('status') or {}).get('conditions') or []
             if c.get('status') == 'True' and c.get('message')]
    return ': ' + '; '.join(found) if found else ''


def rollout_problem(resources):
    """'' when the one object in ``resources`` (a k8s_info result list) has rolled out, else why not."""
    if not resources:
        return 'it does not exist'
    obj = resources[0]
    kind = obj.get('kind', '')
    meta = obj.get('metadata') or {}
    status = obj.get('status') or {}
    if meta.get('deletionTimestamp'):
        return 'it is being deleted'
    if kind == 'NIMCache':
        # Its caching Job fills the model store; the operator reports the outcome as the state.
        if status.get('state') == 'Ready':
            return ''
        return 'it is not Ready (state %s)%s' % (status.get('state') or 'not reported yet', _messages(obj))
    if kind == 'Job':
        # A Job runs to an end: Complete, or Failed once its pods used up its backoff limit or deadline.
        if _condition(obj, 'Complete') == 'True':
            return ''
        if _condition(obj, 'Failed') == 'True':
            return 'it failed%s' % _messages(obj)
        return 'it has not completed (%d pod(s) running, %d failed)' % (status.get('active') or 0, status.get('failed') or 0)
    if kind == 'NIMService':
        # The NIM Operator drives the rollout itself and reports it as the Ready condition and state.
        if _condition(obj, 'Ready') == 'True' and status.get('state', 'Ready') == 'Ready':
            return ''
        return 'it is not Ready (state %s)' % status.get('state', 'unknown')
    generation = meta.get('generation') or 0
    observed = status.get('observedGeneration') or 0
    if observed < generation:
        return 'its controller has not seen generation %d yet (observed %d)' % (generation, observed)
    want = (obj.get('spec') or {}).get('replicas', 1)
    updated = status.get('updatedReplicas') or 0
    current = status.get('replicas') or 0
    ready_field = 'availableReplicas' if kind == 'Deployment' else 'readyReplicas'
    ready = status.get(ready_field) or 0
    problems = []
    if updated < want:
        problems.append('%d of %d replicas run the current template' % (updated, want))
    if current > want:
        problems.append('%d old or surge replicas are still there' % (current - want))
    if ready < want:
        problems.append('%d of %d replicas are %s' % (ready, want, 'available' if kind == 'Deployment' else 'ready'))
    if kind == 'LeaderWorkerSet':
        if _condition(obj, 'UpdateInProgress') == 'True':
            problems.append('an update is in progress')
        if want > 0 and _condition(obj, 'Available') != 'True':
            problems.append('it is not Available')
    return '; '.join(problems)
