# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""How the NVIDIA driver, the NVIDIA Container Toolkit and the Docker engine got onto a host, and
what a role may do with each: adopt it, manage it, or refuse to go on.

Most GPU servers are not bare: cloud and OEM images bake a driver in (NVIDIA's runfile, or a
module the platform provides with no package at all), and many sites install Docker from Docker's
own repository. A role that decided from its own package names alone would install a second
driver over the running one, or let apt swap the engine (Debian's docker.io declares
``Conflicts: docker-ce``) and with it every container of the host. So each role first asks here
how its component got there; the default policy, ``adopt``, keeps what the collection did not
install when it meets the requirement and refuses, naming what was found and what to do, when it
does not.

Reading is split from deciding: ``read_*`` take a root directory (``/`` on a host, a prepared tree
in tests) and the package list; the ``*_decision`` functions are pure.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re

POLICIES = ('adopt', 'manage', 'refuse')

# The packages NVIDIA's CUDA repository installs for the driver (the role's own meta packages and
# what they pull in). The pinning package is the collection's mark on apt hosts: the role installs
# it, nobody else does.
CUDA_REPO_DRIVER_PACKAGES = ('nvidia-open', 'cuda-drivers', 'nvidia-driver-cuda', 'kmod-nvidia-open-dkms',
                             'kmod-nvidia-latest-dkms')
PINNING_PREFIX = 'nvidia-driver-pinning-'
# Ubuntu's archive: nvidia-driver-<branch>[-server][-open] and its precompiled, signed modules.
UBUNTU_DRIVER_RE = re.compile(r'^(nvidia-driver|linux-modules-nvidia)-([0-9]{3})(-server)?(-open)?(-.*)?\Z')
# Debian's archive names the driver like NVIDIA's Debian repository does; Debian's versions carry
# "deb" (535.247.01-1~deb12u1), NVIDIA's do not (580.95.05-1).
DEBIAN_DRIVER_PACKAGES = ('nvidia-driver', 'nvidia-kernel-dkms', 'nvidia-kernel-open-dkms', 'nvidia-open-kernel-dkms',
                          'nvidia-tesla-driver')
DEBIAN_VERSION_RE = re.compile(r'deb[0-9]*u?[0-9]*')
# RPM Fusion's akmods build on RHEL-family hosts.
RPMFUSION_DRIVER_PACKAGES = ('akmod-nvidia', 'xorg-x11-drv-nvidia', 'kmod-nvidia')

RUNFILE_MARKS = ('usr/bin/nvidia-uninstall', 'var/log/nvidia-installer.log')

TOOLKIT_PACKAGE = 'nvidia-container-toolkit'
TOOLKIT_BINARIES = ('usr/bin/nvidia-ctk', 'usr/local/bin/nvidia-ctk')

# The packages that put a docker command or engine on a host, and where each comes from.
ENGINE_PACKAGES = (
    ('docker-ce', 'docker'),
    ('docker.io', 'distribution'),
    ('moby-engine', 'moby'),
    ('podman-docker', 'podman'),
)
ENGINE_BINARIES = ('usr/bin/dockerd', 'usr/local/bin/dockerd')


def _text(value):
    return '' if value is None else str(value)


def _read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def _join(root, relative):
    return os.path.join(root or '/', relative.lstrip('/'))


def upstream_version(value):
    """A package version without epoch and revision: '1:580.95.05-0ubuntu1' -> '580.95.05'."""
    return re.sub(r'-.*$', '', re.sub(r'^[0-9]+:', '', _text(value)))


def parse_packages(text):
    """dpkg-query ('<name> <version> <status>', status 'ii' installed, 'hi' held) or the same shape
    from rpm: {name: version} of the installed packages ('un', 'rc' ... are not installed)."""
    installed = {}
    for line in _text(text).splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[2][1:2] == 'i' and parts[2][:1] in ('i', 'h'):
            installed[parts[0]] = parts[1]
    return installed


def parse_proc_version(text):
    """The kernel module's flavour and version from /proc/driver/nvidia/version:
    'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ...' is the
    open module, 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  ...' the proprietary one."""
    for line in _text(text).splitlines():
        if not line.startswith('NVRM version:'):
            continue
        version = re.search(r'\s([0-9]{3}\.[0-9]{1,3}(?:\.[0-9]{1,3})?)\s', line + ' ')
        return {'flavour': 'open' if 'Open Kernel Module' in line else 'proprietary',
                'version': version.group(1) if version else ''}
    return {'flavour': '', 'version': ''}


