# -*- coding: utf-8 -*-
"""The nim_k8s preflight: every rule on the role's settings and on the plan's Kubernetes groups."""

import pytest

from ansible_collections.nimstack.multinode.plugins.module_utils import k8s_preflight
from ansible_collections.nimstack.multinode.plugins.module_utils.k8s_preflight import (
    capacity_groups,
    k8s_groups,
    k8s_problems,
)
from ansible_collections.nimstack.multinode.plugins.module_utils.nim_plan import build_plan
from ansible_collections.nimstack.multinode.tests.unit.models import LLAMA_405B

LWS = {'nim_k8s_backend': 'lws'}
OPERATOR = {'nim_k8s_backend': 'nim_operator'}


def _plan(count=2, mode='kubernetes', group=None, **settings):
    values = dict(LLAMA_405B, **settings)
    nodes = [{'host': '%s-%d' % (group or 'gpu', i), 'address': '10.0.0.%d' % (11 + i), 'settings': dict(values)}
             for i in range(count)]
    for node in nodes:
        if group:
            node['group'] = group
    return build_plan(nodes, deployment_mode=mode)


def _merge(*plans):
    merged = {'groups': {}, 'hosts': {}}
    for plan in plans:
        merged['groups'].update(plan['groups'])
        merged['hosts'].update(plan['hosts'])
    return merged


def test_a_valid_plan_with_the_defaults_has_no_problem_on_either_backend():
    assert k8s_problems(_plan(), LWS) == []
    assert k8s_problems(_plan(), OPERATOR) == []
    assert k8s_problems(_plan(), {}) == []


def test_unknown_scheduler():
    assert k8s_problems(_plan(), dict(LWS, nim_k8s_scheduler='slurm')) == [
        'nim_k8s_scheduler must be default, volcano or kai, got slurm']


def test_kai_needs_its_queue():
    assert k8s_problems(_plan(), dict(LWS, nim_k8s_scheduler='kai')) == [k8s_preflight.PROBLEM_KAI_QUEUE]
    assert k8s_problems(_plan(), dict(LWS, nim_k8s_scheduler='kai', nim_k8s_kai_queue='team-a')) == []


@pytest.mark.parametrize('var, scheduler, wanted', [
    ('nim_k8s_kai_queue', 'default', 'kai'),
    ('nim_k8s_volcano_queue', 'kai', 'volcano'),
])
def test_a_queue_of_another_scheduler(var, scheduler, wanted):
    settings = dict(LWS, nim_k8s_scheduler=scheduler, **{var: 'q'})
    if scheduler == 'kai':
        settings['nim_k8s_kai_queue'] = 'team-a'
    assert k8s_problems(_plan(), settings) == [
        '%s=q is set but only applies to nim_k8s_scheduler=%s (got nim_k8s_scheduler=%s)' % (var, wanted, scheduler)]


@pytest.mark.parametrize('key, ok', [
    ('topology.kubernetes.io/rack', True),
    ('nvidia.com/gpu.clique', True),
    ('rack', True),
    ('not a label', False),
    ('UPPER.example/x', False),
    ('x' * 64, False),
])
def test_exclusive_topology_must_be_a_label_key(key, ok):
    problems = k8s_problems(_plan(), dict(LWS, nim_k8s_exclusive_topology=key))
    assert problems == ([] if ok else [
        'nim_k8s_exclusive_topology=%s is not a node label key (such as topology.kubernetes.io/rack)' % key])


@pytest.mark.parametrize('policy, ok', [
    ('RecreateGroupOnPodRestart', True), ('RecreateGroupAfterStart', True), ('None', True), ('Always', False)])
def test_restart_policy(policy, ok):
    problems = k8s_problems(_plan(), dict(LWS, nim_k8s_restart_policy=policy))
    assert problems == ([] if ok else [
        'nim_k8s_restart_policy must be RecreateGroupOnPodRestart, RecreateGroupAfterStart or None, got Always'])


@pytest.mark.parametrize('value, ok', [
    (1, True), ('1', True), ('25%', True), ('100%', True), (0, True),
    (True, False), ('-1', False), ('1.5', False), ('01', False), ('25 %', False), (1234567, False)])
