# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""What Prometheus scrapes on bare metal, from the plan: the file_sd target lists of every job and
the Prometheus and Alertmanager configurations that read them (roles/monitoring).

The jobs and their labels are the collection's observability contract (docs/monitoring.md):
  nim                  the leader of every Docker group, /v1/metrics on its API port;
                       labels group, model, rank, role
  nimstack_supervisor  the leader's node exporter, its textfile collector only (the group
                       supervisor's nimstack_group_* series); labels group, model
  node                 node exporter on every host of a Docker group; labels group, rank, role
  dcgm                 DCGM exporter on the hosts of a Docker group that have GPUs; labels group, rank, role
  haproxy              the front door's Prometheus exporter on every front door host
No Ansible imports: unit-tested directly, exposed by the filters of plugins/filter/monitoring_files.py.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.nimstack.multinode.plugins.module_utils.frontend import served_model
from ansible_collections.nimstack.multinode.plugins.module_utils.group_members import groups_of

JOBS = ('nim', 'nimstack_supervisor', 'node', 'dcgm', 'haproxy')
DEFAULT_PORTS = {'node': 9100, 'dcgm': 9400, 'haproxy': 8405}
# The node job leaves the supervisor's series to their own job, so that each is stored once.
SUPERVISOR_SERIES = 'nimstack_group_.*'


def _address(host, port):
    host = str(host)
    return '[%s]:%d' % (host, int(port)) if ':' in host else '%s:%d' % (host, int(port))


def _docker_groups(groups):
    return groups_of(groups, 'docker', valid=True, led=True)


def scrape_targets(groups, frontends=None, gpus=None, supervised=None, ports=None, jobs=JOBS):
    """{job: its file_sd list [{'targets': [host:port], 'labels': {...}}]} for every job of jobs.

    groups: the plan's groups (nim_plan's 'groups'); frontends: {host: {'address', 'port'}} of the
    front door hosts (port: their metrics port); gpus: {host: GPU count, None when unknown} (a host
    without a known GPU gets no DCGM target); supervised: {group: whether its supervisor runs}
    (default: every group's); ports: the exporters' ports (DEFAULT_PORTS). Every list is sorted, so
    that a re-run writes the same files.
    """
    ports = dict(DEFAULT_PORTS, **(ports or {}))
    gpus = gpus or {}
    supervised = supervised or {}
    out = dict((job, []) for job in jobs)
    for name, group in _docker_groups(groups):
        model = served_model((group.get('settings') or {}).get('nim_image'),
                             (group.get('settings') or {}).get('nim_frontend_model'))
        leader = group['leader']
        if 'nim' in out:
            out['nim'].append({'targets': [_address(leader['address'], group['ports']['api'])],
                               'labels': {'group': name, 'model': model, 'rank': '0', 'role': 'leader'}})
        if 'nimstack_supervisor' in out and supervised.get(name, True):
            out['nimstack_supervisor'].append({'targets': [_address(leader['address'], ports['node'])],
                                               'labels': {'group': name, 'model': model}})
        for rank in group.get('ranks') or []:
            labels = {'group': name, 'rank': str(rank['rank']),
                      'role': 'leader' if rank['host'] == leader['host'] else 'worker'}
            if 'node' in out:
                out['node'].append({'targets': [_address(rank['address'], ports['node'])], 'labels': dict(labels)})
            if 'dcgm' in out and (gpus.get(rank['host']) or 0) > 0:
                out['dcgm'].append({'targets': [_address(rank['address'], ports['dcgm'])], 'labels': dict(labels)})
    if 'haproxy' in out:
        for host in sorted(frontends or {}):
            entry = frontends[host] or {}
            out['haproxy'].append({'targets': [_address(entry.get('address') or host,
                                                        entry.get('port') or ports['haproxy'])],
                                   'labels': {'frontend': str(host)}})
    return out


def scrape_configs(targets_dir, interval='15s', jobs=JOBS, file_suffix='.json'):
    """The scrape_configs of every job, each reading its file_sd file in targets_dir."""
    directory = str(targets_dir).rstrip('/')
    configs = []
    for job in jobs:
        config = {'job_name': job, 'scrape_interval': interval,
                  'file_sd_configs': [{'files': ['%s/%s%s' % (directory, job, file_suffix)]}]}
        if job == 'nim':
            config['metrics_path'] = '/v1/metrics'
        elif job == 'nimstack_supervisor':
            # Node exporter's collect[] parameter: the textfile collector only.
            config['params'] = {'collect[]': ['textfile']}
            config['metric_relabel_configs'] = [{'source_labels': ['__name__'], 'regex': SUPERVISOR_SERIES,
                                                 'action': 'keep'}]
        elif job == 'node':
            config['metric_relabel_configs'] = [{'source_labels': ['__name__'], 'regex': SUPERVISOR_SERIES,
                                                 'action': 'drop'}]
        configs.append(config)
    return configs


