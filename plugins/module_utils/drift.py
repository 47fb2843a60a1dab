# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Drift between what a role would write and what a host has, read in one pass.

A converged host is verified by one module call (plugins/modules/nim_drift.py) that compares the
files and units a role's apply tasks would ensure with the host; the role runs those tasks only
where this finds drift. Every comparison the apply tasks make on a converged host is made here too:
a file's kind, content, owner, group and mode; a directory's kind, owner, group, mode and the
collection's marker (nim_ownership); a path that must be absent; a systemd unit enabled and active.

Pure Python, no Ansible imports; the caller passes the functions that read users and units.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import hashlib
import os
import re
import stat

from ansible_collections.nimstack.multinode.plugins.module_utils import nim_ownership, secrets_group

FILE = 'file'
DIRECTORY = 'directory'
ABSENT = 'absent'
# A file that may be there or not; only its refuse_pattern is checked where it is.
ANY = 'any'
STATES = (FILE, DIRECTORY, ABSENT, ANY)


def sha1_of(path):
    digest = hashlib.sha1()
    with open(path, 'rb') as handle:
        for block in iter(lambda: handle.read(65536), b''):
            digest.update(block)
    return digest.hexdigest()


def sha1_text(text):
    return hashlib.sha1(text.encode('utf-8')).hexdigest()


def _mode_text(mode):
    return '%04o' % stat.S_IMODE(mode)


def _wanted_mode(value):
    """A mode as the apply task writes it ('0644', '644', 0o644) as four octal digits, or None."""
    if value in (None, ''):
        return None
    if isinstance(value, int):
        return '%04o' % value
    try:
        return '%04o' % int(str(value), 8)
    except ValueError:
        raise DriftError('mode %r is not an octal mode such as 0644 (a symbolic mode cannot be compared)' % (value,))


def _refused(path, pattern):
    """A reason where the file's text matches pattern (a state the apply tasks clear)."""
    if not pattern or not os.path.isfile(path):
        return []
    with open(path, 'rb') as handle:
        text = handle.read().decode('utf-8', 'replace')
    return ['%s: holds %s' % (path, pattern)] if re.search(pattern, text) else []


def _same(wanted, number, name_of):
    """Whether a uid/gid is the wanted one, given by name or by number (as '64910' or 64910)."""
    wanted = str(wanted)
    return wanted == str(number) if wanted.isdigit() else wanted == name_of(number)


def path_drift(entry, owner_name, group_name):
    """What differs between ``entry`` (path, state, content or checksum, owner, group, mode,
    marker_owner and prune_except for a directory: no other directory of the role beside the named
    ones; refuse_pattern for state any) and the host, as a list of short reasons (empty when in sync), and the file's
    sha1 where it is a regular file (None otherwise). ``owner_name``/``group_name`` map a uid/gid
    to its name."""
    path = entry['path']
    state = entry.get('state') or FILE
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return ([] if state in (ABSENT, ANY) else ['%s: missing' % path]), None
    if state == ABSENT:
        return ['%s: present, wanted absent' % path], None
    if state == ANY:
        return _refused(path, entry.get('refuse_pattern')), None
    reasons = []
    if state == DIRECTORY and not stat.S_ISDIR(info.st_mode):
        return ['%s: not a directory' % path], None
    if state == FILE and not stat.S_ISREG(info.st_mode):
        return ['%s: not a regular file' % path], None
    checksum = None
    if state == FILE:
        checksum = sha1_of(path)
        wanted = entry.get('checksum') or None
        if wanted is None and entry.get('content') is not None:
            wanted = sha1_text(entry['content'])
        if wanted is not None and wanted != checksum:
            reasons.append('%s: content differs' % path)
    if state == DIRECTORY and entry.get('marker_owner'):
        found = nim_ownership.inspect_directory(path, entry['marker_owner'])
        if found['state'] != nim_ownership.OURS:
            reasons.append('%s: not marked as role %s\'s' % (path, entry['marker_owner']))
        if entry.get('prune_except') is not None:
            remove = nim_ownership.stale_children(path, entry['marker_owner'], entry['prune_except'])[0]
            # Only what the apply task prunes: it leaves a directory that is not the role's (it warns).
            reasons.extend('%s/%s: left behind' % (path, name) for name in remove)
    if entry.get('owner') is not None and not _same(entry['owner'], info.st_uid, owner_name):
        reasons.append('%s: owner %s, wanted %s' % (path, owner_name(info.st_uid), entry['owner']))
    if entry.get('group') is not None and not _same(entry['group'], info.st_gid, group_name):
        reasons.append('%s: group %s, wanted %s' % (path, group_name(info.st_gid), entry['group']))
    wanted_mode = _wanted_mode(entry.get('mode'))
    if wanted_mode is not None and _mode_text(info.st_mode) != wanted_mode:
        reasons.append('%s: mode %s, wanted %s' % (path, _mode_text(info.st_mode), wanted_mode))
    return reasons, checksum


