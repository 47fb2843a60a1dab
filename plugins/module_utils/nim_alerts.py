# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The alert rules of a multi-node NIM site, as data: rule_groups(thresholds) returns the ``groups``
list of a Prometheus rule file. Bare metal writes it as a rule file; Kubernetes wraps the same
groups in a PrometheusRule (monitoring.coreos.com/v1, spec.groups).

What the expressions read (docs/operations.md, "The monitoring picture"):

- job ``nim``: each group leader's /v1/metrics, target labels ``group``, ``model``, ``rank``, ``role``;
  NIM for LLMs 1.x series (gauges ``num_requests_waiting``, ``gpu_cache_usage_perc``, histogram
  ``time_to_first_token_seconds``), NVIDIA NIM for LLMs documentation, "Observability";
- job ``nimstack_supervisor``: the group supervisor's ``nimstack_group_state{group,state}``,
  ``nimstack_group_restarts{group}``, ``nimstack_group_restart_budget{group}``
  (roles/nim_docker/files/nimstack_supervisor.py; its states: group_supervisor.STATES);
- job ``haproxy``: the front door's native exporter; since HAProxy 2.4 ``haproxy_server_status``
  is one series per state, ``state="UP"`` being 1 while the server is up
  (addons/promex/service-prometheus.c); backends are ``frontend.backend_name(model)``, servers
  ``group_<group>``;
- job ``dcgm``: dcgm-exporter's ``DCGM_FI_DEV_XID_ERRORS`` (the last XID a GPU reported, 0 for
  none) and ``DCGM_FI_DEV_GPU_TEMP`` (degrees C), labels ``gpu``, ``UUID``, ``modelName``,
  ``Hostname`` (NVIDIA/dcgm-exporter, etc/default-counters.csv).

Every threshold and every ``for:`` is a key of DEFAULTS; threshold_problems() says what is wrong
with a mapping of overrides, rule_groups() raises AlertConfigError with every problem at once.
No Ansible imports.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math
import numbers
import re

# The alerts, in the order the rule file lists them (docs/operations.md has a section for each).
ALERTS = ('NIMGroupNotServing', 'NIMGroupFailed', 'NIMRestartBudgetBurning', 'NIMLeaderOutOfFrontDoor',
          'NIMKVCacheHigh', 'NIMRequestsWaitingHigh', 'NIMTimeToFirstTokenHigh', 'GPUXidError', 'GPUTooHot')

JOB_NIM = 'nim'
JOB_SUPERVISOR = 'nimstack_supervisor'
JOB_HAPROXY = 'haproxy'
JOB_DCGM = 'dcgm'

# The front door's names (plugins/module_utils/frontend.py: backend_name(), frontend_pools()).
FRONT_DOOR_BACKEND_RE = 'model_.+'
FRONT_DOOR_SERVER_PREFIX = 'group_'

DEFAULT_RUNBOOK_BASE = 'https://example.invalid/nimstack/multinode/blob/main/docs/operations.md'

# Every knob, with its default. Durations are Prometheus durations ('90s', '5m', '1h30m'); '0s'
# fires at the first evaluation that matches.
DEFAULTS = {
    # NIMGroupNotServing: a group not formed or not serving (or its leader's metrics down) for this long.
    'not_serving_for': '1m',
    # Whether a group in maintenance (a deploy or a restart wave holds its supervisor) counts.
    'not_serving_in_maintenance': False,
    # NIMGroupFailed: the supervisor gave up (its restart budget spent); a terminal state.
    'failed_for': '0s',
    # NIMRestartBudgetBurning: restarts in the window over the budget, at or above this fraction.
    'restart_budget_fraction': 0.5,
    'restart_budget_for': '0s',
    # NIMLeaderOutOfFrontDoor: a leader not UP in HAProxy for this long.
    'front_door_for': '1m',
    # NIMKVCacheHigh: gpu_cache_usage_perc (0..1) above this fraction.
    'kv_cache_fraction': 0.9,
    'kv_cache_for': '5m',
    # NIMRequestsWaitingHigh: requests queued (num_requests_waiting) above this many.
    'requests_waiting': 10,
    'requests_waiting_for': '5m',
    # NIMTimeToFirstTokenHigh: this quantile of TTFT over ttft_window above ttft_seconds.
    'ttft_quantile': 0.95,
    'ttft_seconds': 2.0,
    'ttft_window': '5m',
    'ttft_for': '10m',
    # GPUXidError: a GPU's XID is non-zero and new (changed, or first seen) within this window.
    'xid_window': '1h',
    # GPUTooHot: GPU temperature above this many degrees C.
    'gpu_temp_celsius': 85,
    'gpu_temp_for': '5m',
    # Where each alert's runbook_url points: this page, #<alert name in lower case>.
    'runbook_base': DEFAULT_RUNBOOK_BASE,
}

