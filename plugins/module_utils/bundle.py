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
  lacks them, from the platform's own sources and from the vendors' repositories the roles define
  (NVIDIA's CUDA and libnvidia-container repositories, DOCA: ``sources``), each verified with its
  own key (``keys/``).

Which NVIDIA packages a host needs depends on its hardware: the maker, which sees no host, takes
them for every host whose NVIDIA roles are on; the check before a run (``hardware``: what the OS
check read on each host) asks them only of a host with an NVIDIA GPU and no driver (or toolkit)
there yet, with the headers of the kernel it runs.

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
import re

try:
    from urllib.parse import quote, urljoin
except ImportError:  # pragma: no cover - Python 2
    from urllib import quote  # pylint: disable=no-name-in-module
    from urlparse import urljoin  # pylint: disable=import-error

from ansible_collections.nimstack.multinode.plugins.module_utils import docker_spec, driver_plan, toolkit_plan
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
    'debian-12': {'distribution': 'Debian', 'distribution_major_version': '12', 'os_family': 'Debian',
                  'distribution_release': 'bookworm'},
    'ubuntu-22.04': {'distribution': 'Ubuntu', 'distribution_major_version': '22', 'os_family': 'Debian',
                     'distribution_version': '22.04', 'distribution_release': 'jammy'},
    'ubuntu-24.04': {'distribution': 'Ubuntu', 'distribution_major_version': '24', 'os_family': 'Debian',
                     'distribution_version': '24.04', 'distribution_release': 'noble'},
}


# The kernel headers a platform's hosts build the driver's modules against, where the maker knows no
# host's kernel: the distribution's metapackage of its current kernel (a host running another kernel
# needs linux-headers-<its kernel> in nimstack_bundle_extra_packages; the check names it).
HEADERS_META = {'debian-12': 'linux-headers-amd64', 'ubuntu-22.04': 'linux-headers-generic',
                'ubuntu-24.04': 'linux-headers-generic'}
# A bundle holds the packages of the machine that made it: x86_64 (the roles' maps name the vendors'
# directories of it).
ARCHITECTURE = 'x86_64'


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

    def __init__(self, hvars, platform, root, hardware=None):
        self.hvars = hvars or {}
        self.platform = platform
        self.root = root
        # What the host showed (parse_hardware); None where no host is seen (the maker).
        self.hardware = hardware

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


def _needs(host, role, present):
    """Whether a host gets the NVIDIA packages of a role: on the maker's side wherever the role is on;
    on a host, where it has an NVIDIA GPU and the role's part (driver or toolkit) is not there yet."""
    if not host.on(role):
        return False
    return host.hardware is None or (host.hardware['gpu'] and not host.hardware[present])


def _driver_inputs(host, *names):
    """The nvidia_driver role's inputs of its plan (driver_plan), by their names there: its settings
    (nvidia_driver_<name>) and its vars (_nvidia_driver_<name>), as the host's inventory and the role
    give them."""
    found = {}
    for name in names:
        value = host.get('nvidia_driver', 'nvidia_driver_' + name)
        found[name] = host.var('nvidia_driver', '_nvidia_driver_' + name) if value is None else value
    return found


def _nvidia_driver(host):
    """What the nvidia_driver role installs (driver_plan's packages: NVLink 5's not, as no host is read
    for it), with the DKMS prerequisites and the headers of the host's kernel."""
    if not _needs(host, 'nvidia_driver', 'driver'):
        return []
    inputs = _driver_inputs(host, 'branch', 'version', 'kernel_modules', 'meta_packages', 'fabric_packages',
                            'nvlink5_versioned_packages', 'nvlink5_packages', 'imex_packages', 'imex_enabled')
    fabric = truthy(host.get('nvidia_driver', 'nvidia_driver_fabric_manager_enabled')) and (
        host.hardware is None or host.hardware['nvswitch'])
    versioned, _unversioned = driver_plan.package_names(inputs, fabric, False, ARCHITECTURE)
    suffix = driver_plan.version_suffix('apt', inputs['branch'], inputs['version'])
    headers = ('linux-headers-%s' % host.hardware['kernel'] if host.hardware and host.hardware['kernel']
               else HEADERS_META[host.platform])
    return ([driver_plan.PINNING_PREFIX + str(inputs['version'] or inputs['branch'])]
            + [name + suffix for name in versioned]
            + _list(host.var('nvidia_driver', '_nvidia_driver_prerequisites')) + [headers])


def _nvidia_toolkit(host):
    if not _needs(host, 'nvidia_container_toolkit', 'toolkit'):
        return []
    return toolkit_plan.toolkit_packages(host.var('nvidia_container_toolkit', '_nvidia_container_toolkit_packages'),
                                         host.get('nvidia_container_toolkit', 'nvidia_container_toolkit_version'), 'apt')


