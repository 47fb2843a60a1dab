# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""What the members of a deployment group told in this run, read once in Python: which member a
group secret comes from, and which groups a Docker rollout restarts and which serve now.

Pure Python, no Ansible imports: plugins/filter/group_members.py reads the members' registered
results (hostvars) and hands them here.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type


def secret_source(members, leader, holders):
    """The member a group secret (the SSH mesh's key, the Ray token, the supervisor's secret) is
    copied from: made once, it is never rotated by a re-run or a new leader. The leader when it
    holds one or nobody does (it makes it), else the first member that holds one."""
    holding = [m for m in members or [] if m in set(holders or [])]
    leader = leader or ''
    if leader in holding or not holding:
        return leader
    return holding[0]


def groups_of(groups, mode, valid=False, led=False):
    """[(name, group)] of the plan's groups (nim_plan's groups: {name: group}) planned for mode
    (docker, kubernetes), sorted by name; valid: only those the planner could plan; led: only those
    with a leader. The one place the plan's groups are picked by mode."""
    groups = groups or {}
    return [(name, groups[name]) for name in sorted(groups)
            if isinstance(groups[name], dict) and groups[name].get('mode') == mode
            and (not valid or groups[name].get('valid')) and (not led or groups[name].get('leader'))]


def rollout_state(plan_hosts, play_hosts, restart_of, serving_of, failed_hosts=()):
    """What the rollout's waves are made of: {groups, restarting, serving, left}.

    plan_hosts: the plan's hosts (host -> {group, mode}); play_hosts: the hosts of the play;
    restart_of(host): whether its rank restarts (None when it did not say); serving_of(host): the
    HTTP status its group's readiness answered there (None when it did not look); failed_hosts:
    the hosts that failed or went unreachable earlier in this run.
    groups: the Docker groups with a member in the play, sorted; restarting: those with a member
    whose rank restarts; serving: those whose leader answered ready (200); both in play order.
    left: the groups with a member in failed_hosts, sorted, and in none of the others: a member that
    failed (its model download, its image) says nothing of its rank, and the others must not re-form
    the group without it, so its ranks stay as they run."""
    plan_hosts = plan_hosts or {}
    failed = [plan_hosts.get(host) or {} for host in failed_hosts or ()]
    left = set(entry.get('group') for entry in failed if entry.get('mode') == 'docker')
    groups, restarting, serving = set(), [], []
    for host in play_hosts or []:
        entry = plan_hosts.get(host)
        if not entry or entry.get('mode') != 'docker' or entry.get('group') in left:
            continue
        group = entry.get('group')
        groups.add(group)
        if restart_of(host) and group not in restarting:
            restarting.append(group)
        if serving_of(host) == 200 and group not in serving:
            serving.append(group)
    return {'groups': sorted(groups), 'restarting': restarting, 'serving': serving, 'left': sorted(left)}


def group_drift(members, found_of):
    """Why a group's members are not all in sync with its spec (nim_drift's results), as a list of
    reasons, empty when every member is: a member that did not compare (not in the play, or it
    failed) counts as drifted, as does one whose reported checksums (a group secret) differ from
    the others' or are missing. The apply tasks then run on every member of the group, since they
    copy a group secret from one member to the others. found_of(member) returns the member's
    nim_drift results (a list, one per comparison), None standing for one it did not make."""
    reasons, checksums = [], set()
    for member in members or []:
        for found in found_of(member):
            if not found or 'drift' not in found:
                reasons.append('%s: not compared' % member)
                continue
            reasons.extend('%s: %s' % (member, reason) for reason in found['drift'])
            for path, checksum in sorted((found.get('checksums') or {}).items()):
                if checksum is None:
                    reasons.append('%s: %s: missing' % (member, path))
                checksums.add(checksum)
    if len(checksums - {None}) > 1:
        reasons.append('the members hold different copies of the group secret')
    return reasons
