# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: nim_doctor_peers
short_description: Prove between the nodes of a deployment group that they reach each other, trust the key and share the cache
version_added: 0.2.0
description:
  - "The ports a group needs: the launch contract's (the plan's C(ports): api plus ssh, ray or
    master), under the V(ray) contract also Ray's documented default ports (O(ray_ports)), and a
    sample of O(port_sample) ports spread over O(port_range), where Open MPI and NCCL open their
    ephemeral ports."
  - With O(state=listen) the node listens on every one of them until every other member connected
    to each, or O(window) seconds passed. A port something already listens on (a running NIM
    container) is left to it and counts as reachable when the connects succeed; when its owner lets
    go of it within the window (a rank restarting), the listener takes it over and answers in its
    place, so that a group recovering from a dead rank is not refused for a port nobody held for
    a moment. The listener sends
    its clock on every connection it accepts, so the connecting node measures the offset between
    the two clocks within the round trip. With O(sshd) it
    also runs a one-connection C(sshd -d) with the group's host key and authorized_keys on
    O(sshd.port) for the same window. Run it with C(async) and C(poll=0) so that the next task
    finds it.
  - With O(state=check) the node connects to every other member on every port, all at once, each
    within O(timeout) seconds (a refusal is retried until then, as the listener may not be up yet);
    reads the leader's test file O(cache_file) from its own model cache when O(cache_token) is
    given; and with O(ssh) logs in to every other member's one-connection sshd with the group's key,
    checking the host key pinned in the group's known_hosts.
  - Changes nothing on the node.
author:
  - nimstack maintainers (@nimstack)
options:
  state:
    description:
      - V(listen) or V(check).
    type: str
    choices: [listen, check]
    required: true
  group:
    description:
      - This node's deployment group as M(nimstack.multinode.nim_plan) planned it (C(ranks), C(ports), C(contract)).
    type: dict
    required: true
  host:
    description:
      - This node's inventory name; every other rank of O(group) is a peer.
    type: str
    required: true
  port_range:
    description:
      - First and last port of the range the MPI/NCCL ranks use; empty for none.
    type: list
    elements: int
    default: [32768, 60999]
  port_sample:
    description:
      - How many ports of O(port_range) to test, both ends included.
    type: int
    default: 4
  ray_ports:
    description:
      - Ray's other ports tested under the V(ray) launch contract.
    type: list
    elements: int
    default: [8265, 10001, 10002, 19999, 52365]
  window:
    description:
      - With O(state=listen), the longest the listener and the sshd wait for the peers, in seconds.
    type: float
    default: 30
  stop_file:
    description:
      - With O(state=listen), the listener and the sshd also end as soon as this file exists, so that
        a node that never connects does not keep the ports past the doctor's run.
    type: path
  timeout:
    description:
      - With O(state=check), the time every connect and every SSH login may take, in seconds.
    type: float
    default: 5
  sshd:
    description:
      - With O(state=listen), the one-connection sshd to run; omit for none.
    type: dict
    suboptions:
      binary:
        description: Path of sshd.
        type: path
        required: true
      port:
        description: Port it listens on.
        type: int
        required: true
      host_key:
        description: The group's host key of this node.
        type: path
        required: true
      authorized_keys:
        description: The group's authorized_keys on this node.
        type: path
        required: true
  ssh:
    description:
      - With O(state=check), log in to every peer's one-connection sshd; omit for none.
    type: dict
    suboptions:
      key:
        description: The group's private key.
        type: path
        required: true
      known_hosts:
        description: The group's known_hosts.
        type: path
        required: true
      port:
        description: The port of the peers' one-connection sshd.
        type: int
        required: true
      alias_port:
        description: The port known_hosts pins the peers' host keys for (the container sshd's).
        type: int
        required: true
  cache_file:
    description:
      - With O(state=check), the leader's test file in the shared model cache.
    type: path
  cache_token:
    description:
      - What O(cache_file) must hold; omit on the leader.
    type: str
attributes:
  check_mode:
    support: full
    description: Listens, connects and logs in in check mode too; it changes nothing.
  diff_mode:
    support: none
    description: Nothing is changed.
  platform:
    support: full
    platforms: posix
    description: Needs IPv4 TCP sockets; O(sshd) and O(ssh) need OpenSSH.
extends_documentation_fragment:
  - nimstack.multinode.attributes
seealso:
  - module: nimstack.multinode.nim_doctor_probe
  - module: nimstack.multinode.nim_doctor_report
'''

EXAMPLES = r'''
- name: Listen on the group's ports while the others connect
  nimstack.multinode.nim_doctor_peers:
    state: listen
    group: "{{ my_group }}"
    host: "{{ inventory_hostname }}"
  async: 40
  poll: 0

- name: Connect to every other member on every port
  nimstack.multinode.nim_doctor_peers:
    state: check
    group: "{{ my_group }}"
    host: "{{ inventory_hostname }}"
    timeout: 5
  register: peers
'''

RETURN = r'''
ports:
  description: The ports tested, with why.
  returned: always
  type: list
  elements: dict
  sample: [{port: 2222, purpose: ssh port}, {port: 8000, purpose: api port}]
listeners:
  description: With O(state=listen), per port whether it was listened on (V(listening)), already in use (V(in_use)) or
    could not be bound (V(error)), and the peer addresses that connected; C(taken_over) is V(true) where the port was
    in use at first and taken over when its owner let go.
  returned: when state is listen
  type: dict
sshd:
  description: With O(state=listen) and O(sshd), the exit status of the sshd (V(null) when it was stopped at the
    end of the window).
  returned: when state is listen and sshd is given
  type: dict
