# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""execution-environment.yml passes ansible-builder's own create step and carries what CI tests."""

import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)


def _yaml(name):
    with open(os.path.join(REPO, name)) as handle:
        return yaml.safe_load(handle)


def _pins():
    pins = {}
    with open(os.path.join(REPO, 'requirements-dev.txt')) as handle:
        for line in handle:
            match = re.match(r'^([A-Za-z0-9_.\-]+)==(\S+)', line)
            if match:
                pins[match.group(1).lower()] = match.group(2)
    return pins


@pytest.fixture(scope='module')
def context(tmp_path_factory):
    """ansible-builder create on a copy of the definition, with this checkout's collection archive."""
    root = tmp_path_factory.mktemp('ee')
    for name in ('execution-environment.yml', 'requirements.yml'):
        shutil.copy(os.path.join(REPO, name), str(root / name))
    subprocess.run([os.path.join(BIN, 'ansible-galaxy'), 'collection', 'build', '--force', '--output-path',
                    str(root / 'build' / 'ee'), REPO], check=True, capture_output=True)
    result = subprocess.run([os.path.join(BIN, 'ansible-builder'), 'create', '-f', 'execution-environment.yml',
                             '-c', 'context', '--output-filename', 'Containerfile'],
                            cwd=str(root), capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return root / 'context'


def test_create_writes_a_build_context_with_the_collection(context):
    galaxy = _yaml('galaxy.yml')
    archive = 'nimstack-multinode-%s.tar.gz' % galaxy['version']
    assert (context / '_build' / 'collections' / archive).is_file()
    containerfile = (context / 'Containerfile').read_text()
    assert 'ansible-galaxy collection install --offline --no-deps' in containerfile
    assert 'collection install $ANSIBLE_GALAXY_CLI_COLLECTION_OPTS -r requirements.yml' in containerfile


def test_ansible_core_and_runner_are_the_versions_ci_tests(context):
    pins = _pins()
    containerfile = (context / 'Containerfile').read_text()
    assert 'ARG ANSIBLE_INSTALL_REFS="ansible-core==%s ansible-runner==%s"' % (
        pins['ansible-core'], pins['ansible-runner']) in containerfile


def test_the_controller_side_python_and_system_requirements_are_in(context):
    python = (context / '_build' / 'requirements.txt').read_text().split()
    assert {re.split('[<>=]', p)[0].lower() for p in python} >= {'kubernetes', 'pyyaml', 'jsonpatch', 'cryptography'}
    system = (context / '_build' / 'bindep.txt').read_text()
    assert 'openssh-clients' in system and 'git-core' in system
    assert 'helm version --short' in (context / 'Containerfile').read_text()


def test_requirements_yml_declares_galaxy_yml_dependencies():
    declared = _yaml('galaxy.yml')['dependencies']
    required = {c['name']: c['version'] for c in _yaml('requirements.yml')['collections']}
    assert {name: required.get(name) for name in declared} == declared
    assert set(required) - set(declared) == {'awx.awx'}, 'awx.awx is for playbooks/awx only'
