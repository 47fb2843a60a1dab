"""The nim_parallelism module: options, failure with every error, warnings, check mode."""

import pytest
from ansible.module_utils import basic

from ansible_collections.nimstack.multinode.plugins.modules import nim_parallelism
from ansible_collections.nimstack.multinode.tests.unit.plugins.modules.utils import run_module

THREE_ERRORS = {
    'tensor_parallel': 6,
    'pipeline_parallel': 2,
    'nodes': 2,
    'gpus_per_node': 8,
    'model': 'meta/llama-3.1-405b-instruct',
    'autoscaling': True,
}


@pytest.fixture
def warned(monkeypatch):
    messages = []
    monkeypatch.setattr(basic.AnsibleModule, 'warn', lambda self, warning: messages.append(warning))
    return messages


def test_valid_layout(warned):
    result, failed = run_module(nim_parallelism.main, {'tensor_parallel': 8, 'pipeline_parallel': 2, 'nodes': 2,
                                                       'gpus_per_node': 8, 'model': 'llama-3.1-405b',
                                                       'precision': 'fp8', 'gpu_memory_gb': 80})
    assert failed is False
    assert result['changed'] is False
    assert result['valid'] is True
    assert result['errors'] == []
    assert result['plan']['total_gpus'] == 16
    assert result['plan']['ranks'] == 2
    assert result['plan']['mpi_start_timeout'] == 3000
    # 405.9 GB of fp8 weights over 16 GPUs.
    assert result['plan']['weights_gb_per_gpu'] == pytest.approx(25.37, abs=0.01)
    assert result['plan_warnings'] == []
    assert warned == []


def test_fails_with_every_error_numbered_in_msg():
    result, failed = run_module(nim_parallelism.main, THREE_ERRORS)
    assert failed is True
    assert result['valid'] is False
    assert result['changed'] is False
    assert len(result['errors']) == 3
    assert result['msg'] == 'The parallel layout has 3 error(s):\n' + '\n'.join(
        '%d. %s' % (number, error) for number, error in enumerate(result['errors'], 1))
    assert result['msg'].splitlines()[1:] == [
        "1. autoscaling=true, nodes=2: a multi-node deployment cannot autoscale (the NIM Operator's CEL rule rejects "
        "autoscaling together with multiNode); scale with replicas instead",
        "2. tensor_parallel=6: the model's 128 attention heads are not divisible by 6 (model llama-3.1-405b)",
        "3. tensor_parallel=6: the model's 8 KV heads are neither divisible by 6 nor a divisor of it "
        "(model llama-3.1-405b)",
    ]
    assert result['plan']['total_gpus'] == 12


def test_fail_on_invalid_false_returns_the_errors():
    result, failed = run_module(nim_parallelism.main, dict(THREE_ERRORS, fail_on_invalid=False))
    assert failed is False
    assert result['valid'] is False
    assert len(result['errors']) == 3
    assert 'msg' not in result


def test_memory_rejection_through_the_module():
    result, failed = run_module(nim_parallelism.main, {'tensor_parallel': 8, 'nodes': 1, 'gpus_per_node': 8,
                                                       'model': 'llama-3.1-405b', 'gpu_memory_gb': 80})
    assert failed is True
    assert result['msg'].startswith('The parallel layout has 1 error(s):\n1. gpu_memory_gb=80, '
                                    'gpu_memory_utilization=0.9: llama-3.1-405b in bf16 needs 101.47 GB')


def test_warnings_are_emitted_and_returned(warned):
    result, failed = run_module(nim_parallelism.main, {'tensor_parallel': 16, 'nodes': 2, 'gpus_per_node': 8,
                                                       'launch_contract': 'ray', 'interconnect': 'ib_ndr',
                                                       'model': 'llama-3.1-405b', 'precision': 'fp8',
                                                       'gpu_memory_gb': 80})
    assert failed is False
    assert result['plan']['tp_spans_nodes'] is True
    assert len(result['plan_warnings']) == 1
    assert result['plan_warnings'][0].startswith('tensor_parallel=16 spans nodes over interconnect=ib_ndr (50 GB/s')
    assert warned == result['plan_warnings']


def test_check_mode_gives_the_same_answer():
    args = {'tensor_parallel': 8, 'pipeline_parallel': 2, 'nodes': 2, 'gpus_per_node': 8, 'backend': 'lws'}
    normal, normal_failed = run_module(nim_parallelism.main, args)
    assert normal_failed is False
    checked, failed = run_module(nim_parallelism.main, args, check_mode=True)
    assert failed is False
    assert checked['changed'] is False
    assert checked['plan'] == normal['plan']
    assert checked['plan']['backend'] == 'lws'


def test_dynamo_through_the_module():
    result, failed = run_module(nim_parallelism.main, {'tensor_parallel': 8, 'nodes': 2, 'gpus_per_node': 8,
                                                       'backend': 'dynamo', 'fail_on_invalid': False})
    assert failed is False
    assert result['errors'] == [
        'tensor_parallel=8, nodes=2, gpus_per_node=8: backend dynamo runs one tensor-parallel group over every GPU, '
        'so tensor_parallel must equal nodes x gpus_per_node = 16'
    ]


def test_model_dict_and_string_numbers_are_accepted():
    result, failed = run_module(nim_parallelism.main, {
        'tensor_parallel': '4', 'nodes': '1', 'gpus_per_node': '4', 'gpu_memory_gb': '48',
        'model': {'name': 'mine', 'params_b': 30, 'layers': 48, 'attention_heads': 32, 'kv_heads': 8,
                  'precision': 'bf16'},
        'mpi_start_timeout': 600,
    })
    assert failed is False, result.get('msg')
    assert result['plan']['model']['name'] == 'mine'
    # 30 x 2 / 4 = 15 GB of the 43.2 GB budget of an L40S.
    assert result['plan']['weights_gb_per_gpu'] == 15.0
    assert result['plan']['kv_cache_gb_per_gpu'] == pytest.approx(28.2)


def test_unknown_model_name_fails():
    result, failed = run_module(nim_parallelism.main, {'tensor_parallel': 8, 'nodes': 1, 'gpus_per_node': 8,
                                                       'model': 'gpt-5'})
    assert failed is True
    assert result['errors'][0].startswith("model='gpt-5': not in the built-in catalog")


def test_choices_are_enforced():
    result, failed = run_module(nim_parallelism.main, {'tensor_parallel': 8, 'nodes': 1, 'gpus_per_node': 8,
                                                       'backend': 'slurm'})
    assert failed is True
    assert 'backend' in result['msg'] and 'slurm' in result['msg']


def test_required_options():
    result, failed = run_module(nim_parallelism.main, {'tensor_parallel': 8})
    assert failed is True
    assert 'gpus_per_node' in result['msg'] and 'nodes' in result['msg']