def read_loaded_driver(sysfs_root, procfs_root):
    """The NVIDIA module the running kernel has loaded: its version (sysfs) and flavour (procfs)."""
    version = (_read(os.path.join(sysfs_root, 'module', 'nvidia', 'version')) or '').strip()
    proc = parse_proc_version(_read(os.path.join(procfs_root, 'driver', 'nvidia', 'version')))
    return {'version': version or proc['version'], 'flavour': proc['flavour']}


def read_dkms(root):
    """The NVIDIA modules DKMS builds: ['nvidia/580.95.05', ...] from /var/lib/dkms."""
    base = _join(root, 'var/lib/dkms')
    found = []
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return found
    for name in names:
        if not name.startswith('nvidia'):
            continue
        try:
            versions = sorted(v for v in os.listdir(os.path.join(base, name)) if v[:1].isdigit())
        except OSError:
            continue
        found.extend('%s/%s' % (name, version) for version in versions)
    return found


def read_marks(root, relatives):
    """Which of these files exist under root (as absolute paths of the host)."""
    return ['/' + rel for rel in relatives if os.path.exists(_join(root, rel))]


def driver_found(installed, loaded, runfile_marks, dkms):
    """How the driver got there. source is one of: '' (no driver), 'collection' (the role's pinning
    package), 'cuda-repo' (NVIDIA's packages without the role's mark), 'distribution' (Ubuntu's or
    Debian's archive, RPM Fusion), 'runfile' (NVIDIA's .run installer), 'platform' (a loaded module
    that no package and no installer left a trace of)."""
    installed = installed or {}
    loaded = loaded or {}
    packages = sorted(name for name in installed if name.startswith(PINNING_PREFIX))
    source = 'collection' if packages else ''
    if not source:
        packages = sorted(name for name in installed if name in CUDA_REPO_DRIVER_PACKAGES
                          or (name in DEBIAN_DRIVER_PACKAGES and not DEBIAN_VERSION_RE.search(installed[name])))
        source = 'cuda-repo' if packages else ''
    if not source:
        packages = sorted(name for name in installed
                          if UBUNTU_DRIVER_RE.match(name) or name in RPMFUSION_DRIVER_PACKAGES
                          or (name in DEBIAN_DRIVER_PACKAGES and DEBIAN_VERSION_RE.search(installed[name])))
        source = 'distribution' if packages else ''
    if not source and runfile_marks:
        source = 'runfile'
    if not source and loaded.get('version'):
        source = 'platform'
    package_version = ''
    for name in packages:
        version = upstream_version(installed[name])
        if re.match(r'^[0-9]{3}\.', version):
            package_version = version
            break
    return {
        'source': source,
        'packages': packages,
        'package_version': package_version,
        'loaded_version': _text(loaded.get('version')),
        'flavour': _text(loaded.get('flavour')),
        'version': _text(loaded.get('version')) or package_version,
        'runfile': list(runfile_marks or []),
        'dkms': list(dkms or []),
    }


def needs_open_modules(compute_caps, architecture):
    """NVIDIA supports only the open kernel modules on Blackwell (compute capability 10 and later)
    and on Grace Hopper (compute capability 9 on an Arm host)."""
    for cap in compute_caps or []:
        try:
            major = int(_text(cap).split('.', 1)[0])
        except ValueError:
            continue
        if major >= 10 or (major == 9 and architecture == 'aarch64'):
            return True
    return False


HOW = {
    'collection': 'by nimstack.multinode from NVIDIA\'s repository',
    'cuda-repo': 'from NVIDIA\'s CUDA repository (packages %(packages)s)',
    'distribution': 'from the distribution\'s packages (%(packages)s)',
    'runfile': 'by NVIDIA\'s runfile installer (%(runfile)s)',
    'platform': 'by the platform: the module is loaded and no package or installer provided it',
}


def describe(found):
    """'driver 580.159.04 (open kernel module, loaded), installed by ...' for messages."""
    state = ', '.join(part for part in (
        '%s kernel module' % found['flavour'] if found.get('flavour') else '',
        'loaded' if found.get('loaded_version') else 'not loaded',
        'DKMS %s' % ', '.join(found['dkms']) if found.get('dkms') else '') if part)
    how = HOW.get(found['source'], '') % {'packages': ', '.join(found.get('packages') or []),
                                          'runfile': ', '.join(found.get('runfile') or [])}
    return 'driver %s (%s), installed %s' % (found.get('version') or 'of unknown version', state, how)


