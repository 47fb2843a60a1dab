# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The offline bundle: what a site without a way out needs from the internet, and whether a bundle
holds it.

A bundle is one directory (docs/offline.md), made by playbooks/bundle.yml on a connected machine
and served to the site's hosts from one URL (``nimstack_bundle_url``):

- ``manifest.json``: every item with its source, version, size and sha256 (``manifest_problems``
  reads it);
- ``apt/<platform>/``: one flat apt repository per platform (``debian-12``, ``ubuntu-22.04``...), its
  ``InRelease`` signed by the bundle's own key (``apt/<platform>/bundle.asc``): the packages the
  roles install on that platform with their dependencies, as a host of the platform's base image
  lacks them.

The packages a host needs are read from the roles themselves, never listed here: each role's
``defaults/main.yml`` for its switches, and its package variables from ``vars/main.yml`` and the
first of ``vars/<distribution>_<major>.yml``, ``<distribution>.yml``, ``<os_family>_<major>.yml``,
``<os_family>.yml`` (what ``common``'s os_vars.yml loads on the host). Which roles a host gets is
the playbooks' (``inventory_checks.host_kinds``: a host of a Docker group, an exporter host, the
front door, the monitoring host; the NFS server group).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os

try:
    from urllib.parse import quote
except ImportError:  # pragma: no cover - Python 2
    from urllib import quote  # pylint: disable=no-name-in-module

from ansible_collections.nimstack.multinode.plugins.module_utils.values import truthy

try:
    import yaml
except ImportError:  # pragma: no cover - ansible-core depends on PyYAML
    yaml = None

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
MANIFEST = 'manifest.json'
MANIFEST_VERSION = 1
# On a host in offline mode: apt's configuration of the collection's own (roles/common/tasks/bundle_apt.yml).
APT_CONFIG = '/run/nimstack/bundle/apt.conf'

# The platforms a bundle can hold packages for: name -> the facts of a host of it. The names are
# what nimstack_bundle_platforms takes.
PLATFORMS = {
    'debian-12': {'distribution': 'Debian', 'distribution_major_version': '12', 'os_family': 'Debian'},
    'ubuntu-22.04': {'distribution': 'Ubuntu', 'distribution_major_version': '22', 'os_family': 'Debian',
                     'distribution_version': '22.04'},
    'ubuntu-24.04': {'distribution': 'Ubuntu', 'distribution_major_version': '24', 'os_family': 'Debian',
                     'distribution_version': '24.04'},
}


def platform_of(facts):
    """The bundle platform of a host's facts ('debian-12'), or '' for one a bundle cannot serve."""
    facts = facts or {}
    distribution = str(facts.get('distribution', ''))
    for name, want in PLATFORMS.items():
        if distribution != want['distribution']:
            continue
        if 'distribution_version' in want:
            if str(facts.get('distribution_version', '')) == want['distribution_version']:
                return name
        elif str(facts.get('distribution_major_version', '')) == want['distribution_major_version']:
            return name
    return ''


def apt_path(platform):
    return 'apt/%s' % platform


_CACHE = {}


def _load(path):
    if path not in _CACHE:
        try:
            with open(path) as handle:
                _CACHE[path] = yaml.safe_load(handle) or {}
        except (OSError, IOError):
            _CACHE[path] = {}
    return _CACHE[path]


def role_defaults(role, root=ROOT):
    return _load(os.path.join(root, 'roles', role, 'defaults', 'main.yml'))


def role_vars(role, platform, root=ROOT):
    """A role's vars/main.yml with the first of its distribution's vars files over it."""
    facts = PLATFORMS[platform]
    found = dict(_load(os.path.join(root, 'roles', role, 'vars', 'main.yml')))
    for name in ('%(distribution)s_%(distribution_major_version)s.yml', '%(distribution)s.yml',
                 '%(os_family)s_%(distribution_major_version)s.yml', '%(os_family)s.yml'):
        path = os.path.join(root, 'roles', role, 'vars', name % facts)
        if os.path.exists(path):
            found.update(_load(path))
            break
    return found


def _list(value):
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return [str(value)]


