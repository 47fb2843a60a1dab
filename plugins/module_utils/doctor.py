# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The preflight doctor's verdicts: what each host reported, judged against the plan.

Pure functions, no Ansible imports. ``evaluate`` turns the planned groups and the facts every
host gathered (GPUs, RDMA ports, limits, clock, TCP connects, the deployment key, the shared
cache) into a flat list of checks, each one a dict:

    {check, group, host, status (pass|fail|skip|warn), expected, found, fix}

Every check is judged, whatever the others found; ``build_report`` sums them up and
``render_markdown`` writes the ticket-ready table.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import collections
import re

# Network profiles of nim_env whose ranks talk over RDMA (docs/contracts.md, network profiles).
RDMA_PROFILES = ('ib', 'roce', 'azure_ib', 'oci_rdma')

# Ray's documented default ports besides the GCS (--port): dashboard 8265, Ray client 10001,
# dashboard agent 52365 and both ends of the worker port range 10002-19999 (ray start --help).
RAY_PORT_SAMPLE = (8265, 10001, 10002, 19999, 52365)

GIB = 1024 ** 3

CHECK_ORDER = ('plan', 'reachable', 'probe', 'gpu', 'rdma', 'memlock', 'shm', 'disk', 'clock_skew', 'clock_sync',
               'port', 'mesh_key', 'ssh_key', 'shared_cache', 'nccl')

# nccl-tests ends every run with PRINT("# Avg bus bandwidth    : %g %s\n", ...) (src/common.cu;
# older releases print it without the '#').
_BUSBW_RE = re.compile(r'^#?\s*Avg bus bandwidth\s*:\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)', re.MULTILINE)


class DoctorError(Exception):
    """The inputs of the doctor itself are wrong (not a finding about the cluster)."""


def port_sample(low, high, count):
    """``count`` ports spread evenly over [low, high], both ends included, ascending."""
    low, high, count = int(low), int(high), int(count)
    if not 1 <= low <= high <= 65535:
        raise DoctorError('port range %d-%d: must be 1-65535, low <= high' % (low, high))
    if count <= 0:
        return []
    if count == 1 or low == high:
        return [low]
    step = (high - low) / float(count - 1)
    return sorted(set(int(round(low + i * step)) for i in range(count)))


def _launch(group):
    # How the group starts (nim_plan's launch); none for a group the planner rejected.
    return group.get('launch') or {}


def group_ports(group, port_range, sample, ray_ports=RAY_PORT_SAMPLE):
    """The TCP ports every member of a group must reach on every other member.

    The launch contract's own ports (the plan's ``ports``: api plus ssh, ray or master), Ray's
    other documented ports where the group's launch names them (``launch.port_sets``: ray), and a
    sample of the range the MPI/NCCL ranks open ephemeral ports in. Returns [{port, purpose}]
    sorted by port.
    """
    wanted = collections.OrderedDict()
    for name, port in sorted((group.get('ports') or {}).items()):
        if port not in (None, ''):
            wanted.setdefault(int(port), '%s port' % name)
    if 'ray' in _launch(group).get('port_sets', ()):
        for port in ray_ports:
            wanted.setdefault(int(port), 'Ray default port')
    if port_range:
        for port in port_sample(port_range[0], port_range[1], sample):
            wanted.setdefault(port, 'MPI/NCCL range %d-%d' % (int(port_range[0]), int(port_range[1])))
    return [{'port': port, 'purpose': wanted[port]} for port in sorted(wanted)]


def _result(check, group, host, status, expected='', found='', fix=''):
    return {'check': check, 'group': group, 'host': host, 'status': status,
            'expected': expected, 'found': found, 'fix': fix}


def _pending(check, group, expected, found):
    """A skip because preparation (prepare_hosts.yml) has not installed what the check needs yet."""
    result = _result(check, group, '-', 'skip', expected, found)
    result['pending'] = True
    return result


