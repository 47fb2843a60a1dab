# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Filter supported_platforms: the collection's supported distributions (docs in supported_platforms.yml)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.nimstack.multinode.plugins.module_utils.lazy import lazy_module

platforms = lazy_module('platforms')

# The function of module_utils/platforms.py behind each view; entries are the entries themselves.
_VIEWS = {'platforms': 'platform_names', 'families': 'os_families', 'distributions': 'distributions', 'entries': None}


def supported_platforms(value=None, view='platforms'):
    if view not in _VIEWS:
        raise AnsibleFilterError('supported_platforms: view must be one of %s, got %r' % (', '.join(sorted(_VIEWS)), view))
    if value:
        if not isinstance(value, list) or not all(isinstance(e, dict) and 'distribution' in e and 'versions' in e
                                                  for e in value):
            raise AnsibleFilterError('supported_platforms: expects a list of {distribution, versions} entries or [], got %r'
                                     % (value,))
        if view == 'families' and not all('os_family' in e for e in value):
            raise AnsibleFilterError('supported_platforms: the families view needs os_family in every entry')
    supported_os = value or platforms.SUPPORTED_OS
    if _VIEWS[view] is None:
        return [dict(entry) for entry in supported_os]
    return getattr(platforms, _VIEWS[view])(supported_os)


class FilterModule(object):
    def filters(self):
        return {'supported_platforms': supported_platforms}
