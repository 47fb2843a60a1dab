# -*- coding: utf-8 -*-
"""The nim_supervisor_hold module: hold and renew, clear a stale hold, refuse another run's live one."""

import json
import os
import time

from ansible_collections.nimstack.multinode.plugins.module_utils import group_supervisor as gs
from ansible_collections.nimstack.multinode.plugins.modules import nim_supervisor_hold
from ansible_collections.nimstack.multinode.tests.unit.plugins.modules.utils import run_module

ME = gs.run_owner('ctl', 100, 1764000000)
OTHER = gs.run_owner('ctl2', 200, 1764000100)


def _args(path, **extra):
    args = dict(paths=[str(path)], owner=ME, holder='the deployment of group g1', lease=600)
    args.update(extra)
    return args


def test_hold_in_check_mode_only_on_paper_then_renew_keeping_when_it_was_acquired(tmp_path):
    path = tmp_path / 'maintenance'
    result, failed = run_module(nim_supervisor_hold.main, _args(path), check_mode=True)
    assert not failed and result['changed'] and not path.exists()
    result, failed = run_module(nim_supervisor_hold.main, _args(path))
    assert not failed and result['changed'] and result['cleared'] == []
    first = json.loads(path.read_text())
    assert first['owner'] == ME and first['expires'] - first['renewed'] == 600
    assert oct(path.stat().st_mode & 0o777) == '0o644'
    path.write_text(json.dumps(dict(first, acquired=first['acquired'] - 50)))
    result, failed = run_module(nim_supervisor_hold.main, _args(path))
    assert not failed and result['holds'][0]['state'] == 'live'
    assert json.loads(path.read_text())['acquired'] == first['acquired'] - 50


def test_a_stale_hold_of_another_run_and_a_plain_one_are_cleared_and_named(tmp_path):
    stale, plain = tmp_path / 'stale', tmp_path / 'plain'
    stale.write_text(json.dumps(gs.hold_record(OTHER, 'a restart wave', 60, time.time() - 120)))
    plain.write_text('held by a restart wave (nimstack.multinode)\n')
    result, failed = run_module(nim_supervisor_hold.main, _args(stale, paths=[str(stale), str(plain)]))
    assert not failed
    assert [h['state'] for h in result['holds']] == ['stale', 'live']
    assert result['cleared'][0].startswith('%s: cleared: hold by run ctl2-200-1764000100 of controller ctl2' % stale)
    assert result['cleared'][1].startswith('%s: cleared: hold without an owner' % plain)
    assert json.loads(plain.read_text())['owner'] == ME
    result, failed = run_module(nim_supervisor_hold.main, _args(stale, paths=[str(stale), str(plain)], state='absent'))
    assert not failed and result['changed'] and result['cleared'] == []
    assert not stale.exists() and not plain.exists()


def test_a_live_hold_of_another_run_is_refused_and_never_released(tmp_path):
    path = tmp_path / 'maintenance'
    path.write_text(json.dumps(gs.hold_record(OTHER, 'a restart wave', 600, time.time())))
    before = path.read_text()
    result, failed = run_module(nim_supervisor_hold.main, _args(path))
    assert failed and 'another run (controller ctl2, pid 200) is working on this host' in result['msg']
    result, failed = run_module(nim_supervisor_hold.main, _args(path), check_mode=True)
    assert not failed and not result['changed']
    result, failed = run_module(nim_supervisor_hold.main, _args(path, state='absent'))
    assert not failed and not result['changed']
    assert path.read_text() == before


def test_query_reads_without_an_owner_and_changes_nothing(tmp_path):
    path = tmp_path / 'maintenance'
    path.write_text('garbage')
    os.utime(str(path), (time.time() - 700, time.time() - 700))
    args = dict(paths=[str(path), str(tmp_path / 'none')], state='query', lease=600)
    result, failed = run_module(nim_supervisor_hold.main, args)
    assert not failed and not result['changed']
    assert [(h['state'], h['legacy']) for h in result['holds']] == [('stale', True)]
    assert path.read_text() == 'garbage'