def _doca(host):
    return (host.on('rdma') and not _list(host.get('rdma', 'rdma_packages'))
            and str(host.get('rdma', 'rdma_install_source')) == 'doca')


def _url(value):
    return str(value or '').rstrip('/')


def host_sources(hvars, platform, root=ROOT):
    """[{name, uri, key_url[, suite, components]}]: the vendors' apt repositories a host of the platform
    installs from, composed as the roles compose them (nvidia_driver's plan, nvidia_container_toolkit's
    plan.yml, rdma's and docker's vars) from the inventory's values or the roles' defaults; a repository
    without a suite is flat (suite "/")."""
    host = _Host(hvars, platform, root)
    facts = PLATFORMS[platform]
    found = []
    if _docker_source(host) == 'docker':
        uri = '%s/%s' % (_url(host.get('docker', 'docker_repo_url')), host.var('docker', '_docker_repo_distribution'))
        key = host.get('docker', 'docker_repo_gpg_key_url') or uri + '/gpg'
        found.append({'name': 'docker', 'uri': uri, 'key_url': str(key), 'suite': facts['distribution_release'],
                      'components': str(host.get('docker', 'docker_repo_channel'))})
    if host.on('nvidia_driver'):
        # The role's vars name the distribution's directory with a template: debian12, ubuntu2204.
        release = facts.get('distribution_version', facts['distribution_major_version'])
        inputs = _driver_inputs(host, 'repo_url', 'repo_base_url', 'repo_key_url', 'repo_arch_map', 'repo_key_file')
        inputs['repo_distro'] = facts['distribution'].lower() + release.replace('.', '')
        uri, key = driver_plan.repo_urls(inputs, ARCHITECTURE)
        found.append({'name': 'nvidia-cuda', 'uri': uri, 'key_url': key})
    if host.on('nvidia_container_toolkit'):
        base = _url(host.get('nvidia_container_toolkit', 'nvidia_container_toolkit_repo_base_url'))
        uri = _url(host.get('nvidia_container_toolkit', 'nvidia_container_toolkit_repo_url')) or '%s/%s/deb/%s' % (
            base, host.get('nvidia_container_toolkit', 'nvidia_container_toolkit_repo_channel'),
            host.var('nvidia_container_toolkit', '_nvidia_container_toolkit_arch_map')[ARCHITECTURE])
        key = host.get('nvidia_container_toolkit', 'nvidia_container_toolkit_repo_key_url') or base + '/gpgkey'
        found.append({'name': 'nvidia-container-toolkit', 'uri': uri + '/', 'key_url': str(key)})
    if _doca(host):
        label = str(host.get('rdma', 'rdma_doca_os_label') or '')
        if not label:
            if 'distribution_version' not in facts:
                raise ValueError('rdma_doca_os_label: DOCA names its %s directory by the point release '
                                 '(debian12.5...); set it for a bundle' % platform)
            label = facts['distribution'].lower() + facts['distribution_version']
        uri = '%s/%s/%s/%s' % (_url(host.get('rdma', 'rdma_doca_repo_url')), host.get('rdma', 'rdma_doca_version'),
                               label, ARCHITECTURE)
        found.append({'name': 'doca', 'uri': uri + '/', 'key_url': str(host.get('rdma', 'rdma_doca_gpg_key_url'))})
    return found


def _docker_source(host):
    """Where the docker role installs the engine from on the platform ('distribution', 'docker'...)."""
    if not host.on('docker'):
        return ''
    source = str(host.get('docker', 'docker_install_source') or 'auto')
    if source == 'auto':
        source = str(host.var('docker', '_docker_default_source') or 'distribution')
    return source


def _docker(host):
    if not host.on('docker'):
        return []
    chosen = _list(host.get('docker', 'docker_packages'))
    if chosen:
        return chosen
    return _list((host.var('docker', '_docker_packages') or {}).get(_docker_source(host)))


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
    if _doca(host):
        return _list(host.get('rdma', 'rdma_doca_packages'))
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
    ('docker', (('nvidia_driver', _nvidia_driver), ('nvidia_container_toolkit', _nvidia_toolkit),
                ('docker', _docker), ('rdma', _rdma), ('nfs', _nfs_client), ('ssh_mesh', _ssh_mesh),
                ('nim_firewall', _firewall), ('nim_docker', _nim_docker))),
    ('exporters', (('monitoring', _exporters),)),
    ('frontend', (('nim_frontend', _frontend),)),
    ('monitoring', (('monitoring', _monitoring),)),
    ('nfs_server', (('nfs', _nfs_server),)),
)