def test_rollout_max_unavailable_and_surge_are_int_or_percent(value, ok):
    for var in ('nim_k8s_rollout_max_unavailable', 'nim_k8s_rollout_max_surge'):
        # The other one stays 1, so that both can never be 0 here.
        other = 'nim_k8s_rollout_max_surge' if var == 'nim_k8s_rollout_max_unavailable' else 'nim_k8s_rollout_max_unavailable'
        problems = k8s_problems(_plan(), dict(LWS, **{var: value, other: 1}))
        assert problems == ([] if ok else ['%s must be a whole number or a percentage such as 25%%, got %s' % (var, value)])


@pytest.mark.parametrize('unavailable, surge', [(0, 0), ('0%', 0), ('0', '0%')])
def test_rollout_cannot_have_both_at_zero(unavailable, surge):
    assert k8s_problems(_plan(), dict(LWS, nim_k8s_rollout_max_unavailable=unavailable,
                                      nim_k8s_rollout_max_surge=surge)) == [k8s_preflight.PROBLEM_ROLLOUT_ZERO]


@pytest.mark.parametrize('value, ok', [(0, True), (2, True), ('3', True), (-1, False), (True, False), ('1%', False)])
def test_rollout_partition(value, ok):
    problems = k8s_problems(_plan(), dict(LWS, nim_k8s_rollout_partition=value))
    assert problems == ([] if ok else [
        'nim_k8s_rollout_partition must be a whole number of LWS groups (0 updates all), got %s' % value])


@pytest.mark.parametrize('name, ok', [('nim-serving', True), ('a.b-c', True), ('Not_A_Name', False), ('-x', False)])
def test_priority_class_is_a_dns_subdomain(name, ok):
    problems = k8s_problems(_plan(), dict(LWS, nim_k8s_priority_class=name))
    assert problems == ([] if ok else [
        'nim_k8s_priority_class=%s is not the name of a PriorityClass (a DNS subdomain: lower case, digits, - and .)' % name])


def test_the_operator_refuses_every_leaderworkerset_setting_but_its_default():
    settings = dict(OPERATOR, nim_k8s_restart_policy='None', nim_k8s_rollout_partition=1,
                    nim_k8s_rollout_max_unavailable='1', nim_k8s_rollout_max_surge='0')
    suffix = (' is a LeaderWorkerSet setting, but nim_k8s_backend=nim_operator builds its own LeaderWorkerSet '
              '(a NIMService has no such field); leave it at its default (%s) or use nim_k8s_backend=lws')
    assert k8s_problems(_plan(), settings) == [
        'nim_k8s_restart_policy=None' + suffix % 'RecreateGroupOnPodRestart',
        'nim_k8s_rollout_partition=1' + suffix % '0',
    ]
    # The same settings are the LeaderWorkerSet's own on the lws backend.
    assert k8s_problems(_plan(), dict(settings, nim_k8s_backend='lws')) == []


def test_the_lws_backend_refuses_the_nimservice_settings():
    settings = dict(LWS, nim_k8s_service_monitor={'interval': '30s'}, nim_k8s_router={'hostDomainName': 'example.com'},
                    nim_k8s_compute_domain='create')
    suffix = (' is a NIMService setting (%s), but nim_k8s_backend=lws writes no NIMService; leave it unset or use '
              'nim_k8s_backend=nim_operator')
    assert k8s_problems(_plan(), settings) == [
        'nim_k8s_service_monitor' + suffix % 'spec.metrics.serviceMonitor',
        'nim_k8s_router' + suffix % 'spec.expose.router',
        'nim_k8s_compute_domain' + suffix % 'spec.multiNode.computeDomain',
    ]
    assert k8s_problems(_plan(), dict(settings, nim_k8s_backend='nim_operator')) == []


def test_nimservice_settings_name_a_key_the_crd_would_drop():
    # A structural schema prunes unknown fields without a word: the key is refused instead.
    settings = dict(OPERATOR, nim_k8s_service_monitor={'interval': '30s', 'scrape_interval': '10s'},
                    nim_k8s_router={'host': 'nim.example.com'})
    assert k8s_problems(_plan(), settings) == [
        'nim_k8s_service_monitor: scrape_interval not among the keys of spec.metrics.serviceMonitor '
        '(interval, scrapeTimeout, additionalLabels, annotations)',
        'nim_k8s_router: host not among the keys of spec.expose.router (hostDomainName, annotations, ingress, gateway)',
    ]


