# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Checks of the controller and the inventory that must hold before any host is changed.

Every check returns messages instead of raising, so that one run reports every problem at once,
each naming the host, the variable and the accepted values. The inputs are plain data (group
lists, per-host dicts, version strings): no Ansible imports, so the checks are unit-tested directly
and cost the same whether the filter feeds them 3 hosts or 1,000.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import difflib
import ipaddress
import re

from ansible_collections.nimstack.multinode.plugins.module_utils.input_checks import SETTING_PREFIXES, as_bool, by_place, check_inputs
from ansible_collections.nimstack.multinode.plugins.module_utils.platforms import SUPPORTED_OS

DEFAULT_NODE_GROUP = 'nim_nodes'
DEFAULT_MIN_VERSION = '2.16.0'
DEFAULT_MAX_VERSION = '2.21.0'

# Matched against distribution_version first, then distribution_major_version (module_utils/platforms.py).
DEFAULT_SUPPORTED_OS = SUPPORTED_OS

# A DNS-1035 label short enough to leave room for what is added to it: the group name becomes
# part of container, Service and LeaderWorkerSet names, and LWS derives pod names and label values
# (at most 63 characters) from it with suffixes of its own.
GROUP_NAME_RE = re.compile(r'^[a-z]([-a-z0-9]{0,28}[a-z0-9])?\Z')
_VERSION_RE = re.compile(r'^\s*(\d+)\.(\d+)(?:\.(\d+))?')

GROUP_NAME_RULE = ("1-30 lowercase letters, digits and '-', starting with a letter and ending "
                   "with a letter or digit")
# The inventory name of a host of a deployment group: --limit and the plays select hosts by it (a
# pattern splits at a space or a comma), and the ranks are named after it.
HOST_NAME_RE = re.compile(r'[A-Za-z0-9]([A-Za-z0-9._-]{0,251}[A-Za-z0-9])?')
HOST_NAME_RULE = ("ASCII letters, digits, '.', '-' and '_', beginning and ending with a letter or digit, "
                  'at most 253 characters')


class InventoryCheckError(ValueError):
    """Raised when the checks themselves are called with unusable settings."""


def parse_version(text):
    """Return (major, minor, patch) of a version string; suffixes such as rc1 or .dev0 are dropped.

    Dropping the suffix is deliberate: 2.21.0.dev0 is a 2.21 build and must meet the 2.21 bound.
    """
    match = _VERSION_RE.match(str(text))
    if not match:
        raise InventoryCheckError('%r is not a version (expected X.Y or X.Y.Z)' % (text,))
    return tuple(int(part or 0) for part in match.groups())


def check_ansible_version(version, min_version=DEFAULT_MIN_VERSION,
                          max_version=DEFAULT_MAX_VERSION):
    """Check min_version <= version < max_version (max_version None or '' means no upper bound)."""
    lower = parse_version(min_version)
    upper = parse_version(max_version) if max_version else None
    try:
        have = parse_version(version)
    except InventoryCheckError as exc:
        return ['ansible-core version: %s' % exc]
    if have >= lower and (upper is None or have < upper):
        return []
    wanted = '>= %s' % min_version + (' and < %s' % max_version if upper else '')
    return ['ansible-core %s is not supported: the collection needs ansible-core %s '
            '(validate_inventory_ansible_min_version, validate_inventory_ansible_max_version)'
            % (version, wanted)]


def parse_rank(value):
    """Return a node rank as int, or None if value is not a non-negative whole number.

    INI inventories and ``-e key=value`` hand numbers over as strings, so digit strings count.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def check_group_members(groups, node_group=DEFAULT_NODE_GROUP):
    """Check that the node group exists and has hosts; return (problems, hosts)."""
    hosts = list((groups or {}).get(node_group) or [])
    if hosts:
        return [], hosts
    return ["the inventory has no hosts in group '%s' (validate_inventory_group): put every GPU "
            "node in that group" % node_group], []


def rank_value_problem(host, value):
    """The problem with one host's nim_node_rank, or None (unset, or a non-negative whole number)."""
    if value is None or parse_rank(value) is not None:
        return None
    return ('host %s: nim_node_rank=%r is not a non-negative whole number (0 is the leader; leave it '
            'unset to rank hosts in inventory order)' % (host, value))


