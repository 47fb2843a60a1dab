# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: nim_doctor_report
short_description: Judge what every node reported against the plan and write the preflight doctor's report
version_added: 0.2.0
description:
  - Runs on the controller once the nodes of every Docker deployment group ran their probes (the
    role C(nimstack.multinode.doctor) collects them). Judges every check for every group and host,
    whatever the other checks found.
  - "Checks: C(plan) (the planner's errors and warnings), C(reachable), C(gpu) (same model, count and
    driver on every node, the count the plan wants), C(rdma) (ACTIVE ports at one rate, where the
    network profile needs RDMA), C(memlock), C(shm), C(disk) (free space for the model's weights on
    the cache path), C(clock_skew), C(clock_sync), C(port) (real TCP connects between every pair of
    nodes), C(mesh_key) (the group key on every node and authorized), C(ssh_key) (the leader logged
    in to every worker with it), C(shared_cache) (a file the leader wrote is visible on every node),
    C(nccl) (the bus bandwidth nccl-tests printed, against the interconnect, when requested)."
  - Each result is C({check, group, host, status, expected, found, fix}) with status V(pass),
    V(fail), V(skip) (with the reason in C(found)) or V(warn).
  - Writes the report as C(doctor-report.json) and C(doctor-report.md) to O(report_dir) and returns
    it; it does not fail on failed checks (the play does, after showing them).
  - Kubernetes groups are left out; their hosts are not contacted.
author:
  - nimstack maintainers (@nimstack)
options:
  groups:
    description:
      - The planned groups (C(nim_planned.groups)).
    type: list
    elements: dict
    required: true
  facts:
    description:
      - Per inventory host, the registered results the doctor role collected there (C(gpu) of
        M(nimstack.multinode.nvidia_gpu_facts), C(rdma) of M(nimstack.multinode.rdma_facts), C(probe) of
        M(nimstack.multinode.nim_doctor_probe), C(peers) of M(nimstack.multinode.nim_doctor_peers), C(nccl) of the
        NCCL test command). A probe that failed is reported as the check C(probe) of that host.
    type: dict
    required: true
  unreachable:
    description:
      - Hosts that dropped out of the play (unreachable or failed), with why.
    type: dict
    default: {}
  options:
    description:
      - Thresholds, as the role's C(doctor_*) variables set them.
    type: dict
    default: {}
    suboptions:
      memlock_min_kb:
        description: Least memlock limit in KiB; V(-1) means unlimited is required.
        type: int
        default: -1
      shm_min_gb:
        description: Least size of /dev/shm in GiB; V(null) takes the group's C(nim_shm_size_gb).
        type: float
      disk_margin:
        description: Free space wanted on the cache path as a multiple of the model's weights.
        type: float
        default: 1.1
      clock_skew_max_s:
        description: Largest allowed distance of a node's clock from the group's median, in seconds.
        type: float
        default: 2.0
      clock_require_sync:
        description: Fail a node whose kernel reports the clock unsynchronised.
        type: bool
        default: true
      require_gpus:
        description: Fail groups without GPUs on prepared nodes (skip them otherwise).
        type: bool
        default: true
      port_range:
        description: The MPI/NCCL port range the nodes tested (as given to M(nimstack.multinode.nim_doctor_peers)).
        type: list
        elements: int
        default: [32768, 60999]
      port_sample:
        description: How many ports of O(options.port_range) were tested.
        type: int
        default: 4
      ray_ports:
        description: Ray's other ports tested under the ray contract.
        type: list
        elements: int
        default: [8265, 10001, 10002, 19999, 52365]
      nccl_test:
        description: Whether the NCCL bandwidth test was requested; its result is C(nccl) in O(facts).
        type: bool
        default: false
      nccl_min_fraction:
        description: Least measured bus bandwidth as a fraction of the planner's interconnect bandwidth.
        type: float
        default: 0.5
  report_dir:
    description:
      - Directory on the controller the JSON and Markdown reports are written to; created if missing.
    type: path
    required: true
