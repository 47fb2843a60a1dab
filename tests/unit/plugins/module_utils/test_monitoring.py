# -*- coding: utf-8 -*-
"""What Prometheus scrapes on bare metal, from the plan (plugins/module_utils/monitoring.py)."""

import pytest
import yaml

from ansible_collections.nimstack.multinode.plugins.module_utils import monitoring
from ansible_collections.nimstack.multinode.plugins.module_utils.nim_plan import build_plan
from ansible_collections.nimstack.multinode.tests.unit.models import LLAMA_405B


def _plan():
    nodes = [{'host': 'd%d' % i, 'address': '10.0.0.%d' % i, 'group': 'dock',
              'settings': dict(LLAMA_405B, nim_pipeline_parallel=2)} for i in (1, 2)]
    nodes += [{'host': 'e%d' % i, 'address': 'fd00::%d' % (4 + i), 'group': 'solo',
               'settings': dict(LLAMA_405B, nim_pipeline_parallel=2, nim_api_port=9000,
                                nim_frontend_model='team/solo')} for i in (1, 2)]
    nodes += [{'host': 'k%d' % i, 'address': '10.0.1.%d' % i, 'group': 'k8s',
               'settings': dict(LLAMA_405B, nim_pipeline_parallel=2, nim_deployment_mode='kubernetes')} for i in (1, 2)]
    plan = build_plan(nodes)
    assert plan['valid'], plan['errors']
    return plan['groups']


def _targets(entries):
    return [(e['targets'], e['labels']) for e in entries]


def test_the_nim_job_scrapes_each_docker_leader_with_group_model_rank_and_role():
    targets = monitoring.scrape_targets(_plan())
    assert _targets(targets['nim']) == [
        (['10.0.0.1:8000'], {'group': 'dock', 'model': 'meta/llama-3.1-405b-instruct', 'rank': '0', 'role': 'leader'}),
        (['[fd00::5]:9000'], {'group': 'solo', 'model': 'team/solo', 'rank': '0', 'role': 'leader'})]


def test_node_exporter_on_every_rank_and_dcgm_only_where_gpus_are_known():
    targets = monitoring.scrape_targets(_plan(), gpus={'d1': 8, 'd2': 0, 'e1': None, 'k1': 8})
    assert _targets(targets['node']) == [
        (['10.0.0.1:9100'], {'group': 'dock', 'rank': '0', 'role': 'leader'}),
        (['10.0.0.2:9100'], {'group': 'dock', 'rank': '1', 'role': 'worker'}),
        (['[fd00::5]:9100'], {'group': 'solo', 'rank': '0', 'role': 'leader'}),
        (['[fd00::6]:9100'], {'group': 'solo', 'rank': '1', 'role': 'worker'})]
    # A Kubernetes group's hosts are never targets, whatever their facts say.
    assert _targets(targets['dcgm']) == [(['10.0.0.1:9400'], {'group': 'dock', 'rank': '0', 'role': 'leader'})]


def test_the_supervisor_job_reads_the_leaders_node_exporter_where_a_supervisor_runs():
    targets = monitoring.scrape_targets(_plan(), supervised={'solo': False}, ports={'node': 9200})
    assert _targets(targets['nimstack_supervisor']) == [
        (['10.0.0.1:9200'], {'group': 'dock', 'model': 'meta/llama-3.1-405b-instruct'})]


def test_the_front_door_hosts_are_the_haproxy_job():
    targets = monitoring.scrape_targets(_plan(), frontends={'door-2': {'address': '10.9.0.2', 'port': 9405},
                                                            'door-1': {}})
    assert _targets(targets['haproxy']) == [(['door-1:8405'], {'frontend': 'door-1'}),
                                            (['10.9.0.2:9405'], {'frontend': 'door-2'})]


def test_jobs_can_be_left_out_and_invalid_groups_give_no_target():
    groups = _plan()
    groups['dock'] = dict(groups['dock'], valid=False)
    targets = monitoring.scrape_targets(groups, jobs=('nim', 'node'))
    assert sorted(targets) == ['nim', 'node']
    assert [e['labels']['group'] for e in targets['nim']] == ['solo']


def test_scrape_configs_read_the_files_and_keep_the_supervisor_series_in_their_own_job():
    configs = dict((c['job_name'], c) for c in monitoring.scrape_configs('/sd/', '5s'))
    assert list(configs) == list(monitoring.JOBS)
    assert configs['nim']['metrics_path'] == '/v1/metrics'
    assert configs['nim']['file_sd_configs'] == [{'files': ['/sd/nim.json']}]
    assert configs['nimstack_supervisor']['params'] == {'collect[]': ['textfile']}
    assert configs['nimstack_supervisor']['metric_relabel_configs'][0]['action'] == 'keep'
    assert configs['node']['metric_relabel_configs'] == [
        {'source_labels': ['__name__'], 'regex': 'nimstack_group_.*', 'action': 'drop'}]
    assert 'metric_relabel_configs' not in configs['dcgm'] and configs['dcgm']['scrape_interval'] == '5s'


def test_monitoring_files_gives_prometheus_alertmanager_and_grafana():
    files = monitoring.monitoring_files(_plan(), {
        'targets_dir': '/t', 'rules_dir': '/r/', 'alertmanagers': ['127.0.0.1:9093'], 'scrape_interval': '2s',
        'evaluation_interval': '1s', 'group_wait': '1s', 'receivers': [{'name': 'pager', 'webhook_configs': []}],
        'receiver': 'pager', 'dashboards_dir': '/d', 'prometheus_url': 'http://p:9090'})
    prom = files['prometheus']
    assert prom['global'] == {'scrape_interval': '2s', 'evaluation_interval': '1s'}
    assert prom['rule_files'] == ['/r/*.yml']
    assert prom['alerting'] == {'alertmanagers': [{'static_configs': [{'targets': ['127.0.0.1:9093']}]}]}
    assert files['scrape_configs'] == prom['scrape_configs']
    assert files['alertmanager']['receivers'] == [{'name': 'pager', 'webhook_configs': []}]
    assert files['alertmanager']['route']['group_wait'] == '1s'
    assert files['grafana']['dashboards']['providers'][0]['options'] == {'path': '/d'}
    assert files['grafana']['datasource']['datasources'][0]['url'] == 'http://p:9090'
    # What is rendered is plain YAML data.
    yaml.safe_dump(files)


def test_without_alertmanagers_no_alerting_and_a_receiver_without_integration():
    files = monitoring.monitoring_files({})
    assert 'alerting' not in files['prometheus']
    assert files['alertmanager']['receivers'] == [{'name': 'nimstack'}]
    assert files['targets'] == dict((job, []) for job in monitoring.JOBS)


def test_an_unknown_setting_is_refused():
    with pytest.raises(ValueError, match='unknown monitoring setting.*targetsdir'):
        monitoring.monitoring_files({}, {'targetsdir': '/t'})
