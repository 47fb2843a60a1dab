"""Every rule of the parallelism planner, with the model facts of docs/sizing.md."""

import pytest

from ansible_collections.nimstack.multinode.plugins.module_utils.nim_parallelism import plan_parallelism

H100_GB = 80
H200_GB = 141


def plan(**kwargs):
    kwargs.setdefault('tensor_parallel', 8)
    kwargs.setdefault('nodes', 1)
    kwargs.setdefault('gpus_per_node', 8)
    return plan_parallelism(**kwargs)


# --- the acceptance cases of the planner and the launch contracts ---------------------------------------------------

def test_tp8_pp2_on_two_nodes_of_eight_is_valid_under_nim():
    result = plan(tensor_parallel=8, pipeline_parallel=2, nodes=2, gpus_per_node=8)
    assert result['valid'] is True
    assert result['errors'] == []
    layout = result['plan']
    assert layout['total_gpus'] == 16
    assert layout['gpus_on_nodes'] == 16
    assert layout['idle_gpus'] == 0
    assert layout['ranks'] == 2
    assert layout['gpus_per_rank'] == 8
    assert layout['tp_spans_nodes'] is False
    assert (layout['backend'], layout['launch_contract'], layout['replicas']) == ('nim', 'mpi', 1)


def test_llama_405b_bf16_on_one_node_of_h100_is_rejected_for_memory():
    result = plan(model='llama-3.1-405b', gpu_memory_gb=H100_GB)
    assert result['valid'] is False
    # 405.9B x 2 bytes / 8 GPUs = 101.475 GB against 80 x 0.9 = 72 GB.
    assert result['errors'] == [
        'gpu_memory_gb=80, gpu_memory_utilization=0.9: llama-3.1-405b in bf16 needs 101.47 GB of weights per GPU '
        '(405.9B parameters x 2 bytes / (tensor_parallel 8 x pipeline_parallel 1)), more than the 72.00 GB budget '
        'per GPU, leaving nothing for the KV cache; spread the model over more GPUs, lower precision, or use larger GPUs'
    ]
    layout = result['plan']
    assert layout['weights_gb_per_gpu'] == pytest.approx(101.475, abs=0.01)
    assert layout['memory_budget_gb_per_gpu'] == 72.0
    assert layout['kv_cache_gb_per_gpu'] == pytest.approx(72 - 101.475, abs=0.01)
    assert layout['precision'] == 'bf16'
    assert layout['bytes_per_param'] == 2


def test_llama_405b_fp8_on_one_node_of_h100_is_accepted():
    result = plan(model='llama-3.1-405b', precision='fp8', gpu_memory_gb=H100_GB)
    assert result['valid'] is True, result['errors']
    layout = result['plan']
    # 405.9B x 1 byte / 8 = 50.74 GB, leaving 72 - 50.74 = 21.26 GB of KV cache per GPU.
    assert layout['weights_gb_per_gpu'] == pytest.approx(50.74, abs=0.01)
    assert layout['kv_cache_gb_per_gpu'] == pytest.approx(21.26, abs=0.01)
    assert layout['precision'] == 'fp8'
    assert layout['model']['precision'] == 'bf16'
    assert result['warnings'] == []


def test_tp6_for_a_128_head_model_is_rejected():
    result = plan(tensor_parallel=6, nodes=1, gpus_per_node=8, model='llama-3.1-405b')
    assert result['valid'] is False
    assert "tensor_parallel=6: the model's 128 attention heads are not divisible by 6 (model llama-3.1-405b)" \
        in result['errors']


def test_three_errors_are_all_reported():
    result = plan(tensor_parallel=6, pipeline_parallel=2, nodes=2, gpus_per_node=8, model='llama-3.1-405b',
                  autoscaling=True)
    assert result['errors'] == [
        "autoscaling=true, nodes=2: a multi-node deployment cannot autoscale (the NIM Operator's CEL rule rejects "
        "autoscaling together with multiNode); scale with replicas instead",
        "tensor_parallel=6: the model's 128 attention heads are not divisible by 6 (model llama-3.1-405b)",
        "tensor_parallel=6: the model's 8 KV heads are neither divisible by 6 nor a divisor of it (model llama-3.1-405b)",
    ]
    assert result['valid'] is False
    # Best effort: the plan is still filled in.
    assert result['plan']['total_gpus'] == 12
    assert result['plan']['idle_gpus'] == 4


