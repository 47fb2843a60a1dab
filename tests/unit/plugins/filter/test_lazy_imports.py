# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Loading the filter files imports no module_utils: ansible-core loads every filter file of the
collection in each worker that templates one of its filters, so that load must stay small
(plugins/module_utils/lazy.py)."""

import copy
import glob
import json
import os
import subprocess
import sys

from ansible_collections.nimstack.multinode.plugins.module_utils import platforms
from ansible_collections.nimstack.multinode.plugins.module_utils.lazy import lazy_module

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
PREFIX = 'ansible_collections.nimstack.multinode.plugins.'
FILTER_FILES = sorted(os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(REPO, 'plugins', 'filter', '*.py'))
                      if not p.endswith('__init__.py'))

# A fresh interpreter: load every filter file as the plugin loader does (import it, ask for its
# filters) and list what of module_utils it imported.
_PROBE = """
import importlib, json, sys
sys.path.insert(0, sys.argv[1])
filters = 0
for name in sys.argv[2:]:
    module = importlib.import_module('%sfilter.' + name)
    filters += len(module.FilterModule().filters())
print(json.dumps({'filters': filters, 'module_utils': sorted(
    m for m in sys.modules if m.startswith('%smodule_utils.'))}))
""" % (PREFIX, PREFIX)


def _collection_root():
    return next(p for p in sys.path if os.path.isdir(os.path.join(p, 'ansible_collections', 'nimstack', 'multinode')))


def test_loading_every_filter_file_imports_no_module_utils():
    out = subprocess.run([sys.executable, '-c', _PROBE, _collection_root()] + FILTER_FILES,
                         stdout=subprocess.PIPE, check=True, universal_newlines=True).stdout
    loaded = json.loads(out)
    assert len(FILTER_FILES) > 15 and loaded['filters'] > 40
    assert loaded['module_utils'] == [PREFIX + 'module_utils.lazy']


def test_a_lazy_module_is_the_module_once_used():
    lazy = lazy_module('platforms')
    assert lazy.SUPPORTED_OS is platforms.SUPPORTED_OS
    assert lazy.os_families(platforms.SUPPORTED_OS) == platforms.os_families(platforms.SUPPORTED_OS)
    assert 'platforms' in repr(lazy)


def test_special_names_are_not_looked_up_in_the_module():
    lazy = lazy_module('platforms')
    assert not hasattr(lazy, '__deepcopy_nonexistent__')
    assert copy.copy(lazy).SUPPORTED_OS is platforms.SUPPORTED_OS
