# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The decisions of the nvidia_container_toolkit role as pure functions: what is wrong with its
inputs, and which packages (with which version pins) it installs. The keys of the input mapping
are the role's variable names without their prefix."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import re

from ansible_collections.nimstack.multinode.plugins.module_utils.driver_plan import DriverPlanError
from ansible_collections.nimstack.multinode.plugins.module_utils.values import truthy as as_bool
from ansible_collections.nimstack.multinode.plugins.module_utils.platforms import host_platform_problems

ARCHITECTURES = ('x86_64', 'aarch64')
URL_RE = re.compile(r'^(https?|file)://')
# A toolkit release as its packages are versioned: 1.18.0, or with the package revision 1.18.0-1.
VERSION_RE = re.compile(r'^[0-9]+\.[0-9]+\.[0-9]+(-[0-9]+)?\Z')


def _get(inputs, name):
    try:
        return inputs[name]
    except KeyError:
        raise DriverPlanError('the input %s is missing' % name)


def _text(value):
    return '' if value is None else str(value)


def toolkit_problems(inputs):
    """Every problem with the role's inputs, each naming its variable or the host; [] when usable."""
    host = _get(inputs, 'host')
    version = _text(_get(inputs, 'version'))
    problems = []
    if version != '' and not VERSION_RE.match(version):
        problems.append('nvidia_container_toolkit_version=%s is not a toolkit version: use a release such as '
                        '"1.18.0-1" or "1.18.0", or leave it empty for the newest' % json.dumps(version))
    problems.extend(host_platform_problems(host, _get(inputs, 'platform'), _get(inputs, 'os_family'),
                                           list(_get(inputs, 'supported_platforms')), _get(inputs, 'architecture'),
                                           list(ARCHITECTURES), 'nvidia_container_toolkit', 'toolkit'))
    base_url = _get(inputs, 'repo_base_url')
    if not URL_RE.match(_text(base_url)):
        problems.append('nvidia_container_toolkit_repo_base_url=%s is not an http(s):// or file:// URL'
                        % json.dumps(base_url))
    if as_bool(_get(inputs, 'verify')) and len(_text(_get(inputs, 'verify_image'))) == 0:
        problems.append('nvidia_container_toolkit_verify=true needs nvidia_container_toolkit_verify_image')
    return problems


def toolkit_packages(packages, version, pkg_mgr):
    """Without a version only the toolkit (the first package) is named and its dependencies follow;
    with one, every package is pinned so that none moves ahead of the others. apt matches the
    version as a pattern, so "1.18.0" picks its newest package revision."""
    packages = list(packages)
    version = _text(version)
    if not version:
        return packages[:1]
    if pkg_mgr == 'apt':
        suffix = '=' + version + ('' if '-' in version else '-*')
    elif pkg_mgr == 'dnf':
        suffix = '-' + version
    else:
        raise DriverPlanError('unknown package manager %r' % (pkg_mgr,))
    return [name + suffix for name in packages]
