# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The resolved launch spec of one host of a Docker deployment group: everything the role
nim_docker applies (container name, image, env, volumes, labels, paths, ports, timeouts), worked
out once from the plan (nim_plan) and the role's settings. The role applies it and checks what is
there; it computes nothing the spec holds.

What only the hosts can tell (the image id each node runs, which member holds the Ray token, the
download stamp) is not in it: the role reads those and combines them with the spec, so that the
group hash covers the image ids of every node (docs/contracts.md)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import hashlib
import math
import json

from ansible_collections.nimstack.multinode.plugins.module_utils import settings as declared
from ansible_collections.nimstack.multinode.plugins.module_utils.group_members import groups_of
from ansible_collections.nimstack.multinode.plugins.module_utils.nim_env import RAY_TOKEN_PATH

# The group's shared memory when the plan's settings carry none, in GB: the declared default.
SHM_SIZE_GB = declared.default('nim_shm_size_gb')
# The leader waits this long for its workers when neither the role nor the layout says, in seconds.
READY_TIMEOUT = 300

OPTION_NAMES = ('container_prefix', 'config_dir', 'mesh_dir', 'ray_auth', 'download_model', 'download_image',
                'ngc_key_set', 'ulimits', 'restart_policy', 'secrets_gid', 'ready_timeout', 'image_archive',
                'download_image_archive', 'bundle_url', 'overlap_transfers', 'check_mode', 'transfer_timeout',
                'transfer_poll_interval')

# Registries on the internet: an offline run pulls nothing from them (docs/offline.md).
PUBLIC_REGISTRIES = ('nvcr.io', 'docker.io', 'ghcr.io', 'quay.io', 'registry.k8s.io', 'gcr.io')


def registry_of(image):
    """The registry an image reference is pulled from, as Docker reads it: its first component where
    that names a host (a dot, a port or localhost), else Docker Hub."""
    first, slash, _rest = str(image).partition('/')
    if slash and ('.' in first or ':' in first or first == 'localhost'):
        return 'docker.io' if first in ('index.docker.io', 'registry-1.docker.io') else first
    return 'docker.io'


def image_file(reference):
    """The file name of an image's archive in the offline bundle's images/: the reference with /, : and @
    as _, and .tar."""
    return ''.join('_' if c in '/:@' else c for c in str(reference)) + '.tar'


def bundle_image(image, archive, bundle_url):
    """The name in the offline bundle's images/ of the archive a node loads an image from: in offline
    mode (bundle_url), an image of a registry on the internet that no archive carries in; '' otherwise
    (the archive given, or a pull from the site's own registry)."""
    if bundle_url and image and not archive and registry_of(image) in PUBLIC_REGISTRIES:
        return image_file(image)
    return ''


def model_file(image, profile):
    """The file name of a group's model cache in the offline bundle's models/: the image's archive name
    without .tar, and a hash of what the cache is made of (the image and the profile, as the download
    stamp names them: a new image or profile is another model), then .tar."""
    made_of = '%s|%s' % (image, profile or '')
    return '%s_%s.tar' % (image_file(image)[:-len('.tar')], hashlib.sha256(made_of.encode('utf-8')).hexdigest()[:12])


class DockerSpecError(Exception):
    """The role handed the spec less than it needs."""


def _group_of(plan, host):
    hosts = plan.get('hosts') or {}
    entry = hosts.get(host) or {}
    if entry.get('mode') != 'docker':
        return entry, {}
    return entry, (plan.get('groups') or {}).get(entry.get('group')) or {}


def _rank_of(group, entry):
    for rank in group.get('ranks') or []:
        if rank.get('rank') == entry.get('rank'):
            return rank
    return {}


def _volumes(launch, bases, needs):
    """Every mount of the group, whichever rank reads it: {ranks, base, volume (host:target:mode)}.
    Each is a file or directory of a host directory the role owns (base: cache, the group's
    nim_cache_path; mesh, its SSH mesh directory; group, its state directory), mounted where the
    ranks it names read it. An empty target is the host path itself: the mesh directory keeps its
    own path, because the ssh_config in it names the key and known_hosts by their host paths. A
    mount that needs a launch property (the Ray token) is left out where that does not hold."""
    out = []
    for mount in launch.get('mounts') or []:
        need = mount.get('needs')
        if need is not None and not needs.get(need, False):
            continue
        host = bases[mount['base']] + ('/' + mount['path'] if mount.get('path') else '')
        out.append({'ranks': mount['ranks'], 'base': mount['base'],
                    'volume': '%s:%s:%s' % (host, mount.get('target') or host, mount['mode'])})
    return out


