#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The Grafana dashboards of a multi-node NIM site, as code (grafana-foundation-sdk, pinned in
requirements-dev.txt), written as the JSON the collection ships in dashboards/.

The SDK is a contributor's tool, not a runtime requirement: the roles provision the committed JSON
(bare metal as files with dashboards/provider.yml, Kubernetes in a ConfigMap). `make
monitoring-test` fails when the committed JSON is not what this script writes.

  scripts/dashboards.py                  write dashboards/*.json
  scripts/dashboards.py --check          exit 1, naming the file, when a committed one differs
"""

from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import sys

from grafana_foundation_sdk.builders import dashboard as gdash
from grafana_foundation_sdk.builders import prometheus as gprom
from grafana_foundation_sdk.builders import statetimeline as gstate
from grafana_foundation_sdk.builders import timeseries as gts
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import dashboard as mdash

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, 'dashboards')

DATASOURCE = mdash.DataSourceRef(type_val='prometheus', uid='${datasource}')
# The leaders of the selected model's groups (job nim, target labels group and model).
NIM = 'job="nim", model="$model", group=~"$group"'
SUPERVISOR = 'job="nimstack_supervisor", group=~"$group"'
# The front door's servers are group_<group> (plugins/module_utils/frontend.py).
HAPROXY = 'job="haproxy", server=~"group_($group)"'
DCGM = 'job="dcgm", instance=~"$node"'
RATE = '[$__rate_interval]'


def _quantiles(metric, what):
    return [('histogram_quantile(%s, sum by (le) (rate(%s_bucket{%s}%s)))' % (q, metric, NIM, RATE), '%s p%s' % (what, p))
            for q, p in (('0.5', '50'), ('0.95', '95'), ('0.99', '99'))]


# Rows of panels: (title, [(panel title, kind, unit, description, [(expr, legend)])]). kind: 'ts' a
# time series, 'state' a state timeline.
ROWS = [
    ('Requests', [
        ('Requests per second', 'ts', 'reqps', 'Finished requests by outcome, per group (request_success_total, '
         'request_failure_total).',
         [('sum by (group) (rate(request_success_total{%s}%s))' % (NIM, RATE), '{{group}} success'),
          ('sum by (group) (rate(request_failure_total{%s}%s))' % (NIM, RATE), '{{group}} failure')]),
        ('Tokens per second', 'ts', 'short', 'Prompt tokens read and tokens generated, per group.',
         [('sum by (group) (rate(prompt_tokens_total{%s}%s))' % (NIM, RATE), '{{group}} prompt'),
          ('sum by (group) (rate(generation_tokens_total{%s}%s))' % (NIM, RATE), '{{group}} generation')]),
        ('Time to first token', 'ts', 's', 'p50, p95 and p99 of time_to_first_token_seconds over the selected groups '
         '(NIMTimeToFirstTokenHigh watches p95).', _quantiles('time_to_first_token_seconds', 'TTFT')),
        ('Time per output token', 'ts', 's', 'p50, p95 and p99 of time_per_output_token_seconds.',
         _quantiles('time_per_output_token_seconds', 'TPOT')),
        ('End-to-end latency', 'ts', 's', 'p50, p95 and p99 of e2e_request_latency_seconds.',
         _quantiles('e2e_request_latency_seconds', 'e2e')),
    ]),
    ('Capacity', [
        ('KV cache usage', 'ts', 'percentunit', 'gpu_cache_usage_perc of each group (NIMKVCacheHigh).',
         [('max by (group) (gpu_cache_usage_perc{%s})' % NIM, '{{group}}')]),
        ('Queue', 'ts', 'short', 'Requests running and waiting, and the most that may run at once '
         '(NIMRequestsWaitingHigh watches the waiting ones).',
         [('sum by (group) (num_requests_running{%s})' % NIM, '{{group}} running'),
          ('sum by (group) (num_requests_waiting{%s})' % NIM, '{{group}} waiting'),
          ('max by (group) (num_request_max{%s})' % NIM, '{{group}} max')]),
    ]),
    ('Groups', [
        ('Group state', 'state', '', 'The state the group supervisor reports (formed, healing, failed, isolated, '
         'maintenance, starting); anything but formed for long is NIMGroupNotServing.',
         [('max by (group, state) (nimstack_group_state{%s}) == 1' % SUPERVISOR, '{{group}} {{state}}')]),
        ('Restarts in the budget window', 'ts', 'short', 'Whole-group restarts inside the window against the '
         'budget (NIMRestartBudgetBurning, NIMGroupFailed).',
         [('max by (group) (nimstack_group_restarts{%s})' % SUPERVISOR, '{{group}} restarts'),
          ('max by (group) (nimstack_group_restart_budget{%s})' % SUPERVISOR, '{{group}} budget')]),
        ('Leader metrics up', 'ts', 'short', 'Whether Prometheus scrapes each group leader (job nim).',
         [('max by (group) (up{%s, role="leader"})' % NIM, '{{group}}')]),
    ]),
    ('Front door', [
        ('Leader servers UP', 'ts', 'short', 'HAProxy\'s state of each group leader\'s server, 1 while UP '
         '(NIMLeaderOutOfFrontDoor).',
         [('max by (server) (haproxy_server_status{%s, state="UP"})' % HAPROXY, '{{server}}')]),
        ('Responses per second', 'ts', 'reqps', 'Responses through the front door by leader and HTTP class.',
         [('sum by (server, code) (rate(haproxy_server_http_responses_total{%s}%s))' % (HAPROXY, RATE),
           '{{server}} {{code}}')]),
        ('Average response time', 'ts', 's', 'HAProxy\'s average response time of each leader (last 1024 requests).',
         [('max by (server) (haproxy_server_response_time_average_seconds{%s})' % HAPROXY, '{{server}}')]),
    ]),
    ('GPUs', [
        ('GPU utilisation', 'ts', 'percent', 'DCGM_FI_DEV_GPU_UTIL of each GPU of the selected nodes.',
         [('DCGM_FI_DEV_GPU_UTIL{%s}' % DCGM, '{{instance}} GPU {{gpu}}')]),
        ('GPU memory used', 'ts', 'decmbytes', 'Framebuffer memory used and free (MiB).',
         [('DCGM_FI_DEV_FB_USED{%s}' % DCGM, '{{instance}} GPU {{gpu}} used'),
          ('DCGM_FI_DEV_FB_FREE{%s}' % DCGM, '{{instance}} GPU {{gpu}} free')]),
        ('GPU temperature', 'ts', 'celsius', 'DCGM_FI_DEV_GPU_TEMP (GPUTooHot).',
         [('DCGM_FI_DEV_GPU_TEMP{%s}' % DCGM, '{{instance}} GPU {{gpu}}')]),
        ('Last XID error', 'ts', 'none', 'DCGM_FI_DEV_XID_ERRORS: the last XID each GPU reported, 0 for none '
         '(GPUXidError).',
         [('DCGM_FI_DEV_XID_ERRORS{%s}' % DCGM, '{{instance}} GPU {{gpu}}')]),
    ]),
]


def _variables():
    def query(name, label, expr, multi):
        var = (gdash.QueryVariable(name).label(label).datasource(DATASOURCE)
               .query({'query': expr, 'refId': 'PrometheusVariableQueryEditor-VariableQuery', 'qryType': 1})
               .refresh(mdash.VariableRefresh.ON_TIME_RANGE_CHANGED).sort(mdash.VariableSort.ALPHABETICAL_ASC))
        if multi:
            var = var.multi(True).include_all(True).all_value('.+')
        return var
    return [
        gdash.DatasourceVariable('datasource').label('Data source').type('prometheus'),
        query('model', 'Model', 'label_values(up{job="nim"}, model)', False),
        query('group', 'Group', 'label_values(up{job="nim", model="$model"}, group)', True),
        query('node', 'GPU node', 'label_values(DCGM_FI_DEV_GPU_UTIL{job="dcgm"}, instance)', True),
    ]


def _panel(title, kind, unit, description, queries):
    panel = gstate.Panel() if kind == 'state' else gts.Panel()
    panel = panel.title(title).description(description).datasource(DATASOURCE).height(8).span(8)
    if unit:
        panel = panel.unit(unit)
    for index, (expr, legend) in enumerate(queries):
        panel = panel.with_target(gprom.Dataquery().expr(expr).legend_format(legend).ref_id(chr(ord('A') + index)))
    return panel


def model_dashboard():
    board = (gdash.Dashboard('NIM model')
             .uid('nimstack-nim-model')
             .description('One served model across its multi-node groups: requests, latency, KV cache and queue '
                          '(the leaders\' /v1/metrics), the groups\' supervisor state, the front door, and the '
                          'GPUs (DCGM). Pick the model above. Alerts and what to do: docs/operations.md.')
             .tags(['nimstack', 'nim'])
             .editable()
             .tooltip(mdash.DashboardCursorSync.CROSSHAIR)
             .time('now-3h', 'now')
             .refresh('30s'))
    for var in _variables():
        board = board.with_variable(var)
    for title, panels in ROWS:
        board = board.with_row(gdash.Row(title))
        for panel in panels:
            board = board.with_panel(_panel(*panel))
    return board.build()


def rendered():
    """{file name: JSON text} of every dashboard."""
    text = JSONEncoder(sort_keys=True, indent=2).encode(model_dashboard())
    return {'nimstack-nim-model.json': text + '\n'}


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--check', action='store_true', help='compare with the committed files instead of writing')
    parser.add_argument('-o', '--out', default=OUT, help='the directory (default: dashboards/)')
    args = parser.parse_args(argv)
    stale = []
    for name, text in sorted(rendered().items()):
        path = os.path.join(args.out, name)
        if args.check:
            try:
                with open(path) as handle:
                    same = json.load(handle) == json.loads(text)
            except (IOError, OSError, ValueError):
                same = False
            if not same:
                stale.append(path)
        else:
            with open(path, 'w') as handle:
                handle.write(text)
            print('wrote %s' % path)
    for path in stale:
        print('dashboards.py: %s is not what scripts/dashboards.py writes: run scripts/dashboards.py' % path,
              file=sys.stderr)
    return 1 if stale else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