DURATION_RE = re.compile(r'^(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?\Z')
_DURATION_KEYS = tuple(k for k in DEFAULTS if k.endswith('_for') or k.endswith('_window'))
# key -> (low, low inclusive, high, high inclusive, what is accepted)
_RANGES = {
    'restart_budget_fraction': (0, False, 1, True, 'a number above 0 and at most 1'),
    'kv_cache_fraction': (0, False, 1, True, 'a number above 0 and at most 1 (gpu_cache_usage_perc is 0..1)'),
    'requests_waiting': (0, True, 1000000, True, 'a number from 0 to 1000000'),
    'ttft_quantile': (0, False, 1, False, 'a number between 0 and 1, both excluded'),
    'ttft_seconds': (0, False, 3600, True, 'a number of seconds above 0 and at most 3600'),
    'gpu_temp_celsius': (0, False, 150, True, 'degrees C above 0 and at most 150'),
}


class AlertConfigError(ValueError):
    """Thresholds that cannot make a rule file; the message names every problem."""


def threshold_problems(thresholds):
    """What is wrong with a mapping of threshold overrides: a list of messages, empty when none."""
    if thresholds is None:
        return []
    if not isinstance(thresholds, dict):
        return ['the alert thresholds must be a mapping of names to values, got %s' % type(thresholds).__name__]
    problems = []
    for key in sorted(thresholds, key=str):
        value = thresholds[key]
        if key not in DEFAULTS:
            problems.append('alert threshold %r is unknown; known: %s' % (key, ', '.join(sorted(DEFAULTS))))
        elif key in _DURATION_KEYS:
            if not isinstance(value, str) or not value or not DURATION_RE.match(value):
                problems.append("alert threshold %s=%r is not a Prometheus duration (such as '30s', '5m', '1h30m')"
                                % (key, value))
            elif key.endswith('_window') and duration_seconds(value) == 0:
                problems.append('alert threshold %s=%r must be longer than 0s' % (key, value))
        elif key in _RANGES:
            low, low_in, high, high_in, accepted = _RANGES[key]
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(value):
                problems.append('alert threshold %s=%r is not a number: %s' % (key, value, accepted))
            elif value < low or value > high or (value == low and not low_in) or (value == high and not high_in):
                problems.append('alert threshold %s=%r is out of range: %s' % (key, value, accepted))
        elif key == 'not_serving_in_maintenance':
            if not isinstance(value, bool):
                problems.append('alert threshold %s=%r must be true or false' % (key, value))
        elif key == 'runbook_base':
            if not isinstance(value, str) or not re.match(r'^https?://[^\s#"\']+\Z', value):
                problems.append('alert threshold %s=%r must be an http(s) URL without a fragment or spaces'
                                % (key, value))
    return problems


def duration_seconds(text):
    """Seconds of a Prometheus duration ('1h30m' -> 5400.0)."""
    match = DURATION_RE.match(text)
    if not match or not text:
        raise ValueError('not a Prometheus duration: %r' % (text,))
    units = (365 * 86400, 7 * 86400, 86400, 3600, 60, 1, 0.001)
    return float(sum(int(match.group(2 * i + 2) or 0) * unit for i, unit in enumerate(units)))


def settings(thresholds=None):
    """DEFAULTS with the overrides applied, or AlertConfigError naming every problem."""
    problems = threshold_problems(thresholds)
    if problems:
        raise AlertConfigError('; '.join(problems))
    merged = dict(DEFAULTS)
    merged.update(thresholds or {})
    return merged


