# -*- coding: utf-8 -*-
"""The doctor's host-side measurements: limits, keys, tokens, and real TCP listen/connect on 127.0.0.1."""

import os
import shutil
import socket
import stat
import subprocess
import threading
import time

import pytest

from ansible_collections.nimstack.multinode.plugins.module_utils import doctor_probe

# /proc/<pid>/limits as Linux 6.x prints it (header plus the rows the probe reads around), without
# the trailing blanks of each line.
LIMITS = """Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            1048576              1048576              files
Max locked memory         8388608              16777216             bytes
Max address space         unlimited            unlimited            bytes
"""


def test_parse_memlock_reads_soft_and_hard_in_kib():
    assert doctor_probe.parse_memlock(LIMITS) == (8192, 16384)
    unlimited = LIMITS.replace('8388608              16777216', 'unlimited            unlimited')
    assert doctor_probe.parse_memlock(unlimited) == (-1, -1)
    assert doctor_probe.parse_memlock('Max open files 1 1 files') is None


def _fake_proc(tmp_path, processes):
    for pid, (comm, limits) in processes.items():
        d = tmp_path / str(pid)
        d.mkdir()
        (d / 'comm').write_text(comm + '\n')
        (d / 'limits').write_text(limits)
    (tmp_path / 'self').symlink_to(tmp_path / str(min(processes)))
    return str(tmp_path)


def test_memlock_prefers_dockerd_hard_limit(tmp_path):
    unlimited = LIMITS.replace('8388608              16777216', 'unlimited            unlimited')
    proc = _fake_proc(tmp_path, {7: ('bash', LIMITS), 412: ('dockerd', unlimited)})
    assert doctor_probe.find_pid('dockerd', proc) == 412
    assert doctor_probe.memlock(proc) == (-1, 'dockerd (pid 412)')


def test_memlock_without_dockerd_is_the_sessions_soft_limit(tmp_path):
    proc = _fake_proc(tmp_path, {7: ('bash', LIMITS)})
    assert doctor_probe.memlock(proc) == (8192, 'this SSH session')


def test_existing_parent_and_fs_size(tmp_path):
    assert doctor_probe.existing_parent(str(tmp_path / 'a' / 'b')) == str(tmp_path)
    total, free = doctor_probe.fs_size(str(tmp_path))
    assert total > 0 and 0 <= free <= total
    assert doctor_probe.fs_size(str(tmp_path / 'missing')) == (None, None)


def test_clock_synced_answers_or_says_unknown():
    assert doctor_probe.clock_synced() in (True, False, None)


