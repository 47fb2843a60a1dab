# -*- coding: utf-8 -*-
"""The nim_owned_path module: create and mark, refuse, remove only what is ours, check mode."""

import os

from ansible_collections.nimstack.multinode.plugins.modules import nim_owned_path
from ansible_collections.nimstack.multinode.tests.unit.plugins.modules.utils import run_module


def _args(path, **extra):
    args = dict(path=str(path), owner='ssh_mesh', variable='ssh_mesh_dir')
    args.update(extra)
    return args


def _write(path, text='x'):
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    with open(str(path), 'w') as handle:
        handle.write(text)


def test_present_creates_in_check_mode_only_on_paper_then_for_real_then_nothing(tmp_path):
    path = tmp_path / 'mesh'
    result, failed = run_module(nim_owned_path.main, _args(path), check_mode=True)
    assert not failed and result['changed'] and result['action'] == 'created'
    assert not path.exists()
    result, failed = run_module(nim_owned_path.main, _args(path, mode='0700'))
    assert not failed and result['changed'] and (path / '.nimstack-managed').is_file()
    assert oct(path.stat().st_mode & 0o777) == '0o700'
    result, failed = run_module(nim_owned_path.main, _args(path))
    assert not failed and not result['changed'] and result['found'] == 'ours'


def test_present_refuses_a_site_directory_naming_the_variable(tmp_path):
    # ssh_mesh_dir=/etc/nimstack beside the NGC env file, or /opt.
    _write(tmp_path / 'etc-nimstack' / 'nim' / 'default' / 'ngc.env', 'NGC_API_KEY=secret\n')
    result, failed = run_module(nim_owned_path.main, _args(tmp_path / 'etc-nimstack'))
    assert failed
    assert result['msg'].startswith('ssh_mesh_dir=%s: the directory exists, is not empty and has no .nimstack-managed marker'
                                    % (tmp_path / 'etc-nimstack'))
    assert not (tmp_path / 'etc-nimstack' / '.nimstack-managed').exists()


def test_prune_removes_only_the_roles_own_stale_groups(tmp_path):
    mesh = tmp_path / 'mesh'
    run_module(nim_owned_path.main, _args(mesh))
    for group in ('current', 'old'):
        run_module(nim_owned_path.main, _args(mesh / group))
    _write(mesh / 'site' / 'keep.txt')
    result, failed = run_module(nim_owned_path.main, _args(mesh, prune_except=['current']), check_mode=True)
    assert not failed and result['changed'] and result['pruned'] == ['old'] and (mesh / 'old').exists()
    result, failed = run_module(nim_owned_path.main, _args(mesh, prune_except=['current']))
    assert not failed and result['pruned'] == ['old'] and result['kept'] == ['site']
    assert sorted(os.listdir(str(mesh))) == ['.nimstack-managed', 'current', 'site']
    assert (mesh / 'site' / 'keep.txt').is_file()


def test_absent_removes_the_roles_directory_and_keeps_anyone_elses_with_a_warning(tmp_path):
    staging = tmp_path / 'var-tmp'
    _write(staging / 'site-file')
    args = dict(path=str(staging), owner='nim_docker', variable='nim_docker_image_staging_dir', state='absent')
    result, failed = run_module(nim_owned_path.main, args)
    assert not failed and not result['changed'] and result['action'] == 'kept'
    assert (staging / 'site-file').is_file()
    ours = tmp_path / 'nimstack-images'
    run_module(nim_owned_path.main, dict(args, path=str(ours), state='present'))
    _write(ours / 'nim.tar')
    result, failed = run_module(nim_owned_path.main, dict(args, path=str(ours)), check_mode=True)
    assert not failed and result['changed'] and ours.exists()
    result, failed = run_module(nim_owned_path.main, dict(args, path=str(ours)))
    assert not failed and result['changed'] and not ours.exists()
    result, failed = run_module(nim_owned_path.main, dict(args, path=str(ours)))
    assert not failed and not result['changed']


def test_absent_only_if_empty_keeps_a_directory_still_in_use(tmp_path):
    mesh = tmp_path / 'mesh'
    run_module(nim_owned_path.main, _args(mesh))
    run_module(nim_owned_path.main, _args(mesh / 'other-group'))
    result, failed = run_module(nim_owned_path.main, _args(mesh, state='absent', only_if_empty=True))
    assert not failed and not result['changed'] and mesh.exists()
    run_module(nim_owned_path.main, _args(mesh / 'other-group', state='absent'))
    result, failed = run_module(nim_owned_path.main, _args(mesh, state='absent', only_if_empty=True))
    assert not failed and result['changed'] and not mesh.exists()


def test_a_file_is_overwritten_or_removed_only_with_the_roles_header(tmp_path):
    rules = tmp_path / 'nftables.conf'
    _write(rules, '#!/usr/sbin/nft -f\nflush ruleset\n')
    args = dict(path=str(rules), kind='file', owner='nim_firewall', variable='nim_firewall_rules_file')
    result, failed = run_module(nim_owned_path.main, args)
    assert failed and result['msg'].startswith('nim_firewall_rules_file=%s: the file exists without the header' % rules)
    result, failed = run_module(nim_owned_path.main, dict(args, state='absent'))
    assert not failed and not result['changed'] and rules.is_file()
    _write(rules, '# managed-by: nimstack.multinode (role nim_firewall)\ntable inet nimstack {}\n')
    result, failed = run_module(nim_owned_path.main, args)
    assert not failed and not result['changed'] and result['found'] == 'ours'
    result, failed = run_module(nim_owned_path.main, dict(args, state='absent'))
    assert not failed and result['changed'] and not rules.exists()


def test_the_root_is_refused(tmp_path):
    result, failed = run_module(nim_owned_path.main, _args('/', state='absent'))
    assert failed and result['msg'] == 'ssh_mesh_dir=/: must be an absolute path below /'
