# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The decisions of the nvidia_driver role as pure functions: what is wrong with its inputs,
what it installs, holds, releases and removes on one host, and why a host needs a reboot.

The role passes its variables and what detect.yml found (GPUs, NVSwitches, NVLink 5, installed
and held packages) as one mapping; the keys are the role's variable names without their
prefix (nvidia_driver_branch -> branch, _nvidia_driver_pkg_mgr -> pkg_mgr). Nothing here reads
the host; the file contents the plan also carries (repository file, nouveau blacklist, IMEX
nodes) are templates the role renders itself.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import re

from ansible_collections.nimstack.multinode.plugins.module_utils.platforms import host_platform_problems
from ansible_collections.nimstack.multinode.plugins.module_utils.rolling_restart import max_unavailable_problems
from ansible_collections.nimstack.multinode.plugins.module_utils.values import ansible_int as as_int, truthy as as_bool

PINNING_PREFIX = 'nvidia-driver-pinning-'
URL_RE = re.compile(r'^(https?|file)://')
# The pinning packages, the unversioned package names and the fabric manager package names the
# role installs start with the 580 branch; older branches used other names.
MIN_BRANCH = 580
BRANCH_RE = re.compile(r'^[0-9]{3}\Z')
VERSION_RE = re.compile(r'^[0-9]{3}\.[0-9]{1,3}(\.[0-9]{1,3})?\Z')


class DriverPlanError(Exception):
    """An input the role itself should have provided is missing."""


def _text(value):
    return '' if value is None else str(value)


def branch_ok(branch):
    """A branch the role can pin: three digits, MIN_BRANCH or later."""
    branch = _text(branch)
    return bool(BRANCH_RE.match(branch)) and int(branch) >= MIN_BRANCH


def version_off_branch(version, branch):
    """A well-formed driver version that belongs to another branch than branch."""
    version = _text(version)
    return bool(VERSION_RE.match(version)) and version.split('.', 1)[0] != _text(branch)


def _get(inputs, name):
    try:
        return inputs[name]
    except KeyError:
        raise DriverPlanError('the input %s is missing' % name)


def driver_problems(inputs):
    """Every problem with the role's inputs, each naming its variable or the host; [] when usable."""
    branch = _text(_get(inputs, 'branch'))
    version = _text(_get(inputs, 'version'))
    supported = list(_get(inputs, 'supported_platforms'))
    arch_map = _get(inputs, 'repo_arch_map')
    host = _get(inputs, 'host')
    problems = []
    if not branch_ok(branch):
        problems.append('nvidia_driver_branch=%s is not a driver branch: use three digits, %d or later (for example '
                        '"580"); names such as "latest" are not pinnable' % (json.dumps(branch), MIN_BRANCH))
    if version != '' and not VERSION_RE.match(version):
        problems.append('nvidia_driver_version=%s is not a driver version: use the full version such as "580.95.05", '
                        'or leave it empty to track the newest driver of nvidia_driver_branch' % json.dumps(version))
    if version_off_branch(version, branch):
        problems.append('nvidia_driver_version=%s does not belong to nvidia_driver_branch=%s'
                        % (json.dumps(version), json.dumps(branch)))
    problems.extend(host_platform_problems(host, _get(inputs, 'platform'), _get(inputs, 'os_family'), supported,
                                           _get(inputs, 'architecture'), list(arch_map), 'nvidia_driver', 'driver'))
    base_url = _get(inputs, 'repo_base_url')
    if not URL_RE.match(_text(base_url)):
        problems.append('nvidia_driver_repo_base_url=%s is not an http(s):// or file:// URL' % json.dumps(base_url))
    if as_bool(_get(inputs, 'imex_enabled')) and len(_get(inputs, 'imex_nodes') or []) == 0:
        problems.append('nvidia_driver_imex_enabled=true needs nvidia_driver_imex_nodes: the addresses of every node '
                        'of the NVLink domain')
    problems.extend(max_unavailable_problems(_get(inputs, 'max_unavailable_groups'),
                                             'nvidia_driver_max_unavailable_groups'))
    timeout = _get(inputs, 'reboot_timeout')
    if as_int(timeout) <= 0:
        problems.append('nvidia_driver_reboot_timeout=%s must be a positive number of seconds' % (timeout,))
    return problems