@pytest.mark.parametrize('value, ok', [('create', True), ('gb200-rack-1', True), ('Rack 1', False), (True, False)])
def test_compute_domain_is_create_or_a_name(value, ok):
    problems = k8s_problems(_plan(), dict(OPERATOR, nim_k8s_compute_domain=value))
    assert problems == ([] if ok else [
        'nim_k8s_compute_domain=%s must be empty (none), create (the operator makes one per NIMService) or the '
        'name of an existing ComputeDomain (a DNS subdomain)' % value])


def test_a_groups_planner_errors_come_through():
    plan = _plan(nim_tensor_parallel=None)
    assert not plan['valid']
    problems = k8s_problems(plan, LWS)
    assert problems == plan['groups']['default']['errors'] and problems


def test_a_plan_without_kubernetes_groups_names_the_docker_ones():
    assert k8s_problems(_plan(mode='docker'), LWS) == [
        "group 'default' was planned for nim_deployment_mode=docker; plan it with deployment_mode: kubernetes"]


def test_only_the_kubernetes_groups_of_a_mixed_plan_are_checked_and_deployed():
    plan = _merge(_plan(group='k8s'), _plan(3, mode='docker', group='dock'))
    assert [g['name'] for g in k8s_groups(plan)] == ['k8s']
    assert k8s_problems(plan, LWS) == []


def test_groups_are_sorted_by_name():
    plan = _merge(_plan(group='zeta'), _plan(group='alpha'))
    assert [g['name'] for g in k8s_groups(plan)] == ['alpha', 'zeta']


def test_the_operator_cannot_run_a_launch_without_a_multinode_key():
    plan = _plan(nim_launch_contract='leader_address', nim_socket_ifname='eth0')
    assert k8s_problems(plan, LWS) == []
    assert k8s_problems(plan, OPERATOR) == [
        "group 'default': nim_launch_contract=leader_address is not supported by nim_k8s_backend=nim_operator "
        "(its spec.multiNode knows mpi and ray); use nim_k8s_backend=lws"]


def test_the_operator_reads_the_launch_data_not_the_contract_name():
    plan = _plan()
    plan['groups']['default']['launch']['operator_multinode'] = None
    assert len(k8s_problems(plan, OPERATOR)) == 1
    plan['groups']['default']['contract'] = 'leader_address'
    plan['groups']['default']['launch']['operator_multinode'] = 'mpi'
    assert k8s_problems(plan, OPERATOR) == []


def test_the_operator_runs_one_pod_per_pipeline_stage():
    plan = _plan(nim_launch_contract='ray', nim_tensor_parallel=16, nim_pipeline_parallel=1)
    assert plan['valid'], plan['errors']
    assert k8s_problems(plan, LWS) == []
    assert k8s_problems(plan, OPERATOR) == [
        "group 'default': nim_tensor_parallel=16 with nim_pipeline_parallel=1 spreads over 2 nodes, but "
        "nim_k8s_backend=nim_operator runs one pod per pipeline stage (1), so the NIM Operator would not make "
        "the group the plan needs; keep nim_tensor_parallel within a node (nim_pipeline_parallel = nodes) or use "
        "nim_k8s_backend=lws, which runs any layout"]


def test_a_multi_rank_group_needs_read_write_many():
    assert k8s_problems(_plan(), dict(LWS, nim_k8s_storage_access_mode='ReadWriteOnce')) == [
        "group 'default' has 2 ranks that all mount the model store: nim_k8s_storage_access_mode must be "
        "ReadWriteMany, got ReadWriteOnce"]
    single = _plan()
    single['groups']['default']['size'] = 1
    assert k8s_problems(single, dict(LWS, nim_k8s_storage_access_mode='ReadWriteOnce')) == []


def test_settings_come_before_groups_and_every_problem_is_listed():
    problems = k8s_problems(_plan(nim_tensor_parallel=None), dict(LWS, nim_k8s_scheduler='slurm', nim_k8s_priority_class='X'))
    assert problems[0].startswith('nim_k8s_scheduler must be')
    assert problems[1].startswith('nim_k8s_priority_class=X')
    assert len(problems) > 2