class _Host(object):
    """One host's view of a role's variables: the inventory's value, else the role's default."""

    def __init__(self, hvars, platform, root):
        self.hvars = hvars or {}
        self.platform = platform
        self.root = root

    def get(self, role, name):
        if name in self.hvars:
            return self.hvars[name]
        return role_defaults(role, self.root).get(name)

    def var(self, role, name):
        return role_vars(role, self.platform, self.root).get(name)

    def on(self, role):
        """The role's kill switch, <role>_enabled (on where neither the inventory nor the role sets it)."""
        value = self.get(role, '%s_enabled' % role)
        return True if value is None else truthy(value)


def _docker(host):
    if not host.on('docker'):
        return []
    chosen = _list(host.get('docker', 'docker_packages'))
    if chosen:
        return chosen
    source = str(host.get('docker', 'docker_install_source') or 'auto')
    if source == 'auto':
        source = str(host.var('docker', '_docker_default_source') or 'distribution')
    return _list((host.var('docker', '_docker_packages') or {}).get(source))


def _ssh_mesh(host):
    return _list(host.var('ssh_mesh', '_ssh_mesh_packages')) if host.on('ssh_mesh') else []


def _nim_docker(host):
    return _list(host.var('nim_docker', '_nim_docker_python_packages')) if host.on('nim_docker') else []


def _firewall(host):
    on = truthy(host.hvars.get('nim_firewall_enabled', host.hvars.get('nim_group_firewall', True)))
    return _list(host.var('nim_firewall', '_nim_firewall_packages')) if on else []


def _nfs_client(host):
    if not (host.on('nfs') and truthy(host.get('nfs', 'nfs_mount_enabled'))):
        return []
    return _list(host.var('nfs', '_nfs_client_packages'))


def _rdma(host):
    if not host.on('rdma'):
        return []
    chosen = _list(host.get('rdma', 'rdma_packages'))
    if chosen:
        return chosen
    if str(host.get('rdma', 'rdma_install_source')) == 'doca':
        return []  # NVIDIA's DOCA repository: not in a bundle yet (docs/offline.md)
    return _list(host.var('rdma', '_rdma_distribution_packages'))


def _exporters(host):
    if not truthy(host.get('monitoring', 'monitoring_manage_packages')):
        return []
    return _list(host.var('monitoring', '_monitoring_node_exporter_package'))


def _monitoring(host):
    if not truthy(host.get('monitoring', 'monitoring_manage_packages')):
        return []
    if str(host.get('monitoring', 'monitoring_mode')) != 'server':
        return []
    return _list(host.var('monitoring', '_monitoring_packages'))


def _frontend(host):
    return _list(host.var('nim_frontend', '_nim_frontend_packages'))


def _nfs_server(host):
    return _list(host.var('nfs', '_nfs_server_packages')) if host.on('nfs') else []


# What each kind of host installs from its distribution, role by role, in the playbooks' order.
KIND_ROLES = (
    ('docker', (('docker', _docker), ('rdma', _rdma), ('nfs', _nfs_client), ('ssh_mesh', _ssh_mesh),
                ('nim_firewall', _firewall), ('nim_docker', _nim_docker))),
    ('exporters', (('monitoring', _exporters),)),
    ('frontend', (('nim_frontend', _frontend),)),
    ('monitoring', (('monitoring', _monitoring),)),
    ('nfs_server', (('nfs', _nfs_server),)),
)


def host_packages(kinds, hvars, platform, root=ROOT):
    """[(role, package)] a host of these kinds installs from its distribution, each package once."""
    host = _Host(hvars, platform, root)
    seen, found = set(), []
    for kind, roles in KIND_ROLES:
        if kind not in kinds:
            continue
        for role, packages in roles:
            for name in packages(host):
                if name not in seen:
                    seen.add(name)
                    found.append((role, name))
    return found


def wanted_packages(kinds_by_host, vars_by_host, platforms_by_host, root=ROOT):
    """{platform: {package: [roles]}} over every host: what the bundle must hold."""
    wanted = {}
    for host in sorted(kinds_by_host):
        platform = platforms_by_host.get(host)
        if not platform:
            continue
        for role, name in host_packages(kinds_by_host[host], vars_by_host.get(host), platform, root):
            roles = wanted.setdefault(platform, {}).setdefault(name, [])
            if role not in roles:
                roles.append(role)
    return wanted


