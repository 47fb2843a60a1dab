# -*- coding: utf-8 -*-
"""The nim_render_files module: writes and prunes, check mode and diff, idempotence, bad input."""

import os

from ansible_collections.nimstack.multinode.plugins.modules import nim_render_files
from ansible_collections.nimstack.multinode.tests.unit.plugins.modules.utils import run_module


def _args(root, **extra):
    args = {'root': root,
            'files': [{'path': 'default/Service-nim.yaml', 'content': 'kind: Service\n'},
                      {'path': 'default/LeaderWorkerSet-nim.yaml', 'content': 'kind: LeaderWorkerSet\n'}],
            'prune': ['default']}
    args.update(extra)
    return args


def test_check_mode_reports_without_writing_then_a_run_writes_then_nothing_changes(tmp_path):
    root = str(tmp_path / 'out')
    result, failed = run_module(nim_render_files.main, dict(_args(root), _ansible_diff=True), check_mode=True)
    assert not failed and result['changed']
    assert result['written'] == ['default/LeaderWorkerSet-nim.yaml', 'default/Service-nim.yaml']
    assert [d['after'] for d in result['diff']] == ['kind: LeaderWorkerSet\n', 'kind: Service\n']
    assert not os.path.exists(root)

    result, failed = run_module(nim_render_files.main, _args(root))
    assert not failed and result['changed'] and len(result['written']) == 2
    assert open(os.path.join(root, 'default', 'Service-nim.yaml')).read() == 'kind: Service\n'

    result, failed = run_module(nim_render_files.main, _args(root))
    assert not failed and not result['changed']
    assert result == dict(changed=False, written=[], removed=[], kept=[], unchanged=2)


def test_an_object_that_no_longer_exists_loses_its_file(tmp_path):
    root = str(tmp_path)
    run_module(nim_render_files.main, _args(root))
    stale = os.path.join(root, 'default', 'ConfigMap-nim-mpi-config.yaml')
    with open(stale, 'w') as handle:
        handle.write('# Rendered by nimstack.multinode (role nim_k8s)\nkind: ConfigMap\n')
    result, failed = run_module(nim_render_files.main, _args(root))
    assert not failed and result['changed']
    assert result['removed'] == ['default/ConfigMap-nim-mpi-config.yaml'] and result['written'] == []
    assert not os.path.exists(stale)


def test_a_users_own_manifest_in_the_directory_survives(tmp_path):
    root = str(tmp_path)
    run_module(nim_render_files.main, _args(root))
    own = os.path.join(root, 'default', 'my-networkpolicy.yaml')
    with open(own, 'w') as handle:
        handle.write('kind: NetworkPolicy\n# Rendered by nimstack.multinode, said a comment\n')
    result, failed = run_module(nim_render_files.main, _args(root))
    assert not failed and not result['changed']
    assert result['removed'] == [] and result['kept'] == ['default/my-networkpolicy.yaml']
    assert open(own).read().startswith('kind: NetworkPolicy')


def test_a_path_outside_the_root_fails_naming_it(tmp_path):
    result, failed = run_module(nim_render_files.main, {
        'root': str(tmp_path), 'files': [{'path': '../escape.yaml', 'content': 'x'}]})
    assert failed
    assert "'../escape.yaml'" in result['msg'] and 'below the root' in result['msg']