@pytest.mark.parametrize('contract', ['ray', 'leader_address'])
def test_tp16_over_two_nodes_is_valid_under_ray_and_leader_address_with_a_warning(contract):
    result = plan(tensor_parallel=16, pipeline_parallel=1, nodes=2, gpus_per_node=8, launch_contract=contract,
                  model='llama-3.1-405b', precision='fp8', gpu_memory_gb=H100_GB, interconnect='ib_ndr')
    assert result['valid'] is True, result['errors']
    layout = result['plan']
    assert layout['tp_spans_nodes'] is True
    assert layout['total_gpus'] == 16
    assert layout['gpus_per_rank'] == 8
    assert layout['interconnect_gbps'] == 50
    assert result['warnings'] == [
        "tensor_parallel=16 spans nodes over interconnect=ib_ndr (50 GB/s per direction, against NVLink's 900 GB/s "
        "inside a node): tensor parallelism all-reduces on every layer, so every layer pays the cross-node latency; "
        "keep tensor_parallel inside a node and spread pipeline_parallel across nodes where the model allows"
    ]


# --- backend nim, launch contract mpi ----------------------------------------------------------

def test_mpi_rejects_tp_spanning_nodes():
    result = plan(tensor_parallel=16, pipeline_parallel=1, nodes=2, gpus_per_node=8, interconnect='ib_ndr')
    assert result['errors'] == [
        'nodes=2, pipeline_parallel=1: backend nim with launch_contract mpi runs one pipeline stage per node, so nodes '
        'must equal pipeline_parallel',
        'tensor_parallel=16, gpus_per_node=8: under launch_contract mpi one node holds a whole pipeline stage of '
        'tensor_parallel GPUs, so tensor parallelism cannot span nodes; lower tensor_parallel and raise '
        'pipeline_parallel, or use launch_contract ray or leader_address',
    ]
    assert result['plan']['tp_spans_nodes'] is True
    # The error already says it all: no interconnect warning on top.
    assert not [w for w in result['warnings'] if 'interconnect' in w]


def test_mpi_requires_one_stage_per_node():
    result = plan(tensor_parallel=8, pipeline_parallel=1, nodes=2, gpus_per_node=8)
    assert result['errors'] == [
        'nodes=2, pipeline_parallel=1: backend nim with launch_contract mpi runs one pipeline stage per node, so nodes '
        'must equal pipeline_parallel',
    ]


def test_mpi_warns_about_idle_gpus():
    result = plan(tensor_parallel=4, pipeline_parallel=2, nodes=2, gpus_per_node=8, model='llama-3.1-8b',
                  gpu_memory_gb=H100_GB)
    assert result['valid'] is True
    assert result['warnings'] == [
        'gpus_per_node=8, tensor_parallel=4: each node runs one rank of 4 GPUs, so 4 GPU(s) per node (8 in all) sit idle'
    ]
    layout = result['plan']
    assert (layout['total_gpus'], layout['gpus_on_nodes'], layout['idle_gpus'], layout['gpus_per_rank']) == (8, 16, 8, 4)


# --- backends lws and dynamo -------------------------------------------------------------------

def test_lws_uses_every_gpu():
    result = plan(backend='lws', tensor_parallel=8, pipeline_parallel=2, nodes=2, gpus_per_node=8)
    assert result['valid'] is True
    assert result['plan']['tp_spans_nodes'] is False
    assert result['plan']['gpus_per_rank'] == 8


def test_lws_rejects_a_product_that_does_not_match():
    result = plan(backend='lws', tensor_parallel=8, pipeline_parallel=1, nodes=2, gpus_per_node=8)
    assert result['errors'] == [
        'tensor_parallel=8 x pipeline_parallel=1 = 8, nodes=2 x gpus_per_node=8 = 16: backend lws uses every GPU of '
        'every node, so tensor_parallel x pipeline_parallel must equal nodes x gpus_per_node'
    ]


def test_lws_ignores_the_mpi_contract_and_lets_tp_span_nodes():
    result = plan(backend='lws', tensor_parallel=16, nodes=2, gpus_per_node=8, interconnect='nvlink')
    assert result['valid'] is True
    assert result['plan']['tp_spans_nodes'] is True
    assert result['warnings'] == []


def test_nim_ray_rejects_a_product_that_does_not_match():
    result = plan(launch_contract='ray', tensor_parallel=8, pipeline_parallel=1, nodes=2, gpus_per_node=8)
    assert result['errors'] == [
        'tensor_parallel=8 x pipeline_parallel=1 = 8, nodes=2 x gpus_per_node=8 = 16: backend nim with '
        'launch_contract ray uses every GPU of every node, so tensor_parallel x pipeline_parallel must equal nodes x '
        'gpus_per_node'
    ]