def installed_version(installed, package):
    """The upstream version of an installed package: no epoch, no package revision ('' if absent)."""
    value = _text((installed or {}).get(package, ''))
    return re.sub(r'-.*$', '', re.sub(r'^[0-9]+:', '', value))


def version_suffix(pkg_mgr, branch, version):
    """What follows a driver package's name to pin it: apt picks the newest version matching the
    pattern, so a branch pin selects the branch; dnf gets the branch from the module stream and the
    exact version from the spec."""
    branch, version = _text(branch), _text(version)
    if pkg_mgr == 'apt':
        return '=' + (version + '-*' if version else branch + '.*')
    return '-' + version if version else ''


def repo_urls(inputs, architecture):
    """(the repository's URL, its signing key's URL): repo_url where set, else the base URL with the
    distribution's and the architecture's directories; repo_key_url where set, else the key file
    beside the repository."""
    url = _text(inputs.get('repo_url'))
    if url:
        url = url.rstrip('/') + '/'
    else:
        url = '%s/%s/%s/' % (_text(_get(inputs, 'repo_base_url')).rstrip('/'), _get(inputs, 'repo_distro'),
                             _get(inputs, 'repo_arch_map')[architecture])
    return url, _text(inputs.get('repo_key_url')) or url + _get(inputs, 'repo_key_file')


def package_names(inputs, fabric, nvlink5, architecture):
    """(the packages that follow the driver's version, those that do not), unpinned: the kernel module
    flavour's metapackage, the fabric manager where it runs (exactly the driver's version), the NVLink 5
    packages on such systems, IMEX where enabled."""
    versioned = ([_get(inputs, 'meta_packages')[_get(inputs, 'kernel_modules')]]
                 + (list(_get(inputs, 'fabric_packages')) if fabric else [])
                 + (list(_get(inputs, 'nvlink5_versioned_packages'))
                    if fabric and nvlink5 and architecture == 'x86_64' else [])
                 + (list(_get(inputs, 'imex_packages')) if as_bool(_get(inputs, 'imex_enabled')) else []))
    return versioned, list(_get(inputs, 'nvlink5_packages')) if fabric and nvlink5 else []


def _epel(inputs, architecture):
    major = _text(_get(inputs, 'distribution_major_version'))
    base = _text(inputs.get('epel_base_url')).rstrip('/')
    return {
        'name': 'epel',
        'description': 'Extra Packages for Enterprise Linux %s' % major,
        'baseurl': _text(inputs.get('epel_repo_url')) or '%s/%s/Everything/%s/' % (base, major, architecture),
        'gpgkey': _text(inputs.get('epel_key_url')) or '%s/RPM-GPG-KEY-EPEL-%s' % (base, major),
    }