def host_packages(kinds, hvars, platform, root=ROOT, hardware=None):
    """[(role, package)] a host of these kinds installs, each package once; hardware: what the host
    showed (parse_hardware), None on the maker's side."""
    host = _Host(hvars, platform, root, hardware)
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


def wanted_packages(kinds_by_host, vars_by_host, platforms_by_host, root=ROOT, hardware_by_host=None):
    """{platform: {package: [roles]}} over every host: what the bundle must hold."""
    wanted = {}
    for host in sorted(kinds_by_host):
        platform = platforms_by_host.get(host)
        if not platform:
            continue
        hardware = hardware_by_host.get(host) if hardware_by_host is not None else None
        for role, name in host_packages(kinds_by_host[host], vars_by_host.get(host), platform, root, hardware):
            roles = wanted.setdefault(platform, {}).setdefault(name, [])
            if role not in roles:
                roles.append(role)
    return wanted


def _host_images(hvars):
    """[(reference, the setting of its archive)] of a Docker host: its group's NIM image (nim_image at
    nim_image_tag). Offline, no node runs a downloader (its model comes from the bundle's models/), so
    no downloader image is carried for the nodes."""
    from ansible_collections.nimstack.multinode.plugins.module_utils.input_checks import image_reference  # noqa: E501 pylint: disable=import-outside-toplevel
    if hvars.get('nim_image'):
        return [(image_reference(hvars['nim_image'], hvars.get('nim_image_tag')), 'nim_docker_image_archive')]
    return []


def wanted_images(kinds_by_host, vars_by_host):
    """[reference]: the images the Docker groups' hosts run (_host_images) and their DCGM exporters'
    (wanted_dcgm_images), each once, sorted."""
    return sorted(set(ref for host, kinds in kinds_by_host.items() if 'docker' in kinds
                      for ref, _variable in _host_images(vars_by_host.get(host) or {}))
                  | set(wanted_dcgm_images(kinds_by_host, vars_by_host)))


MODELS = 'models'


def _host_model(hvars, defaults):
    """The model cache a Docker host's group downloads, as the bundle carries it ({file, image, profile,
    downloader, command, env, user}), or None where it downloads none (nim_docker_download_model false:
    the cache is filled beforehand). The downloader runs as the leader would run it: the group's
    downloader image (else the NIM image) and command, as the container's user, with the group's profile,
    layout and nim_extra_env, and the cache at the containers' path."""
    from ansible_collections.nimstack.multinode.plugins.module_utils import nim_env  # noqa: E501 pylint: disable=import-outside-toplevel

    def get(name):
        return hvars[name] if name in hvars else defaults.get(name)
    images = _host_images(hvars)
    if not images or not truthy(get('nim_docker_download_model')):
        return None
    image = images[0][0]
    profile = str(hvars.get('nim_model_profile') or '')
    env = dict((str(k), str(v)) for k, v in (hvars.get('nim_extra_env') or {}).items())
    env['NIM_CACHE_PATH'] = nim_env.CACHE_PATH
    for name, variable in (('NIM_TENSOR_PARALLEL_SIZE', 'nim_tensor_parallel'),
                           ('NIM_PIPELINE_PARALLEL_SIZE', 'nim_pipeline_parallel'), ('NIM_MODEL_PROFILE', 'nim_model_profile')):
        if hvars.get(variable) not in (None, ''):
            env[name] = str(hvars[variable])
    command = get('nim_docker_download_command')
    return {'file': docker_spec.model_file(image, profile), 'image': image, 'profile': profile,
            'downloader': str(get('nim_docker_download_image') or image),
            'command': [str(c) for c in (command if isinstance(command, list) else [command])],
            'env': env, 'user': '%s:%s' % (get('nim_docker_container_uid'), get('nim_docker_container_gid'))}


def wanted_models(kinds_by_host, vars_by_host):
    """[{file, image, profile, downloader, command, env, user, hosts}]: the model caches the Docker groups
    download (_host_model), each once (the first host's way of filling it), by file."""
    defaults = role_defaults('nim_docker')
    found = {}
    for host in sorted(h for h, kinds in kinds_by_host.items() if 'docker' in kinds):
        model = _host_model(vars_by_host.get(host) or {}, defaults)
        if model is not None:
            found.setdefault(model['file'], dict(model, hosts=[]))['hosts'].append(host)
    return [found[name] for name in sorted(found)]


