# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""What on a host belongs to the collection, and what it may therefore change or remove.

The collection never removes or overwrites what it did not make. Everything it makes carries a
mark, and every change or removal checks the mark first:

- a directory it creates holds a marker file, ``.nimstack-managed``, naming the role that owns it;
- a file it owns (the group firewall's ruleset) starts with a comment header naming the role;
- a container it runs carries the labels ``nimstack.managed=true`` and ``nimstack.group=<group>``.

Earlier versions marked their containers with the same labels, but not their directories. A
directory without a marker is adopted (marked, and from then on treated as the collection's) only
when every file in it, and in its sub-directories one level down, has a name an earlier version
wrote there (``adopt`` patterns), or when it is empty. Anything else is someone else's.

No Ansible imports: the module nim_owned_path and the filter nim_container_owner call into it,
and tests/unit/plugins/module_utils/test_nim_ownership.py tests it on a real file system.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import fnmatch
import os

MARKER = '.nimstack-managed'
COLLECTION = 'nimstack.multinode'
CONTAINER_LABEL = 'nimstack.managed'
CONTAINER_LABEL_VALUE = 'true'
GROUP_LABEL = 'nimstack.group'
# How much of a file is read to find its header.
HEADER_BYTES = 4096

MISSING = 'missing'
OURS = 'ours'
EMPTY = 'empty'
ADOPTABLE = 'adoptable'
FOREIGN = 'foreign'


class OwnershipError(Exception):
    """A path the collection would have to change or remove is not the collection's."""


def marker_text(owner):
    """The content of the marker file of a directory that role ``owner`` created."""
    return ('# Created by %s (role %s). The collection removes this directory, and everything in it,\n'
            '# only while this file is here; delete this file to keep the directory from it.\n'
            'managed-by: %s\nowner: %s\n' % (COLLECTION, owner, COLLECTION, owner))


def file_header(owner):
    """The comment line that marks a file role ``owner`` writes (and alone may overwrite or remove)."""
    return '# managed-by: %s (role %s)' % (COLLECTION, owner)


def _marker_owner(path):
    """The role named by the marker of directory ``path``; None without a marker, '' when unreadable."""
    marker = os.path.join(path, MARKER)
    if not os.path.isfile(marker) or os.path.islink(marker):
        return None
    try:
        with open(marker, 'r') as handle:
            text = handle.read(HEADER_BYTES)
    except (IOError, OSError):
        return ''
    for line in text.splitlines():
        if line.startswith('owner:'):
            return line.split(':', 1)[1].strip()
    return ''


def _matches(name, patterns):
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def _adoptable(path, adopt, depth):
    """Whether every entry of ``path`` is one an earlier version of role ``owner`` left there."""
    for name in sorted(os.listdir(path)):
        full = os.path.join(path, name)
        # A marker anywhere means a newer version was here: adoption is for unmarked layouts only.
        if name == MARKER or os.path.islink(full):
            return False
        if os.path.isdir(full):
            if depth <= 0 or not _adoptable(full, adopt, depth - 1):
                return False
        elif not _matches(name, adopt):
            return False
    return True


def inspect_directory(path, owner, adopt=()):
    """What directory ``path`` is to role ``owner``.

    Returns a dict: ``state`` one of missing, ours (its marker names ``owner``), empty (no marker,
    nothing in it), adoptable (no marker, only what an earlier version of the role left: ``adopt``
    file name patterns, one level of sub-directories included), foreign (anything else: a file, a
    link, a directory of someone else or of another role of the collection); ``marker_owner``, the
    role its marker names (None without one); ``entries``, what is in it besides the marker.
    """
    if not os.path.lexists(path):
        return dict(state=MISSING, marker_owner=None, entries=[])
    if os.path.islink(path) or not os.path.isdir(path):
        return dict(state=FOREIGN, marker_owner=None, entries=[], reason='not a directory')
    entries = sorted(name for name in os.listdir(path) if name != MARKER)
    marker_owner = _marker_owner(path)
    if marker_owner == owner:
        state = OURS
    elif marker_owner is not None:
        state = FOREIGN
    elif not entries:
        state = EMPTY
    elif adopt and _adoptable(path, list(adopt), 1):
        state = ADOPTABLE
    else:
        state = FOREIGN
    return dict(state=state, marker_owner=marker_owner, entries=entries)


def inspect_file(path, owner, legacy_marks=()):
    """What file ``path`` is to role ``owner``: missing, ours (its first HEADER_BYTES hold the
    role's header, or one of ``legacy_marks``, a line an earlier version wrote) or foreign."""
    if not os.path.lexists(path):
        return dict(state=MISSING)
    if os.path.islink(path) or not os.path.isfile(path):
        return dict(state=FOREIGN, reason='not a regular file')
    try:
        with open(path, 'rb') as handle:
            head = handle.read(HEADER_BYTES).decode('utf-8', 'replace')
    except (IOError, OSError) as exc:
        return dict(state=FOREIGN, reason='unreadable: %s' % exc)
    marks = [file_header(owner)] + list(legacy_marks)
    lines = head.splitlines()
    if any(line.startswith(mark) for mark in marks for line in lines):
        return dict(state=OURS)
    return dict(state=FOREIGN)


def refusal(variable, path, info, what='directory'):
    """The message for a path the collection must not write into or remove."""
    if info.get('marker_owner'):
        why = 'belongs to the role %s of %s, not to this one' % (info['marker_owner'], COLLECTION)
    elif info.get('reason'):
        why = 'is %s' % info['reason']
    elif what == 'file':
        why = 'exists without the header "%s" the collection writes into the files it owns' % file_header('...')
    else:
        why = 'exists, is not empty and has no %s marker' % MARKER
    return ('%s=%s: the %s %s, so %s did not create it and will neither write into it nor remove it; '
            'point %s at a path of its own (new or empty)' % (variable, path, what, why, COLLECTION, variable))


def claim_directory(path, owner, adopt=()):
    """Plan making ``path`` a directory of role ``owner``: create it (and its parents) or adopt it.

    Returns (info, action): action None (already ours), 'create' or 'mark'. Raises OwnershipError
    when the directory is someone else's.
    """
    info = inspect_directory(path, owner, adopt)
    if info['state'] == OURS:
        return info, None
    if info['state'] == MISSING:
        return info, 'create'
    if info['state'] in (EMPTY, ADOPTABLE):
        return info, 'mark'
    raise OwnershipError(info)


def apply_claim(path, owner, action, mode=0o755):
    """Carry out what claim_directory planned."""
    if action == 'create':
        os.makedirs(path)
        os.chmod(path, mode)
    if action in ('create', 'mark'):
        marker = os.path.join(path, MARKER)
        with open(marker, 'w') as handle:
            handle.write(marker_text(owner))
        os.chmod(marker, 0o644)


def stale_children(path, owner, keep, adopt=()):
    """Sub-directories of ``path`` that role ``owner`` made (marked, or adoptable) and whose names
    are not in ``keep``, and those it leaves because they are someone else's: (remove, foreign)."""
    remove, foreign = [], []
    if not os.path.isdir(path):
        return remove, foreign
    for name in sorted(os.listdir(path)):
        full = os.path.join(path, name)
        if name in keep or os.path.islink(full) or not os.path.isdir(full):
            continue
        state = inspect_directory(full, owner, adopt)['state']
        if state in (OURS, ADOPTABLE):
            remove.append(name)
        else:
            foreign.append(name)
    return remove, foreign


def container_owner(info, group):
    """What a container of ``community.docker.docker_container_info`` is to deployment group
    ``group``: missing, ours (our labels and this group's), or foreign (anything else, another
    group's rank under a reused name included)."""
    if not isinstance(info, dict) or not info.get('exists'):
        return MISSING
    config = (info.get('container') or {}).get('Config') or {}
    labels = config.get('Labels') or {}
    if labels.get(CONTAINER_LABEL) == CONTAINER_LABEL_VALUE and labels.get(GROUP_LABEL) == str(group):
        return OURS
    return FOREIGN
