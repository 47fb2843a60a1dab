# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The distributions the collection supports: the one list the inventory validator checks hosts
against and the roles read (filter supported_platforms), so that adding a release is one edit here
and a vars file in the roles that need one.

A host matches an entry when its distribution fact equals ``distribution`` and its
distribution_version or distribution_major_version is one of ``versions``: Ubuntu pins a point
release (22.04), the others a major version (Debian 12.x, RHEL/Rocky 9.x). ``os_family`` is the
family whose vars files (vars/<os_family>.yml) the roles fall back on.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

SUPPORTED_OS = (
    {'distribution': 'Ubuntu', 'os_family': 'Debian', 'versions': ['22.04', '24.04']},
    {'distribution': 'Debian', 'os_family': 'Debian', 'versions': ['12']},
    {'distribution': 'RedHat', 'os_family': 'RedHat', 'versions': ['9']},
    {'distribution': 'Rocky', 'os_family': 'RedHat', 'versions': ['9']},
)


def platform_names(supported_os=SUPPORTED_OS):
    """'<distribution> <version>' of every supported release, in order: 'Ubuntu 22.04', 'Debian 12'."""
    return ['%s %s' % (entry['distribution'], version)
            for entry in supported_os for version in entry['versions']]


def os_families(supported_os=SUPPORTED_OS):
    """The os_family facts of the supported distributions, each once, in order."""
    families = []
    for entry in supported_os:
        if entry['os_family'] not in families:
            families.append(entry['os_family'])
    return families


def distributions(supported_os=SUPPORTED_OS):
    """The distribution facts of the supported distributions, in order."""
    return [entry['distribution'] for entry in supported_os]


def host_platform_problems(host, platform, os_family, supported, architecture, architectures, role, what):
    """What a role installing NVIDIA packages says of a host it cannot serve: a release outside
    ``supported`` (names the role's kill switch <role>_enabled) and an architecture NVIDIA
    publishes no ``what`` for."""
    problems = []
    if platform not in supported:
        problems.append('host %s runs %s (os_family %s), which this role does not support; supported: %s. Set '
                        '%s_enabled=false for this host to leave it alone'
                        % (host, platform, os_family, ', '.join(supported), role))
    if architecture not in architectures:
        problems.append('host %s is %s; NVIDIA publishes the %s for %s'
                        % (host, architecture, what, ', '.join(architectures)))
    return problems