def model_problems(manifest, kinds_by_host, vars_by_host, present=None):
    """What keeps the bundle from serving the model caches its Docker groups' leaders unpack from it in
    offline mode (docker_spec: every group that downloads its model), each named with its hosts and the
    ways out."""
    held = dict((m.get('file'), m) for m in (manifest or {}).get(MODELS) or [] if isinstance(m, dict))
    problems = []
    for model in wanted_models(kinds_by_host, vars_by_host):
        record = held.get(model['file'])
        if record is None:
            problems.append('offline mode: the bundle has no model cache for %s with %s (%s/%s), which the group of %s '
                            'would download; make the bundle again from this inventory (playbooks/bundle.yml fills it '
                            'with the image\'s own downloader), or fill nim_cache_path beforehand and set '
                            'nim_docker_download_model=false'
                            % (model['image'], 'profile ' + model['profile'] if model['profile'] else 'no nim_model_profile',
                               MODELS, model['file'], ', '.join(model['hosts'])))
        elif present is not None and not present(record.get('path'), record.get('size')):
            problems.append(unserved(record, 'model cache of %s' % model['image']))
    return problems


def unserved(record, what):
    """The problem of a file the manifest lists but the bundle does not serve whole."""
    return 'the bundle lists %s (%s) but does not serve it with its size of %s bytes' % (
        record.get('path'), what, record.get('size'))


# The file name of an image's archive in the bundle's images/ (the nodes load it from there).
image_file = docker_spec.image_file


def wanted_sources(kinds_by_host, vars_by_host, platform, root=ROOT):
    """[{name, uri, key_url}] of the Docker hosts' vendor repositories for one platform, each URI once."""
    found, seen = [], set()
    for host in sorted(h for h, kinds in kinds_by_host.items() if 'docker' in kinds):
        for source in host_sources(vars_by_host.get(host), platform, root):
            if source['uri'] not in seen:
                seen.add(source['uri'])
                found.append(source)
    return found


def parse_hardware(result):
    """What the OS check's read of a host says ("gpu", "nvswitch", "driver", "toolkit", "kernel <release>"
    lines; roles/validate_inventory/tasks/os.yml): {gpu, nvswitch, driver, toolkit, kernel}; None where
    the read did not run (the host is then asked for everything its roles may install)."""
    if not isinstance(result, dict) or 'stdout_lines' not in result:
        return None
    lines = [str(line).split() for line in result['stdout_lines'] or ()]
    words = set(parts[0] for parts in lines if parts)
    kernel = [parts[1] for parts in lines if len(parts) == 2 and parts[0] == 'kernel']
    return {'gpu': 'gpu' in words, 'nvswitch': 'nvswitch' in words, 'driver': 'driver' in words,
            'toolkit': 'toolkit' in words, 'kernel': kernel[0] if kernel else ''}


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
        # A name the maker was not asked for may still be there as another's dependency (the headers
        # of one kernel, under the distribution's metapackage): a package of the index counts.
        indexed = set(f.get('name') for f in files.values() if str(f.get('path', '')).endswith('.deb'))
        for name in sorted(wanted[platform]):
            if name not in requested and name not in indexed:
                problems.append('the bundle has no package %s for %s, which role %s installs; make the bundle again '
                                'from this inventory' % (name, platform, ', '.join(wanted[platform][name])))
        if present is None:
            continue
        for path in sorted(files):
            if not present(path, files[path].get('size')):
                problems.append(unserved(files[path], files[path].get('name', '')))
    return problems


def image_problems(manifest, kinds_by_host, vars_by_host, url, present=None):
    """What keeps the bundle at url from serving the images its Docker hosts load from it in offline
    mode (docker_spec.bundle_image: an image of a registry on the internet that no archive carries
    in), each named with the hosts that would load it and the setting that carries it in instead."""
    wanted = {}
    for host in sorted(h for h, kinds in kinds_by_host.items() if 'docker' in kinds):
        hvars = vars_by_host.get(host) or {}
        for ref, variable in _host_images(hvars):
            if docker_spec.bundle_image(ref, hvars.get(variable) or '', url):
                wanted.setdefault((ref, variable), []).append(host)
    held = dict((i.get('ref'), i) for i in (manifest or {}).get('images') or [] if isinstance(i, dict))
    problems = []
    for (ref, variable), hosts in sorted(wanted.items()):
        record = held.get(ref)
        if record is None:
            problems.append('the bundle has no image %s (images/%s), which %s would load from it (no %s given); make the '
                            'bundle again from this inventory (playbooks/bundle.yml), or carry it in as an archive: %s'
                            % (ref, image_file(ref), ', '.join(hosts), variable, variable))
        elif present is not None and not present(record.get('path'), record.get('size')):
            problems.append(unserved(record, ref))
    return problems