def _majority(values, leader_value):
    """The most common value; a tie goes to the leader's."""
    counts = collections.Counter(values)
    if not counts:
        return None
    best = max(counts.values())
    if counts.get(leader_value) == best:
        return leader_value
    return sorted((v for v in counts if counts[v] == best), key=str)[0]


def _gib(value):
    return '%.2f GiB' % (value / float(GIB))


def _members(group):
    return list(group.get('hosts') or [])


def _leader(group):
    leader = group.get('leader') or {}
    return leader.get('host') or (_members(group) + [None])[0]


def _address(group, host):
    for rank in group.get('ranks') or []:
        if rank.get('host') == host:
            return rank.get('address') or host
    return host


def _check_plan(group):
    name = group.get('name')
    out = [_result('plan', name, '-', 'fail', 'the planner accepts the layout', error,
                   'fix the variable the message names (group_vars of the group)')
           for error in group.get('errors') or []]
    out.extend(_result('plan', name, '-', 'warn', 'no planner warning', warning, '')
               for warning in group.get('warnings') or [])
    if not out:
        out.append(_result('plan', name, '-', 'pass', 'the planner accepts the layout', 'valid'))
    return out


def _check_gpu(group, facts, options):
    name = group.get('name')
    hosts = [h for h in _members(group) if h in facts]
    settings = group.get('settings') or {}
    layout = group.get('layout') or {}
    want_count = layout.get('gpus_per_node') or settings.get('nim_gpus_per_node') or settings.get('nim_tensor_parallel')
    inventories = dict((h, facts[h].get('gpu') or {}) for h in hosts)
    with_gpus = [h for h in hosts if inventories[h].get('count')]
    if not with_gpus:
        reasons = sorted(set(inventories[h].get('reason') or 'no GPU listed' for h in hosts))
        prepared = any((facts[h].get('probe') or {}).get('docker_installed') for h in hosts)
        if options.get('require_gpus') and not prepared:
            return [_pending('gpu', name, 'same GPU model, count and driver on every node',
                             'skipped: no GPU yet and the nodes are not prepared (no Docker engine); '
                             'prepare_hosts.yml installs the driver and deploy_docker.yml runs the doctor again '
                             '(%s)' % '; '.join(reasons))]
        if options.get('require_gpus'):
            return [_result('gpu', name, h, 'fail', '%s GPU(s) per node' % want_count,
                            'no GPU: %s' % (inventories[h].get('reason') or 'nvidia-smi listed none'),
                            'install the NVIDIA driver (role nvidia_driver) or set doctor_require_gpus=false '
                            'for hosts without GPUs') for h in hosts]
        return [_result('gpu', name, '-', 'skip', 'same GPU model, count and driver on every node',
                        'skipped: no GPU on any node of the group (%s)' % '; '.join(reasons),
                        'GPUs are not required here (doctor_require_gpus=false)')]
    leader = _leader(group)

    def signature(host):
        inv = inventories[host]
        return (tuple(inv.get('models') or []), inv.get('count') or 0, inv.get('driver_version'))

    # The nodes agree with the group's most common inventory; that one needs the plan's GPUs per node.
    expected = _majority([signature(h) for h in hosts], signature(leader) if leader in inventories else None)
    want_count = int(want_count) if want_count else 0
    out = []
    for host in hosts:
        models, count, driver = signature(host)
        problems = []
        if models != expected[0]:
            problems.append('model %s' % (', '.join(models) or 'none'))
        if count != expected[1]:
            problems.append('%d GPU(s)' % count)
        elif count < want_count:
            problems.append('%d GPU(s), fewer than the plan\'s %d per node' % (count, want_count))
        if driver != expected[2]:
            problems.append('driver %s' % driver)
        want = '%s x %d (at least %d), driver %s' % (
            ', '.join(expected[0]) or '?', expected[1], want_count, expected[2])
        if problems:
            reason = inventories[host].get('reason')
            out.append(_result('gpu', name, host, 'fail', want,
                               ', '.join(problems) + (' (%s)' % reason if reason else ''),
                               'give every node of the group the same GPUs and driver (role nvidia_driver pins '
                               'the driver), or nim_gpus_per_node to what the nodes have'))
        else:
            out.append(_result('gpu', name, host, 'pass', want, '%s x %d, driver %s' % (', '.join(models), count, driver)))
    return out