def test_dynamo_runs_tp_over_every_gpu():
    result = plan(backend='dynamo', tensor_parallel=16, nodes=2, gpus_per_node=8, model='deepseek-r1',
                  gpu_memory_gb=H100_GB, interconnect='ib_xdr')
    assert result['valid'] is True, result['errors']
    assert result['plan']['tp_spans_nodes'] is True
    # 671B x 1 byte (fp8) / 16 = 41.94 GB.
    assert result['plan']['weights_gb_per_gpu'] == pytest.approx(41.94, abs=0.01)
    assert len(result['warnings']) == 1
    assert 'interconnect=ib_xdr (100 GB/s' in result['warnings'][0]


def test_dynamo_rejects_tp_below_the_gpu_count_and_any_pipeline():
    result = plan(backend='dynamo', tensor_parallel=8, pipeline_parallel=2, nodes=2, gpus_per_node=8)
    assert result['errors'] == [
        'tensor_parallel=8, nodes=2, gpus_per_node=8: backend dynamo runs one tensor-parallel group over every GPU, so '
        'tensor_parallel must equal nodes x gpus_per_node = 16',
        'pipeline_parallel=2: backend dynamo runs one tensor-parallel group over every GPU, so pipeline_parallel must be 1',
    ]


def test_tp_groups_that_straddle_nodes_are_flagged():
    result = plan(backend='lws', tensor_parallel=12, pipeline_parallel=2, nodes=3, gpus_per_node=8,
                  interconnect='ib_ndr')
    assert result['valid'] is True
    assert result['plan']['tp_spans_nodes'] is True
    assert result['warnings'][0] == ('tensor_parallel=12, gpus_per_node=8: tensor-parallel groups do not line up with '
                                     'node boundaries, so some of them straddle two nodes')
    assert len(result['warnings']) == 2


def test_tp_smaller_than_a_node_that_does_not_divide_it_spans_nodes():
    result = plan(backend='lws', tensor_parallel=3, pipeline_parallel=4, nodes=2, gpus_per_node=6)
    assert result['valid'] is True
    assert result['plan']['tp_spans_nodes'] is False
    result = plan(backend='lws', tensor_parallel=4, pipeline_parallel=3, nodes=2, gpus_per_node=6)
    assert result['plan']['tp_spans_nodes'] is True


# --- interconnect -------------------------------------------------------------------------------

def test_eth_25g_names_its_bandwidth():
    result = plan(launch_contract='ray', tensor_parallel=16, nodes=2, gpus_per_node=8, interconnect='eth_25g')
    assert result['warnings'][0].startswith('tensor_parallel=16 spans nodes over interconnect=eth_25g (3.1 GB/s')


def test_roce_warns():
    result = plan(launch_contract='ray', tensor_parallel=16, nodes=2, gpus_per_node=8, interconnect='roce_100g')
    assert 'interconnect=roce_100g (12.5 GB/s' in result['warnings'][0]


def test_unknown_interconnect_cannot_be_judged():
    result = plan(launch_contract='ray', tensor_parallel=16, nodes=2, gpus_per_node=8, interconnect='other')
    assert result['valid'] is True
    assert result['warnings'] == [
        "interconnect='other': no bandwidth is known for it (known: eth_25g, ib_hdr, ib_ndr, ib_xdr, nvlink, "
        "roce_100g), so tensor_parallel=16 across nodes could not be judged"
    ]
    assert result['plan']['interconnect_gbps'] is None


def test_missing_interconnect_cannot_be_judged():
    result = plan(launch_contract='leader_address', tensor_parallel=16, nodes=2, gpus_per_node=8)
    assert result['warnings'] == [
        'tensor_parallel=16 spans nodes (gpus_per_node=8) and interconnect is not set, so the cost of its per-layer '
        'all-reduce across nodes could not be judged'
    ]


def test_nvlink_across_nodes_is_not_warned_about():
    result = plan(launch_contract='ray', tensor_parallel=16, nodes=2, gpus_per_node=8, interconnect='nvlink')
    assert result['warnings'] == []


def test_interconnect_is_not_judged_when_tp_stays_in_a_node():
    result = plan(tensor_parallel=8, pipeline_parallel=2, nodes=2, gpus_per_node=8, interconnect='eth_25g')
    assert result['warnings'] == [w for w in result['warnings'] if 'interconnect' not in w]