def check_host_vars(hosts, host_vars, default_group):
    """Check nim_group and nim_node_rank of every host and the ranks within each group.

    host_vars maps a host to a dict that may hold nim_group and nim_node_rank (absent means unset).
    Hosts without nim_group belong to default_group.
    """
    problems = []
    members = {}
    for host in hosts:
        if not isinstance(host, str) or not HOST_NAME_RE.fullmatch(host):
            problems.append('host %r of group nim_nodes: its inventory name must be %s (--limit and the plays '
                            'select hosts by it, and the ranks are named after it); rename it in the inventory and '
                            'give its address in ansible_host' % (host, HOST_NAME_RULE))
        hvars = host_vars.get(host) or {}
        group = hvars.get('nim_group')
        if group is None:
            group = default_group
        elif not isinstance(group, str) or not GROUP_NAME_RE.match(group):
            problems.append('host %s: nim_group=%r is not a valid group name: use %s'
                            % (host, group, GROUP_NAME_RULE))
            continue
        members.setdefault(group, []).append(host)
        problem = rank_value_problem(host, hvars.get('nim_node_rank'))
        if problem:
            problems.append(problem)
    for group in sorted(members):
        problems.extend(check_ranks(group, [(host, (host_vars.get(host) or {}).get('nim_node_rank'))
                                            for host in members[group]]))
    return problems


def check_ranks(group, members):
    """The rank rules of one deployment group: every explicit nim_node_rank unique and below the
    group's size, so that the ranks run from 0 without a gap and rank 0, the leader, is held once.

    members: [(host, nim_node_rank or None)] in inventory order. Values that are no rank at all
    are rank_value_problem's; they are left out here. The one implementation of these rules: the
    validator reports them per inventory, the planner (assign_ranks) refuses a group with them.
    """
    problems = []
    by_rank = {}
    for host, value in members:
        rank = parse_rank(value)
        if rank is not None:
            by_rank.setdefault(rank, []).append(host)
    for rank in sorted(by_rank):
        if len(by_rank[rank]) > 1:
            problems.append('group %s: nim_node_rank=%d is set on %s; each rank must be unique '
                            'in a group' % (group, rank, ', '.join(by_rank[rank])))
        if rank >= len(members):
            holders = ', '.join(by_rank[rank])
            problems.append('group %s: host %s has nim_node_rank=%d but the group has %d hosts; '
                            'ranks must be 0 to %d'
                            % (group, holders, rank, len(members), len(members) - 1))
    return problems


def assign_ranks(group, members):
    """Give every member of a group its rank: explicit nim_node_rank first, the others the lowest
    free ranks in inventory order.

    members: [(host, nim_node_rank or None)] in inventory order. Returns (ranks, problems):
    ranks maps host to rank, or is None when a rule of rank_value_problem or check_ranks fails
    (problems names each).
    """
    problems = [p for p in (rank_value_problem(host, value) for host, value in members) if p]
    problems.extend(check_ranks(group, members))
    if problems:
        return None, problems
    explicit = set(parse_rank(value) for _host, value in members if value is not None)
    free = [rank for rank in range(len(members)) if rank not in explicit]
    ranks = {}
    for host, value in members:
        ranks[host] = free.pop(0) if value is None else parse_rank(value)
    return ranks, []


def _os_label(facts):
    return '%s %s (os_family %s)' % (facts.get('distribution') or 'unknown',
                                     facts.get('distribution_version') or '?',
                                     facts.get('os_family') or '?')


def supported_os_text(supported_os):
    return ', '.join('%s %s' % (entry['distribution'], '/'.join(str(v) for v in entry['versions']))
                     for entry in supported_os)


def check_os(hosts, host_facts, supported_os=DEFAULT_SUPPORTED_OS):
    """Check the distribution of every host that has facts; hosts without facts are skipped.

    host_facts maps a host to a dict of distribution, distribution_version,
    distribution_major_version and os_family.
    """
    problems = []
    for entry in supported_os:
        if not isinstance(entry, dict) or 'distribution' not in entry or 'versions' not in entry:
            raise InventoryCheckError('every supported_os entry needs distribution and versions, '
                                      'got %r' % (entry,))
    for host in hosts:
        facts = host_facts.get(host) or {}
        if not facts.get('distribution'):
            continue
        versions = None
        for entry in supported_os:
            if entry['distribution'] == facts['distribution']:
                versions = [str(v) for v in entry['versions']]
        found = (str(facts.get('distribution_version')), str(facts.get('distribution_major_version')))
        if versions is None or not (found[0] in versions or found[1] in versions):
            problems.append('host %s: %s is not supported; supported: %s '
                            '(validate_inventory_supported_os)'
                            % (host, _os_label(facts), supported_os_text(supported_os)))
    return problems