def driver_decision(host, found, policy, branch, version, compute_caps, architecture, reboot_allowed=False):
    """What the nvidia_driver role does with what it found: {action, problem, report}.

    action: 'install' (nothing there), 'manage' (the role's own packages, or NVIDIA's, which it
    pins like its own), 'adopt' (kept as it is: no package installed, no file written),
    'takeover' (a runfile driver uninstalled and replaced, in the reboot waves) or 'refuse'
    (problem says why and what to do)."""
    source = found.get('source', '')
    prefix = 'nvidia_driver on %s: ' % host
    if source == '':
        return {'action': 'install', 'problem': '', 'report': 'no NVIDIA driver found: installing branch %s' % branch}
    if source in ('collection', 'cuda-repo'):
        return {'action': 'manage', 'problem': '',
                'report': '%s: the role keeps it on branch %s' % (describe(found), branch)}
    what = describe(found)
    if policy == 'refuse':
        return {'action': 'refuse', 'report': '',
                'problem': prefix + '%s; nvidia_driver_policy=refuse stops on a driver the collection did not install. '
                                    'Set nvidia_driver_policy=adopt to keep it, or remove it yourself and run again.' % what}
    if policy == 'manage':
        if source == 'runfile':
            if not reboot_allowed:
                return {'action': 'refuse', 'report': '',
                        'problem': prefix + '%s; nvidia_driver_policy=manage replaces it with branch %s from NVIDIA\'s '
                                            'repository, which needs a reboot: set nvidia_driver_reboot_allowed=true '
                                            '(the hosts reboot in waves, one node per deployment group).'
                                            % (what, branch)}
            return {'action': 'takeover', 'problem': '',
                    'report': '%s: nvidia_driver_policy=manage uninstalls it (nvidia-uninstall) and installs branch %s '
                              'in the reboot waves' % (what, branch)}
        if source == 'platform':
            return {'action': 'refuse', 'report': '',
                    'problem': prefix + '%s; nvidia_driver_policy=manage cannot take it over: nothing on the host '
                                        'removes it. Replace it where the platform provides it (the image or the '
                                        'hypervisor), or set nvidia_driver_policy=adopt to keep it.' % what}
        return {'action': 'manage', 'problem': '',
                'report': '%s: nvidia_driver_policy=manage installs branch %s from NVIDIA\'s repository over it'
                          % (what, branch)}
    reasons = []
    found_version = found.get('version', '')
    found_branch = found_version.split('.', 1)[0]
    if version and found_version != version:
        reasons.append('nvidia_driver_version=%s asks for %s' % (version, version))
    elif found_branch != _text(branch):
        reasons.append('nvidia_driver_branch=%s asks for branch %s' % (branch, branch))
    if needs_open_modules(compute_caps, architecture) and found.get('flavour') == 'proprietary':
        reasons.append('its GPUs (compute capability %s) run only with the open kernel modules'
                       % ', '.join(sorted(set(_text(c) for c in compute_caps))))
    if not reasons:
        return {'action': 'adopt', 'problem': '',
                'report': '%s: adopted as it is (branch %s); the role installs and writes nothing for the driver'
                          % (what, branch)}
    fixes = {
        'runfile': 'upgrade it with NVIDIA\'s runfile of that branch, or set nvidia_driver_policy=manage '
                   '(with nvidia_driver_reboot_allowed=true) to replace it with NVIDIA\'s packages',
        'distribution': 'install that branch from the distribution\'s packages, or set nvidia_driver_policy=manage '
                        'to replace it with NVIDIA\'s packages',
        'platform': 'update the driver where the platform provides it (the image or the hypervisor)',
    }[source]
    return {'action': 'refuse', 'report': '',
            'problem': prefix + '%s, but %s. The role does not replace a driver it did not install: %s; or set '
                                'nvidia_driver_branch/nvidia_driver_version to what runs to adopt it.'
                                % (what, '; '.join(reasons), fixes)}


def toolkit_found(installed, binaries, repo_defined):
    """How the toolkit got there: '' (absent), 'collection' (package with the role's repository
    file), 'package' (package from a repository the site defined), 'binary' (no package)."""
    installed = installed or {}
    if TOOLKIT_PACKAGE in installed:
        source = 'collection' if repo_defined else 'package'
    elif binaries:
        source = 'binary'
    else:
        source = ''
    return {'source': source, 'version': upstream_version(installed.get(TOOLKIT_PACKAGE, ''))
            if TOOLKIT_PACKAGE in installed else '', 'binaries': list(binaries or [])}