def _dcgm_image(hvars, defaults):
    """The DCGM exporter's image of an exporter host (role monitoring) where the exporter is on and the
    image is of a registry on the internet, else ''."""
    def get(name):
        return hvars[name] if name in hvars else defaults.get(name)
    if not truthy(get('monitoring_dcgm_exporter')):
        return ''
    image = '%s:%s' % (get('monitoring_dcgm_exporter_image'), get('monitoring_dcgm_exporter_tag'))
    return image if docker_spec.registry_of(image) in docker_spec.PUBLIC_REGISTRIES else ''


def wanted_dcgm_images(kinds_by_host, vars_by_host):
    """[reference]: the DCGM exporter images the bundle carries, each once: those of every exporter host
    (_dcgm_image). The maker sees no host, so not which has a GPU: it carries them for all."""
    defaults = role_defaults('monitoring')
    return sorted(set(filter(None, (_dcgm_image(vars_by_host.get(host) or {}, defaults)
                                    for host, kinds in kinds_by_host.items() if 'exporters' in kinds))))


def dcgm_problems(manifest, kinds_by_host, vars_by_host, hardware_by_host, url, present=None):
    """In offline mode, what keeps the bundle at url from serving the DCGM exporter's image (role
    monitoring, on a Docker host a monitoring host watches) to the hosts that load it from there: those
    with an NVIDIA GPU, by the OS check's read (hardware_by_host, parse_hardware), whose exporter is on
    and would pull its image from a registry on the internet."""
    if not url:
        return []
    defaults = role_defaults('monitoring')
    wanted = {}
    for host in sorted(h for h, kinds in kinds_by_host.items() if 'exporters' in kinds):
        image = _dcgm_image(vars_by_host.get(host) or {}, defaults)
        if image and (hardware_by_host.get(host) or {}).get('gpu'):
            wanted.setdefault(image, []).append(host)
    held = dict((i.get('ref'), i) for i in (manifest or {}).get('images') or [] if isinstance(i, dict))
    problems = []
    for image, hosts in sorted(wanted.items()):
        record = held.get(image)
        if record is None:
            problems.append('offline mode: the bundle has no image %s (images/%s), which the DCGM exporter '
                            '(monitoring_dcgm_exporter) of %s would load from it (an NVIDIA GPU shown); make the bundle '
                            'again from this inventory (playbooks/bundle.yml), push the image to the site\'s own registry '
                            'and name it there (monitoring_dcgm_exporter_image, monitoring_dcgm_exporter_tag), or set '
                            'monitoring_dcgm_exporter=false' % (image, image_file(image), ', '.join(hosts)))
        elif present is not None and not present(record.get('path'), record.get('size')):
            problems.append(unserved(record, image))
    return problems


def read_manifest(text):
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return None
    return value


# The inventory variables the package choice above reads (besides the roles' own defaults).
READS = ('nim_deployment_mode', 'nim_group_firewall', 'nim_firewall_enabled', 'docker_enabled', 'docker_packages',
         'docker_install_source', 'docker_repo_url', 'docker_repo_channel', 'docker_repo_gpg_key_url', 'rdma_enabled',
         'rdma_packages', 'rdma_install_source', 'rdma_doca_repo_url',
         'rdma_doca_version', 'rdma_doca_os_label', 'rdma_doca_gpg_key_url', 'rdma_doca_packages', 'nfs_enabled',
         'nfs_mount_enabled', 'ssh_mesh_enabled', 'nim_docker_enabled', 'monitoring_manage_packages', 'monitoring_mode',
         'nvidia_driver_enabled', 'nvidia_driver_branch', 'nvidia_driver_version', 'nvidia_driver_kernel_modules',
         'nvidia_driver_fabric_manager_enabled', 'nvidia_driver_imex_enabled', 'nvidia_driver_repo_url',
         'nvidia_driver_repo_base_url', 'nvidia_driver_repo_key_url', 'nvidia_container_toolkit_enabled',
         'nvidia_container_toolkit_version', 'nvidia_container_toolkit_repo_url',
         'nvidia_container_toolkit_repo_base_url', 'nvidia_container_toolkit_repo_channel',
         'nvidia_container_toolkit_repo_key_url', 'nim_image', 'nim_image_tag', 'nim_docker_download_image',
         'nim_docker_image_archive', 'monitoring_dcgm_exporter', 'monitoring_dcgm_exporter_image',
         'monitoring_dcgm_exporter_tag', 'nim_docker_download_model', 'nim_docker_download_command',
         'nim_model_profile', 'nim_extra_env', 'nim_tensor_parallel', 'nim_pipeline_parallel',
         'nim_docker_container_uid', 'nim_docker_container_gid')
# The fact the OS check leaves on each Docker host in offline mode: its read of the hardware.
HARDWARE_FACT = '__validate_inventory_bundle_hardware'


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


