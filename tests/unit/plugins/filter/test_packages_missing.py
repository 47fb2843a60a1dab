# -*- coding: utf-8 -*-
"""Filter packages_missing: which packages of a role's task apt still has to install, from the list
common's packages.yml reads from dpkg once per host and run; and every task that uses it reads that
list first."""

import glob
import os

import pytest
import yaml

from ansible_collections.nimstack.multinode.plugins.filter.bundle_plan import packages_missing

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', '..'))


def test_only_what_dpkg_does_not_list_is_missing():
    assert packages_missing(['nftables', 'haproxy'], ['nftables', 'openssh-client']) == ['haproxy']
    assert packages_missing(['nftables'], ['nftables']) == []
    assert packages_missing('haproxy', ['haproxy']) == []
    assert packages_missing('haproxy', []) == ['haproxy']


def test_unknown_means_everything_is_missing():
    assert packages_missing(['nftables', 'haproxy'], None) == ['nftables', 'haproxy']
    assert packages_missing('haproxy', None) == ['haproxy']


@pytest.mark.parametrize('name', ['docker-ce=5:28.1.1-1~debian.12~bookworm', 'libfoo:amd64', 'nvidia-*',
                                  'docker-ce>=5', 'pkg?', 'pkg[12]'])
def test_a_version_an_architecture_or_a_pattern_is_left_to_apt(name):
    plain = name.split('=')[0].split(':')[0].rstrip('*?>[12]')
    assert packages_missing([name], [name, plain]) == [name]


def _tasks(tasks):
    for task in tasks or []:
        if isinstance(task, dict):
            yield task
            for key in ('block', 'rescue', 'always'):
                yield from _tasks(task.get(key))


def test_every_task_that_asks_dpkg_reads_its_list_first():
    users = 0
    for path in sorted(glob.glob(os.path.join(REPO, 'roles', '*', 'tasks', '*.yml'))):
        with open(path) as handle:
            tasks = list(_tasks(yaml.safe_load(handle)))
        read = False
        for task in tasks:
            include = task.get('ansible.builtin.include_role') or {}
            if include.get('tasks_from') == 'packages.yml':
                assert '__common_dpkg_installed is not defined' in task.get('when', ''), \
                    '%s: %s: the read must run where the list was not read yet' % (path, task['name'])
                read = True
            if 'packages_missing(__common_dpkg_installed' in yaml.safe_dump(task.get('when', '')):
                users += 1
                assert read, '%s: %s asks packages_missing before common packages.yml read the list' % (path, task['name'])
    assert users >= 10
