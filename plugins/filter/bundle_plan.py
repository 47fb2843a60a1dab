# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Filters bundle_plan, bundle_sources, bundle_images, bundle_models, bundle_collections, bundle_k8s_files,
bundle_k8s_file, bundle_image_file, bundle_problems, bundle_k8s_problems and bundle_env: what an offline bundle
must hold for the inventory, from which vendors' repositories, which images, model caches, collections and
Kubernetes files, what keeps a bundle from serving the run, and the environment of apt in offline mode
(docs in the .yml file of each)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib
import os

from ansible.errors import AnsibleFilterError

from ansible_collections.nimstack.multinode.plugins.module_utils.lazy import lazy_module

_bundle = lazy_module('bundle')
_values = lazy_module('values')
_docker_spec = lazy_module('docker_spec')


def _vars(hostvars, hosts):
    picked = {}
    for host in hosts:
        hvars = hostvars[host]
        picked[host] = dict((name, hvars[name]) for name in _bundle.READS if name in hvars)
    return picked


def _kinds(hostvars, groups, node_group):
    nodes = list((groups or {}).get(node_group) or [])
    hosts = set(nodes)
    for group in ('nim_frontend', 'nim_monitoring', 'nfs_server'):
        hosts.update((groups or {}).get(group) or [])
    vars_by_host = _vars(hostvars, sorted(hosts))
    return _bundle.host_kinds(groups, nodes, vars_by_host), vars_by_host


def bundle_plan(hostvars, groups, platforms, node_group='nim_nodes', extra=()):
    """{platform: [package, ...]}: every package the inventory's hosts install, for each platform, and
    the extra ones."""
    unknown = [p for p in platforms or () if p not in _bundle.PLATFORMS]
    if unknown:
        raise AnsibleFilterError('bundle_plan: nimstack_bundle_platforms must list some of %s (or none, for a bundle '
                                 'of images and Kubernetes files only), got %r'
                                 % (', '.join(sorted(_bundle.PLATFORMS)), platforms))
    kinds, vars_by_host = _kinds(hostvars, groups, node_group)
    plan = {}
    for platform in platforms:
        wanted = _bundle.wanted_packages(kinds, vars_by_host, dict((h, platform) for h in kinds))
        plan[platform] = sorted(set(wanted.get(platform, {})) | set(str(name) for name in extra or ()))
    return plan


def bundle_sources(hostvars, groups, platforms, node_group='nim_nodes'):
    """{platform: [{name, uri, key_url}]}: the vendors' repositories the inventory's hosts install from."""
    kinds, vars_by_host = _kinds(hostvars, groups, node_group)
    try:
        return dict((platform, _bundle.wanted_sources(kinds, vars_by_host, platform)) for platform in platforms or ())
    except ValueError as exc:
        raise AnsibleFilterError('bundle_sources: %s' % exc)


def bundle_images(hostvars, groups, node_group='nim_nodes'):
    """[reference]: the images the inventory's Docker groups run (bundle.wanted_images)."""
    kinds, vars_by_host = _kinds(hostvars, groups, node_group)
    return _bundle.wanted_images(kinds, vars_by_host)


def bundle_models(hostvars, groups, node_group='nim_nodes'):
    """[{file, image, profile, downloader, command, env, user, hosts}]: the model caches the inventory's
    Docker groups download, for the bundle's models/ (bundle.wanted_models)."""
    kinds, vars_by_host = _kinds(hostvars, groups, node_group)
    return _bundle.wanted_models(kinds, vars_by_host)


def _locate_collection(name):
    """The directory of the copy of collection name this controller runs (its collection loader's), None
    where it has none."""
    try:
        package = importlib.import_module('ansible_collections.' + name)
    except ImportError:
        return None
    paths = list(getattr(package, '__path__', None) or [])
    return os.path.realpath(paths[0]) if paths else None


def _meets(version, requirement):
    """Whether version satisfies a dependency's requirement, as ansible-galaxy decides it."""
    try:
        from ansible.galaxy.dependency_resolution.versioning import meets_requirements
    except ImportError:  # pragma: no cover - an ansible-core without it: ansible-galaxy decides at the site
        return True
    return meets_requirements(version, requirement)


def bundle_collections(names):
    """[{name, version, path, installed}]: the collections of names and those they need, as this controller
    has them (bundle.wanted_collections)."""
    try:
        return _bundle.wanted_collections(list(names or ()), _locate_collection, _meets)
    except ValueError as exc:
        raise AnsibleFilterError('bundle_collections: nimstack_bundle_collections: %s' % exc)


