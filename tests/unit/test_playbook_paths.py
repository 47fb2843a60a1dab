# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""A file a play names through playbook_dir exists where Ansible looks: beside the play file.

An imported play's playbook_dir is the directory of its own file (playbooks/plays), not that of
the entry playbook that imports it.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import glob
import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK_DIR_PATH = re.compile(r"\{\{\s*playbook_dir\s*\}\}/([\w./-]+)")


def _references():
    for path in sorted(glob.glob(os.path.join(REPO, 'playbooks', '**', '*.yml'), recursive=True)):
        with open(path) as handle:
            for match in PLAYBOOK_DIR_PATH.finditer(handle.read()):
                yield path, match.group(1)


def test_some_play_names_a_file_through_playbook_dir():
    assert list(_references())


def test_every_playbook_dir_path_exists_beside_its_play():
    missing = [(os.path.relpath(path, REPO), ref) for path, ref in _references()
               if not os.path.exists(os.path.join(os.path.dirname(path), ref))]
    assert missing == []
