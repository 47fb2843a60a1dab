#!/usr/bin/env python
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Render the table of what each variable accepts in docs/troubleshooting.md from the controller's
rules (plugins/module_utils/input_checks.py RULES): one row per accepted text, its variables in
name order, rows in the order of their first variable.

    scripts/accepts-table.py            print the table
    scripts/accepts-table.py --write    replace the table in docs/troubleshooting.md

tests/unit/plugins/module_utils/test_input_checks.py fails when the page's table differs.
"""

import argparse
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(REPO, 'docs', 'troubleshooting.md')
HEADER = '| variables | accepted |\n|---|---|\n'


def table(rules):
    """The table's rows under HEADER, as text."""
    by_text = {}
    for name in sorted(rules):
        by_text.setdefault(rules[name].accepts.replace(', or empty', ''), []).append(name)
    rows = sorted(by_text.items(), key=lambda item: item[1][0])
    return ''.join('| %s | %s |\n' % (', '.join('`%s`' % name for name in names), text) for text, names in rows)


def page_with(page, rows):
    """The page with the rows under HEADER replaced (up to the first line that is not a row)."""
    start = page.index(HEADER) + len(HEADER)
    end = start
    while page.startswith('|', end):
        end = page.index('\n', end) + 1
    return page[:start] + rows + page[end:]


def _rules():
    sys.path.insert(0, os.path.join(REPO, 'build', 'collections'))
    from ansible_collections.nimstack.multinode.plugins.module_utils.input_checks import RULES
    return RULES


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--write', action='store_true', help='replace the table in docs/troubleshooting.md')
    args = parser.parse_args()
    rows = table(_rules())
    if not args.write:
        sys.stdout.write(HEADER + rows)
        return 0
    with open(PAGE) as handle:
        page = handle.read()
    with open(PAGE, 'w') as handle:
        handle.write(page_with(page, rows))
    return 0


if __name__ == '__main__':
    sys.exit(main())