def bundle_problems(hostvars, groups, url, node_group='nim_nodes'):
    """What keeps the bundle at url from serving this run's hosts (their facts read), each named."""
    if not url:
        return []
    kinds, vars_by_host = _kinds(hostvars, groups, node_group)
    platforms = {}
    for host in kinds:
        facts = hostvars[host].get('ansible_facts') or {}
        platforms[host] = _bundle.platform_of(facts) if facts.get('distribution') else None
    unknown = sorted(h for h, p in platforms.items() if p is None)
    platforms = dict((h, p) for h, p in platforms.items() if p is not None)
    try:
        manifest = _bundle.read_manifest(_bundle.fetch(url.rstrip('/') + '/' + _bundle.MANIFEST))
    except OSError as exc:
        return ['nimstack_bundle_url: cannot read the bundle\'s manifest: %s' % exc]
    hardware = dict((host, _bundle.parse_hardware(hostvars[host][_bundle.HARDWARE_FACT]))
                    for host in kinds if _bundle.HARDWARE_FACT in hostvars[host])
    present = _bundle.served(url)
    problems = _bundle.manifest_problems(
        manifest, _bundle.wanted_packages(kinds, vars_by_host, platforms, hardware_by_host=hardware),
        platforms, present)
    if isinstance(manifest, dict):
        problems += _bundle.image_problems(manifest, kinds, vars_by_host, url, present)
        problems += _bundle.model_problems(manifest, kinds, vars_by_host, present)
        problems += _bundle.dcgm_problems(manifest, kinds, vars_by_host, hardware, url, present)
    if unknown:
        problems.append('the distribution of %s is not known yet (its facts were not gathered), so the bundle cannot '
                        'be checked for it' % ', '.join(unknown))
    return problems


def bundle_k8s_problems(plan, url, hvars, backend='nim_operator', install_components=True, state='present', render_dir=''):
    """What keeps the bundle at url from serving the Kubernetes play's components, each named
    (bundle.k8s_plan_problems); the bundle's manifest is read only where a component is installed."""
    def load():
        manifest = _bundle.read_manifest(_bundle.fetch(url.rstrip('/') + '/' + _bundle.MANIFEST))
        return manifest, _bundle.served(url)
    return _bundle.k8s_plan_problems(plan, url, hvars, backend, install_components, state, render_dir, load=load)


def bundle_k8s_files(hostvars, groups, kubernetes=False, node_group='nim_nodes'):
    """[{name, url} or {name, repo, chart, version} or {name, oci, version}]: the Kubernetes components'
    files the bundle carries for the inventory (bundle.wanted_k8s_files), read from the first host of a
    group whose nim_deployment_mode is kubernetes (or, with kubernetes true, of the first host of
    node_group, as deploy_kubernetes.yml plans every group for Kubernetes); none without either."""
    nodes = list((groups or {}).get(node_group) or [])
    picked = [h for h in nodes if str(hostvars[h].get('nim_deployment_mode', '')) == 'kubernetes']
    if not picked and _values.truthy(kubernetes):
        picked = nodes[:1]
    if not picked:
        return []
    hvars = hostvars[picked[0]]
    return _bundle.wanted_k8s_files(dict((name, hvars[name]) for name in _bundle.K8S_SETTINGS if name in hvars))


def bundle_k8s_file(component, version):
    """The name of a Kubernetes component's file in the bundle's files/ (bundle.k8s_file)."""
    try:
        return _bundle.k8s_file(component, version)
    except KeyError:
        raise AnsibleFilterError('bundle_k8s_file: no component %r (%s)' % (component, ', '.join(sorted(_bundle.K8S_FILES))))


def bundle_image_file(image, url, archive=''):
    """The name in the offline bundle's images/ of the archive a host loads an image from in offline mode
    (url), '' where it pulls it or an archive is given (docker_spec.bundle_image)."""
    return _docker_spec.bundle_image(str(image), str(archive or ''), str(url or ''))


def bundle_env(url):
    """The environment of a role's apt tasks: apt reads the bundle only (APT_CONFIG) in offline mode."""
    return {'APT_CONFIG': _bundle.APT_CONFIG} if url else {}


def packages_missing(wanted, installed):
    """The names of wanted that dpkg does not list as installed; all of them when installed is unknown
    (None: not read, or not a Debian-family host). A name with a version, an architecture or a pattern
    (=, :, *, ?, <, >, [) is never taken as installed: apt decides."""
    names = [wanted] if isinstance(wanted, str) else list(wanted or [])
    if installed is None:
        return names
    have = set(installed)
    return [name for name in names if any(c in name for c in '=:*?<>[') or name not in have]


class FilterModule(object):
    def filters(self):
        return {'bundle_plan': bundle_plan, 'bundle_sources': bundle_sources, 'bundle_images': bundle_images,
                'bundle_models': bundle_models, 'bundle_collections': bundle_collections,
                'bundle_problems': bundle_problems,
                'bundle_k8s_problems': bundle_k8s_problems, 'bundle_k8s_files': bundle_k8s_files,
                'bundle_k8s_file': bundle_k8s_file, 'bundle_image_file': bundle_image_file, 'bundle_env': bundle_env,
                'packages_missing': packages_missing}