# --- model shape ----------------------------------------------------------------------------------

def test_tp_a_multiple_of_the_kv_heads_is_allowed():
    # Llama 3.1 405B has 8 KV heads: TP 16 replicates them.
    result = plan(backend='lws', tensor_parallel=16, nodes=2, gpus_per_node=8, model='llama-3.1-405b',
                  interconnect='nvlink')
    assert result['valid'] is True, result['errors']


def test_kv_heads_rule_alone():
    # Mixtral 8x22B: 48 heads divide by 12, its 8 KV heads neither divide by 12 nor divide 12.
    result = plan(backend='lws', tensor_parallel=12, nodes=3, gpus_per_node=4, model='mixtral-8x22b',
                  interconnect='nvlink')
    assert result['errors'] == [
        "tensor_parallel=12: the model's 8 KV heads are neither divisible by 12 nor a divisor of it (model mixtral-8x22b)"
    ]


def test_attention_heads_rule_alone():
    # Nemotron-4 340B: 96 heads do not divide by 64; 64 is a multiple of its 8 KV heads.
    result = plan(backend='dynamo', tensor_parallel=64, nodes=8, gpus_per_node=8, model='nemotron-4-340b',
                  interconnect='nvlink')
    assert result['errors'] == [
        "tensor_parallel=64: the model's 96 attention heads are not divisible by 64 (model nemotron-4-340b)"
    ]


def test_mla_kv_heads_of_deepseek():
    # DeepSeek-R1's 128 KV heads divide by 16.
    result = plan(backend='lws', tensor_parallel=16, nodes=2, gpus_per_node=8, model='deepseek-r1',
                  interconnect='nvlink', gpu_memory_gb=H100_GB)
    assert result['valid'] is True, result['errors']


def test_pipeline_longer_than_the_layers_is_rejected():
    result = plan(tensor_parallel=1, pipeline_parallel=33, nodes=33, gpus_per_node=1, model='llama-3.1-8b',
                  gpu_memory_gb=24)
    assert result['errors'] == ["pipeline_parallel=33: more pipeline stages than the model's 32 layers (model llama-3.1-8b)"]


def test_pipeline_equal_to_the_layers_is_allowed():
    result = plan(tensor_parallel=1, pipeline_parallel=32, nodes=32, gpus_per_node=1, model='llama-3.1-8b',
                  gpu_memory_gb=24)
    assert result['valid'] is True


def test_dict_model_errors_join_the_others():
    result = plan(tensor_parallel=0, model={'params_b': 70, 'layers': 80})
    assert result['errors'] == [
        'tensor_parallel=0: must be an integer >= 1',
        'model: missing key(s) attention_heads, kv_heads, precision',
    ]
    assert result['plan']['model'] is None


def test_dict_model_is_planned():
    model = {'name': 'mine', 'params_b': 120, 'layers': 64, 'attention_heads': 96, 'kv_heads': 8, 'precision': 'bf16'}
    result = plan(model=model, gpu_memory_gb=H200_GB)
    assert result['valid'] is True
    # 120 x 2 / 8 = 30 GB of 126.9 GB.
    assert result['plan']['weights_gb_per_gpu'] == 30.0
    assert result['plan']['kv_cache_gb_per_gpu'] == pytest.approx(96.9)


# --- memory -----------------------------------------------------------------------------------------

def test_tight_kv_cache_is_warned_about():
    # Llama 3.1 70B bf16 on TP 2: 70.6 GB of weights per GPU leave 1.4 GB of the 72 GB budget.
    result = plan(tensor_parallel=2, nodes=1, gpus_per_node=2, model='llama-3.1-70b', gpu_memory_gb=H100_GB)
    assert result['valid'] is True
    assert result['warnings'] == [
        'gpu_memory_gb=80, gpu_memory_utilization=0.9: llama-3.1-70b in bf16 leaves only 1.40 GB per GPU for the KV '
        'cache, under 10% of the 72.00 GB budget, so context length and concurrency will be tight'
    ]


def test_utilization_changes_the_budget():
    result = plan(tensor_parallel=2, nodes=1, gpus_per_node=2, model='llama-3.1-70b', gpu_memory_gb=H100_GB,
                  gpu_memory_utilization=0.85)
    # 80 x 0.85 = 68 GB < 70.6 GB.
    assert result['valid'] is False
    assert result['plan']['memory_budget_gb_per_gpu'] == 68.0


