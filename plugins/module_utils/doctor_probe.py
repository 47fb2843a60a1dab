# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""What the preflight doctor measures on one host, and the bounded TCP listener/connector.

No Ansible imports: the modules nim_doctor_probe and nim_doctor_peers call these, and the unit
tests call them directly (the socket functions against 127.0.0.1).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import base64
import contextlib
import shutil
import tempfile
import ctypes
import ctypes.util
import errno
import hashlib
import os
import select
import socket
import subprocess
import threading
import time

# adjtimex(2) returns TIME_ERROR while the kernel's clock is not synchronised (the flag
# timedatectl reports as NTPSynchronized).
TIME_ERROR = 5
# struct timex is 208 bytes on 64-bit Linux; a larger zeroed buffer leaves modes=0 (read only).
_TIMEX_BYTES = 512


def parse_memlock(text):
    """Soft and hard 'Max locked memory' of a /proc/<pid>/limits text, in KiB; -1 is unlimited."""
    for line in text.splitlines():
        if line.startswith('Max locked memory'):
            fields = line[len('Max locked memory'):].split()
            if len(fields) < 2:
                break
            values = []
            for field in fields[:2]:
                values.append(-1 if field == 'unlimited' else int(field) // 1024)
            return values[0], values[1]
    return None


def find_pid(comm, proc='/proc'):
    """PID of the first process whose comm is ``comm``, or None."""
    try:
        entries = os.listdir(proc)
    except OSError:
        return None
    for entry in sorted((e for e in entries if e.isdigit()), key=int):
        try:
            with open(os.path.join(proc, entry, 'comm')) as handle:
                if handle.read().strip() == comm:
                    return int(entry)
        except (IOError, OSError):
            continue
    return None


def memlock(proc='/proc'):
    """(KiB or -1, where it was read): dockerd's hard limit when it runs (a container's memlock
    may not exceed it), else this process's soft limit (what a login session gets)."""
    pid = find_pid('dockerd', proc)
    for which, path, index in ((('dockerd (pid %d)' % pid) if pid else None,
                                os.path.join(proc, str(pid), 'limits') if pid else None, 1),
                               ('this SSH session', os.path.join(proc, 'self', 'limits'), 0)):
        if path is None:
            continue
        try:
            with open(path) as handle:
                parsed = parse_memlock(handle.read())
        except (IOError, OSError):
            continue
        if parsed is not None:
            return parsed[index], which
    return None, 'unreadable'


def existing_parent(path):
    """``path`` or its nearest existing parent directory."""
    path = os.path.abspath(path or '/')
    while not os.path.exists(path) and path != os.path.dirname(path):
        path = os.path.dirname(path)
    return path


def fs_size(path):
    """(total bytes, available bytes) of the file system holding ``path``, or (None, None)."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None, None
    return st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize


def clock_synced():
    """True/False from the kernel's NTP state (adjtimex), None where it cannot be read."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library('c') or None, use_errno=True)
        buf = ctypes.create_string_buffer(_TIMEX_BYTES)
        state = libc.adjtimex(buf)
    except (OSError, AttributeError):
        return None
    if state < 0:
        return None
    return state != TIME_ERROR


def key_fingerprint(blob_b64):
    """OpenSSH's SHA256 fingerprint of a base64 public key blob."""
    digest = hashlib.sha256(base64.b64decode(blob_b64)).digest()
    return 'SHA256:' + base64.b64encode(digest).decode('ascii').rstrip('=')


_KEY_TYPES = ('ssh-', 'ecdsa-', 'sk-')


def public_key_blobs(text):
    """The base64 key blobs of an authorized_keys or .pub text (options before the type allowed)."""
    blobs = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        fields = _split_key_line(line)
        for index, field in enumerate(fields[:-1]):
            if field.startswith(_KEY_TYPES):
                blobs.append(fields[index + 1])
                break
    return blobs


def _split_key_line(line):
    """Split on blanks outside double quotes (from="a,b" may hold none, but options may)."""
    fields, current, quoted = [], [], False
    for char in line:
        if char == '"':
            quoted = not quoted
        if char in ' \t' and not quoted:
            if current:
                fields.append(''.join(current))
                current = []
            continue
        current.append(char)
    if current:
        fields.append(''.join(current))
    return fields


def port_free(port, address='0.0.0.0'):
    """Whether a TCP listener could bind ``port`` now."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, int(port)))
        return True
    except (OSError, socket.error):
        return False
    finally:
        sock.close()


def listening_ports(tables=('/proc/net/tcp', '/proc/net/tcp6')):
    """The local TCP ports some socket of this host listens on (state 0A in /proc/net/tcp{,6});
    None where neither table can be read."""
    ports = set()
    read = False
    for table in tables:
        try:
            with open(table) as handle:
                lines = handle.read().splitlines()[1:]
        except (IOError, OSError):
            continue
        read = True
        for line in lines:
            fields = line.split()
            if len(fields) > 3 and fields[3] == '0A' and ':' in fields[1]:
                ports.add(int(fields[1].rsplit(':', 1)[1], 16))
    return ports if read else None


def listen(ports, peers, window, address='0.0.0.0', clock=time.time, stopped=None, listening=listening_ports):
    """Accept TCP connections on ``ports`` until every peer address connected to every port,
    ``window`` seconds passed or ``stopped()`` is true (checked at least twice a second). A port something
    else already listens on is left to it (a running NIM container answers for itself); when it
    lets go before the window ends (a rank that died and is restarting, as a Ray leader does with
    a lost worker), the listener takes the port over within a tenth of a second, so that the peers'
    connects, which retry a refusal, still prove the path. Returns
    {port: {state: listening|in_use|error, seen: [...]}}, with taken_over: true where the port
    was taken over. A port in use says who holds it (held_by): a listener, or a connection, the
    local end of one of this host's outgoing connections, which a port of the ephemeral range
    (ip_local_port_range) may be at any time: nothing can listen there while it lasts.
    """
    deadline = clock() + float(window)
    sockets = {}
    result = {}
    held = []

    def bind(port):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((address, port))
            sock.listen(16)
        except (OSError, socket.error) as exc:
            sock.close()
            return None, exc
        sock.setblocking(False)
        sockets[sock] = port
        return sock, None

    for port in ports:
        port = int(port)
        sock, exc = bind(port)
        if sock is not None:
            result[port] = {'state': 'listening', 'seen': []}
        elif getattr(exc, 'errno', None) == errno.EADDRINUSE:
            listeners = listening()
            held_by = 'unknown' if listeners is None else 'listener' if port in listeners else 'connection'
            result[port] = {'state': 'in_use', 'held_by': held_by, 'seen': [], 'error': str(exc)}
            held.append(port)
        else:
            result[port] = {'state': 'error', 'seen': [], 'error': str(exc)}
    wanted = set(peers)
    try:
        while sockets or held:
            # A port held by someone else keeps the listener to its window: it may be let go.
            if not held and all(wanted <= set(result[p]['seen']) for p in sockets.values()):
                break
            left = deadline - clock()
            if left <= 0 or (stopped is not None and stopped()):
                break
            for port in list(held):
                if bind(port)[0] is not None:
                    held.remove(port)
                    result[port] = {'state': 'listening', 'seen': [], 'taken_over': True}
            readable = select.select(list(sockets), [], [], min(left, 0.1 if held else 0.5))[0]
            for sock in readable:
                try:
                    conn, peer = sock.accept()
                except (OSError, socket.error):
                    continue
                # The connector reads this node's clock off the connection (see connect_once).
                try:
                    conn.sendall(('%.6f\n' % clock()).encode('ascii'))
                except (OSError, socket.error):
                    pass
                conn.close()
                seen = result[sockets[sock]]['seen']
                if peer[0] not in seen:
                    seen.append(peer[0])
    finally:
        for sock in sockets:
            sock.close()
    return result


def _peer_clock(sock, clock, sent_at, wait=1.0):
    """The peer's clock minus ours, from the time its doctor listener sends on accept; the transfer
    is taken as half the time from the connect to the read. None from another listener."""
    sock.settimeout(wait)
    data = b''
    try:
        while not data.endswith(b'\n') and len(data) < 64:
            chunk = sock.recv(64)
            if not chunk:
                break
            data += chunk
    except (OSError, socket.error):
        return None
    received_at = clock()
    try:
        theirs = float(data.decode('ascii').strip())
    except (UnicodeDecodeError, ValueError):
        return None
    return round(theirs - (sent_at + received_at) / 2.0, 4)


def connect_once(address, port, deadline, clock=time.time, pause=0.2):
    """Connect until it works or ``deadline``; a refusal is retried (the peer's listener may not be
    bound yet). Returns (ok, error text, the peer's clock offset or None)."""
    error = 'not tried'
    while True:
        left = deadline - clock()
        if left <= 0:
            return False, error, None
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.settimeout(left)
        try:
            sent_at = clock()
            sock.connect((address, int(port)))
            return True, '', _peer_clock(sock, clock, sent_at, min(1.0, max(0.1, deadline - clock())))
        except socket.timeout:
            return False, 'timed out (no answer: dropped by a firewall?)', None
        except (OSError, socket.error) as exc:
            code = getattr(exc, 'errno', None)
            error = {errno.ECONNREFUSED: 'refused (nothing listens, or a firewall rejects)',
                     errno.EHOSTUNREACH: 'host unreachable',
                     errno.ENETUNREACH: 'network unreachable'}.get(code, str(exc))
        finally:
            sock.close()
        time.sleep(min(pause, max(0.0, deadline - clock())))


def connect_all(targets, timeout, clock=time.time):
    """Connect to every {host, address, port} in parallel, each within ``timeout`` seconds."""
    deadline = clock() + float(timeout)
    results = [None] * len(targets)

    def run(index, target):
        ok, error, offset = connect_once(target['address'], target['port'], deadline, clock)
        results[index] = {'host': target['host'], 'address': target['address'], 'port': int(target['port']),
                          'ok': ok, 'error': error, 'clock_offset_s': offset}

    threads = [threading.Thread(target=run, args=(i, t)) for i, t in enumerate(targets)]
    for thread in threads:
        thread.daemon = True
        thread.start()
    for thread in threads:
        thread.join(max(0.0, deadline - clock()) + 1.0)
    return [r if r is not None else {'host': t['host'], 'address': t['address'], 'port': int(t['port']),
                                     'ok': False, 'error': 'timed out', 'clock_offset_s': None}
            for r, t in zip(results, targets)]


def sshd_command(sshd, port, host_key, authorized_keys):
    """A one-connection sshd (``-d`` serves one client, then exits) with a deployment group's host
    key and authorized_keys, letting root in with a key only and running nothing but /bin/true."""
    return [sshd, '-d', '-e', '-f', '/dev/null', '-p', str(int(port)), '-h', host_key,
            '-o', 'AuthorizedKeysFile=%s' % authorized_keys,
            # authorized_keys belongs to the container user, not to root.
            '-o', 'StrictModes=no',
            '-o', 'PermitRootLogin=prohibit-password', '-o', 'AllowUsers=root',
            '-o', 'PasswordAuthentication=no', '-o', 'KbdInteractiveAuthentication=no',
            # Without PAM, sshd refuses a root whose password is locked (the usual case).
            '-o', 'UsePAM=yes', '-o', 'PidFile=none', '-o', 'ForceCommand=/bin/true']


@contextlib.contextmanager
def root_only_copy(path):
    """A 0600 copy of a key for root's own OpenSSH, removed afterwards.

    The mesh keys belong to root and the secrets group (0440/0640) so that only the containers
    read them through the group; OpenSSH refuses a key its owner (root here) shares with a group.
    """
    handle, copy = tempfile.mkstemp(prefix='nimstack-doctor-key-')
    try:
        os.close(handle)
        shutil.copyfile(path, copy)
        os.chmod(copy, 0o600)
        yield copy
    finally:
        os.unlink(copy)


def ssh_command(address, port, key, known_hosts, alias_port, timeout):
    """ssh to ``address``:``port`` with a group's key, checking the host key pinned for
    ``[address]:alias_port`` (the container sshd's port) in the group's known_hosts."""
    return ['ssh', '-F', '/dev/null', '-i', key, '-o', 'IdentitiesOnly=yes',
            '-o', 'UserKnownHostsFile=%s' % known_hosts, '-o', 'GlobalKnownHostsFile=/dev/null',
            '-o', 'StrictHostKeyChecking=yes', '-o', 'HostKeyAlias=[%s]:%d' % (address, int(alias_port)),
            '-o', 'BatchMode=yes', '-o', 'ConnectTimeout=%d' % max(1, int(timeout)),
            '-o', 'ConnectionAttempts=3', '-p', str(int(port)), 'root@%s' % address, 'true']


def spawn(argv):
    """Start ``argv`` in the background, detached from our stdio (run_command would wait for it)."""
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run_bounded(argv, timeout):
    """(rc, last line of stderr) of ``argv``, killed after ``timeout`` seconds (rc None)."""
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    except OSError as exc:
        return None, str(exc)
    timer = threading.Timer(float(timeout), proc.kill)
    timer.start()
    try:
        err = proc.communicate()[1]
    finally:
        timer.cancel()
    lines = [line for line in err.decode('utf-8', 'replace').splitlines() if line.strip()]
    if proc.returncode < 0:
        return None, 'no answer within %ss' % timeout
    return proc.returncode, lines[-1] if lines else ''


def write_token(path, token):
    """Write ``token`` to ``path``; (ok, error)."""
    try:
        with open(path, 'w') as handle:
            handle.write(token + '\n')
        return True, ''
    except (IOError, OSError) as exc:
        return False, str(exc)


def read_token(path, token):
    """Whether ``path`` holds ``token``; (ok, error)."""
    try:
        with open(path) as handle:
            content = handle.read().strip()
    except (IOError, OSError) as exc:
        if getattr(exc, 'errno', None) == errno.ENOENT:
            return False, 'the file is not there: this cache is not the one the leader wrote to'
        return False, str(exc)
    if content != token:
        return False, 'the file holds other content than the leader wrote'
    return True, ''


def run_all(commands, timeout):
    """run_bounded every command at once; [(rc, error)] in order."""
    outcomes = [(None, 'not run')] * len(commands)

    def run(index, argv):
        outcomes[index] = run_bounded(argv, timeout)

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(commands)]
    for thread in threads:
        thread.daemon = True
        thread.start()
    for thread in threads:
        thread.join(float(timeout) + 2.0)
    return outcomes