attributes:
  check_mode:
    support: full
    description: Judges and writes the report in check mode too; the report describes the nodes, it changes none.
  diff_mode:
    support: none
    description: The report is an output, not managed state.
  platform:
    support: full
    platforms: all
    description: Computes from its arguments and writes two files on the controller.
extends_documentation_fragment:
  - nimstack.multinode.attributes
seealso:
  - module: nimstack.multinode.nim_doctor_probe
  - module: nimstack.multinode.nim_doctor_peers
'''

EXAMPLES = r'''
- name: Write the doctor's report
  nimstack.multinode.nim_doctor_report:
    groups: "{{ nim_planned.groups }}"
    facts: "{{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars, '__doctor_raw'))) }}"
    report_dir: "{{ playbook_dir }}/doctor"
  run_once: true
  delegate_to: localhost
  register: report
'''

RETURN = r'''
report:
  description: The whole report (what the JSON file holds).
  returned: always
  type: dict
  contains:
    ok:
      description: Whether no check failed.
      type: bool
    summary:
      description: Count of results per status.
      type: dict
      sample: {pass: 40, fail: 1, skip: 4, warn: 0}
    failures:
      description: The failed checks, in check order.
      type: list
      elements: dict
    checks:
      description: Every result.
      type: list
      elements: dict
failures:
  description: One line per failed check (check, group, host, expected, found, fix).
  returned: always
  type: list
  elements: str
json_path:
  description: Path of the JSON report.
  returned: always
  type: str
markdown_path:
  description: Path of the Markdown report.
  returned: always
  type: str
'''

import datetime
import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.nimstack.multinode.plugins.module_utils import doctor


def main():
    module = AnsibleModule(
        argument_spec=dict(
            groups=dict(type='list', elements='dict', required=True),
            facts=dict(type='dict', required=True),
            unreachable=dict(type='dict', default={}),
            options=dict(type='dict', default={}, options=dict(
                memlock_min_kb=dict(type='int', default=-1),
                shm_min_gb=dict(type='float'),
                disk_margin=dict(type='float', default=1.1),
                clock_skew_max_s=dict(type='float', default=2.0),
                clock_require_sync=dict(type='bool', default=True),
                require_gpus=dict(type='bool', default=True),
                port_range=dict(type='list', elements='int', default=[32768, 60999]),
                port_sample=dict(type='int', default=4),
                ray_ports=dict(type='list', elements='int', default=list(doctor.RAY_PORT_SAMPLE)),
                nccl_test=dict(type='bool', default=False),
                nccl_min_fraction=dict(type='float', default=0.5),
            )),
            report_dir=dict(type='path', required=True),
        ),
        supports_check_mode=True,
    )
    p = module.params
    facts = dict((host, doctor.normalize_host(raw)) for host, raw in p['facts'].items() if raw)
    try:
        results = doctor.evaluate(p['groups'], facts, p['unreachable'], p['options'])
    except doctor.DoctorError as exc:
        module.fail_json(msg='doctor options: %s' % exc)
    generated = datetime.datetime.utcnow().replace(microsecond=0).isoformat() + 'Z'
    report = doctor.build_report(results, generated)
    json_path = os.path.join(p['report_dir'], 'doctor-report.json')
    markdown_path = os.path.join(p['report_dir'], 'doctor-report.md')
    try:
        if not os.path.isdir(p['report_dir']):
            os.makedirs(p['report_dir'])
        with open(json_path, 'w') as handle:
            json.dump(report, handle, indent=2, sort_keys=True)
            handle.write('\n')
        with open(markdown_path, 'w') as handle:
            handle.write(doctor.render_markdown(report) + '\n')
    except (IOError, OSError) as exc:
        module.fail_json(msg='report_dir=%s: cannot write the report: %s' % (p['report_dir'], exc))
    module.exit_json(changed=False, report=report, failures=doctor.summary_lines(report),
                     json_path=json_path, markdown_path=markdown_path)


if __name__ == '__main__':
    main()