connects:
  description: With O(state=check), one entry per peer and port.
  returned: when state is check
  type: list
  elements: dict
  contains:
    host:
      description: The peer's inventory name.
      type: str
    address:
      description: The address connected to.
      type: str
    port:
      description: The port.
      type: int
    ok:
      description: Whether the connect succeeded.
      type: bool
    error:
      description: Why it did not (timed out, refused).
      type: str
    clock_offset_s:
      description: The peer's clock minus this node's, in seconds, read off a connection to the peer's doctor listener
        (which sends its clock on accept); V(null) where another program holds the port.
      type: float
ssh:
  description: With O(state=check) and O(ssh), one entry per peer, C({host, ok, error}).
  returned: when state is check and ssh is given
  type: list
  elements: dict
cache_read:
  description: With O(state=check) and O(cache_token), C({ok, error}) of reading the leader's test file.
  returned: when state is check and cache_token is given
  type: dict
'''

import os
import socket
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.nimstack.multinode.plugins.module_utils import doctor
from ansible_collections.nimstack.multinode.plugins.module_utils import doctor_probe


def _resolve(address):
    try:
        return socket.gethostbyname(address)
    except (socket.error, UnicodeError):
        return address


def _listen(module, peers, numbers):
    p = module.params
    if p['sshd']:
        with doctor_probe.root_only_copy(p['sshd']['host_key']) as host_key:
            return _listen_with(module, peers, numbers, host_key)
    return _listen_with(module, peers, numbers, None)


def _listen_with(module, peers, numbers, host_key):
    p = module.params
    deadline = time.time() + p['window']
    stop_file = p['stop_file']

    def stopped():
        return bool(stop_file) and os.path.exists(stop_file)

    proc = None
    result = {}
    if p['sshd']:
        s = p['sshd']
        try:
            proc = doctor_probe.spawn(
                doctor_probe.sshd_command(s['binary'], s['port'], host_key, s['authorized_keys']))
        except OSError as exc:
            result['sshd'] = {'rc': None, 'error': str(exc)}
    listeners = doctor_probe.listen(numbers, [_resolve(r.get('address')) for r in peers], p['window'],
                                    stopped=stopped)
    result['listeners'] = dict((str(k), v) for k, v in listeners.items())
    if proc is not None:
        while proc.poll() is None and time.time() < deadline and not stopped():
            time.sleep(0.2)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
            error = ('stopped: nobody logged in before the checks ended' if stopped()
                     else 'nobody logged in within the window')
            result['sshd'] = {'rc': None, 'error': error}
        else:
            result['sshd'] = {'rc': proc.returncode, 'error': ''}
    return result


def _check(module, peers, numbers):
    p = module.params
    targets = [{'host': r.get('host'), 'address': r.get('address'), 'port': port} for r in peers for port in numbers]
    result = {'connects': doctor_probe.connect_all(targets, p['timeout'])}
    if p['ssh']:
        s = p['ssh']
        with doctor_probe.root_only_copy(s['key']) as key:
            commands = [doctor_probe.ssh_command(peer.get('address'), s['port'], key, s['known_hosts'],
                                                 s['alias_port'], p['timeout']) for peer in peers]
            outcomes = doctor_probe.run_all(commands, p['timeout'] * 3)
        result['ssh'] = [{'host': peer.get('host'), 'ok': rc == 0, 'error': '' if rc == 0 else error}
                         for peer, (rc, error) in zip(peers, outcomes)]
    if p['cache_token']:
        ok, error = doctor_probe.read_token(p['cache_file'], p['cache_token'])
        result['cache_read'] = {'ok': ok, 'error': error}
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type='str', choices=['listen', 'check'], required=True),
            group=dict(type='dict', required=True),
            host=dict(type='str', required=True),
            port_range=dict(type='list', elements='int', default=[32768, 60999]),
            port_sample=dict(type='int', default=4),
            ray_ports=dict(type='list', elements='int', default=list(doctor.RAY_PORT_SAMPLE)),
            window=dict(type='float', default=30),
            stop_file=dict(type='path'),
            timeout=dict(type='float', default=5),
            sshd=dict(type='dict', options=dict(
                binary=dict(type='path', required=True),
                port=dict(type='int', required=True),
                host_key=dict(type='path', required=True),
                authorized_keys=dict(type='path', required=True),
            )),
            ssh=dict(type='dict', options=dict(
                key=dict(type='path', required=True, no_log=False),
                known_hosts=dict(type='path', required=True),
                port=dict(type='int', required=True),
                alias_port=dict(type='int', required=True),
            )),
            cache_file=dict(type='path'),
            cache_token=dict(type='str', no_log=False),
        ),
        required_by={'cache_token': 'cache_file'},
        supports_check_mode=True,
    )
    p = module.params
    if p['port_range'] and len(p['port_range']) != 2:
        module.fail_json(msg='port_range=%s: give the first and the last port, or an empty list' % p['port_range'])
    try:
        ports = doctor.group_ports(p['group'], p['port_range'], p['port_sample'], p['ray_ports'])
    except doctor.DoctorError as exc:
        module.fail_json(msg='port_range: %s' % exc)
    peers = [r for r in p['group'].get('ranks') or [] if r.get('host') != p['host']]
    numbers = [entry['port'] for entry in ports]
    result = _listen(module, peers, numbers) if p['state'] == 'listen' else _check(module, peers, numbers)
    module.exit_json(changed=False, ports=ports, **result)


if __name__ == '__main__':
    main()
