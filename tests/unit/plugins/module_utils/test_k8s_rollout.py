# -*- coding: utf-8 -*-
"""rollout_problem: a Deployment or LeaderWorkerSet counts as rolled out only when nothing old is left."""

from ansible_collections.nimstack.multinode.plugins.module_utils.k8s_rollout import rollout_problem


def deployment(generation=2, observed=2, replicas=1, updated=1, current=1, available=1, deleting=False):
    meta = {'name': 'lws-controller-manager', 'generation': generation}
    if deleting:
        meta['deletionTimestamp'] = '2026-11-25T00:00:00Z'
    return {'kind': 'Deployment', 'metadata': meta, 'spec': {'replicas': replicas},
            'status': {'observedGeneration': observed, 'replicas': current, 'updatedReplicas': updated,
                       'availableReplicas': available,
                       'conditions': [{'type': 'Available', 'status': 'True'}]}}


def lws(replicas=2, updated=2, current=2, ready=2, available='True', updating='False', generation=3, observed=3):
    return {'kind': 'LeaderWorkerSet', 'metadata': {'name': 'g', 'generation': generation},
            'spec': {'replicas': replicas},
            'status': {'observedGeneration': observed, 'replicas': current, 'updatedReplicas': updated,
                       'readyReplicas': ready,
                       'conditions': [{'type': 'Available', 'status': available},
                                      {'type': 'UpdateInProgress', 'status': updating}]}}


def test_a_rolled_out_deployment_has_no_problem():
    assert rollout_problem([deployment()]) == ''


def test_missing_object_is_named():
    assert rollout_problem([]) == 'it does not exist'


def test_available_while_the_old_pod_still_serves_is_not_rolled_out():
    # The defect this guards against: Available is True, the new template has not run yet.
    problem = rollout_problem([deployment(updated=0, current=2, available=1)])
    assert '0 of 1 replicas run the current template' in problem
    assert '1 old or surge replicas are still there' in problem


def test_a_generation_the_controller_has_not_seen_is_not_rolled_out():
    assert rollout_problem([deployment(generation=3, observed=2)]) == \
        'its controller has not seen generation 3 yet (observed 2)'


def test_a_deployment_being_deleted_is_not_rolled_out():
    assert rollout_problem([deployment(deleting=True)]) == 'it is being deleted'


def test_a_leaderworkerset_with_an_update_in_progress_is_not_rolled_out():
    problem = rollout_problem([lws(updated=1, current=3, ready=2, updating='True')])
    assert problem == ('1 of 2 replicas run the current template; 1 old or surge replicas are still there; '
                       'an update is in progress')


def test_a_ready_leaderworkerset_has_no_problem_and_zero_replicas_need_not_be_available():
    assert rollout_problem([lws()]) == ''
    assert rollout_problem([lws(replicas=0, updated=0, current=0, ready=0, available='False')]) == ''


def test_a_leaderworkerset_not_available_is_named():
    assert rollout_problem([lws(ready=1, available='False')]) == '1 of 2 replicas are ready; it is not Available'


def test_a_nimservice_is_rolled_out_when_the_operator_says_ready():
    ready = {'kind': 'NIMService', 'metadata': {'name': 'g', 'generation': 2},
             'status': {'state': 'Ready', 'conditions': [{'type': 'Ready', 'status': 'True'}]}}
    assert rollout_problem([ready]) == ''
    pending = {'kind': 'NIMService', 'metadata': {'name': 'g'},
               'status': {'state': 'NotReady', 'conditions': [{'type': 'Ready', 'status': 'False'}]}}
    assert rollout_problem([pending]) == 'it is not Ready (state NotReady)'


def test_a_job_is_rolled_out_when_complete_and_says_when_it_failed():
    def job(conditions, active=0, failed=0):
        return {'kind': 'Job', 'metadata': {'name': 'nim-alpha-smoke', 'generation': 1},
                'status': {'active': active, 'failed': failed, 'conditions': conditions}}
    assert rollout_problem([job([{'type': 'Complete', 'status': 'True'}])]) == ''
    assert rollout_problem([job([], active=1)]) == 'it has not completed (1 pod(s) running, 0 failed)'
    assert rollout_problem([job([{'type': 'Failed', 'status': 'True', 'reason': 'BackoffLimitExceeded',
                                  'message': 'Job has reached the specified backoff limit'}], failed=2)]) == (
        'it failed: Job has reached the specified backoff limit')