def docker_groups(plan):
    """The Docker groups of the plan, one after the other by name."""
    return [group for _name, group in groups_of((plan or {}).get('groups') if isinstance(plan, dict) else None,
                                                'docker')]


def docker_rank_spec(plan, host, options):
    """The spec of ``host`` ({} values where the host is in no Docker group of ``plan``).

    options: the role's settings, OPTION_NAMES; ngc_key_set tells only whether a key is set (the
    key itself never enters the spec). Raises DockerSpecError when one is missing."""
    missing = [name for name in OPTION_NAMES if name not in (options or {})]
    if missing:
        raise DockerSpecError('docker_rank_spec needs the options %s' % ', '.join(missing))
    entry, group = _group_of(plan or {}, host)
    name = group.get('name') or ''
    member = bool(group)
    leader = entry.get('role') == 'leader'
    settings = group.get('settings') or {}
    launch = group.get('launch') or {}
    rank = _rank_of(group, entry)

    container = '%s-%s' % (options['container_prefix'], name)
    group_dir = '%s/%s' % (options['config_dir'], name)
    mesh = '%s/%s' % (options['mesh_dir'], name)
    image = group.get('image') or ''
    ray_token = bool(launch.get('ray_token')) and options['ray_auth'] == 'token'
    download_model = bool(options['download_model'])
    ranks_get_key = bool(options['ngc_key_set']) and not download_model

    bases = {'cache': settings.get('nim_cache_path') or '', 'mesh': mesh, 'group': group_dir}
    group_volumes = _volumes(launch, bases, {'ray_token': ray_token})
    reads = ('all', 'leader' if leader else 'worker')
    token_mounts = [m.get('target') for m in launch.get('mounts') or [] if m.get('needs') == 'ray_token']
    # Where the plan lists no token mount, the one path of the contract (docs/contracts.md, exposure).
    ray_token_mount = (token_mounts + [RAY_TOKEN_PATH])[0]
    env = dict(rank.get('env') or {})
    if ray_token:
        env.update({'RAY_AUTH_MODE': 'token', 'RAY_AUTH_TOKEN_PATH': ray_token_mount})

    # The stamp names what was downloaded: a new image, profile or cache downloads again. Its name
    # is that of the stamps earlier versions wrote (an unset profile reads None there).
    download_id = hashlib.sha256('|'.join(
        [image, str(settings.get('nim_model_profile', '')), str(settings.get('nim_cache_path', ''))]).encode('utf-8')).hexdigest()
    ready_timeout = int(options['ready_timeout'] or 0)
    if ready_timeout <= 0:
        ready_timeout = int((group.get('layout') or {}).get('mpi_start_timeout') or READY_TIMEOUT)
    shm_size_gb = settings['nim_shm_size_gb'] if settings.get('nim_shm_size_gb') is not None else SHM_SIZE_GB
    # Transfers overlap as background jobs (never in check mode); a downloader image of its own lets
    # the leader's download start before any image transfer, else it waits for the NIM image.
    overlap = bool(options['overlap_transfers']) and not bool(options['check_mode'])
    transfer_timeout = int(options['transfer_timeout'])
    # Offline mode: the leader unpacks the group's model from the bundle's models/ and runs no
    # downloader (it would reach the model's source on the internet).
    model_from_bundle = (model_file(image, settings.get('nim_model_profile'))
                         if options['bundle_url'] and download_model and leader and image else '')
    downloader = download_model and leader and not model_from_bundle
    # The model needs nothing of the NIM image: a downloader image of its own, or the bundle's cache.
    model_needs_no_image = bool(options['download_image']) or bool(model_from_bundle)
    from_bundle = bundle_image(image, options['image_archive'], options['bundle_url'])

    return {
        # The names of every Docker group of the plan, this host's or not.
        'docker_groups': [g.get('name') for g in docker_groups(plan)],
        'member': member,
        'leader': leader,
        'group': name,
        'rank': rank,
        'image': image,
        'container': container,
        'download_container': container + '-download',
        'download_image': options['download_image'] or image,
        'group_dir': group_dir,
        'hostfile': group_dir + '/hostfile',
        'env_file': group_dir + '/ngc.env',
        'formed_file': group_dir + '/formed.json',
        'login_record': group_dir + '/registry-login',
        'ray_token_file': group_dir + '/ray-token',
        'mesh': mesh,
        'api_port': (group.get('ports') or {}).get('api'),
        'hostfile_wanted': bool(launch.get('hostfile')) and leader,
        'ssh_mesh': bool(launch.get('ssh_mesh')),
        'ray_token': ray_token,
        'ray_token_mount': ray_token_mount,
        'ranks_get_key': ranks_get_key,
        # The leader's downloader reads the key too; a rank that downloads itself reads it.
        'env_file_needed': bool(options['ngc_key_set']) and (ranks_get_key or downloader),
        'group_volumes': group_volumes,
        'volumes': [v['volume'] for v in group_volumes if v['ranks'] in reads],
        'volumes_cache': [v['volume'] for v in group_volumes if v['base'] == 'cache'],
        'env': env,
        'download_stamp': '%s/download-%s.done' % (group_dir, download_id[:16]),
        # The leader downloads its group's model (until its stamp says it did).
        'download_leader': download_model and leader,
        # Offline mode: the archive of the bundle's images/ where no archive is given (bundle_image).
        'from_bundle': from_bundle,
        'from_archive': bool(options['image_archive']) or bool(from_bundle),
        'image_file': from_bundle or str(options['image_archive']).rsplit('/', 1)[-1],
        'model_from_bundle': model_from_bundle,
        # The downloader runs on this host (the leader) unless the model comes from the bundle.
        'downloader': downloader,
        'download_early': overlap and model_needs_no_image,
        # Seconds a transfer may run as a background job, 0 in the foreground: without overlap, and
        # for a leader whose download needs the NIM image itself first (image_async_downloading).
        'image_async': transfer_timeout if overlap else 0,
        'image_async_downloading': transfer_timeout if overlap and model_needs_no_image else 0,
        'transfer_retries': int(math.ceil(float(transfer_timeout) / max(int(options['transfer_poll_interval']), 1))),
        'shm_size_gb': shm_size_gb,
        'ready_timeout': ready_timeout,
        # What defines the running group but the image id of each node, which the role adds
        # (image_ids) before it hashes the whole: one hash for the group, carried by every rank.
        'group_spec': {
            'image': image,
            'ranks': group.get('ranks') or [],
            'hostfile': group.get('hostfile') or [],
            'volumes': [v['volume'] for v in group_volumes],
            'shm_size_gb': shm_size_gb,
            'ulimits': options['ulimits'],
            'restart_policy': options['restart_policy'],
            'ngc_key': ranks_get_key,
            'secrets_gid': str(options['secrets_gid']),
            'ray_auth': ray_token,
        },
        'labels': {
            'nimstack.managed': 'true',
            'nimstack.group': name,
            'nimstack.rank': str(rank.get('rank', '')),
            'nimstack.role': rank.get('role') or '',
        },
    }


def group_hash(group_spec, image_ids):
    """The hash of everything that defines a running group: its spec (group_spec of
    docker_rank_spec) and the image id each node runs (image_ids, in the group's host order). One
    hash for the whole group, carried as a label by every rank: a change anywhere makes every rank
    stale, so the group restarts as a whole. The JSON is that of Ansible's to_json(sort_keys=true),
    which earlier versions hashed: an upgrade restarts no group."""
    document = dict(group_spec or {}, image_ids=list(image_ids or []))
    return hashlib.sha256(json.dumps(document, sort_keys=True).encode('utf-8')).hexdigest()[:16]


def env_file_safe(value):
    """Whether a value fits on one line of Docker's env file, which has no quoting: printable ASCII
    without white space (a line break would write variables of its own)."""
    return all('!' <= char <= '~' for char in value or '')