def test_pipeline_stages_share_the_weights():
    result = plan(tensor_parallel=8, pipeline_parallel=2, nodes=2, gpus_per_node=8, model='llama-3.1-405b',
                  gpu_memory_gb=H100_GB)
    assert result['valid'] is True
    assert result['plan']['weights_gb_per_gpu'] == pytest.approx(405.9 * 2 / 16, abs=0.01)


@pytest.mark.parametrize('gpu_gb, valid', [(H100_GB, False), (H200_GB, True)])
def test_deepseek_r1_fp8_on_one_node(gpu_gb, valid):
    # 671 GB / 8 = 83.9 GB per GPU: over an H100's 72 GB budget, under an H200's 126.9 GB.
    result = plan(model='deepseek-r1', gpu_memory_gb=gpu_gb)
    assert result['valid'] is valid
    assert result['plan']['weights_gb_per_gpu'] == pytest.approx(83.88, abs=0.01)


def test_int4_halves_fp8():
    result = plan(model='llama-3.1-405b', precision='int4', gpu_memory_gb=H100_GB)
    assert result['plan']['weights_gb_per_gpu'] == pytest.approx(25.37, abs=0.01)
    assert result['plan']['bytes_per_param'] == 0.5


def test_fp32_doubles_bf16():
    result = plan(tensor_parallel=1, nodes=1, gpus_per_node=1, model='llama-3.1-8b', precision='fp32', gpu_memory_gb=24)
    assert result['plan']['weights_gb_per_gpu'] == 32.0
    assert result['valid'] is False


def test_memory_not_checked_without_gpu_memory():
    result = plan(model='llama-3.1-405b')
    assert result['valid'] is True
    assert result['warnings'] == [
        'gpu_memory_gb is not set, so whether llama-3.1-405b in bf16 fits in GPU memory was not checked'
    ]
    assert result['plan']['weights_gb_per_gpu'] == pytest.approx(101.47, abs=0.01)
    assert result['plan']['kv_cache_gb_per_gpu'] is None


def test_memory_not_checked_without_model():
    result = plan(gpu_memory_gb=H100_GB, mpi_start_timeout=600)
    assert result['warnings'] == ['gpu_memory_gb=80 is set but model is not, so the memory fit was not checked']
    assert result['plan']['weights_gb_per_gpu'] is None


# --- autoscaling and replicas -----------------------------------------------------------------------

def test_autoscaling_a_single_node_is_allowed():
    result = plan(autoscaling=True, replicas=3)
    assert result['valid'] is True
    assert result['plan']['gpus_all_replicas'] == 24


def test_autoscaling_multi_node_is_rejected_for_every_backend():
    result = plan(backend='lws', tensor_parallel=8, pipeline_parallel=2, nodes=2, gpus_per_node=8, autoscaling=True)
    assert result['errors'] == [
        "autoscaling=true, nodes=2: a multi-node deployment cannot autoscale (the NIM Operator's CEL rule rejects "
        "autoscaling together with multiNode); scale with replicas instead"
    ]


def test_replicas_multiply_the_gpus():
    result = plan(tensor_parallel=8, pipeline_parallel=2, nodes=2, gpus_per_node=8, replicas=2)
    assert result['plan']['gpus_all_replicas'] == 32
    assert result['plan']['replicas'] == 2


# --- mpi_start_timeout ------------------------------------------------------------------------------

@pytest.mark.parametrize('model, expected', [
    ('llama-3.1-8b', 600),
    ('llama-3.1-70b', 3000),
    ('llama-3.1-405b', 3000),
    ('deepseek-r1', 3000),
])
def test_recommended_mpi_start_timeout(model, expected):
    result = plan(model=model)
    assert result['plan']['mpi_start_timeout'] == expected
    assert not [w for w in result['warnings'] if 'mpi_start_timeout' in w]


def test_mpi_start_timeout_without_model_falls_back_to_the_operator_default():
    result = plan()
    assert result['plan']['mpi_start_timeout'] == 300
    assert result['warnings'] == [
        'mpi_start_timeout is not set and model is not known, so it falls back to the operator default of 300 s; '
        'models of 70B parameters and up want 3000-6000 s'
    ]


def test_mpi_start_timeout_fallback_is_only_warned_about_under_mpi():
    result = plan(launch_contract='ray')
    assert result['plan']['mpi_start_timeout'] == 300
    assert result['warnings'] == []


