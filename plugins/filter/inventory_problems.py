# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Filter inventory_problems: the controller-side inventory checks (docs in inventory_problems.yml)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible.errors import AnsibleFilterError
from ansible.utils.display import Display
from jinja2 import Undefined

from ansible_collections.nimstack.multinode.plugins.module_utils.lazy import lazy_module

_checks = lazy_module('inventory_checks')
_input_checks = lazy_module('input_checks')
_plan = lazy_module('nim_plan')

_HOST_VARS = ('nim_group', 'nim_node_rank')
_OS_FACTS = ('distribution', 'distribution_version', 'distribution_major_version', 'os_family')


def _pick(hvars, names):
    # Only the few variables the checks read are looked up, so hostvars stays lazy for the rest.
    return dict((name, hvars[name]) for name in names if name in hvars)


# A template of these works out only on the host, once its facts are gathered: left to the role.
_HOST_ONLY = re.compile(r'ansible_(facts|default_ipv[46]|hostname|fqdn|nodename|interfaces|all_ipv[46]_addresses|'
                        r'eth|en|ib|bond)|hostvars|lookup\(|query\(')


def _inputs(hvars, raw):
    """The checked variables a host has, worked out; a template that fails here is refused, naming
    it, unless it reads what only the host's facts hold (raw: the host's untemplated variables)."""
    picked = {}
    for name in _input_checks.CHECKED_VARIABLES:
        if name in hvars:
            try:
                value = hvars[name]
                if isinstance(value, Undefined):
                    # ansible-core 2.19 hands over an undefined marker where earlier ones raised:
                    # reading it raises the error the template met.
                    str(value)
                picked[name] = value
            except Exception as exc:  # pylint: disable=broad-except
                if not _HOST_ONLY.search(str(raw.get(name, ''))):
                    picked[name] = _input_checks.Untemplatable(exc)
    return picked


def _raw(hostvars, host):
    try:
        return hostvars.raw_get(host)
    except Exception:  # pylint: disable=broad-except
        return {}


def _address(hostvars, host):
    try:
        value = hostvars[host].get('ansible_host')
        return None if value is None else str(value)
    except Exception:  # pylint: disable=broad-except
        return None


def _controller_settings(hvars):
    """The settings of the controller's plays that a host's variables hold."""
    picked = {}
    for name in [n for n in hvars if isinstance(n, str) and n.startswith(_checks.CONTROLLER_PREFIXES)]:
        try:
            picked[name] = hvars[name]
        except Exception:  # pylint: disable=broad-except
            continue
    return picked


def _known():
    return (set(_input_checks.RULES) | _input_checks.PASSED_BY_THE_COLLECTION | set(_input_checks.PUBLISHED)
            | set(_plan.SETTING_NAMES) | set(_HOST_VARS))


def inventory_problems(hostvars, groups, ansible_version, node_group=None,
                       default_group='default', min_version=None,
                       max_version=None, supported_os=None, check_os=True,
                       check_inputs=True, input_groups=('nfs_server', 'nim_frontend', 'nim_monitoring'),
                       check_inventory=True):
    if not isinstance(ansible_version, str):
        raise AnsibleFilterError('inventory_problems: ansible_version must be a string such as '
                                 'ansible_version.full, got %r' % (ansible_version,))
    # The defaults live in inventory_checks, read here so that loading this file imports nothing.
    node_group = _checks.DEFAULT_NODE_GROUP if node_group is None else node_group
    hosts = list((groups or {}).get(node_group) or [])
    # hostvars[host] works out all of a host's variables: once per host, for every check below.
    node_vars = dict((host, hostvars[host]) for host in hosts)
    host_vars = dict((host, _pick(node_vars[host], _HOST_VARS)) for host in hosts)
    host_facts = None
    if check_os:
        host_facts = {}
        for host in hosts:
            facts = node_vars[host].get('ansible_facts') or {}
            host_facts[host] = dict((name, facts.get(name)) for name in _OS_FACTS)
    input_vars = node_settings = controller = addresses = None
    if check_inputs:
        input_hosts = list(hosts)
        for group in input_groups or ():
            input_hosts.extend(h for h in (groups or {}).get(group) or [] if h not in input_hosts)
        input_vars = {}
        node_settings = {}
        nodes = set(hosts)
        prefixed = {}
        for host in input_hosts:
            hvars = node_vars[host] if host in node_vars else hostvars[host]
            input_vars[host] = _inputs(hvars, _raw(hostvars, host))
            prefixed[host] = [n for n in hvars if isinstance(n, str) and n.startswith(_input_checks.SETTING_PREFIXES)]
            if host in nodes:
                node_settings[host] = _controller_settings(hvars)
        # The monitoring hosts' addresses: the firewall's default lets them in by ansible_host.
        addresses = dict((host, _address(hostvars, host)) for host in (groups or {}).get('nim_monitoring') or ())
        group_of = dict((host, host_vars[host].get('nim_group') or default_group) for host in hosts)
        for warning in _checks.unknown_settings(prefixed, _known(), group_of):
            Display().warning(warning)
        # The controller (the implicit localhost included) sees extra vars and group_vars/all.
        try:
            controller = _controller_settings(hostvars['localhost'])
        except KeyError:
            controller = {}
    try:
        return _checks.check_inventory(groups, host_vars, ansible_version, node_group=node_group,
                                       default_group=default_group,
                                       min_version=_checks.DEFAULT_MIN_VERSION if min_version is None else min_version,
                                       max_version=_checks.DEFAULT_MAX_VERSION if max_version is None else max_version,
                                       supported_os=supported_os or _checks.DEFAULT_SUPPORTED_OS,
                                       host_facts=host_facts, input_vars=input_vars,
                                       inventory=check_inventory, node_settings=node_settings,
                                       controller_settings=controller, plan_settings=_plan.SETTING_NAMES,
                                       monitoring_addresses=addresses)
    except _checks.InventoryCheckError as exc:
        raise AnsibleFilterError('inventory_problems: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'inventory_problems': inventory_problems}