def _active_rates(rdma):
    rates = []
    for device in rdma.get('devices') or []:
        for port in device.get('ports') or []:
            if port.get('state') == 'ACTIVE':
                rates.append(port.get('rate_gbps'))
    return rates


def _check_rdma(group, facts):
    name = group.get('name')
    profile = (group.get('settings') or {}).get('nim_network_profile') or 'tcp'
    if profile not in RDMA_PROFILES:
        return [_result('rdma', name, '-', 'skip', 'RDMA ports ACTIVE at one rate',
                        'skipped: network profile %s needs no RDMA' % profile)]
    hosts = [h for h in _members(group) if h in facts]
    rates = dict((h, _active_rates(facts[h].get('rdma') or {})) for h in hosts)
    leader = _leader(group)
    all_rates = [r for h in hosts for r in rates[h]]
    expected = _majority(all_rates, (rates.get(leader) or [None])[0])
    out = []
    for host in hosts:
        rdma = facts[host].get('rdma') or {}
        if not rates[host]:
            out.append(_result('rdma', name, host, 'fail', 'at least one ACTIVE RDMA port (profile %s)' % profile,
                               rdma.get('reason') or 'no port is ACTIVE',
                               'bring the HCA ports up (cabling, subnet manager, role rdma)'))
            continue
        slow = sorted(set(str(r) for r in rates[host] if r != expected))
        if slow:
            out.append(_result('rdma', name, host, 'fail', 'every ACTIVE port at %s Gb/s' % expected,
                               'ports at %s Gb/s' % ', '.join(slow),
                               'a port trained at the wrong rate: check the cable, transceiver and switch port'))
        else:
            out.append(_result('rdma', name, host, 'pass', 'every ACTIVE port at %s Gb/s' % expected,
                               '%d ACTIVE port(s) at %s Gb/s' % (len(rates[host]), expected)))
    return out


def _limit_text(kb):
    return 'unlimited' if kb is None or kb < 0 else '%d KiB' % kb


def _check_memlock(group, facts, options):
    name = group.get('name')
    want = options.get('memlock_min_kb')
    out = []
    for host in [h for h in _members(group) if h in facts]:
        probe = facts[host].get('probe') or {}
        have = probe.get('memlock_kb')
        source = probe.get('memlock_source') or 'this session'
        if have is None:
            out.append(_result('memlock', name, host, 'skip', _limit_text(want), 'skipped: the limit could not be read'))
            continue
        ok = have < 0 or (want is not None and want >= 0 and have >= want)
        out.append(_result('memlock', name, host, 'pass' if ok else 'fail', _limit_text(want),
                           '%s (%s)' % (_limit_text(have), source),
                           'raise the memlock limit (LimitMEMLOCK=infinity for dockerd, /etc/security/limits.d); '
                           'RDMA pins memory'))
    return out


