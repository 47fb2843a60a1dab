# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""How the collection reads a boolean or a whole number from the inventory, in one place.

Two readings of each, on purpose: the controller's checks refuse a value that is neither true nor
false, or not a whole number, naming it (``strict_bool``, ``checked_int``); the plans, once the
checks passed, read a value as Ansible's own ``bool`` and ``int`` filters do (``truthy``,
``ansible_int``), since the roles' templates read it that way too. Both boolean readings know the
same words: those Ansible's ``bool`` filter reads as true, and their opposites.

No Ansible imports: unit-tested directly.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

TRUE_WORDS = ('y', 'yes', 'on', '1', 'true', 't', '1.0')
FALSE_WORDS = ('n', 'no', 'off', '0', 'false', 'f', '0.0')
_INT_TEXT = re.compile(r'^\s*-?[0-9]{1,30}\s*\Z')


def truthy(value):
    """Ansible's bool filter: True, 1 and the TRUE_WORDS (any case) are true, everything else false."""
    if isinstance(value, bool):
        return value
    if value is None:
        return False
    return str(value).strip().lower() in TRUE_WORDS


def strict_bool(value):
    """True, False, or None where the value is neither (a check names it): bools, 0 and 1, and the
    TRUE_WORDS and FALSE_WORDS in any case."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in TRUE_WORDS or word in FALSE_WORDS:
            return word in TRUE_WORDS
    return None


def ansible_int(value):
    """Ansible's int filter: a whole number, a float truncated, 0 for anything else."""
    try:
        return int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError):
            return 0


def checked_int(value, not_int='is not a whole number', a_bool='is a boolean, not a number'):
    """(number, None), or (None, why not): ints and digit strings count (INI and -e hand numbers over
    as text), bools and floats do not."""
    if isinstance(value, bool):
        return None, a_bool
    if isinstance(value, int):
        return value, None
    if isinstance(value, str) and _INT_TEXT.match(value):
        return int(value), None
    return None, not_int