# What the Kubernetes components' roles read to choose where they install from (role defaults in
# settings.DECLARED, else the role's defaults/main.yml), and what a run in offline mode may not fetch
# from outside the bundle.
K8S_SETTINGS = ('nim_k8s_storage', 'nim_k8s_pvc_name', 'lws_version', 'lws_install_method', 'lws_helm_chart_path',
                'lws_helm_chart_ref', 'lws_manifest_url',
                'nim_operator_version', 'nim_operator_helm_chart', 'nim_operator_helm_chart_file',
                'nim_operator_helm_repo_url', 'nim_operator_gpu_operator_enabled', 'nim_operator_network_operator_enabled',
                'nim_k8s_backend', 'nim_k8s_scheduler', 'volcano_version', 'volcano_install_method',
                'volcano_helm_chart', 'volcano_helm_chart_file', 'volcano_helm_repo_url', 'volcano_manifest_url')
# The Kubernetes components' files in the bundle's files/ (one name per version, so that the roles
# find them from their own settings) and the checksums of every file there, in sha256sum's format
# (what get_url's checksum reads).
FILES = 'files'
CHECKSUMS = 'SHA256SUMS'
K8S_FILES = {'lws': 'lws-%s-manifests.yaml', 'lws_helm': 'lws-chart-%s.tgz', 'nim_operator': 'k8s-nim-operator-%s.tgz',
             'volcano_helm': 'volcano-%s.tgz', 'volcano_manifest': 'volcano-%s-development.yaml'}


def k8s_file(component, version):
    """The name in the bundle's files/ of a component's release manifest or chart (K8S_FILES)."""
    return K8S_FILES[component] % version


def _k8s_getter(values):
    from ansible_collections.nimstack.multinode.plugins.module_utils import settings as declared  # noqa: E501 pylint: disable=import-outside-toplevel
    roles = {'lws': 'lws', 'nim': 'nim_operator', 'vol': 'volcano'}

    def get(name):
        if name in (values or {}):
            return values[name]
        found = declared.default(name)
        if found is None:
            found = role_defaults(roles.get(name[:3], 'nim_k8s')).get(name)
        # A role default that names another setting ({{ lws_version }} in lws_manifest_url).
        if isinstance(found, str) and '{{' in found:
            found = re.sub(r'\{\{\s*(\w+)\s*\}\}', lambda m: str(get(m.group(1))), found)
        return found
    return get


def wanted_k8s_files(values):
    """[{name, url} or {name, repo, chart, version}]: what the Kubernetes components would fetch from
    outside the site, as the play installs them with these settings (K8S_SETTINGS, the host the
    Kubernetes play runs in the name of): LeaderWorkerSet's chart (its OCI reference: helm pulls it)
    or release manifest, the NIM Operator's chart for the nim_operator backend, Volcano's chart or manifest where nim_k8s_scheduler is volcano.
    What a setting carries in by hand (lws_install_method=file, a chart file) is not fetched."""
    get = _k8s_getter(values)
    found = []
    method = str(get('lws_install_method'))
    if method == 'helm' and not get('lws_helm_chart_path'):
        ref = str(get('lws_helm_chart_ref'))
        found.append(dict({'name': k8s_file('lws_helm', get('lws_version')),
                           'version': str(get('lws_version')).lstrip('v')},
                          **{'oci' if ref.startswith('oci://') else 'url': ref}))
    elif method == 'manifest':
        found.append({'name': k8s_file('lws', get('lws_version')), 'url': str(get('lws_manifest_url'))})
    if str(get('nim_k8s_backend')) == 'nim_operator' and not get('nim_operator_helm_chart_file'):
        found.append({'name': k8s_file('nim_operator', get('nim_operator_version')),
                      'repo': str(get('nim_operator_helm_repo_url')), 'chart': str(get('nim_operator_helm_chart')),
                      'version': str(get('nim_operator_version'))})
    if str(get('nim_k8s_scheduler')) == 'volcano':
        version = str(get('volcano_version'))
        method = str(get('volcano_install_method'))
        if method == 'helm' and not get('volcano_helm_chart_file'):
            found.append({'name': k8s_file('volcano_helm', version), 'repo': str(get('volcano_helm_repo_url')),
                          'chart': str(get('volcano_helm_chart')), 'version': version})
        elif method == 'manifest':
            found.append({'name': k8s_file('volcano_manifest', version), 'url': str(get('volcano_manifest_url'))})
    return found