def _check_shm(group, facts, options):
    name = group.get('name')
    settings = group.get('settings') or {}
    want_gb = options.get('shm_min_gb')
    if want_gb in (None, ''):
        want_gb = settings.get('nim_shm_size_gb')
    if want_gb in (None, ''):
        return [_result('shm', name, '-', 'skip', '/dev/shm size', 'skipped: nim_shm_size_gb is not set')]
    want = float(want_gb) * GIB
    out = []
    for host in [h for h in _members(group) if h in facts]:
        have = (facts[host].get('probe') or {}).get('shm_bytes')
        if have is None:
            out.append(_result('shm', name, host, 'fail', '/dev/shm >= %s' % _gib(want), 'no /dev/shm',
                               'mount a tmpfs on /dev/shm'))
            continue
        out.append(_result('shm', name, host, 'pass' if have >= want else 'fail', '/dev/shm >= %s' % _gib(want),
                           _gib(have), 'grow /dev/shm (the containers share the host IPC namespace), e.g. '
                           'mount -o remount,size=%dG /dev/shm and in /etc/fstab' % int(-(-want // GIB))))
    return out


def model_bytes(group):
    """Bytes the model's weights take in the cache, from the planner's layout (None when unknown)."""
    layout = group.get('layout') or {}
    model = layout.get('model') or {}
    params_b = model.get('params_b')
    per_param = layout.get('bytes_per_param')
    if params_b is None or per_param is None:
        return None
    return float(params_b) * 1e9 * float(per_param)


def _check_disk(group, facts, options):
    name = group.get('name')
    weights = model_bytes(group)
    if weights is None:
        return [_result('disk', name, '-', 'skip', 'free space for the model on the cache path',
                        'skipped: the plan does not know the model size')]
    want = weights * float(options.get('disk_margin') or 1.0)
    out = []
    for host in [h for h in _members(group) if h in facts]:
        probe = facts[host].get('probe') or {}
        have = probe.get('cache_free_bytes')
        where = probe.get('cache_fs_path') or probe.get('cache_path') or '?'
        if have is None:
            out.append(_result('disk', name, host, 'fail', '%s free for the model' % _gib(want),
                               'cannot read free space at %s' % where, 'create nim_cache_path'))
            continue
        out.append(_result('disk', name, host, 'pass' if have >= want else 'fail',
                           '%s free at the cache path (weights %s x margin %s)' % (
                               _gib(want), _gib(weights), options.get('disk_margin')),
                           '%s free at %s' % (_gib(have), where),
                           'free space on or grow the file system of nim_cache_path'))
    return out


def _median(values):
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2.0


def clock_offsets(group, facts):
    """Each node's clock minus the leader's, as the leader measured it on its TCP connects (the
    doctor's listener sends its clock on accept); the leader itself is 0. None where unknown."""
    leader = _leader(group)
    measured = collections.defaultdict(list)
    for attempt in (facts.get(leader) or {}).get('connect') or []:
        if attempt.get('clock_offset_s') is not None:
            measured[attempt.get('host')].append(float(attempt['clock_offset_s']))
    offsets = {}
    for host in _members(group):
        if host == leader:
            offsets[host] = 0.0 if leader in facts else None
        else:
            offsets[host] = _median(measured[host]) if measured.get(host) else None
    return offsets


def _check_clock(group, facts, options):
    name = group.get('name')
    hosts = [h for h in _members(group) if h in facts]
    offsets = clock_offsets(group, facts)
    known = [offsets[h] for h in hosts if offsets.get(h) is not None]
    limit = float(options.get('clock_skew_max_s') or 0)
    out = []
    middle = _median(known) if known else 0.0
    for host in hosts:
        offset = offsets.get(host)
        if offset is None:
            out.append(_result('clock_skew', name, host, 'skip', 'clock within %gs of the group' % limit,
                               'skipped: no clock reading from %s (its doctor port was not reached)' % host))
            continue
        skew = offset - middle
        out.append(_result('clock_skew', name, host, 'pass' if abs(skew) <= limit else 'fail',
                           'clock within %gs of the group' % limit, '%+.3fs from the group median' % skew,
                           'synchronise the clock (chrony or systemd-timesyncd against the same NTP servers)'))
    for host in hosts:
        synced = (facts[host].get('probe') or {}).get('clock_synced')
        if synced is None:
            status, found = 'skip', 'skipped: the kernel sync state could not be read'
        elif synced or not options.get('clock_require_sync'):
            status, found = ('pass' if synced else 'skip',
                             'synchronised' if synced else 'skipped: not synchronised, not required '
                                                           '(doctor_clock_require_sync=false)')
        else:
            status, found = 'fail', 'the kernel reports the clock unsynchronised'
        out.append(_result('clock_sync', name, host, status, 'clock synchronised by NTP', found,
                           'enable chrony or systemd-timesyncd'))
    return out


def _check_ports(group, facts, ports):
    """One result per (target host, port): who could not connect, how, from where."""
    name = group.get('name')
    hosts = [h for h in _members(group) if h in facts]
    if len(hosts) < 2:
        return [_result('port', name, '-', 'skip', 'every node reaches every other node',
                        'skipped: fewer than two reachable nodes in the group')]
    purposes = dict((p['port'], p['purpose']) for p in ports)
    failures = collections.OrderedDict()
    seen = set()
    for source in hosts:
        for attempt in facts[source].get('connect') or []:
            key = (attempt.get('host'), int(attempt.get('port')))
            seen.add((source,) + key)
            if not attempt.get('ok'):
                failures.setdefault(key, []).append('%s: %s' % (source, attempt.get('error') or 'failed'))
    out = []
    for target in hosts:
        for port in sorted(purposes):
            sources = [h for h in hosts if h != target]
            missing = [s for s in sources if (s, target, port) not in seen]
            key = (target, port)
            expected = 'TCP %d (%s) reachable from %s' % (port, purposes[port], ', '.join(sources))
            listener = (facts[target].get('listeners') or {}).get(str(port)) or {}
            if key in failures and listener.get('state') == 'in_use' and listener.get('held_by') == 'connection':
                # An outgoing connection of the target had this port as its local end all along:
                # no listener could bind it, so the refusals say nothing about the path.
                out.append(_result('port', name, target, 'skip', expected,
                                   'skipped: TCP %d on %s was the local end of one of its outgoing connections '
                                   'throughout the check (a port of the ephemeral range), so nothing could listen '
                                   'on it: run the doctor again to test it' % (port, target)))
            elif key in failures or missing:
                found = failures.get(key, []) + ['%s: not tested (the probe did not run)' % s for s in missing]
                out.append(_result('port', name, target, 'fail', expected, '; '.join(found),
                                   'open TCP %d on %s for the group\'s nodes (host firewall, security group, '
                                   'switch ACL)' % (port, target)))
            else:
                out.append(_result('port', name, target, 'pass', expected,
                                   'TCP %d (%s) connected from every other node' % (port, purposes[port])))
    return out


def _check_mesh(group, facts):
    name = group.get('name')
    if not _launch(group).get('ssh_mesh'):
        return [_result('mesh_key', name, '-', 'skip', 'the deployment key on every node',
                        'skipped: launch contract %s uses no SSH' % group.get('contract'))]
    hosts = [h for h in _members(group) if h in facts]
    mesh = dict((h, (facts[h].get('probe') or {}).get('mesh') or {}) for h in hosts)
    if not any(m.get('present') for m in mesh.values()):
        return [_pending('mesh_key', name, 'the deployment key on every node',
                         'skipped: the SSH mesh is not set up yet (playbooks/prepare_hosts.yml, role ssh_mesh)')]
    leader = _leader(group)
    expected = _majority([m.get('key_fingerprint') for m in mesh.values() if m.get('key_fingerprint')],
                         mesh.get(leader, {}).get('key_fingerprint'))
    fix = 'rerun playbooks/prepare_hosts.yml --tags ssh_mesh (it distributes the group\'s key)'
    out = []
    for host in hosts:
        m = mesh[host]
        problems = []
        if not m.get('present'):
            problems.append('no mesh directory %s' % m.get('dir'))
        else:
            problems.extend('%s missing' % f for f in m.get('missing') or [])
            if m.get('key_fingerprint') and m.get('key_fingerprint') != expected:
                problems.append('another deployment key (%s)' % m.get('key_fingerprint'))
            if expected and m.get('authorized') and expected not in m.get('authorized'):
                problems.append('authorized_keys does not authorize the group key')
            if m.get('error'):
                problems.append(m['error'])
        out.append(_result('mesh_key', name, host, 'fail' if problems else 'pass',
                           'the group key %s in private.key and authorized_keys' % expected,
                           '; '.join(problems) or 'present', fix))
    return out


def _check_ssh(group, facts):
    name = group.get('name')
    if not _launch(group).get('ssh_mesh'):
        return [_result('ssh_key', name, '-', 'skip', 'the leader logs in to every worker with the key',
                        'skipped: launch contract %s uses no SSH' % group.get('contract'))]
    leader = _leader(group)
    workers = [h for h in _members(group) if h != leader]
    if leader not in facts:
        return [_result('ssh_key', name, leader, 'fail', 'the leader logs in to every worker with the key',
                        'the leader did not report', 'see the reachable check')]
    attempts = facts[leader].get('ssh')
    if attempts is None:
        reason = facts[leader].get('ssh_skipped') or 'the SSH mesh is not set up yet (playbooks/prepare_hosts.yml)'
        return [_pending('ssh_key', name, 'the leader logs in to every worker with the key', 'skipped: %s' % reason)]
    by_host = dict((a.get('host'), a) for a in attempts)
    out = []
    for worker in workers:
        attempt = by_host.get(worker)
        expected = 'ssh from %s to %s with the deployment key and pinned host key' % (leader, worker)
        if attempt is None:
            out.append(_result('ssh_key', name, worker, 'fail', expected, 'not tried (worker did not report)',
                               'see the reachable check'))
        elif attempt.get('ok'):
            out.append(_result('ssh_key', name, worker, 'pass', expected, 'accepted'))
        else:
            out.append(_result('ssh_key', name, worker, 'fail', expected, attempt.get('error') or 'refused',
                               'rerun playbooks/prepare_hosts.yml --tags ssh_mesh; check authorized_keys '
                               '(from= addresses) and known_hosts in the group\'s mesh directory on %s' % worker))
    return out


def _check_cache(group, facts):
    name = group.get('name')
    leader = _leader(group)
    written = (facts.get(leader) or {}).get('cache_write')
    path = (group.get('settings') or {}).get('nim_cache_path') or '?'
    if leader in facts and not ((facts[leader].get('probe') or {}).get('cache_exists')):
        return [_pending('shared_cache', name, 'a file written on the leader\'s cache is visible on all',
                         'skipped: nim_cache_path %s does not exist on %s yet (role nfs creates and mounts it)'
                         % (path, leader))]
    if not written or not written.get('ok'):
        reason = (written or {}).get('error') or 'the leader did not write the test file'
        return [_result('shared_cache', name, leader, 'fail', 'a file written on %s:%s' % (leader, path), reason,
                        'create nim_cache_path on the shared file system (role nfs)')]
    out = []
    for host in [h for h in _members(group) if h != leader and h in facts]:
        seen = facts[host].get('cache_read') or {}
        expected = 'the file %s written on %s is visible' % (written.get('path'), leader)
        if seen.get('ok'):
            out.append(_result('shared_cache', name, host, 'pass', expected, 'visible, same content'))
        else:
            out.append(_result('shared_cache', name, host, 'fail', expected, seen.get('error') or 'not visible',
                               'mount the shared cache at %s on %s (role nfs); a local directory there is not '
                               'shared' % (path, host)))
    return out


def _payload(result, key):
    """(payload, error) of a registered module result: its ``key``, or why it is missing."""
    if not result or result.get('skipped'):
        return None, None
    if key in result:
        return result[key], None
    return None, result.get('msg') or 'failed without a message'


def normalize_host(raw):
    """A host's registered results, as the doctor role collects them -> the facts ``evaluate`` reads.

    ``raw`` is {gpu, rdma, probe, peers, ssh_skipped}: the registered results of nvidia_gpu_facts,
    rdma_facts, nim_doctor_probe and nim_doctor_peers (state=check). A probe that failed leaves its
    message in ``errors`` (and a GPU inventory of none, with the reason).
    """
    raw = dict(raw or {})
    errors = []
    gpu_facts, error = _payload(raw.get('gpu'), 'ansible_facts')
    gpu = (gpu_facts or {}).get('nvidia_gpu')
    if error:
        errors.append('nvidia_gpu_facts: %s' % error)
        gpu = {'count': 0, 'models': [], 'driver_version': None, 'reason': 'nvidia_gpu_facts failed: %s' % error}
    rdma_facts, error = _payload(raw.get('rdma'), 'ansible_facts')
    if error:
        errors.append('rdma_facts: %s' % error)
    probe, error = _payload(raw.get('probe'), 'probe')
    if error:
        errors.append('nim_doctor_probe: %s' % error)
    peers = raw.get('peers') or {}
    error = _payload(peers, 'connects')[1]
    if error:
        errors.append('nim_doctor_peers: %s' % error)
    probe = probe or {}
    return {
        'gpu': gpu,
        'rdma': (rdma_facts or {}).get('rdma'),
        'probe': probe,
        'connect': peers.get('connects'),
        'listeners': (raw.get('listeners') or {}).get('listeners') or {},
        'ssh': peers.get('ssh'),
        'ssh_skipped': raw.get('ssh_skipped') or None,
        'cache_write': probe.get('cache_write'),
        'cache_read': peers.get('cache_read'),
        'nccl': raw.get('nccl'),
        'errors': errors,
    }


def parse_busbw(text):
    """The average bus bandwidth in GB/s an nccl-tests binary (all_reduce_perf) printed, or None."""
    match = _BUSBW_RE.search(text or '')
    return float(match.group(1)) if match else None


def _check_nccl(group, facts, options):
    name = group.get('name')
    expected_text = 'all_reduce_perf bus bandwidth'
    if not options.get('nccl_test'):
        return [_result('nccl', name, '-', 'skip', expected_text, 'skipped: not requested (doctor_nccl_test=false)')]
    hosts = [h for h in _members(group) if h in facts]
    without = [h for h in hosts if not (facts[h].get('gpu') or {}).get('count')]
    if without:
        return [_result('nccl', name, '-', 'skip', expected_text,
                        'skipped: no GPU on %s, so there is nothing for NCCL to measure' % ', '.join(without))]
    leader = _leader(group)
    run = (facts.get(leader) or {}).get('nccl')
    if not run or run.get('skipped'):
        return [_result('nccl', name, leader, 'skip', expected_text, 'skipped: the test did not run on the leader')]
    gbps = (group.get('layout') or {}).get('interconnect_gbps')
    fraction = float(options.get('nccl_min_fraction') or 0)
    want = gbps * fraction if gbps else None
    expected = ('at least %.1f GB/s (%g x %s GB/s of nim_interconnect %s)'
                % (want, fraction, gbps, (group.get('layout') or {}).get('interconnect')) if want else expected_text)
    measured = parse_busbw(run.get('stdout'))
    if run.get('rc') != 0 or measured is None:
        tail = [line for line in ((run.get('stderr') or '') + '\n' + (run.get('stdout') or '')).splitlines()
                if line.strip()]
        return [_result('nccl', name, leader, 'fail', expected,
                        'the test failed (rc %s): %s' % (run.get('rc'), (tail[-1] if tail else run.get('msg') or '')),
                        'run doctor_nccl_test_command by hand on %s; it must print nccl-tests output' % leader)]
    if want is None:
        return [_result('nccl', name, leader, 'pass', expected_text,
                        '%.2f GB/s (no expectation: set nim_interconnect)' % measured)]
    return [_result('nccl', name, leader, 'pass' if measured >= want else 'fail', expected, '%.2f GB/s' % measured,
                    'check the fabric (NCCL_DEBUG=INFO shows the transport: a fall-back to sockets, a port at the '
                    'wrong rate) and the network profile (nim_network_profile)')]


def evaluate(groups, facts, unreachable=None, options=None):
    """Judge every Docker group of the plan; return the flat list of check results."""
    options = dict(options or {})
    unreachable = dict(unreachable or {})
    out = []
    for group in groups or []:
        if group.get('mode', 'docker') != 'docker':
            continue
        name = group.get('name')
        out.extend(_check_plan(group))
        for host in _members(group):
            if host in unreachable or host not in facts:
                out.append(_result('reachable', name, host, 'fail', 'the host answers the doctor',
                                   unreachable.get(host) or 'no facts from the host',
                                   'bring the host up and reachable over SSH from the controller'))
            else:
                out.append(_result('reachable', name, host, 'pass', 'the host answers the doctor', 'answered'))
                for error in facts[host].get('errors') or []:
                    out.append(_result('probe', name, host, 'fail', 'every probe of the doctor runs', error,
                                       'fix what the message names on %s (a hanging or broken tool, a timeout: '
                                       'doctor_task_timeout)' % host))
        if not group.get('valid', True) or not group.get('ranks'):
            continue
        ports = group_ports(group, options.get('port_range'), options.get('port_sample') or 0,
                            options.get('ray_ports') or RAY_PORT_SAMPLE)
        out.extend(_check_gpu(group, facts, options))
        out.extend(_check_rdma(group, facts))
        out.extend(_check_memlock(group, facts, options))
        out.extend(_check_shm(group, facts, options))
        out.extend(_check_disk(group, facts, options))
        out.extend(_check_clock(group, facts, options))
        out.extend(_check_ports(group, facts, ports))
        out.extend(_check_mesh(group, facts))
        out.extend(_check_ssh(group, facts))
        out.extend(_check_cache(group, facts))
        out.extend(_check_nccl(group, facts, options))
    return out


def build_report(results, generated=None):
    """Summary plus the results, failures first in check order."""
    order = dict((c, i) for i, c in enumerate(CHECK_ORDER))
    counts = collections.Counter(r['status'] for r in results)
    failures = [r for r in results if r['status'] == 'fail']
    failures.sort(key=lambda r: (order.get(r['check'], len(order)), str(r['group']), str(r['host'])))
    return {
        'ok': not failures,
        'generated': generated,
        'summary': dict((s, counts.get(s, 0)) for s in ('pass', 'fail', 'skip', 'warn')),
        # Checks that wait for prepare_hosts.yml: a later preflight of the same run repeats the doctor.
        'pending': ['%s [%s]' % (r['check'], r['group']) for r in results if r.get('pending')],
        'failures': failures,
        'checks': results,
    }


def _cell(value):
    return str(value).replace('|', '\\|').replace('\n', ' ')


def render_markdown(report):
    """The report as Markdown for a ticket: failures with their fix, then skips, warnings, passes."""
    s = report['summary']
    lines = ['# nimstack preflight doctor', '',
             '%s: %d failed, %d passed, %d skipped, %d warnings%s.' % (
                 'FAILED' if report['failures'] else 'PASSED', s['fail'], s['pass'], s['skip'], s['warn'],
                 ' (%s)' % report['generated'] if report.get('generated') else ''), '']
    sections = (
        ('Failures', list(report['failures']), ('check', 'group', 'host', 'expected', 'found', 'fix')),
        ('Warnings', [r for r in report['checks'] if r['status'] == 'warn'], ('check', 'group', 'found')),
        ('Skipped', [r for r in report['checks'] if r['status'] == 'skip'], ('check', 'group', 'host', 'found')),
        ('Passed', [r for r in report['checks'] if r['status'] == 'pass'], ('check', 'group', 'host', 'found')),
    )
    for title, rows, columns in sections:
        if not rows:
            continue
        lines.extend(['## %s' % title, '', '| %s |' % ' | '.join(columns),
                      '|' + '---|' * len(columns)])
        lines.extend('| %s |' % ' | '.join(_cell(r[c]) for c in columns) for r in rows)
        lines.append('')
    return '\n'.join(lines)


def summary_lines(report):
    """One line per failure for the play's final message."""
    return ['%s [%s] %s: expected %s; found %s; fix: %s' % (
        r['check'], r['group'], r['host'], r['expected'], r['found'], r['fix']) for r in report['failures']]
