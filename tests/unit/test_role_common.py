# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The patterns role common holds are written there only: the OS vars lookup, and the install of a
Kubernetes component."""

import glob
import os

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _task_files(role):
    return sorted(glob.glob(os.path.join(REPO, 'roles', role, 'tasks', '*.yml')))


def _roles():
    return sorted(os.path.basename(path) for path in glob.glob(os.path.join(REPO, 'roles', '*')))


@pytest.mark.parametrize('role', [r for r in _roles() if r != 'common'])
def test_no_role_has_its_own_os_vars_lookup(role):
    for path in _task_files(role):
        with open(path) as handle:
            text = handle.read()
        assert 'first_found' not in text, '%s: include nimstack.multinode.common tasks_from os_vars.yml' % path


@pytest.mark.parametrize('role', ['lws', 'volcano', 'nim_operator'])
def test_kubernetes_components_install_through_common(role):
    calls = []
    for path in _task_files(role):
        with open(path) as handle:
            for task in yaml.safe_load(handle) or []:
                include = task.get('ansible.builtin.include_role') or {}
                if include.get('name') == 'nimstack.multinode.common':
                    calls.append((include['tasks_from'], task['vars']['common_k8s_phase']))
                assert 'kubernetes.core.helm' not in task, '%s: the Helm release is common k8s_component.yml' % path
    assert sorted(calls) == [('k8s_component.yml', 'install'), ('k8s_component.yml', 'ready')]


def test_common_is_documented_as_internal():
    with open(os.path.join(REPO, 'roles', 'common', 'meta', 'argument_specs.yml')) as handle:
        specs = yaml.safe_load(handle)['argument_specs']
    assert sorted(specs) == ['bundle_apt', 'k8s_component', 'os_vars', 'packages', 'problems', 'supervisor_hold']
    for name, spec in specs.items():
        assert spec['short_description'].startswith('Internal.'), name
        tasks = os.path.join(REPO, 'roles', 'common', 'tasks', name + '.yml')
        assert os.path.exists(tasks), tasks