def manifest_problems(manifest, wanted, platforms_by_host, present=None):
    """What keeps the bundle whose manifest is given from serving the run, each named.

    wanted: wanted_packages(); platforms_by_host: {host: platform, '' for one no bundle serves};
    present: a function of a path in the bundle that says whether the bundle serves that file
    with the manifest's size (None: not checked).
    """
    problems = []
    if not isinstance(manifest, dict) or manifest.get('version') != MANIFEST_VERSION:
        return ['the bundle has no manifest.json of version %d (make it with playbooks/bundle.yml)' % MANIFEST_VERSION]
    for host in sorted(h for h, p in platforms_by_host.items() if not p):
        problems.append('host %s runs a distribution no bundle serves; a bundle holds packages for %s'
                        % (host, ', '.join(sorted(PLATFORMS))))
    held = manifest.get('platforms') or {}
    for platform in sorted(wanted):
        repo = held.get(platform)
        hosts = sorted(h for h, p in platforms_by_host.items() if p == platform)
        if not isinstance(repo, dict):
            problems.append('the bundle holds no packages for %s (hosts %s); add it to nimstack_bundle_platforms '
                            'and make the bundle again' % (platform, ', '.join(hosts)))
            continue
        requested = repo.get('requested') or {}
        files = dict((f.get('path'), f) for f in repo.get('files') or [] if isinstance(f, dict))
        for name in sorted(wanted[platform]):
            if name not in requested:
                problems.append('the bundle has no package %s for %s, which role %s installs; make the bundle again '
                                'from this inventory' % (name, platform, ', '.join(wanted[platform][name])))
        if present is None:
            continue
        for path in sorted(files):
            if not present(path, files[path].get('size')):
                problems.append('the bundle lists %s (%s) but does not serve it with its size of %s bytes'
                                % (path, files[path].get('name', ''), files[path].get('size')))
    return problems


def read_manifest(text):
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return None
    return value


# The inventory variables the package choice above reads (besides the roles' own defaults).
READS = ('nim_deployment_mode', 'nim_group_firewall', 'nim_firewall_enabled', 'docker_enabled', 'docker_packages',
         'docker_install_source', 'rdma_enabled', 'rdma_packages', 'rdma_install_source', 'nfs_enabled',
         'nfs_mount_enabled', 'ssh_mesh_enabled', 'nim_docker_enabled', 'monitoring_manage_packages', 'monitoring_mode')


def host_kinds(groups, nodes, vars_by_host):
    """{host: kinds} of every host a rollout installs packages on (inventory_checks.host_kinds, and the
    NFS server group's hosts)."""
    from ansible_collections.nimstack.multinode.plugins.module_utils import inventory_checks  # noqa: E501 pylint: disable=import-outside-toplevel
    kinds = inventory_checks.host_kinds(groups, nodes, vars_by_host)
    for host in (groups or {}).get('nfs_server') or ():
        kinds.setdefault(host, set()).add('nfs_server')
    return kinds


def fetch(url, timeout=10):
    """The bytes at a bundle URL (http, https or file), or raise OSError naming why."""
    from ansible.module_utils.urls import open_url  # pylint: disable=import-outside-toplevel
    if url.startswith('file://'):
        with open(url[len('file://'):], 'rb') as handle:
            return handle.read()
    try:
        return open_url(url, timeout=timeout, validate_certs=True).read()
    except Exception as exc:  # pylint: disable=broad-except
        raise OSError('%s: %s' % (url, exc))


def served(base, timeout=10):
    """A function (path, size) -> whether the bundle at base serves the file with that size."""
    from ansible.module_utils.urls import open_url  # pylint: disable=import-outside-toplevel
    base = base.rstrip('/')

    def present(path, size):
        if base.startswith('file://'):
            full = os.path.join(base[len('file://'):], path)
            return os.path.isfile(full) and (size is None or os.path.getsize(full) == size)
        try:
            # A file name of the pool holds %3a for an epoch's colon, as apt names it: quoted again.
            response = open_url('%s/%s' % (base, quote(path)), method='HEAD', timeout=timeout, validate_certs=True)
            length = response.headers.get('Content-Length')
            return size is None or length is None or int(length) == size
        except Exception:  # pylint: disable=broad-except
            return False
    return present