# The settings of the plays that run on the controller alone (the Kubernetes play and its
# components): they read them as the controller sees them, never from the nodes' groups.
CONTROLLER_PREFIXES = ('nim_k8s_', 'lws_', 'nim_operator_', 'volcano_')
PROBLEM_CONTROLLER_SETTING = ('%s: %s is set for the nodes (group_vars of nim_nodes or of a child group, or host '
                              'vars), but the Kubernetes play runs on the controller and reads it there, where it '
                              'has %s; set it where the controller sees it too: group_vars/all, or -e')
# The Kubernetes play runs in the name of the first host of the Kubernetes groups it handles (a
# --limit to a group leaves the controller out of the run), so what it reads must be the same there.
NODE_READ_PREFIXES = ('nim_k8s_', 'lws_', 'nim_operator_')
PROBLEM_CONTROLLER_ONLY_SETTING = ('%s: %s is set for the controller only (the host or group vars of localhost), '
                                   'but the Kubernetes play reads it in the name of the hosts of the Kubernetes '
                                   'groups, which do not see it; set it where both see it: group_vars/all, or -e')


def check_controller_settings(hosts, node_settings, controller_settings, group_of=None, plan_settings=()):
    """The settings of the controller's plays (CONTROLLER_PREFIXES) that a node sees with another value
    than the controller does: the play would silently use the controller's; and those of the
    Kubernetes play (NODE_READ_PREFIXES) that the controller sees and a node does not. node_settings:
    {host: {name: value}} of those settings on each node; controller_settings: the controller's
    {name: value}; plan_settings: names the plan reads per group from the nodes (nim_k8s_namespace)."""
    findings = []
    for host in hosts:
        for name, value in sorted((node_settings.get(host) or {}).items()):
            if name in plan_settings or not name.startswith(CONTROLLER_PREFIXES):
                continue
            if name in controller_settings and controller_settings[name] == value:
                continue
            # Never the values: a key may be among them.
            shown = 'another value' if name in controller_settings else "none (the role's default applies)"
            findings.append((host, (name, shown)))
    missing = []
    for host in hosts:
        seen = node_settings.get(host) or {}
        missing.extend((host, name) for name in sorted(controller_settings)
                       if name.startswith(NODE_READ_PREFIXES) and name not in plan_settings and name not in seen)
    return ([PROBLEM_CONTROLLER_SETTING % (place, name, shown) for place, (name, shown) in by_place(hosts, findings, group_of)]
            + [PROBLEM_CONTROLLER_ONLY_SETTING % (place, name) for place, name in by_place(hosts, missing, group_of)])


def unknown_settings(names_by_host, known, group_of=None):
    """Warnings, one per unknown name: a variable with one of the collection's prefixes
    (input_checks.SETTING_PREFIXES) that no setting is called, with the nearest known name.
    names_by_host: {host: [variable names]}, in inventory order; known: the names the collection reads;
    group_of: {host: nim_group}, to name a whole deployment group instead of its hosts."""
    found = []
    for host, names in names_by_host.items():
        found.extend((host, name) for name in names
                     if name.startswith(SETTING_PREFIXES) and name not in known and not name.startswith('common_'))
    warnings = []
    for place, name in by_place(list(names_by_host), found, group_of):
        near = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
        warnings.append('%s: %s is not a setting of the collection, so nothing reads it%s'
                        % (place, name, ' (did you mean %s?)' % near[0] if near else ''))
    return warnings


def _mode(hvars):
    """The deployment mode a host's variables give (docker where unset)."""
    return str((hvars or {}).get('nim_deployment_mode', 'docker'))


def host_kinds(groups, nodes, input_vars):
    """{host: the kinds of listeners it holds} (input_checks.LISTENERS): docker for a host of a Docker
    group, exporters for one while a nim_monitoring host watches it, frontend, monitoring."""
    kinds = {}
    watched = bool((groups or {}).get('nim_monitoring'))
    for host in nodes:
        if _mode(input_vars.get(host)) == 'docker':
            kinds.setdefault(host, set()).update(('docker', 'exporters') if watched else ('docker',))
    for kind, group in (('frontend', 'nim_frontend'), ('monitoring', 'nim_monitoring')):
        for host in (groups or {}).get(group) or ():
            kinds.setdefault(host, set()).add(kind)
    return kinds