def _num(value):
    return format(float(value), '.15g')


def _host():
    """The host of a DCGM series: dcgm-exporter's Hostname label (hostname in releases after
    4.5.3-4.8.2), else the scrape instance."""
    return ('{{ with $labels.Hostname }}{{ . }}{{ else }}{{ with $labels.hostname }}{{ . }}{{ else }}'
            '{{ $labels.instance }}{{ end }}{{ end }}')


_GROUP_MODEL = ('group {{ $labels.group }}{{ with $labels.model }} (model {{ . }}){{ end }}'
                '{{ with $labels.instance }} on {{ . }}{{ end }}')


def _rule(name, expr, duration, severity, summary, description, conf):
    rule = {'alert': name, 'expr': expr}
    if duration_seconds(duration) > 0:
        rule['for'] = duration
    rule['labels'] = {'severity': severity}
    rule['annotations'] = {'summary': summary, 'description': description,
                           'runbook_url': '%s#%s' % (conf['runbook_base'], name.lower())}
    return rule


def _not_serving_expr(conf):
    supervisor = 'nimstack_group_state{job="%s"' % JOB_SUPERVISOR
    leader_up = 'up{job="%s", role="leader"}' % JOB_NIM
    serving = 'nimstack_group_serving{job="%s"}' % JOB_SUPERVISOR
    # Formed is not serving: the leader's serving check failing (a hang, completions failing) counts.
    core = ('(min by (group) (%s, state="formed"}) == 0) or on (group) (min by (group) (%s) == 0)'
            ' or on (group) (max by (group) (%s) == 0)' % (supervisor, serving, leader_up))
    if not conf['not_serving_in_maintenance']:
        core = '(%s) unless on (group) (max by (group) (%s, state="maintenance"}) == 1)' % (core, supervisor)
    # The model and the leader's address come from the leader's target where it has one.
    return ('((%s) * on (group) group_left (model, instance) (0 * max by (group, model, instance) (%s) + 1))'
            ' or on (group) (%s)' % (core, leader_up, core))