def test_short_mpi_start_timeout_for_a_large_model_is_warned_about():
    result = plan(model='llama-3.1-405b', precision='fp8', gpu_memory_gb=H100_GB, mpi_start_timeout=300)
    assert result['valid'] is True
    assert result['plan']['mpi_start_timeout'] == 300
    assert result['warnings'] == [
        'mpi_start_timeout=300: below the 3000-6000 s recommended for models of 70B parameters (llama-3.1-405b has '
        '405.9B); the leader may give up on workers that are still loading'
    ]


def test_short_mpi_start_timeout_for_a_small_model_is_warned_about():
    result = plan(model='llama-3.1-8b', mpi_start_timeout=299, gpu_memory_gb=H100_GB)
    assert result['warnings'] == [
        'mpi_start_timeout=299: below the 300-600 s recommended for models under 70B parameters (llama-3.1-8b has '
        '8B); the leader may give up on workers that are still loading'
    ]


@pytest.mark.parametrize('backend, contract', [('nim', 'ray'), ('nim', 'leader_address'), ('lws', 'mpi'), ('dynamo', 'mpi')])
def test_mpi_start_timeout_is_not_judged_outside_the_mpi_contract(backend, contract):
    result = plan(backend=backend, launch_contract=contract, model='llama-3.1-405b', precision='fp8',
                  gpu_memory_gb=H100_GB, mpi_start_timeout=60)
    assert result['warnings'] == []
    assert result['plan']['mpi_start_timeout'] == 60


@pytest.mark.parametrize('model, timeout', [('llama-3.1-8b', 300), ('llama-3.1-70b', 3000), ('llama-3.1-405b', 6000)])
def test_mpi_start_timeout_inside_the_range_is_fine(model, timeout):
    result = plan(model=model, mpi_start_timeout=timeout)
    assert not [w for w in result['warnings'] if 'mpi_start_timeout' in w]
    assert result['plan']['mpi_start_timeout'] == timeout


# --- input validation -------------------------------------------------------------------------------

def test_every_bad_input_is_reported_and_a_plan_still_comes_back():
    result = plan_parallelism(tensor_parallel=0, pipeline_parallel=True, nodes=None, gpus_per_node='8',
                              backend='slurm', precision='fp6', gpu_memory_gb=-1, gpu_memory_utilization=1.5,
                              interconnect=25, mpi_start_timeout=0, replicas=0, autoscaling='yes',
                              launch_contract='ssh')
    assert result['errors'] == [
        'tensor_parallel=0: must be an integer >= 1',
        'pipeline_parallel=True: must be an integer >= 1',
        'nodes=None: must be an integer >= 1',
        "gpus_per_node='8': must be an integer >= 1",
        'replicas=0: must be an integer >= 1',
        "backend='slurm': must be one of nim, lws, dynamo",
        "launch_contract='ssh': must be one of mpi, ray, leader_address",
        "precision='fp6': must be one of bf16, fp16, fp32, fp4, fp8, int4, int8",
        'gpu_memory_gb=-1: must be a number > 0 (GB of memory per GPU)',
        'gpu_memory_utilization=1.5: must be a number in (0, 1]',
        'mpi_start_timeout=0: must be an integer >= 1',
        'interconnect=25: must be a name, one of eth_25g, ib_hdr, ib_ndr, ib_xdr, nvlink, roce_100g',
        "autoscaling='yes': must be true or false",
    ]
    assert result['valid'] is False
    layout = result['plan']
    assert layout['total_gpus'] is None
    assert layout['tp_spans_nodes'] is None
    assert layout['mpi_start_timeout'] is None


def test_layout_rules_skip_when_a_count_is_invalid_but_model_rules_still_run():
    result = plan(tensor_parallel=6, nodes=0, model='llama-3.1-405b')
    assert result['errors'] == [
        'nodes=0: must be an integer >= 1',
        "tensor_parallel=6: the model's 128 attention heads are not divisible by 6 (model llama-3.1-405b)",
        "tensor_parallel=6: the model's 8 KV heads are neither divisible by 6 nor a divisor of it (model llama-3.1-405b)",
    ]


def test_a_precision_that_is_not_a_string_is_an_error_not_an_exception():
    result = plan_parallelism(tensor_parallel=8, pipeline_parallel=2, nodes=2, gpus_per_node=8, model='llama-3.1-405b',
                              precision=['fp8'])
    assert any(e.startswith("precision=['fp8']: must be one of") for e in result['errors'])
