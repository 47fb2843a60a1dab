# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The bad-input suite (tests/bad_inputs/cases.yml) covers every public variable of the front door,
the group supervisor, rolling changes, monitoring, the secrets group, the registry, LWS, Volcano/KAI,
the operator and the Kubernetes monitoring: a refused case sets it to a mistaken value and expects
the failure to name it.

The variables are read from the roles' argument_specs and defaults, so a variable added to one of
these families without a case fails here, not in a user's run.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re

import yaml

from ansible_collections.nimstack.multinode.plugins.module_utils import nim_plan

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# family: [(role, the options of its argument_specs in the family (None: all of them))]. 'plan'
# stands for the group settings the planner reads (nim_plan.SETTING_NAMES).
FAMILIES = {
    'front door': [('nim_frontend', None), ('plan', r'^nim_frontend_')],
    'supervisors': [('nim_docker', r'supervisor|restart')],
    'rolling changes': [('nim_docker', r'max_unavailable_groups|canary_group|wave_settle|serve_again')],
    'secrets group': [('nim_docker', r'secrets_gid'), ('ssh_mesh', r'secrets_gid')],
    'registry': [('nim_docker', r'registry|ngc_api_key|image_archive|download_image|pull_retr|image_staging'),
                 ('nim_k8s', r'registry|pull_secret')],
    'LWS': [('lws', None), ('nim_k8s', r'restart_policy|rollout_')],
    'Volcano/KAI': [('volcano', None),
                    ('nim_k8s', r'scheduler|queue|exclusive_topology|capacity_check|priority_class|node_selector|'
                                r'tolerations')],
    'monitoring': [('monitoring', None), ('nim_firewall', r'monitoring')],
    'operator': [('nim_operator', None),
                 ('nim_k8s', r'backend|^nim_k8s_storage$|cache_profiles|cache_timeout|service_monitor|router|compute_domain')],
    'Kubernetes monitoring': [('nim_k8s', r'monitoring|alert_thresholds')],
}

# The public variables of these families that no inventory sets, so no case can: the playbooks hand
# them to the roles (the run's plan, the hosts of a restart wave), and the preflight never reads them.
NO_WRONG_VALUE = {
    'nim_frontend_plan': 'playbooks/frontend.yml passes the run plan',
    'monitoring_plan': 'playbooks/plays/monitoring.yml passes the run plan',
    'nim_docker_serve_again_hosts': "the restart waves of host preparation pass the wave's hosts",
    'nim_docker_serve_again_interrupted': 'the restart waves of host preparation pass the interrupted hosts',
}

# An inventory-wide variable that an option's default reads (nim_group_supervisor_port for
# nim_docker_supervisor_port) belongs to the option's family.
_READ_BY_DEFAULT = re.compile(r'([a-z][a-z0-9_]*)\s*\|\s*default\(')


def _load(*parts):
    with open(os.path.join(REPO, *parts)) as handle:
        return yaml.safe_load(handle)


def _options(role):
    """{option: its default as the role's defaults/main.yml has it} of every entry point of the role."""
    if role == 'plan':
        return dict((name, None) for name in nim_plan.SETTING_NAMES)
    defaults = _load('roles', role, 'defaults', 'main.yml') or {}
    options = {}
    for spec in _load('roles', role, 'meta', 'argument_specs.yml')['argument_specs'].values():
        for name in spec.get('options') or {}:
            options[name] = defaults.get(name)
    return options


def family_variables():
    """{family: sorted public variables}: the options FAMILIES selects and what their defaults read."""
    families = {}
    for family, sources in FAMILIES.items():
        names = set()
        for role, pattern in sources:
            for name, default in _options(role).items():
                if pattern is None or re.search(pattern, name):
                    names.add(name)
                    names.update(_READ_BY_DEFAULT.findall(str(default)))
        families[family] = sorted(names)
    return families


def _cases():
    return _load('tests', 'bad_inputs', 'cases.yml')


def _set_by(case):
    """Every variable the case gives a value, wherever it puts it."""
    names = set()
    for key in ('vars', 'extra_vars', 'frontend_vars', 'nfs_vars'):
        names.update(case.get(key) or {})
    for key in ('host_vars', 'nodes', 'frontend_nodes'):
        for values in (case.get(key) or {}).values():
            names.update(values or {})
    names.update(yaml.safe_load(case.get('raw') or '{}') or {})
    return names


def refused_with_its_own_value():
    """The variables that some refused case both sets and expects its failure to name."""
    covered = set()
    for case in _cases():
        if case['expect'] == 'refused':
            expected = case.get('variables') or [case['variable']]
            covered.update(set(expected) & _set_by(case))
    return covered


def test_the_families_are_read_from_the_roles():
    families = family_variables()
    for family, names in families.items():
        assert len(names) >= 3, (family, names)
    assert 'nim_group_supervisor_port' in families['supervisors']
    assert 'nim_secrets_gid' in families['secrets group']
    assert 'nim_max_unavailable_groups' in families['rolling changes']
    assert 'nim_frontend_model' in families['front door']
    assert 'nim_k8s_kai_queue' in families['Volcano/KAI'] and 'lws_remove_crds' in families['LWS']


def test_every_public_variable_of_the_families_is_refused_by_a_case_naming_it():
    covered = refused_with_its_own_value()
    missing = dict((family, [n for n in names if n not in covered and n not in NO_WRONG_VALUE])
                   for family, names in family_variables().items())
    assert dict((family, names) for family, names in missing.items() if names) == {}


def test_the_allow_list_names_only_variables_of_the_families_that_no_case_covers():
    every = set(n for names in family_variables().values() for n in names)
    assert sorted(set(NO_WRONG_VALUE) - every) == []
    assert sorted(set(NO_WRONG_VALUE) & refused_with_its_own_value()) == []


def test_a_refused_case_names_variables_and_never_one_twice():
    for case in _cases():
        if case['expect'] != 'refused':
            continue
        assert ('variable' in case) != ('variables' in case), case['name']
        expected = case.get('variables') or [case['variable']]
        assert len(set(expected)) == len(expected), case['name']