def prometheus_config(targets_dir, rules_dir, alertmanagers=(), scrape_interval='15s', evaluation_interval='15s',
                      jobs=JOBS):
    """A whole prometheus.yml: the jobs, the rule files of rules_dir and the Alertmanagers
    (host:port) it sends to."""
    config = {
        'global': {'scrape_interval': scrape_interval, 'evaluation_interval': evaluation_interval},
        'rule_files': ['%s/*.yml' % str(rules_dir).rstrip('/')],
        'scrape_configs': scrape_configs(targets_dir, scrape_interval, jobs),
    }
    if alertmanagers:
        config['alerting'] = {'alertmanagers': [{'static_configs': [{'targets': sorted(str(a) for a in alertmanagers)}]}]}
    return config


def alertmanager_config(receivers=None, receiver='nimstack', group_wait='30s', group_interval='5m',
                        repeat_interval='4h'):
    """An alertmanager.yml routing every alert, grouped by alert and deployment group, to receiver.

    receivers: the site's receivers (Alertmanager's own receiver mappings); without one named
    receiver, a receiver of that name with no integration is added: the alerts are then in
    Alertmanager's API and UI only.
    """
    receivers = [dict(r) for r in (receivers or [])]
    if receiver not in [r.get('name') for r in receivers]:
        receivers.append({'name': receiver})
    return {
        'route': {'receiver': receiver, 'group_by': ['alertname', 'group'], 'group_wait': group_wait,
                  'group_interval': group_interval, 'repeat_interval': repeat_interval},
        'receivers': receivers,
    }


def grafana_provisioning(dashboards_dir, prometheus_url, folder='nimstack'):
    """Grafana's provisioning files for the site's Grafana: {'datasource': ..., 'dashboards': ...}."""
    return {
        'datasource': {'apiVersion': 1, 'datasources': [
            {'name': 'nimstack-prometheus', 'uid': 'nimstack-prometheus', 'type': 'prometheus', 'access': 'proxy',
             'url': str(prometheus_url), 'editable': False}]},
        'dashboards': {'apiVersion': 1, 'providers': [
            {'name': 'nimstack', 'folder': folder, 'type': 'file', 'disableDeletion': True,
             'options': {'path': str(dashboards_dir)}}]},
    }


SETTINGS = {
    'targets_dir': '/etc/prometheus/nimstack/targets',
    'rules_dir': '/etc/prometheus/nimstack/rules',
    'dashboards_dir': '/etc/prometheus/nimstack/dashboards',
    'alertmanagers': [],
    'scrape_interval': '15s',
    'evaluation_interval': '15s',
    'ports': {},
    'frontends': {},
    'gpus': {},
    'supervised': {},
    'jobs': list(JOBS),
    'receivers': [],
    'receiver': 'nimstack',
    'group_wait': '30s',
    'group_interval': '5m',
    'repeat_interval': '4h',
    'prometheus_url': 'http://localhost:9090',
}


def monitoring_files(groups, settings=None):
    """Everything the monitoring role writes, from the plan's groups and the role's settings
    (SETTINGS' keys): {'targets': {job: file_sd list}, 'prometheus': prometheus.yml,
    'scrape_configs': the jobs alone (for a Prometheus the site runs), 'alertmanager':
    alertmanager.yml, 'grafana': {'datasource', 'dashboards'}}."""
    unknown = sorted(set(settings or {}) - set(SETTINGS))
    if unknown:
        raise ValueError('unknown monitoring setting(s): %s' % ', '.join(unknown))
    s = dict(SETTINGS, **(settings or {}))
    jobs = [job for job in JOBS if job in s['jobs']]
    return {
        'targets': scrape_targets(groups, s['frontends'], s['gpus'], s['supervised'], s['ports'], jobs),
        'prometheus': prometheus_config(s['targets_dir'], s['rules_dir'], s['alertmanagers'], s['scrape_interval'],
                                        s['evaluation_interval'], jobs),
        'scrape_configs': scrape_configs(s['targets_dir'], s['scrape_interval'], jobs),
        'alertmanager': alertmanager_config(s['receivers'], s['receiver'], s['group_wait'], s['group_interval'],
                                            s['repeat_interval']),
        'grafana': grafana_provisioning(s['dashboards_dir'], s['prometheus_url']),
    }