def chart_url(index_text, repo, chart, version):
    """The URL of a chart's archive at a version, from its Helm repository's index.yaml (as helm
    resolves it: the entry's first URL, relative to the repository). Raises ValueError naming what
    the index lacks."""
    try:
        index = yaml.safe_load(index_text) or {}
    except yaml.YAMLError as exc:
        raise ValueError('%s/index.yaml is not a Helm repository index: %s' % (repo, exc))
    wanted = str(version).lstrip('v')
    entries = ((index.get('entries') or {}) if isinstance(index, dict) else {}).get(chart) or []
    for entry in entries:
        if isinstance(entry, dict) and str(entry.get('version', '')).lstrip('v') == wanted and entry.get('urls'):
            return urljoin(repo.rstrip('/') + '/', str(entry['urls'][0]))
    raise ValueError('the Helm repository %s has no chart %s at version %s (it has %s)' % (
        repo, chart, version, ', '.join(sorted(str(e.get('version')) for e in entries if isinstance(e, dict))) or 'none'))


def k8s_problems(url, values, lws_needed, operator_needed, held=None, present=None):
    """What keeps the bundle at url from serving the Kubernetes components' install, each named with
    the setting that carries it in instead. values: the settings as the Kubernetes play's host sees
    them (K8S_SETTINGS). held: {path: record} of the bundle's files (its manifest's "files"); present:
    a function (path, size) that says whether the bundle serves a file with its size (None: not
    checked)."""
    if not url:
        return []
    get = _k8s_getter(values)
    held = held or {}
    problems = []

    def carried(component, version, what, setting):
        path = '%s/%s' % (FILES, k8s_file(component, version))
        if path not in held:
            problems.append('offline mode: the bundle has no %s (%s); make the bundle again from this inventory '
                            '(playbooks/bundle.yml), or carry it in: %s' % (path, what, setting))
        elif present is not None and not present(path, held[path].get('size')):
            problems.append(unserved(dict(held[path], path=path), what))
    if lws_needed:
        method = str(get('lws_install_method'))
        if method == 'helm' and not get('lws_helm_chart_path'):
            carried('lws_helm', get('lws_version'), "LeaderWorkerSet %s's chart %s, lws_install_method=helm"
                    % (get('lws_version'), get('lws_helm_chart_ref')), "lws_helm_chart_path (the chart's directory or archive)")
        elif method == 'manifest':
            carried('lws', get('lws_version'), "LeaderWorkerSet %s's release manifest, lws_install_method=manifest"
                    % get('lws_version'), 'lws_install_method=file with lws_manifest_file')
    if operator_needed:
        if not get('nim_operator_helm_chart_file'):
            carried('nim_operator', get('nim_operator_version'), 'the NIM Operator %s\'s chart'
                    % get('nim_operator_version'), 'nim_operator_helm_chart_file')
        for name, what in (('nim_operator_gpu_operator_enabled', 'the GPU Operator'),
                           ('nim_operator_network_operator_enabled', 'the Network Operator')):
            if truthy(get(name)):
                problems.append('offline mode: %s=true installs %s from the chart repository %s; install it '
                                'beforehand from a chart carried in and set %s=false'
                                % (name, what, get('nim_operator_helm_repo_url'), name))
    return problems


def k8s_plan_problems(plan, url, hvars, backend='nim_operator', install_components=True, state='present', render_dir='',
                      load=None):
    """k8s_problems() for the plan's Kubernetes groups, as the Kubernetes play would install their components:
    LWS for the lws backend or a multi-node group, the NIM Operator for its backend; nothing where the play
    installs no component (nim_k8s_install_components false, nim_k8s_state absent) or renders only.
    hvars: the variables of the host the Kubernetes play runs in the name of; load: a function that
    returns the bundle's manifest and a present() function for k8s_problems, called only where a
    component is installed."""
    if not url or str(state) != 'present' or render_dir:
        return []
    planned = (plan or {}).get('groups') or {}
    names = sorted(name for name in ((plan or {}).get('groups_by_mode') or {}).get('kubernetes') or () if name in planned)
    groups = [planned[name] for name in names]
    if not groups:
        return []
    values = dict((name, hvars[name]) for name in K8S_SETTINGS if name in (hvars or {}))
    values['nim_k8s_backend'] = backend
    problems = k8s_model_problems(values, names)
    if not truthy(install_components):
        return problems
    multi_node = max(int(g.get('size') or 1) for g in groups) > 1
    held, present = {}, None
    if load is not None:
        try:
            manifest, present = load()
        except OSError as exc:
            return problems + ['nimstack_bundle_url: cannot read the bundle\'s manifest: %s' % exc]
        held = dict((f.get('path'), f) for f in (manifest or {}).get('files') or [] if isinstance(f, dict))
    return problems + k8s_problems(url, values, lws_needed=backend == 'lws' or multi_node,
                                   operator_needed=backend == 'nim_operator', held=held, present=present)


