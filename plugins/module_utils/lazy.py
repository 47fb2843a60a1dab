# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""A module of this collection's module_utils, imported when a filter first uses it.

To resolve any one filter name of a collection, ansible-core loads every filter file of that
collection (ansible.plugins.loader.Jinja2Loader.get_with_context), and it does so again in each
worker process it forks for a task and host. A filter file that imports its module_utils at the
top makes every such worker compile all of them from source (the collection loader keeps no
bytecode): about 58 ms of controller CPU for each task that templates one of the collection's
filters, against about 12 ms for the filter files alone (docs/scale.md). The filter files name
their module_utils with lazy_module instead, and a worker imports only those it calls.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib

PACKAGE = __name__.rpartition('.')[0]


class LazyModule(object):
    """Stands for PACKAGE.<name>: the first attribute read imports it, the next ones read it."""

    def __init__(self, name):
        self._name = name
        self._module = None

    def __getattr__(self, attribute):
        # Called only for what the instance itself does not hold: the module's own names. Special
        # names (copy and pickle ask for some before __init__ ran) are not the module's.
        if attribute.startswith('__'):
            return object.__getattribute__(self, attribute)
        module = self.__dict__.get('_module')
        if module is None:
            module = self.__dict__['_module'] = importlib.import_module('%s.%s' % (PACKAGE, self.__dict__['_name']))
        return getattr(module, attribute)

    def __repr__(self):
        return '<lazy module %s.%s>' % (PACKAGE, self._name)


def lazy_module(name):
    """The module_utils module ``name`` of this collection, imported on first use."""
    return LazyModule(name)
