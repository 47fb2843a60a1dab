# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Restarts that never stop every rank at once, and daemon.json merged rather than replaced.

Pure Python, no Ansible imports: the filters in plugins/filter/rolling_restart.py expose it.

restart_waves() orders the hosts that need a disruptive restart (dockerd, a driver reload, a
reboot) into waves. A wave never holds two members of one deployment group, nor members of more
than max_unavailable_groups groups; hosts in no group come after the groups' waves, each counted
as a group of its own. Between two waves the caller waits until the affected groups serve again.

rollout_waves() orders the deployment groups of a Docker rollout into waves: every group that
loses no serving capacity at once, the serving groups that must restart at most
max_unavailable_groups at a time, the canary group alone first.

docker_daemon_plan() merges the docker role's settings into a site's daemon.json and says what
applying the result takes: nothing, a reload (SIGHUP: dockerd applies a few keys live) or a
restart (which stops every container of the host unless live-restore is on).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from collections.abc import Mapping

MAX_UNAVAILABLE_VAR = 'nim_max_unavailable_groups'

# The daemon.json keys dockerd applies on a reload (SIGHUP) on Linux, without stopping a
# container: live-restore itself, the runtimes and the default runtime among them (Docker's
# daemon/reload.go and reload_unix.go). Any other changed key needs a restart.
RELOADABLE_KEYS = frozenset([
    'debug',
    'default-runtime',
    'insecure-registries',
    'labels',
    'live-restore',
    'max-concurrent-downloads',
    'max-concurrent-uploads',
    'max-download-attempts',
    'registry-mirrors',
    'runtimes',
    'shutdown-timeout',
])

# Log drivers that read max-size and max-file; any other driver refuses them, and dockerd does
# not start with a log option its driver does not know.
ROTATING_LOG_DRIVERS = ('json-file', 'local')
DEFAULT_LOG_DRIVER = 'json-file'


class RestartWaveError(ValueError):
    """An input to restart_waves() or docker_daemon_plan() cannot be used; the message says why."""