def test_capacity_groups_carry_what_the_capacity_check_needs():
    settings = dict(LWS, nim_k8s_node_selector={'pool': 'gpu'}, nim_k8s_tolerations=[{'key': 'gpu'}],
                    nim_k8s_exclusive_topology='topology.kubernetes.io/rack')
    plan = _merge(_plan(group='llama', nim_k8s_replicas=2), _plan(3, mode='docker', group='dock'))
    assert capacity_groups(plan, settings) == [{
        'name': 'llama', 'size': 2, 'replicas': 2, 'gpus_per_rank': 8,
        'node_selector': {'pool': 'gpu'}, 'tolerations': [{'key': 'gpu'}],
        'topology_key': 'topology.kubernetes.io/rack', 'namespace': 'nim',
        'object_name': plan['groups']['llama']['k8s']['name'], 'lws_name': plan['groups']['llama']['k8s']['name'],
    }]


def test_capacity_groups_name_the_leaderworkerset_the_nim_operator_builds():
    # The operator's LWS for NIMService <name> is <name>-lws: its pods are the group's own on a re-run.
    plan = _plan(group='llama')
    name = plan['groups']['llama']['k8s']['name']
    assert [g['lws_name'] for g in capacity_groups(plan, OPERATOR)] == [name + '-lws']
    assert [g['lws_name'] for g in capacity_groups(plan, LWS)] == [name]


def test_a_rollout_percentage_above_100_is_refused_as_lws_does():
    settings = dict(LWS, nim_k8s_rollout_max_surge='150%')
    assert k8s_problems(_plan(), settings) == [k8s_preflight.PROBLEM_OVER_100 % ('nim_k8s_rollout_max_surge', '150%')]
    assert k8s_problems(_plan(), dict(LWS, nim_k8s_rollout_max_unavailable='100%')) == []


def test_percentages_that_come_to_zero_of_the_replicas_are_refused_per_group():
    # One replica: 50% unavailable rounds down to 0, a surge of 0 stays 0: nothing could be replaced.
    settings = dict(LWS, nim_k8s_rollout_max_unavailable='50%', nim_k8s_rollout_max_surge=0)
    assert k8s_problems(_plan(), settings) == [k8s_preflight.PROBLEM_ROLLOUT_SCALED_ZERO % ('default', '50%', 0, 1)]
    # Two replicas: 50% is one group at a time.
    assert k8s_problems(_plan(nim_k8s_replicas=2), settings) == []
    # A surge percentage rounds up: 10% of one replica is one.
    assert k8s_problems(_plan(), dict(LWS, nim_k8s_rollout_max_unavailable=0, nim_k8s_rollout_max_surge='10%')) == []
    # Literal zeros are named once, by the settings' own rule.
    assert k8s_problems(_plan(), dict(LWS, nim_k8s_rollout_max_unavailable=0, nim_k8s_rollout_max_surge=0)) == [
        k8s_preflight.PROBLEM_ROLLOUT_ZERO]


@pytest.mark.parametrize('queue', ['team a', 'team/a', '-team', 'a' * 64, '{{x}}'])
def test_a_kai_queue_must_be_a_label_value(queue):
    assert k8s_problems(_plan(), dict(LWS, nim_k8s_scheduler='kai', nim_k8s_kai_queue=queue)) == [
        k8s_preflight.PROBLEM_KAI_QUEUE_LABEL % queue]


@pytest.mark.parametrize('queue', ['Team-A', 'team a', 'team_a'])
def test_a_volcano_queue_must_be_an_object_name(queue):
    assert k8s_problems(_plan(), dict(LWS, nim_k8s_scheduler='volcano', nim_k8s_volcano_queue=queue)) == [
        k8s_preflight.PROBLEM_VOLCANO_QUEUE_NAME % queue]


@pytest.mark.parametrize('interval, ok', [('30s', True), ('1m30s', True), ('', True), ('0', False), ('0s', False),
                                          ('30', False), ('half a minute', False), (30, False)])