def driver_plan(inputs):
    """The whole plan for one host: repository, packages and their versions, what is stale (to
    remove), what conflicts, holds to release and to apply, whether anything changes, and the
    services to run. The keys are those of the role's __nvidia_driver_plan but the file contents."""
    pkg_mgr = _get(inputs, 'pkg_mgr')
    apt, dnf = pkg_mgr == 'apt', pkg_mgr == 'dnf'
    architecture = _get(inputs, 'architecture')
    branch = _text(_get(inputs, 'branch'))
    version = _text(_get(inputs, 'version'))
    kernel_modules = _get(inputs, 'kernel_modules')
    installed = _get(inputs, 'installed') or {}
    nvswitches = list(_get(inputs, 'nvswitches') or [])
    nvlink5 = as_bool(_get(inputs, 'nvlink5'))
    imex = as_bool(_get(inputs, 'imex_enabled'))
    hold = as_bool(_get(inputs, 'hold'))

    meta = _get(inputs, 'meta_packages')[kernel_modules]
    pin = version if version else branch
    fabric = as_bool(_get(inputs, 'fabric_manager_enabled')) and (len(nvswitches) > 0 or nvlink5)
    repo_url, key_url = repo_urls(inputs, architecture)
    versioned, unversioned = package_names(inputs, fabric, nvlink5, architecture)
    suffix = version_suffix(pkg_mgr, branch, version)

    current = installed_version(installed, meta)
    pinning_package = PINNING_PREFIX + pin if apt else ''
    # Only the pinning packages the role installs: a package of the site is never removed.
    stale = [name for name in installed if name.startswith(PINNING_PREFIX) and name != PINNING_PREFIX + pin]
    # The role never installs cuda-keyring: where it is, the site put it there.
    conflicts = [name for name in _get(inputs, 'conflicting_packages') if name in installed] if apt else []
    version_ok = current != '' and (current == version if version else current.split('.', 1)[0] == branch)

    if apt:
        hold_packages = ([pinning_package] if pinning_package else []) + versioned
    else:
        hold_packages = (['*nvidia*%s*' % pin]
                         + (['cuda-drivers-%s*' % pin] if kernel_modules == 'proprietary' else []))
    # Releasing drops every lock on NVIDIA driver packages (dnf) or the holds of the packages
    # about to change (apt), so the package manager may replace them; hold re-applies them.
    if apt and not (version_ok and not stale):
        release = [name for name in (_get(inputs, 'held') or []) if name in hold_packages + stale]
    elif dnf and current != '' and not version_ok:
        release = ['*nvidia*', 'cuda-drivers*']
    else:
        release = []

    headers = _get(inputs, 'headers_package')
    return {
        'platform': _get(inputs, 'platform'),
        'package_manager': pkg_mgr,
        'gpus': list(_get(inputs, 'gpus') or []),
        'nvswitches': nvswitches,
        'nvlink5': nvlink5,
        'repo': {
            'name': _get(inputs, 'repo_name'),
            'url': repo_url,
            'key_url': key_url,
            'key_path': _get(inputs, 'repo_key_path'),
            'path': _get(inputs, 'repo_path'),
        },
        'epel': _epel(inputs, architecture) if dnf and as_bool(_get(inputs, 'epel_enabled')) else {},
        'crb': ({'name': _get(inputs, 'crb_repo'), 'manager': _get(inputs, 'crb_manager')}
                if dnf and as_bool(_get(inputs, 'crb_enabled')) else {}),
        'module_stream': ('nvidia-driver:%s-%s' % (branch, 'open' if kernel_modules == 'open' else 'dkms')
                          if dnf else ''),
        'headers_package': headers,
        'prerequisites': list(_get(inputs, 'prerequisites')) + [headers],
        'pinning_package': pinning_package,
        'packages': [name + suffix for name in versioned] + unversioned,
        'installed_version': current,
        'change': not version_ok or len(stale) > 0,
        'module_reset': dnf and current != '' and current.split('.', 1)[0] != branch,
        'remove': stale,
        'conflicts': conflicts,
        'hold': {
            'method': _get(inputs, 'hold_method') if hold else 'none',
            'packages': hold_packages if hold else [],
            'release': release,
        },
        'blacklist': {'path': _get(inputs, 'blacklist_path')},
        'initramfs_command': list(_get(inputs, 'initramfs_command')),
        'services': ((['nvidia-persistenced'] if as_bool(_get(inputs, 'persistenced_enabled')) else [])
                     + (['nvidia-fabricmanager'] if fabric else [])
                     + (['nvidia-imex'] if imex else [])),
        'imex_nodes': {'path': _get(inputs, 'imex_nodes_path')},
    }


def reboot_reasons(nouveau_loaded, loaded_version, installed_module):
    """Why the host must reboot before the installed driver is in use ([] when it need not): nouveau
    holds the GPUs, or another NVIDIA module than the installed one is loaded."""
    reasons = ['nouveau is loaded'] if as_bool(nouveau_loaded) else []
    loaded, installed = _text(loaded_version), _text(installed_module)
    if loaded and installed and loaded != installed:
        reasons.append('the loaded NVIDIA module is %s, the installed one %s' % (loaded, installed))
    return reasons
