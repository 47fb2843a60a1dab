# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The attributes the collection's modules share, declared once."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type


class ModuleDocFragment(object):

    DOCUMENTATION = r'''
options: {}
'''

    # Modules that only compute from their arguments: planner, env generator, plan.
    COMPUTE = r'''
options: {}
attributes:
  check_mode:
    support: full
    description: Computes the same result in check mode; it never changes anything.
  diff_mode:
    support: none
    description: Nothing is changed, so there is nothing to diff.
  platform:
    support: full
    platforms: all
    description: Pure computation; it reads nothing from the host it runs on.
'''

    # Read-only probes that return facts; each module declares its own platform.
    FACTS = r'''
options: {}
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: The module only reads, so it runs and returns real facts in check mode.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
  facts:
    description: Action returns an C(ansible_facts) dictionary that will update existing host facts.
    support: full
'''

    # Modules that only read a Kubernetes cluster through kubernetes.core's client.
    K8S_READ = r'''
options: {}
attributes:
  check_mode:
    support: full
    description: Only reads; answers the same in check mode.
  diff_mode:
    support: none
    description: Nothing is changed, so there is nothing to diff.
  platform:
    support: full
    platforms: all
    description: Talks to the Kubernetes API server the auth options name.
requirements:
  - kubernetes >= 24.2.0 (the Python client kubernetes.core uses)
'''
