# -*- coding: utf-8 -*-
"""The nim_paths module: which paths exist and what they are, in the order given; relative paths refused; read only."""

import os

from ansible_collections.nimstack.multinode.plugins.modules import nim_paths
from ansible_collections.nimstack.multinode.tests.unit.plugins.modules.utils import run_module


def _host(tmp_path):
    """A file, a directory, a link to a file, a link to nothing and a fifo; returns them by name."""
    found = dict(file=tmp_path / 'supervisor.json', directory=tmp_path / 'g1', link=tmp_path / 'current',
                 dangling=tmp_path / 'stale-link', fifo=tmp_path / 'pipe')
    found['file'].write_text('{}\n')
    found['directory'].mkdir()
    found['link'].symlink_to(found['file'])
    found['dangling'].symlink_to(tmp_path / 'nothing')
    os.mkfifo(str(found['fifo']))
    return dict((name, str(path)) for name, path in found.items())


def _snapshot(root):
    return sorted((name, os.lstat(os.path.join(str(root), name)).st_mtime_ns) for name in os.listdir(str(root)))


def test_existing_and_missing_in_the_order_given_with_each_kind(tmp_path):
    host = _host(tmp_path)
    gone = [str(tmp_path / 'supervisor.service'), str(tmp_path / 'g1' / 'maintenance')]
    paths = [gone[0], host['fifo'], host['directory'], host['dangling'], gone[1], host['link'], host['file']]
    result, failed = run_module(nim_paths.main, dict(paths=paths))
    assert not failed and not result['changed']
    assert result['existing'] == [host['fifo'], host['directory'], host['dangling'], host['link'], host['file']]
    assert result['missing'] == gone
    assert result['kinds'] == {host['fifo']: 'other', host['directory']: 'directory', host['dangling']: 'link',
                               host['link']: 'link', host['file']: 'file'}


def test_nothing_there_is_all_missing(tmp_path):
    paths = [str(tmp_path / name) for name in ('b', 'a', 'c')]
    result, failed = run_module(nim_paths.main, dict(paths=paths))
    assert not failed and result == dict(changed=False, existing=[], missing=paths, kinds={})


def test_relative_paths_are_refused_naming_each(tmp_path):
    absolute = str(tmp_path)
    result, failed = run_module(nim_paths.main, dict(paths=['etc/nimstack', absolute, './supervisor.json']))
    assert failed
    assert result['msg'] == 'paths must be absolute: etc/nimstack, ./supervisor.json'
    result, failed = run_module(nim_paths.main, dict(paths=[absolute]))
    assert not failed and result['existing'] == [absolute]


def test_paths_are_required():
    result, failed = run_module(nim_paths.main, dict())
    assert failed and 'paths' in result['msg']


def test_a_home_relative_path_is_expanded_not_refused(tmp_path, monkeypatch):
    monkeypatch.setenv('HOME', str(tmp_path))
    (tmp_path / '.ssh').mkdir()
    result, failed = run_module(nim_paths.main, dict(paths=['~/.ssh', '~/missing']))
    assert not failed
    assert result['existing'] == [str(tmp_path / '.ssh')] and result['missing'] == [str(tmp_path / 'missing')]


def test_check_mode_reports_the_same_twice_and_changes_nothing(tmp_path):
    host = _host(tmp_path)
    paths = sorted(host.values()) + [str(tmp_path / 'missing')]
    before = _snapshot(tmp_path)
    checked, failed = run_module(nim_paths.main, dict(paths=paths), check_mode=True)
    assert not failed and not checked['changed'] and len(checked['existing']) == 5
    again, _failed = run_module(nim_paths.main, dict(paths=paths))
    assert again == checked
    assert _snapshot(tmp_path) == before
    assert not (tmp_path / 'missing').exists() and not (tmp_path / 'nothing').exists()


def test_a_path_below_a_file_is_missing(tmp_path):
    (tmp_path / 'a-file').write_text('x')
    result, failed = run_module(nim_paths.main, dict(paths=[str(tmp_path / 'a-file' / 'child'), str(tmp_path / 'a-file')]))
    assert not failed
    assert result['missing'] == [str(tmp_path / 'a-file' / 'child')] and result['existing'] == [str(tmp_path / 'a-file')]
