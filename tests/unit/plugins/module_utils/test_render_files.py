# -*- coding: utf-8 -*-
"""render_files: what a render changes (writes, modes, stale files), and that applying it is exact."""

import os
import stat

import pytest

from ansible_collections.nimstack.multinode.plugins.module_utils.render_files import (
    RenderFilesError, apply_changes, plan_changes)


MARKED = '# Rendered by nimstack.multinode (role nim_k8s)\nkind: ConfigMap\n'


def _write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as handle:
        handle.write(text)
    os.chmod(path, mode)


def test_a_fresh_root_writes_every_file_and_a_second_plan_changes_nothing(tmp_path):
    root = str(tmp_path / 'out')
    files = [{'path': 'g1/Service-a.yaml', 'content': 'kind: Service\n'},
             {'path': 'g2/Secret-b.yaml', 'content': 'kind: Secret\n', 'mode': '0600'}]
    changes = plan_changes(root, files, prune=['g1', 'g2'])
    assert [c[0] for c in changes['write']] == ['g1/Service-a.yaml', 'g2/Secret-b.yaml']
    assert changes['remove'] == [] and changes['unchanged'] == 0
    apply_changes(root, changes)
    assert open(os.path.join(root, 'g1/Service-a.yaml')).read() == 'kind: Service\n'
    assert stat.S_IMODE(os.stat(os.path.join(root, 'g2/Secret-b.yaml')).st_mode) == 0o600
    again = plan_changes(root, files, prune=['g1', 'g2'])
    assert again == {'write': [], 'chmod': [], 'remove': [], 'unchanged': 2, 'foreign': []}


def test_changed_content_and_mode_are_found_separately(tmp_path):
    root = str(tmp_path)
    _write(os.path.join(root, 'g/a.yaml'), 'old\n')
    _write(os.path.join(root, 'g/b.yaml'), 'same\n', 0o666)
    changes = plan_changes(root, [{'path': 'g/a.yaml', 'content': 'new\n'},
                                  {'path': 'g/b.yaml', 'content': 'same\n'}])
    assert [(c[0], c[3]) for c in changes['write']] == [('g/a.yaml', b'old\n')]
    assert changes['chmod'] == [('g/b.yaml', 0o644)]
    apply_changes(root, changes)
    assert open(os.path.join(root, 'g/a.yaml')).read() == 'new\n'
    assert stat.S_IMODE(os.stat(os.path.join(root, 'g/b.yaml')).st_mode) == 0o644


def test_prune_removes_only_unlisted_matching_files_of_the_named_directories(tmp_path):
    root = str(tmp_path)
    for name in ('g/ConfigMap-old.yaml', 'g/Secret-key.yaml', 'g/notes.txt', 'other/Stale.yaml'):
        _write(os.path.join(root, name), MARKED)
    changes = plan_changes(root, [{'path': 'g/Service-a.yaml', 'content': 'y\n'}],
                           prune=['g'], keep=['g/Secret-key.yaml'])
    assert [c[0] for c in changes['remove']] == ['g/ConfigMap-old.yaml']
    apply_changes(root, changes)
    assert sorted(os.listdir(os.path.join(root, 'g'))) == ['Secret-key.yaml', 'Service-a.yaml', 'notes.txt']
    assert os.path.exists(os.path.join(root, 'other/Stale.yaml'))


def test_prune_leaves_every_file_it_did_not_write(tmp_path):
    root = str(tmp_path)
    _write(os.path.join(root, 'g/ConfigMap-old.yaml'), MARKED)
    _write(os.path.join(root, 'g/users-own.yaml'), 'kind: NetworkPolicy\n')
    _write(os.path.join(root, 'g/marker-not-first.yaml'), '---\n' + MARKED)
    _write(os.path.join(root, 'g/empty.yaml'), '')
    changes = plan_changes(root, [{'path': 'g/Service-a.yaml', 'content': MARKED}], prune=['g'])
    assert [c[0] for c in changes['remove']] == ['g/ConfigMap-old.yaml']
    assert changes['foreign'] == ['g/empty.yaml', 'g/marker-not-first.yaml', 'g/users-own.yaml']
    apply_changes(root, changes)
    left = ['Service-a.yaml', 'empty.yaml', 'marker-not-first.yaml', 'users-own.yaml']
    assert sorted(os.listdir(os.path.join(root, 'g'))) == left
    assert open(os.path.join(root, 'g/users-own.yaml')).read() == 'kind: NetworkPolicy\n'