def k8s_model_problems(values, groups):
    """In offline mode, the Kubernetes groups' model: it must be in a claim filled beforehand (the NIM
    Operator's air-gap path: the NIMService reads the claim, no NIMCache, no download at start), named
    by nim_k8s_pvc_name. A NIMCache would download it from NGC, and so would a NIM on an empty claim the
    play makes."""
    get = _k8s_getter(values)
    named = ', '.join(groups)
    if str(get('nim_k8s_storage')) == 'nimcache':
        return ['offline mode: the NIMCache of the Kubernetes groups %s (nim_k8s_storage=nimcache) would download the '
                'model from NGC; fill a ReadWriteMany claim beforehand with the model cache (the image\'s own '
                'download-to-cache on a connected machine) and name it: nim_k8s_storage=pvc with nim_k8s_pvc_name' % named]
    if not get('nim_k8s_pvc_name'):
        return ['offline mode: the Kubernetes groups %s would get an empty claim for their model (nim_k8s_pvc_name is '
                'empty) and their NIM would download it from NGC when it starts; fill a ReadWriteMany claim beforehand '
                'with the model cache and name it: nim_k8s_pvc_name' % named]
    return []


# The controller's own software (collections/): this collection and the collections it needs, each a
# Galaxy artifact (<namespace>-<name>-<version>.tar.gz) that `ansible-galaxy collection install --offline`
# takes on the site's controller, at the versions the connected controller runs.
COLLECTIONS = 'collections'
COLLECTION_NAME = re.compile(r'[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*\Z')
COLLECTION_VERSION = re.compile(r'[0-9][0-9A-Za-z.+-]*\Z')


def collection_file(name, version):
    """The name in collections/ of a collection's artifact, as ansible-galaxy names it."""
    return '%s-%s.tar.gz' % (name.replace('.', '-'), version)


def collection_meta(path):
    """(version, {dependency: requirement}, installed) of the collection at path: an installed copy's
    MANIFEST.json (installed True: packed from its files, which its FILES.json lists with their sha256),
    else a source tree's galaxy.yml (installed False: ansible-galaxy builds it); None for neither."""
    manifest = os.path.join(path, 'MANIFEST.json')
    galaxy = os.path.join(path, 'galaxy.yml')
    try:
        if os.path.isfile(manifest):
            with open(manifest) as handle:
                info = json.load(handle).get('collection_info') or {}
            installed = True
        elif os.path.isfile(galaxy) and yaml is not None:
            with open(galaxy) as handle:
                info = yaml.safe_load(handle) or {}
            installed = False
        else:
            return None
    except (OSError, IOError, ValueError, yaml.YAMLError if yaml else ValueError):
        return None
    if not isinstance(info, dict):
        return None
    return str(info.get('version') or ''), dict(info.get('dependencies') or {}), installed


def wanted_collections(names, locate, meets=None):
    """[{name, version, path, installed}], sorted by name: the collections of names and every collection
    they need, transitively (their MANIFEST.json or galaxy.yml), as this machine has them: locate(name) is
    the directory of the copy the controller runs (None where it has none); meets(version, requirement)
    whether a version satisfies a dependency's requirement. ValueError naming each collection that is not
    there, has no usable version, or misses a requirement."""
    problems = ['%r is not a collection\'s name, <namespace>.<name> (lowercase letters, digits, _)' % (str(n),)
                for n in names if not COLLECTION_NAME.match(str(n))]
    found, queue, seen = {}, [(str(n), None, '*') for n in names if COLLECTION_NAME.match(str(n))], set()
    while queue:
        name, needed_by, requirement = queue.pop(0)
        by = ' (which %s needs, %s)' % (needed_by, requirement) if needed_by else ''
        if name not in seen:
            seen.add(name)
            path = locate(name) if COLLECTION_NAME.match(name) else None
            meta = collection_meta(path) if path else None
            if meta is None:
                problems.append('%s is not installed on this controller%s' % (name, by))
                continue
            version, dependencies, installed = meta
            if not COLLECTION_VERSION.match(version):
                problems.append('%s at %s has no version a file name can hold: %r' % (name, path, version))
                continue
            found[name] = {'name': name, 'version': version, 'path': path, 'installed': installed}
            queue.extend((str(d), name, str(r)) for d, r in sorted(dependencies.items()))
        if name in found and needed_by and meets and not meets(found[name]['version'], requirement):
            problems.append('%s %s is installed on this controller, but %s needs %s'
                            % (name, found[name]['version'], needed_by, requirement))
    if problems:
        raise ValueError('; '.join(problems))
    return [found[name] for name in sorted(found)]