def max_unavailable_problems(value, name=MAX_UNAVAILABLE_VAR):
    """The problems of a max-unavailable-groups setting, as messages (empty when it is usable)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return ['%s=%r: accepts a whole number of deployment groups, 1 or more' % (name, value)]
    text = str(value).strip()
    if not text.isdigit() or int(text) < 1:
        return ['%s=%r: accepts a whole number of deployment groups, 1 or more (1 restarts one group'
                ' at a time)' % (name, value)]
    return []


def restart_waves(hosts, needing, max_unavailable_groups=1):
    """Order the hosts that need a restart into waves.

    hosts: the hosts of the play in play order, each as [host, group] (group None or '' for a host
    in no deployment group). needing: the hosts that need a restart (order does not matter; a host
    missing from hosts counts as one in no group). Returns a list of waves, each a list of hosts in
    play order. Every host of needing is in exactly one wave; no wave holds two members of one
    group or members of more than max_unavailable_groups groups; hosts in no group come last, each
    counted as a group of its own. Among the groups with members left, each wave takes those with
    the most members left first (ties: the group that comes first in play order), which gives the
    fewest waves the two limits allow.
    """
    problems = max_unavailable_problems(max_unavailable_groups)
    if problems:
        raise RestartWaveError(problems[0])
    limit = int(str(max_unavailable_groups).strip())
    order = []
    group_of = {}
    for entry in hosts or []:
        if not isinstance(entry, (list, tuple)) or len(entry) != 2:
            raise RestartWaveError('each host is [host, group], got %r' % (entry,))
        host, group = entry
        if host in group_of:
            continue
        order.append(host)
        group_of[host] = group if group not in (None, '') else None
    wanted = set(needing or [])
    for host in sorted(wanted - set(order), key=str):
        order.append(host)
        group_of[host] = None
    position = dict((host, index) for index, host in enumerate(order))

    pending = {}
    group_order = []
    lone = []
    for host in order:
        if host not in wanted:
            continue
        group = group_of[host]
        if group is None:
            lone.append(host)
            continue
        if group not in pending:
            pending[group] = []
            group_order.append(group)
        pending[group].append(host)

    waves = []
    while any(pending.values()):
        left = [g for g in group_order if pending[g]]
        left.sort(key=lambda g: (-len(pending[g]), group_order.index(g)))
        wave = [pending[g].pop(0) for g in left[:limit]]
        waves.append(sorted(wave, key=position.get))
    for start in range(0, len(lone), limit):
        waves.append(lone[start:start + limit])
    return waves


CANARY_VAR = 'nim_canary_group'


def rollout_waves(groups, restarting, serving, max_unavailable_groups=1, canary=None):
    """Order the deployment groups of a Docker rollout into waves that run side by side.

    groups: every group of the rollout, in order. restarting: those whose ranks must be recreated
    (a new image or setting, a dead or missing rank). serving: those that answer ready now.
    Returns a list of waves, each {'groups': [...], 'stops_serving': [...], 'canary': bool,
    'later': [the groups of the waves after it]}.

    A group that does not serve loses nothing by a restart and one that needs none is only waited
    for: they all go in one wave, so a first rollout starts every group at once. A serving group
    that must restart counts against max_unavailable_groups, and while another group serves no
    wave stops every serving group. The canary, when it must restart, goes alone, first.
    """
    problems = max_unavailable_problems(max_unavailable_groups)
    if problems:
        raise RestartWaveError(problems[0])
    groups = list(groups or [])
    restarting = set(restarting or [])
    serving = set(serving or [])
    unknown = sorted((restarting | serving) - set(groups))
    if unknown:
        raise RestartWaveError('groups %s are not groups of the rollout %s' % (', '.join(unknown), groups))
    if canary not in (None, '') and canary not in groups:
        raise RestartWaveError('%s=%r: not a Docker deployment group of the rollout (%s)'
                               % (CANARY_VAR, canary, ', '.join(groups) or 'none'))
    canary = canary if canary in restarting else None

    disruptive = [g for g in groups if g in restarting and g in serving and g != canary]
    free = [g for g in groups if g != canary and g not in disruptive]
    # Serving now: the serving groups that restart, and those that need no restart (current).
    up = len([g for g in groups if g in serving or g not in restarting])
    limit = min(int(str(max_unavailable_groups).strip()), max(1, up - 1))

    waves = []
    if canary:
        waves.append({'groups': [canary], 'stops_serving': [canary] if canary in serving else [], 'canary': True})
    chunks = [disruptive[start:start + limit] for start in range(0, len(disruptive), limit)] or [[]]
    chunks[0] = free + chunks[0]
    for chunk in chunks:
        if chunk:
            waves.append({'groups': sorted(chunk, key=groups.index),
                          'stops_serving': [g for g in chunk if g in disruptive], 'canary': False})
    for index, wave in enumerate(waves):
        wave['later'] = [g for later in waves[index + 1:] for g in later['groups']]
    return waves


def _rotation(size, files):
    opts = {}
    if str(size).strip():
        opts['max-size'] = str(size).strip()
    if str(files).strip():
        opts['max-file'] = str(files).strip()
    return opts


def _plain(value):
    """A copy of parsed JSON as plain dicts and lists. Not copy.deepcopy: a filter gets
    ansible-core's lazy containers, whose deep copy takes the variables they are templated with
    along (seconds of CPU for one small daemon.json)."""
    if isinstance(value, Mapping):
        return dict((key, _plain(item)) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def _merge(base, top):
    """Merge top into base, recursively: top wins, lists and scalars replace. Both are plain data
    (_plain) that the caller owns."""
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value
    return base


def docker_daemon_plan(current, log_driver=DEFAULT_LOG_DRIVER, log_max_size='', log_max_file='',
                       data_root='', live_restore=None, nvidia_runtime_path='', options=None):
    """Merge the docker role's settings into a site's daemon.json.

    current: the parsed file ({} when there is none). The settings, and what each does:
      log_driver: written only where the file names no log driver (a site's driver stays).
      log_max_size, log_max_file: log rotation, set in log-opts when the driver in effect reads
        them (json-file, local); a site's other log options stay. Empty: leave the key alone.
      data_root: the data-root key; empty leaves it alone.
      live_restore: True or False sets live-restore; None leaves it alone.
      nvidia_runtime_path: where the NVIDIA runtime is installed on the host, empty where it is
        not or where it should not become the default: registers runtimes.nvidia unless the file
        has one (the toolkit's own entry wins) and makes nvidia the default runtime only where
        the file names none (a site's default runtime stays).
      options: more keys, merged recursively on top of everything: the one way to replace a
        site's value of a key that the settings above only fill in.
    Returns {'config': merged, 'changed': [top-level keys whose value changes], 'action':
    'none' | 'reload' | 'restart'}: a reload when every changed key is one dockerd applies on
    SIGHUP, else a restart.
    """
    if not isinstance(current, Mapping):
        raise RestartWaveError('the daemon configuration must be a JSON object, got %s' % type(current).__name__)
    options = options or {}
    if not isinstance(options, Mapping):
        raise RestartWaveError('docker_daemon_options must be a mapping, got %s' % type(options).__name__)
    options = _plain(options)
    config = _plain(current)

    if nvidia_runtime_path:
        runtimes = config.get('runtimes') if isinstance(config.get('runtimes'), dict) else {}
        if 'nvidia' not in runtimes:
            runtimes = dict(runtimes, nvidia={'path': nvidia_runtime_path, 'args': []})
            config['runtimes'] = runtimes
        config.setdefault('default-runtime', 'nvidia')
    if log_driver:
        config.setdefault('log-driver', log_driver)
    if str(data_root).strip():
        config['data-root'] = str(data_root).strip()
    if live_restore is not None:
        config['live-restore'] = bool(live_restore)
    config = _merge(config, options)

    driver = config.get('log-driver', DEFAULT_LOG_DRIVER)
    rotation = _rotation(log_max_size, log_max_file)
    if rotation and driver in ROTATING_LOG_DRIVERS:
        log_opts = config.get('log-opts') if isinstance(config.get('log-opts'), dict) else {}
        # A rotation value given in docker_daemon_options wins over the role's own.
        given = options.get('log-opts') if isinstance(options.get('log-opts'), dict) else {}
        config['log-opts'] = dict(log_opts, **dict((k, v) for k, v in rotation.items() if k not in given))

    changed = sorted(key for key in set(current) | set(config) if current.get(key) != config.get(key))
    if not changed:
        action = 'none'
    elif all(key in RELOADABLE_KEYS for key in changed):
        action = 'reload'
    else:
        action = 'restart'
    return {'config': config, 'changed': changed, 'action': action}