def test_the_scrape_interval_is_a_prometheus_duration(interval, ok):
    problems = k8s_problems(_plan(), dict(LWS, nim_k8s_monitoring_interval=interval))
    assert problems == ([] if ok else [k8s_preflight.PROBLEM_MONITORING_INTERVAL % (interval,)])


def test_the_monitoring_labels_are_labels_and_not_the_collection_s_own():
    labels = {'release': 'prometheus', 'example.com/team': 'inference', 'bad key': 'x', 'tier': 'a b',
              'app.kubernetes.io/managed-by': 'helm', 'count': 3}
    assert k8s_problems(_plan(), dict(LWS, nim_k8s_monitoring_labels=labels)) == [
        k8s_preflight.PROBLEM_MONITORING_OWN_LABEL % 'app.kubernetes.io/managed-by',
        k8s_preflight.PROBLEM_MONITORING_LABEL % ('bad key', 'x'),
        k8s_preflight.PROBLEM_MONITORING_LABEL % ('count', 3),
        k8s_preflight.PROBLEM_MONITORING_LABEL % ('tier', 'a b'),
    ]
    assert k8s_problems(_plan(), dict(LWS, nim_k8s_monitoring_labels=['release'])) == [
        k8s_preflight.PROBLEM_MONITORING_LABELS % 'list']


def test_the_alert_thresholds_are_checked_by_the_alert_rules_own_rules():
    problems = k8s_problems(_plan(), dict(OPERATOR, nim_k8s_alert_thresholds={'kv_cache_fraction': 1.5,
                                                                              'no_such_knob': 1}))
    assert len(problems) == 2
    assert all(p.startswith('nim_k8s_alert_thresholds: alert threshold ') for p in problems)
    assert 'kv_cache_fraction' in problems[0] and 'no_such_knob' in problems[1]
    assert k8s_problems(_plan(), dict(OPERATOR, nim_k8s_alert_thresholds={'kv_cache_fraction': 0.95})) == []


def _two_groups():
    return _merge(_plan(group='alpha'), _plan(group='beta'))


def test_a_limit_to_the_hosts_of_one_group_selects_that_group_whole():
    plan = _two_groups()
    assert k8s_preflight.limited_groups(plan, ['alpha-0', 'alpha-1']) == {'whole': ['alpha'], 'split': {}}
    assert k8s_preflight.limited_groups(plan, ['alpha-0', 'alpha-1', 'beta-0', 'beta-1'])['whole'] == ['alpha', 'beta']
    assert k8s_preflight.limit_problems(plan, ['alpha-0', 'alpha-1'], 'alpha-*') == []


def test_a_limit_that_splits_a_group_names_what_it_selected_and_what_to_write():
    plan = _two_groups()
    assert k8s_preflight.limited_groups(plan, ['alpha-0', 'beta-0', 'beta-1']) == {
        'whole': ['beta'], 'split': {'alpha': {'selected': ['alpha-0'], 'missing': ['alpha-1']}}}
    problems = k8s_preflight.limit_problems(plan, ['alpha-0'], 'alpha-0', {'all': ['alpha-0', 'alpha-1'],
                                                                           'team_alpha': ['alpha-1', 'alpha-0']})
    assert problems == ["--limit 'alpha-0' selects alpha-0 of Kubernetes group 'alpha' but not alpha-1: a Kubernetes "
                        'group is deployed, rendered or removed whole, so limit to all of its hosts (--limit team_alpha) '
                        'or to none of them']
    # Without an inventory group of exactly its hosts, their names.
    assert k8s_preflight.limit_problems(plan, ['alpha-1'])[0].endswith('(--limit alpha-0,alpha-1) or to none of them')


def test_a_limit_to_docker_hosts_selects_no_kubernetes_group():
    plan = _merge(_plan(group='alpha'), _plan(group='dock', mode='docker'))
    assert k8s_preflight.limited_groups(plan, ['dock-0', 'dock-1']) == {'whole': [], 'split': {}}