def test_another_marker_is_honoured(tmp_path):
    root = str(tmp_path)
    _write(os.path.join(root, 'g/a.yaml'), '# made by me\n')
    _write(os.path.join(root, 'g/b.yaml'), MARKED)
    changes = plan_changes(root, [], prune=['g'], marker='# made by me')
    assert [c[0] for c in changes['remove']] == ['g/a.yaml'] and changes['foreign'] == ['g/b.yaml']


def test_a_missing_prune_directory_is_not_an_error(tmp_path):
    assert plan_changes(str(tmp_path), [], prune=['never-rendered'])['remove'] == []


@pytest.mark.parametrize('path,message', [
    ('/etc/passwd', 'must be a path relative to the root'),
    ('../outside.yaml', 'must stay below the root'),
    ('g/../../outside.yaml', 'must stay below the root'),
    ('', 'must be a path relative to the root'),
])
def test_paths_that_leave_the_root_are_refused(tmp_path, path, message):
    with pytest.raises(RenderFilesError, match=message):
        plan_changes(str(tmp_path), [{'path': path, 'content': 'x'}])


def test_a_path_given_twice_and_a_bad_mode_are_refused(tmp_path):
    with pytest.raises(RenderFilesError, match='given twice'):
        plan_changes(str(tmp_path), [{'path': 'a.yaml', 'content': '1'}, {'path': './a.yaml', 'content': '2'}])
    with pytest.raises(RenderFilesError, match='octal'):
        plan_changes(str(tmp_path), [{'path': 'a.yaml', 'content': '1', 'mode': 'rw-r--r--'}])


def test_a_file_that_is_not_enabled_is_removed_whatever_its_first_line(tmp_path):
    """The install record of a component stays, the values file of its former Helm install goes
    (the caller names it as its own, unmarked), and a file of another name is left alone."""
    root = str(tmp_path)
    _write(os.path.join(root, 'values.yaml'), 'image: {}\n')
    _write(os.path.join(root, 'notes.yaml'), 'mine\n')
    files = [{'path': 'install.yaml', 'content': 'method: manifest\n'},
             {'path': 'values.yaml', 'content': 'image: {}\n', 'enabled': False},
             {'path': 'manifests.yaml', 'content': 'kind: List\n', 'enabled': False}]
    changes = plan_changes(root, files)
    assert [c[0] for c in changes['write']] == ['install.yaml']
    assert changes['remove'] == [('values.yaml', b'image: {}\n')]
    apply_changes(root, changes)
    assert sorted(os.listdir(root)) == ['install.yaml', 'notes.yaml']
    assert plan_changes(root, files) == {'write': [], 'chmod': [], 'remove': [], 'unchanged': 1, 'foreign': []}


def test_a_path_both_written_and_not_enabled_is_refused(tmp_path):
    with pytest.raises(RenderFilesError, match='given twice'):
        plan_changes(str(tmp_path), [{'path': 'a.yaml', 'content': '1'}, {'path': 'a.yaml', 'content': '', 'enabled': False}])


def test_a_root_that_is_a_file_is_refused_before_anything_is_written(tmp_path):
    root = tmp_path / 'out'
    root.write_text('mine\n')
    with pytest.raises(RenderFilesError, match='the root %s exists and is not a directory' % root):
        plan_changes(str(root), [{'path': 'g1/Service-a.yaml', 'content': 'kind: Service\n'}])
    assert root.read_text() == 'mine\n'


def test_a_failure_half_way_reports_only_what_was_carried_out(tmp_path):
    root = str(tmp_path / 'out')
    files = [{'path': 'a/Service-a.yaml', 'content': 'kind: Service\n'},
             {'path': 'b/Service-b.yaml', 'content': 'kind: Service\n'}]
    changes = plan_changes(root, files)
    # A file where the second directory must go: the second write fails.
    _write(os.path.join(root, 'b'), 'in the way\n')
    done = {}
    with pytest.raises(OSError):
        apply_changes(root, changes, done=done)
    assert done == {'write': ['a/Service-a.yaml'], 'chmod': [], 'remove': []}
