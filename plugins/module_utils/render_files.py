# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Write a set of rendered files under one root in one pass, and remove the files of objects that
no longer exist: what render-only mode needs for hundreds of groups without a task per file.

plan_changes() is pure (it reads the tree, changes nothing); apply_changes() carries a plan out.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import fnmatch
import os
import stat
import tempfile


class RenderFilesError(Exception):
    """An argument that cannot be honoured: a path outside the root, a bad mode, a clash."""


def _relative(root, path, what):
    """``path`` normalised below ``root``; refuses absolute paths and any way out of it."""
    if not path or os.path.isabs(path):
        raise RenderFilesError('%s %r: must be a path relative to the root' % (what, path))
    normal = os.path.normpath(path)
    if normal == '.' or normal.startswith('..' + os.sep) or normal == '..':
        raise RenderFilesError('%s %r: must stay below the root %s' % (what, path, root))
    return normal


def _mode(value):
    text = str(value)
    try:
        mode = int(text, 8)
    except ValueError:
        raise RenderFilesError('mode %r: expected an octal string such as 0644' % (value,))
    if mode < 0 or mode > 0o7777:
        raise RenderFilesError('mode %r: expected an octal string such as 0644' % (value,))
    return mode


def _read(path):
    try:
        with open(path, 'rb') as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def _current_mode(path):
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return None


# The first line of every file the collection renders; prune removes no file without it.
DEFAULT_MARKER = '# Rendered by nimstack.multinode'


def is_marked(data, marker=DEFAULT_MARKER):
    """Whether a file's content (bytes or None) starts with the line the collection writes."""
    if data is None:
        return False
    return data.lstrip(b'\xef\xbb\xbf').startswith(marker.encode('utf-8'))


def plan_changes(root, files, prune=(), keep=(), patterns=('*.yaml',), marker=DEFAULT_MARKER):
    """What writing ``files`` under ``root`` changes.

    files: [{'path': relative path, 'content': text, 'mode': '0644', 'enabled': True}]; a file
    with enabled false is one the caller made for a setting that no longer applies: it is removed
    when present, whatever its first line.
    prune: directories (relative to root) whose files matching ``patterns`` are removed unless
    written here or listed in ``keep``, and only when their first line starts with ``marker``:
    a file someone else put there (a user's own manifest) is never removed, so what is written
    here must start with the marker for a later render to know it as its own.

    Returns {'write': [(relative, content bytes, mode, before bytes or None)],
             'chmod': [(relative, mode)], 'remove': [(relative, before bytes)], 'unchanged': n,
             'foreign': [relative: files prune would match but did not write, left alone]}.
    """
    if os.path.exists(root) and not os.path.isdir(root):
        raise RenderFilesError('the root %s exists and is not a directory' % (root,))
    wanted = {}
    unwanted = []
    for entry in files:
        relative = _relative(root, entry.get('path'), 'path')
        if relative in wanted or relative in unwanted:
            raise RenderFilesError('path %r is given twice' % (relative,))
        if not entry.get('enabled', True):
            unwanted.append(relative)
            continue
        content = entry.get('content')
        if content is None:
            content = ''
        data = content.encode('utf-8') if not isinstance(content, bytes) else content
        wanted[relative] = (data, _mode(entry.get('mode', '0644')))
    kept = set(_relative(root, path, 'keep') for path in keep)

    changes = {'write': [], 'chmod': [], 'remove': [], 'unchanged': 0, 'foreign': []}
    for relative in sorted(wanted):
        data, mode = wanted[relative]
        target = os.path.join(root, relative)
        before = _read(target)
        if before != data:
            changes['write'].append((relative, data, mode, before))
        elif _current_mode(target) != mode:
            changes['chmod'].append((relative, mode))
        else:
            changes['unchanged'] += 1
    for relative in sorted(unwanted):
        target = os.path.join(root, relative)
        if os.path.isfile(target) or os.path.islink(target):
            changes['remove'].append((relative, _read(target)))

    for directory in sorted(set(_relative(root, d, 'prune') for d in prune)):
        folder = os.path.join(root, directory)
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            relative = os.path.join(directory, name)
            if (relative in wanted or relative in unwanted or relative in kept
                    or not os.path.isfile(os.path.join(folder, name))):
                continue
            if any(fnmatch.fnmatch(name, pattern) for pattern in patterns):
                before = _read(os.path.join(folder, name))
                if is_marked(before, marker):
                    changes['remove'].append((relative, before))
                else:
                    changes['foreign'].append(relative)
    return changes


def _write_atomically(target, data, mode):
    folder = os.path.dirname(target)
    handle, temporary = tempfile.mkstemp(dir=folder, prefix='.render-')
    try:
        with os.fdopen(handle, 'wb') as out:
            out.write(data)
        os.chmod(temporary, mode)
        os.rename(temporary, target)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def apply_changes(root, changes, directory_mode=0o755, done=None):
    """Carry out what plan_changes() found: directories, writes (atomic), modes, removals.

    done: a mapping whose lists 'write', 'chmod' and 'remove' receive the relative path of each
    change once it is carried out, so that a caller can report what a failure half way left."""
    done = {} if done is None else done
    for key in ('write', 'chmod', 'remove'):
        done.setdefault(key, [])
    for relative, data, mode, _before in changes['write']:
        target = os.path.join(root, relative)
        folder = os.path.dirname(target)
        if not os.path.isdir(folder):
            os.makedirs(folder, directory_mode)
        _write_atomically(target, data, mode)
        done['write'].append(relative)
    for relative, mode in changes['chmod']:
        os.chmod(os.path.join(root, relative), mode)
        done['chmod'].append(relative)
    for relative, _before in changes['remove']:
        os.unlink(os.path.join(root, relative))
        done['remove'].append(relative)
    return done