def test_plan_groups_narrows_the_kubernetes_groups_and_keeps_the_others():
    plan = _merge(_plan(group='alpha'), _plan(group='beta'), _plan(group='dock', mode='docker'))
    assert k8s_preflight.plan_groups(plan, []) is plan
    assert sorted(k8s_preflight.plan_groups(plan, ['beta'])['groups']) == ['beta', 'dock']
    assert sorted(k8s_preflight.plan_groups(plan, ['beta'], exclude=True)['groups']) == ['alpha', 'dock']
    assert sorted(k8s_preflight.plan_groups(plan, ['alpha', 'beta'], exclude=True)['groups']) == ['dock']
    assert sorted(plan['groups']) == ['alpha', 'beta', 'dock']
    with pytest.raises(ValueError, match=r"nim_k8s_groups names dock, gamma, which are no Kubernetes group of the "
                                         r"plan \(its Kubernetes groups: alpha, beta\)"):
        k8s_preflight.plan_groups(plan, ['dock', 'gamma'])


def test_the_render_directory_is_checked_on_the_controller_before_anything_is_written(tmp_path):
    a_file = tmp_path / 'a-file'
    a_file.write_text('mine\n')
    assert k8s_preflight.render_dir_problems('') == []
    assert k8s_preflight.render_dir_problems(str(tmp_path)) == []
    assert k8s_preflight.render_dir_problems(str(tmp_path / 'new' / 'deeper')) == []
    assert k8s_preflight.render_dir_problems(str(a_file)) == [
        'nim_k8s_render_dir=%s is not a directory (a file is there): render-only mode writes a tree of files below '
        'it; name a directory, or one to be made' % a_file]
    assert k8s_preflight.render_dir_problems(str(a_file / 'out')) == [
        'nim_k8s_render_dir=%s cannot be made: %s is not a directory' % (a_file / 'out', a_file)]
    assert 'control character' in k8s_preflight.render_dir_problems('out\n')[0]
    assert k8s_preflight.render_dir_problems(str(tmp_path / 'new'), writable=lambda folder: False) == [
        'nim_k8s_render_dir=%s cannot be made: this user cannot write to %s' % (tmp_path / 'new', tmp_path)]
    assert k8s_preflight.render_dir_problems(str(tmp_path), writable=lambda folder: False) == [
        'nim_k8s_render_dir=%s is a directory this user cannot write to' % tmp_path]
    # The role's settings carry it: the same check in the one problem list.
    assert k8s_problems(_plan(), dict(LWS, nim_k8s_render_dir=str(a_file))) == k8s_preflight.render_dir_problems(str(a_file))
    assert a_file.read_text() == 'mine\n'


def test_the_run_scope_of_a_limited_run_leaves_the_other_groups_and_their_namespace_alone():
    plan = _merge(_plan(group='alpha', nim_k8s_namespace='team-a'), _plan(group='beta', nim_k8s_namespace='team-b'),
                  _plan(group='gamma', nim_k8s_namespace='team-b'))
    every = k8s_preflight.run_scope(plan, [])
    assert every['run_plan'] is plan and every['namespaces'] == ['team-a', 'team-b']
    assert k8s_groups(every['kept_plan']) == [] and every['alert_plan'] is plan
    # Present, limited to beta: the rule still covers every group, in the first namespace of all.
    beta = k8s_preflight.run_scope(plan, ['beta'])
    assert [g['name'] for g in k8s_groups(beta['run_plan'])] == ['beta']
    assert [g['name'] for g in k8s_groups(beta['kept_plan'])] == ['alpha', 'gamma']
    assert beta['alert_plan'] is plan and beta['rule_namespaces'] == ['team-a', 'team-b']
    assert k8s_preflight.run_scope(plan, ['beta'], monitoring=False)['rule_namespaces'] == ['team-b']
    # Absent, limited to beta: gamma still uses team-b, so nothing of the namespace goes.
    gone = k8s_preflight.run_scope(plan, ['beta'], 'absent')
    assert gone['freed_namespaces'] == [] and gone['alert_plan'] is not plan
    assert [g['name'] for g in k8s_groups(gone['alert_plan'])] == ['alpha', 'gamma']
    assert k8s_preflight.run_scope(plan, ['alpha'], 'absent')['freed_namespaces'] == ['team-a']
    # Absent, every group: nothing is kept, the rule covers nothing.
    assert k8s_groups(k8s_preflight.run_scope(plan, [], 'absent')['alert_plan']) == []
