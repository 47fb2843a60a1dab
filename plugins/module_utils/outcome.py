# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Report a validating core's outcome (valid, errors, warnings) the same way from every module."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type


def exit_with_outcome(module, outcome, subject, **payload):
    """Emit the warnings, then fail listing every error (when fail_on_invalid) or exit.

    The warnings are returned as plan_warnings because ansible-core reserves the key warnings.
    """
    for warning in outcome['warnings']:
        module.warn(warning)
    result = dict(changed=False, valid=outcome['valid'], errors=outcome['errors'],
                  plan_warnings=outcome['warnings'], **payload)
    if outcome['errors'] and module.params['fail_on_invalid']:
        lines = ['%d. %s' % (number, error) for number, error in enumerate(outcome['errors'], 1)]
        module.fail_json(msg='%s has %d error(s):\n%s' % (subject, len(lines), '\n'.join(lines)), **result)
    module.exit_json(**result)