def rule_groups(thresholds=None):
    """The ``groups`` list of a Prometheus rule file with the nine alerts, thresholds applied."""
    conf = settings(thresholds)
    sup = JOB_SUPERVISOR
    nim = JOB_NIM
    rules_nim = [
        _rule('NIMGroupNotServing', _not_serving_expr(conf), conf['not_serving_for'], 'critical',
              'NIM group {{ $labels.group }} is not serving',
              'The supervisor of ' + _GROUP_MODEL + ' does not report it formed or serving, or its leader\'s '
              'metrics endpoint is down, for more than %s: the group answers no request (a rank died and the '
              'group is healing, or it hangs or fails its completions, or it failed, or its supervisors cannot '
              'reach each other).' % conf['not_serving_for'],
              conf),
        _rule('NIMGroupFailed',
              'max by (group) (nimstack_group_state{job="%s", state="failed"}) == 1' % sup,
              conf['failed_for'], 'critical',
              'NIM group {{ $labels.group }} failed: its supervisor gave up',
              'The supervisor of group {{ $labels.group }} spent its restart budget (or a rank\'s container is '
              'missing) and stopped restarting the group; only a deploy (playbooks/deploy_docker.yml) clears it. '
              'Or a member\'s host has not answered for nim_group_lost_after: the group re-forms when it is back.',
              conf),
        _rule('NIMRestartBudgetBurning',
              'max by (group) (nimstack_group_restarts{job="%s"}) / max by (group) '
              '(nimstack_group_restart_budget{job="%s"} > 0) >= %s' % (sup, sup, _num(conf['restart_budget_fraction'])),
              conf['restart_budget_for'], 'warning',
              'NIM group {{ $labels.group }} is spending its restart budget',
              'The supervisor of group {{ $labels.group }} restarted the whole group often enough to spend '
              '{{ $value | humanizePercentage }} of its restart budget within the window: a rank keeps '
              'dying; once the budget is spent the group fails.',
              conf),
        _rule('NIMLeaderOutOfFrontDoor',
              'label_replace(max by (instance, proxy, server) (haproxy_server_status{job="%s", proxy=~"%s", '
              'server=~"%s.+", state="UP"}) == 0, "group", "$1", "server", "%s(.+)")'
              % (JOB_HAPROXY, FRONT_DOOR_BACKEND_RE, FRONT_DOOR_SERVER_PREFIX, FRONT_DOOR_SERVER_PREFIX),
              conf['front_door_for'], 'warning',
              'The front door does not send traffic to group {{ $labels.group }}',
              'HAProxy on {{ $labels.instance }} reports server {{ $labels.server }} (the leader of group '
              '{{ $labels.group }}) of backend {{ $labels.proxy }} not UP: its health check fails or it '
              'is in maintenance, so the model\'s requests go to the other groups only.',
              conf),
        _rule('NIMKVCacheHigh',
              'max by (group, model, instance) (gpu_cache_usage_perc{job="%s"}) > %s' % (nim, _num(conf['kv_cache_fraction'])),
              conf['kv_cache_for'], 'warning',
              'NIM KV cache of group {{ $labels.group }} nearly full',
              'The KV cache of ' + _GROUP_MODEL + ' is {{ $value | humanizePercentage }} full (above '
              '%s): new requests wait or running ones are preempted.' % _num(conf['kv_cache_fraction']),
              conf),
        _rule('NIMRequestsWaitingHigh',
              'max by (group, model, instance) (num_requests_waiting{job="%s"}) > %s' % (nim, _num(conf['requests_waiting'])),
              conf['requests_waiting_for'], 'warning',
              'Requests queue at NIM group {{ $labels.group }}',
              '{{ $value }} requests wait at ' + _GROUP_MODEL + ' (more than %s): the group is at capacity.'
              % _num(conf['requests_waiting']),
              conf),
        _rule('NIMTimeToFirstTokenHigh',
              'histogram_quantile(%s, sum by (group, model, le) (rate(time_to_first_token_seconds_bucket{job="%s"}[%s]))) > %s'
              % (_num(conf['ttft_quantile']), nim, conf['ttft_window'], _num(conf['ttft_seconds'])),
              conf['ttft_for'], 'warning',
              'Slow first tokens at NIM group {{ $labels.group }}',
              'The %s quantile of the time to first token of ' % _num(conf['ttft_quantile']) + _GROUP_MODEL
              + ' is {{ $value | humanizeDuration }} over the last %s (above %s s).'
              % (conf['ttft_window'], _num(conf['ttft_seconds'])),
              conf),
    ]
    xid = 'DCGM_FI_DEV_XID_ERRORS{job="%s"}' % JOB_DCGM
    window = conf['xid_window']
    rules_gpu = [
        _rule('GPUXidError',
              '(%s != 0) unless ((%s offset %s) == %s and changes(%s[%s]) == 0)' % (xid, xid, window, xid, xid, window),
              '0s', 'critical',
              'GPU {{ $labels.gpu }} on ' + _host() + ' reported XID {{ $value }}',
              'GPU {{ $labels.gpu }} ({{ $labels.modelName }}, {{ $labels.UUID }}) on ' + _host() + ' reported '
              'XID error {{ $value }} within the last %s: a driver or hardware fault; a group with a rank '
              'there may have died with it.' % window,
              conf),
        _rule('GPUTooHot',
              'DCGM_FI_DEV_GPU_TEMP{job="%s"} > %s' % (JOB_DCGM, _num(conf['gpu_temp_celsius'])),
              conf['gpu_temp_for'], 'warning',
              'GPU {{ $labels.gpu }} on ' + _host() + ' is hot',
              'GPU {{ $labels.gpu }} ({{ $labels.modelName }}) on ' + _host() + ' is at {{ $value }} C, above '
              '%s C: it slows down its clocks, and the whole group with it.' % _num(conf['gpu_temp_celsius']),
              conf),
    ]
    return [{'name': 'nimstack-nim', 'rules': rules_nim}, {'name': 'nimstack-gpu', 'rules': rules_gpu}]


def alert_names(groups):
    """The alert names of a rule file's groups, in order."""
    return [rule['alert'] for group in groups for rule in group.get('rules', []) if 'alert' in rule]