@pytest.mark.skipif(shutil.which('ssh-keygen') is None, reason='needs ssh-keygen')
def test_fingerprint_matches_ssh_keygen(tmp_path):
    key = str(tmp_path / 'k')
    subprocess.check_call(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', 'x', '-f', key])
    with open(key + '.pub') as handle:
        blobs = doctor_probe.public_key_blobs(handle.read())
    expected = subprocess.check_output(['ssh-keygen', '-l', '-E', 'sha256', '-f', key + '.pub']).decode().split()[1]
    assert doctor_probe.key_fingerprint(blobs[0]) == expected


def test_public_key_blobs_skip_options_and_comments():
    text = ('# managed\n'
            'from="10.0.0.1,10.0.0.2",no-pty,command="echo a b" ssh-rsa AAAAB3Nza mesh key\n'
            '\n'
            'ssh-ed25519 AAAAC3Nza other\n')
    assert doctor_probe.public_key_blobs(text) == ['AAAAB3Nza', 'AAAAC3Nza']


def test_tokens_round_trip_and_name_a_missing_file(tmp_path):
    path = str(tmp_path / 'token')
    assert doctor_probe.write_token(path, 'abc') == (True, '')
    assert doctor_probe.read_token(path, 'abc') == (True, '')
    assert doctor_probe.read_token(path, 'xyz')[0] is False
    ok, error = doctor_probe.read_token(str(tmp_path / 'none'), 'abc')
    assert not ok and 'not there' in error
    assert doctor_probe.write_token(str(tmp_path / 'no' / 'dir'), 'abc')[0] is False


def _free_port():
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def test_listen_and_connect_measure_reachability_and_clock():
    ports = [_free_port(), _free_port()]
    out = {}
    thread = threading.Thread(target=lambda: out.update(doctor_probe.listen(ports, ['127.0.0.1'], 10, '127.0.0.1')))
    thread.start()
    started = time.time()
    results = doctor_probe.connect_all([{'host': 'me', 'address': '127.0.0.1', 'port': p} for p in ports], 5)
    thread.join(12)
    assert all(r['ok'] for r in results), results
    assert all(abs(r['clock_offset_s']) < 0.5 for r in results)
    # The listener stops as soon as every peer connected to every port, long before its window.
    assert time.time() - started < 5
    assert all(out[p]['state'] == 'listening' and out[p]['seen'] == ['127.0.0.1'] for p in ports)


def test_listener_ends_when_stopped_and_frees_its_port():
    # A peer that never connects (a firewall drops it) must not keep the port for the whole
    # window: a doctor run right after it would find the port taken by a stale listener.
    port = _free_port()
    flag = threading.Event()
    out = {}
    thread = threading.Thread(target=lambda: out.update(
        doctor_probe.listen([port], ['192.0.2.1'], 60, '127.0.0.1', stopped=flag.is_set)))
    thread.start()
    time.sleep(0.3)
    assert thread.is_alive()
    started = time.time()
    flag.set()
    thread.join(5)
    assert not thread.is_alive() and time.time() - started < 2
    assert out[port] == {'state': 'listening', 'seen': []}
    assert doctor_probe.port_free(port, '127.0.0.1')


def test_port_already_listened_on_is_left_to_its_owner():
    owner = socket.socket()
    owner.bind(('127.0.0.1', 0))
    owner.listen(1)
    port = owner.getsockname()[1]
    try:
        assert not doctor_probe.port_free(port, '127.0.0.1')
        out = doctor_probe.listen([port], [], 0.2, '127.0.0.1')
        assert out[port]['state'] == 'in_use' and out[port]['held_by'] == 'listener'
        result = doctor_probe.connect_all([{'host': 'me', 'address': '127.0.0.1', 'port': port}], 2)[0]
        assert result['ok'] and result['clock_offset_s'] is None
    finally:
        owner.close()


def test_port_its_owner_lets_go_is_taken_over_for_the_peers():
    # A NIM leader that restarts during the doctor's window (a Ray leader exits with a lost
    # worker) held the port when the listener started: the peers must still find it answered.
    owner = socket.socket()
    owner.bind(('127.0.0.1', 0))
    owner.listen(1)
    port = owner.getsockname()[1]
    flag = threading.Event()
    out = {}
    thread = threading.Thread(target=lambda: out.update(
        doctor_probe.listen([port], ['127.0.0.1'], 20, '127.0.0.1', stopped=flag.is_set)))
    thread.start()
    try:
        time.sleep(0.3)
        assert thread.is_alive()
        owner.close()
        result = doctor_probe.connect_all([{'host': 'me', 'address': '127.0.0.1', 'port': port}], 5)[0]
    finally:
        owner.close()
        flag.set()
        thread.join(5)
    assert not thread.is_alive()
    # The offset is the listener's clock: the listener, not the owner, answered.
    assert result['ok'] and result['clock_offset_s'] is not None, result
    assert out[port]['state'] == 'listening' and out[port]['taken_over'] is True
    assert out[port]['seen'] == ['127.0.0.1']
    assert doctor_probe.port_free(port, '127.0.0.1')


def test_closed_port_is_refused_within_the_timeout():
    port = _free_port()
    started = time.time()
    result = doctor_probe.connect_all([{'host': 'me', 'address': '127.0.0.1', 'port': port}], 1)[0]
    assert not result['ok'] and 'refused' in result['error']
    assert time.time() - started < 3


def test_run_bounded_kills_what_overruns():
    rc, error = doctor_probe.run_bounded(['sleep', '10'], 0.5)
    assert rc is None and 'no answer' in error
    assert doctor_probe.run_bounded(['sh', '-c', 'echo one >&2; echo why >&2; exit 3'], 5) == (3, 'why')
    outcomes = doctor_probe.run_all([['true'], ['false']], 5)
    assert [outcome[0] for outcome in outcomes] == [0, 1]


def test_ssh_and_sshd_commands_pin_the_group_files():
    ssh = doctor_probe.ssh_command('10.0.0.12', 2299, '/m/private.key', '/m/known_hosts', 2222, 5)
    assert 'HostKeyAlias=[10.0.0.12]:2222' in ssh and 'StrictHostKeyChecking=yes' in ssh
    assert ssh[-2:] == ['root@10.0.0.12', 'true'] and ssh[ssh.index('-p') + 1] == '2299'
    sshd = doctor_probe.sshd_command('/usr/sbin/sshd', 2299, '/m/hk', '/m/authorized_keys')
    assert sshd[:3] == ['/usr/sbin/sshd', '-d', '-e'] and 'AuthorizedKeysFile=/m/authorized_keys' in sshd
    assert 'ForceCommand=/bin/true' in sshd and os.path.basename(sshd[0]) == 'sshd'


@pytest.mark.skipif(shutil.which('ssh-keygen') is None, reason='needs OpenSSH')
def test_root_reads_a_key_it_shares_with_the_secrets_group_through_a_private_copy(tmp_path):
    # The mesh keys are root's and the group nimstack-secrets's, 0440: OpenSSH refuses such a key to
    # its owner, so the doctor (root) hands it a 0600 copy, gone afterwards.
    key = str(tmp_path / 'private.key')
    subprocess.check_call(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f', key])
    os.chmod(key, 0o440)
    with doctor_probe.root_only_copy(key) as copy:
        assert stat.S_IMODE(os.stat(copy).st_mode) == 0o600
        public = subprocess.check_output(['ssh-keygen', '-y', '-f', copy]).decode()
    assert public.split()[:2] == open(key + '.pub').read().split()[:2]
    assert not os.path.exists(copy)


def test_a_port_that_is_the_local_end_of_a_connection_is_held_by_it():
    # A port of the ephemeral range may be the local end of one of this host's outgoing
    # connections: nothing can listen there while it lasts.
    server = socket.socket()
    server.bind(('127.0.0.1', 0))
    server.listen(1)
    client = socket.socket()
    client.connect(server.getsockname())
    accepted, _peer = server.accept()
    port = client.getsockname()[1]
    try:
        out = doctor_probe.listen([port], [], 0.2, '127.0.0.1')
        assert out[port]['state'] == 'in_use' and out[port]['held_by'] == 'connection'
        assert port not in doctor_probe.listening_ports()
        assert server.getsockname()[1] in doctor_probe.listening_ports()
    finally:
        for sock in (client, accepted, server):
            sock.close()


def test_who_holds_a_port_is_unknown_without_the_tables(tmp_path):
    assert doctor_probe.listening_ports((str(tmp_path / 'absent'),)) is None
    table = tmp_path / 'tcp'
    table.write_text('  sl  local_address rem_address   st\n'
                     '   0: 00000000:1F40 00000000:0000 0A\n'
                     '   1: 0100007F:EE47 0100007F:1F40 01\n')
    assert doctor_probe.listening_ports((str(table),)) == {8000}