def _truth(value):
    """A boolean as YAML or a template may hand it over (True, 'true', 'yes', 1)."""
    if isinstance(value, str):
        return value.strip().lower() in ('true', 'yes', 'on', '1')
    return bool(value)


def table_drift(wanted, listed):
    """The nftables tables (``family name``) of ``wanted`` that ``listed`` (the lines of
    `nft list tables`) lacks."""
    have = set(line.strip() for line in listed)
    return ['table %s: not loaded' % table for table in wanted if 'table %s' % table not in have]


def unit_drift(entry, unit_state):
    """What differs between ``entry`` (name, enabled, active) and the unit; ``unit_state(name)``
    returns (enabled, active) as systemctl reports them ('enabled', 'active', ...)."""
    enabled, active = unit_state(entry['name'])
    reasons = []
    if entry.get('enabled') is not None and (enabled == 'enabled') != _truth(entry['enabled']):
        reasons.append('%s: %s' % (entry['name'], enabled or 'not found'))
    if entry.get('active') is not None and (active == 'active') != _truth(entry['active']):
        reasons.append('%s: %s' % (entry['name'], active or 'not found'))
    return reasons


# The most report_content reads of a file: public keys, a daemon.json; never a large file.
CONTENT_LIMIT = 1048576


class DriftError(Exception):
    """A file asked for with report_content cannot be read whole."""


def _content(path):
    """The text of a regular file, followed through a link (report_content); None where there is
    none. A larger file than CONTENT_LIMIT is an error, never silently nothing."""
    if not os.path.isfile(path):
        return None
    if os.path.getsize(path) > CONTENT_LIMIT:
        raise DriftError('%s: larger than %d bytes, not read' % (path, CONTENT_LIMIT))
    with open(path, 'rb') as handle:
        return handle.read().decode('utf-8', 'replace')


def group_drift(entry, groups):
    """What differs between ``entry`` (name, gid) and the host's ``groups`` ((name, gid, members)):
    the collection's secrets group must exist with its gid, alone, without members."""
    reasons = secrets_group.problems(entry['name'], entry['gid'], groups)
    if not secrets_group.exists(entry['name'], groups):
        reasons.append('group %s: missing' % entry['name'])
    return reasons


def drift(files, units, owner_name, group_name, unit_state, groups=(), host_groups=()):
    """Every reason the host differs from ``files``, ``units`` and ``groups``; the sha1 of each
    file asked for with report_checksum, the text of each asked for with report_content (never a
    secret: a key's public half, a daemon.json) and whether each asked for with report_exists
    exists (a link to nothing does not)."""
    reasons, checksums, contents, exists = [], {}, {}, {}
    for entry in files:
        found, checksum = path_drift(entry, owner_name, group_name)
        reasons.extend(found)
        if entry.get('report_checksum'):
            checksums[entry['path']] = checksum
        if entry.get('report_content'):
            contents[entry['path']] = _content(entry['path'])
        if entry.get('report_exists'):
            exists[entry['path']] = os.path.exists(entry['path'])
    for entry in units:
        reasons.extend(unit_drift(entry, unit_state))
    for entry in groups:
        reasons.extend(group_drift(entry, host_groups))
    return reasons, checksums, contents, exists