PROBLEM_MONITOR_ON_KUBERNETES = (
    "nim_monitoring host %s is a host of group '%s', which runs on Kubernetes (nim_deployment_mode=kubernetes): "
    "the hosts of a Kubernetes group are never contacted, and the monitoring of a Kubernetes group is the "
    "Prometheus Operator's (nim_k8s_monitoring); put the monitoring host on another host")
PROBLEM_MONITOR_ADDRESS = (
    "nim_monitoring host %s has %s, not an IP address, and the firewall of the Docker groups lets the "
    "monitoring host in by its address (nim_monitoring_sources is not set, so its default is the IP ansible_host "
    "of each nim_monitoring host): Prometheus's scrapes would be dropped; set the host's ansible_host to its IP "
    "address, or nim_monitoring_sources to the addresses (or CIDRs) it scrapes from")


def _is_address(value):
    try:
        ipaddress.ip_address(str(value))
    except ValueError:
        return False
    return True


def monitoring_host_problems(groups, nodes, input_vars, addresses):
    """What the inventory's nim_monitoring hosts cannot be: a host of a Kubernetes group, or, where a
    firewalled Docker group lets them in by their address (no nim_monitoring_sources), a host without
    an IP ansible_host. addresses: {monitoring host: its ansible_host, None where unset}."""
    monitors = list((groups or {}).get('nim_monitoring') or ())
    problems = []
    for host in monitors:
        hvars = input_vars.get(host) or {}
        if host in nodes and _mode(hvars) == 'kubernetes':
            problems.append(PROBLEM_MONITOR_ON_KUBERNETES % (host, hvars.get('nim_group', 'default')))

    def by_address(hvars):
        firewall = hvars.get('nim_firewall_enabled', hvars.get('nim_group_firewall', True))
        return (_mode(hvars) == 'docker' and as_bool(firewall)
                and 'nim_monitoring_sources' not in hvars and 'nim_firewall_monitoring_sources' not in hvars)

    if any(by_address(input_vars.get(host) or {}) for host in nodes):
        for host in monitors:
            address = (addresses or {}).get(host)
            if not _is_address(address):
                shown = 'no ansible_host' if address is None else 'ansible_host=%s' % address
                problems.append(PROBLEM_MONITOR_ADDRESS % (host, shown))
    return problems


def check_inventory(groups, host_vars, ansible_version, node_group=DEFAULT_NODE_GROUP,
                    default_group='default', min_version=DEFAULT_MIN_VERSION,
                    max_version=DEFAULT_MAX_VERSION, supported_os=DEFAULT_SUPPORTED_OS,
                    host_facts=None, input_vars=None, inventory=True, node_settings=None, controller_settings=None,
                    plan_settings=(), monitoring_addresses=None):
    """Run every check; return the list of problems (empty when all is well).

    inventory False leaves out the version, node group, group name and rank checks (a later OS
    check of a run whose inventory was validated already); the input and OS checks still run.

    node_settings / controller_settings (check_controller_settings) add the check that the settings
    of the controller's plays are not set for the nodes alone; None skips it.

    host_facts None skips the OS check (no host contacted, e.g. controller-only planning).
    input_vars ({host: {variable: value}}, the public variables the inventory sets on the nodes
    and on other hosts the collection configures, e.g. the NFS server) adds the type, range and
    format checks of input_checks and those of the monitoring hosts (monitoring_addresses: {host of
    nim_monitoring: its ansible_host}); None skips them.
    """
    group_problems, hosts = check_group_members(groups, node_group)
    problems = []
    if inventory:
        problems.extend(check_ansible_version(ansible_version, min_version, max_version))
        problems.extend(group_problems)
        problems.extend(check_host_vars(hosts, host_vars, default_group))
    if input_vars is not None:
        group_of = {}
        for host in hosts:
            group = (host_vars.get(host) or {}).get('nim_group')
            group_of[host] = default_group if group is None else group
        others = [host for host in input_vars if host not in group_of]
        problems.extend(check_inputs(hosts + others, input_vars, group_of, host_kinds(groups, hosts, input_vars)))
        problems.extend(monitoring_host_problems(groups, hosts, input_vars, monitoring_addresses))
    if node_settings is not None:
        group_of = dict((host, (host_vars.get(host) or {}).get('nim_group') or default_group) for host in hosts)
        problems.extend(check_controller_settings(hosts, node_settings, controller_settings or {}, group_of,
                                                  plan_settings))
    if host_facts is not None:
        problems.extend(check_os(hosts, host_facts, supported_os))
    return problems
