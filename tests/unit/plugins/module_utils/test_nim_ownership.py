# -*- coding: utf-8 -*-
"""nim_ownership: what on a host is the collection's, on a real file system."""

import os

import pytest

from ansible_collections.nimstack.multinode.plugins.module_utils import nim_ownership as own

MESH_FILES = ['private.key', 'private.key.pub', 'ssh_host_ed25519_key', 'ssh_host_ed25519_key.pub',
              'authorized_keys', 'known_hosts', 'ssh_config']


def _write(path, text='x'):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as handle:
        handle.write(text)


def _claim(path, owner, adopt=()):
    info, action = own.claim_directory(path, owner, adopt)
    own.apply_claim(path, owner, action)
    return info, action


def test_a_missing_directory_is_created_with_its_marker_and_is_ours_from_then_on(tmp_path):
    path = str(tmp_path / 'a' / 'mesh')
    info, action = _claim(path, 'ssh_mesh')
    assert (info['state'], action) == ('missing', 'create')
    assert 'owner: ssh_mesh' in open(os.path.join(path, own.MARKER)).read()
    assert own.inspect_directory(path, 'ssh_mesh')['state'] == 'ours'
    assert own.claim_directory(path, 'ssh_mesh')[1] is None


def test_a_site_directory_with_content_and_no_marker_is_refused(tmp_path):
    # /opt or /etc/nimstack of the safety rules: the collection did not make it.
    _write(str(tmp_path / 'opt' / 'vendor' / 'tool'))
    _write(str(tmp_path / 'opt' / 'ngc.env'))
    with pytest.raises(own.OwnershipError) as exc:
        own.claim_directory(str(tmp_path / 'opt'), 'ssh_mesh', MESH_FILES)
    assert exc.value.args[0]['state'] == 'foreign'
    message = own.refusal('ssh_mesh_dir', str(tmp_path / 'opt'), exc.value.args[0])
    assert message.startswith('ssh_mesh_dir=%s: the directory exists, is not empty and has no .nimstack-managed marker'
                              % (tmp_path / 'opt'))


def test_a_directory_of_another_role_is_not_this_roles(tmp_path):
    path = str(tmp_path / 'nim')
    _claim(path, 'nim_docker')
    with pytest.raises(own.OwnershipError) as exc:
        own.claim_directory(path, 'ssh_mesh')
    assert 'belongs to the role nim_docker' in own.refusal('ssh_mesh_dir', path, exc.value.args[0])


def test_an_empty_directory_is_marked_and_a_file_or_link_is_refused(tmp_path):
    (tmp_path / 'empty').mkdir()
    assert _claim(str(tmp_path / 'empty'), 'nim_docker')[1] == 'mark'
    _write(str(tmp_path / 'file'))
    os.symlink(str(tmp_path / 'empty'), str(tmp_path / 'link'))
    for name in ('file', 'link'):
        with pytest.raises(own.OwnershipError):
            own.claim_directory(str(tmp_path / name), 'nim_docker')


def test_what_an_earlier_version_left_is_adopted_and_nothing_more(tmp_path):
    mesh = tmp_path / 'mesh'
    for name in MESH_FILES:
        _write(str(mesh / 'default' / name))
    _write(str(mesh / 'other' / 'known_hosts'))
    assert own.inspect_directory(str(mesh), 'ssh_mesh', MESH_FILES)['state'] == 'adoptable'
    assert own.inspect_directory(str(mesh / 'default'), 'ssh_mesh', MESH_FILES)['state'] == 'adoptable'
    # Without adopt patterns nothing but an empty directory is adopted.
    assert own.inspect_directory(str(mesh), 'ssh_mesh')['state'] == 'foreign'
    _write(str(mesh / 'other' / 'notes.txt'))
    assert own.inspect_directory(str(mesh), 'ssh_mesh', MESH_FILES)['state'] == 'foreign'
    # Two levels down is not what the role ever wrote.
    deep = tmp_path / 'deep'
    _write(str(deep / 'a' / 'b' / 'known_hosts'))
    assert own.inspect_directory(str(deep), 'ssh_mesh', MESH_FILES)['state'] == 'foreign'
    # A parent holding a marked directory of the role (ssh_mesh_dir=/etc/nimstack) is not adopted.
    parent = tmp_path / 'etc-nimstack'
    _claim(str(parent / 'mesh'), 'ssh_mesh')
    assert own.inspect_directory(str(parent), 'ssh_mesh', MESH_FILES)['state'] == 'foreign'


def test_stale_children_are_only_the_roles_own(tmp_path):
    mesh = str(tmp_path / 'mesh')
    _claim(mesh, 'ssh_mesh')
    for group in ('current', 'old'):
        _claim(os.path.join(mesh, group), 'ssh_mesh')
    _write(os.path.join(mesh, 'legacy', 'known_hosts'))
    _write(os.path.join(mesh, 'site', 'keep.txt'))
    _claim(os.path.join(mesh, 'docker'), 'nim_docker')
    _write(os.path.join(mesh, 'plain-file'))
    remove, foreign = own.stale_children(mesh, 'ssh_mesh', ['current'], MESH_FILES)
    assert remove == ['legacy', 'old']
    assert foreign == ['docker', 'site']


def test_a_file_is_ours_only_with_the_roles_header(tmp_path):
    path = str(tmp_path / 'rules.nft')
    assert own.inspect_file(path, 'nim_firewall')['state'] == 'missing'
    _write(path, '#!/usr/sbin/nft -f\nflush ruleset\ntable inet filter {}\n')
    assert own.inspect_file(path, 'nim_firewall')['state'] == 'foreign'
    assert 'without the header "# managed-by: nimstack.multinode' in own.refusal(
        'nim_firewall_rules_file', path, own.inspect_file(path, 'nim_firewall'), 'file')
    _write(path, '#\n# Ansible managed\n#\n%s\ntable inet nimstack {}\n' % own.file_header('nim_firewall'))
    assert own.inspect_file(path, 'nim_firewall')['state'] == 'ours'
    assert own.inspect_file(path, 'nim_docker')['state'] == 'foreign'
    _write(path, '# Group firewall of deployment group default (mpi contract)\n')
    assert own.inspect_file(path, 'nim_firewall', ['# Group firewall of deployment group '])['state'] == 'ours'


@pytest.mark.parametrize('info, expected', [
    ({'exists': False}, 'missing'),
    (None, 'missing'),
    ({'exists': True, 'container': {'Config': {'Labels': {'nimstack.managed': 'true', 'nimstack.group': 'default'}}}},
     'ours'),
    ({'exists': True, 'container': {'Config': {'Labels': {'nimstack.managed': 'true', 'nimstack.group': 'other'}}}},
     'foreign'),
    ({'exists': True, 'container': {'Config': {'Labels': None}}}, 'foreign'),
    ({'exists': True, 'container': {'Config': {}}}, 'foreign'),
])
def test_a_container_is_ours_only_with_our_labels_and_this_group(info, expected):
    assert own.container_owner(info, 'default') == expected