def toolkit_decision(host, found, policy, version):
    """What the nvidia_container_toolkit role does: {action, problem, report}; actions as for the
    driver ('install', 'manage', 'adopt', 'refuse')."""
    source = found.get('source', '')
    prefix = 'nvidia_container_toolkit on %s: ' % host
    if source == '':
        return {'action': 'install', 'problem': '', 'report': 'no NVIDIA Container Toolkit found: installing it'}
    if source == 'collection':
        return {'action': 'manage', 'problem': '', 'report': 'toolkit %s from the role\'s repository' % found['version']}
    what = ('toolkit %s, installed from a repository the site defined (package %s)' % (found['version'], TOOLKIT_PACKAGE)
            if source == 'package' else
            'toolkit with no package (%s)' % ', '.join(found.get('binaries') or []))
    if policy == 'refuse':
        return {'action': 'refuse', 'report': '',
                'problem': prefix + '%s; nvidia_container_toolkit_policy=refuse stops on a toolkit the collection did '
                                    'not install. Set nvidia_container_toolkit_policy=adopt to keep it.' % what}
    if policy == 'manage':
        return {'action': 'manage', 'problem': '',
                'report': '%s: nvidia_container_toolkit_policy=manage installs it from the role\'s repository' % what}
    if version and upstream_version(version) != found['version']:
        return {'action': 'refuse', 'report': '',
                'problem': prefix + '%s, but nvidia_container_toolkit_version=%s asks for another. The role does not '
                                    'replace a toolkit it did not install: upgrade it where it came from, empty '
                                    'nvidia_container_toolkit_version to adopt it, or set '
                                    'nvidia_container_toolkit_policy=manage.' % (what, version)}
    return {'action': 'adopt', 'problem': '',
            'report': '%s: adopted; the role installs nothing and only registers the runtime with Docker' % what}


def engine_found(installed, binaries):
    """Which Docker engine (or docker command) the host has: source 'docker' (docker-ce), 'distribution'
    (docker.io), 'moby' (moby-engine), 'podman' (podman-docker: Podman's docker command, no dockerd),
    'binary' (dockerd with no package) or ''."""
    installed = installed or {}
    for package, source in ENGINE_PACKAGES:
        if package in installed:
            return {'source': source, 'package': package, 'version': upstream_version(installed[package]),
                    'binaries': list(binaries or [])}
    return {'source': 'binary' if binaries else '', 'package': '', 'version': '', 'binaries': list(binaries or [])}


def engine_decision(host, found, policy, source_wanted, package_wanted):
    """What the docker role does: 'install' (none there), 'manage' (the engine its source installs),
    'adopt' (another engine kept: no package installed, daemon.json merged as usual), 'swap' (the
    engine replaced by the wanted one in the restart waves) or 'refuse'."""
    source = found.get('source', '')
    prefix = 'docker on %s: ' % host
    if source == '':
        return {'action': 'install', 'problem': '', 'report': 'no Docker engine found: installing %s' % package_wanted}
    if source == source_wanted:
        return {'action': 'manage', 'problem': '', 'report': 'engine %s %s' % (found['package'], found['version'])}
    what = ('%s %s is installed' % (found['package'], found['version']) if found.get('package')
            else 'dockerd runs from %s with no package' % ', '.join(found.get('binaries') or []))
    if policy == 'manage' and source != 'binary':
        return {'action': 'swap', 'problem': '',
                'report': '%s: docker_engine_policy=manage replaces it with %s in the restart waves, the group\'s '
                          'containers held by their supervisors' % (what, package_wanted)}
    if policy == 'refuse':
        return {'action': 'refuse', 'report': '',
                'problem': prefix + '%s and docker_engine_policy=refuse stops on an engine the collection did not '
                                    'install. Set docker_engine_policy=adopt to keep it, or =manage to replace it '
                                    'with %s in the restart waves.' % (what, package_wanted)}
    if source == 'podman':
        return {'action': 'refuse', 'report': '',
                'problem': prefix + '%s: Podman\'s docker command, not a Docker engine; the NIM containers need '
                                    'dockerd. Set docker_engine_policy=manage to replace it with %s in the restart '
                                    'waves, or remove podman-docker yourself and run again.' % (what, package_wanted)}
    if source == 'binary' and policy == 'manage':
        return {'action': 'refuse', 'report': '',
                'problem': prefix + '%s; docker_engine_policy=manage cannot remove an engine no package installed. '
                                    'Remove it yourself, or set docker_engine_policy=adopt to keep it.' % what}
    return {'action': 'adopt', 'problem': '',
            'report': '%s: adopted; the role installs no engine package (installing %s would remove it and stop '
                      'every container) and merges its settings into daemon.json' % (what, package_wanted)}
