# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The collection's secrets group (nimstack-secrets): the group whose gid owns the SSH mesh's keys,
the Ray token and the supervisor's files, for the NIM containers alone (ssh_mesh and nim_docker
make the same one).

A group of that name with another gid, another group holding the gid, or a member added to it
would let someone else read them: refused, never changed. Pure Python: the module passes the
host's groups as (name, gid, members) from the system's group database.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type


def problems(name, gid, groups):
    """Why group ``name`` with ``gid`` cannot be the collection's on a host with ``groups``
    ((name, gid, members) tuples), as a list; empty when it is free or already ours."""
    gid = int(gid)
    found = []
    same_gid = sorted(set(g_name for g_name, g_gid, _members in groups if int(g_gid) == gid and g_name != name))
    if same_gid:
        found.append('gid %d belongs to group %s' % (gid, ', '.join(same_gid)))
    for g_name, g_gid, members in groups:
        if g_name != name:
            continue
        if int(g_gid) != gid:
            found.append('group %s has gid %s, not %d' % (name, g_gid, gid))
        if members:
            found.append('group %s has members %s' % (name, ','.join(members)))
        break
    return found


def exists(name, groups):
    return any(g_name == name for g_name, _gid, _members in groups)
