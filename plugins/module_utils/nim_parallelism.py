# -*- coding: utf-8 -*-
# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Validate and plan the parallel layout of a multi-node NIM deployment.

plan_parallelism() is pure: it never raises on bad input. It collects every problem as an
error string that names the option(s) and their values, so a preflight can report them all at
once, and it returns a best-effort plan even when the layout is invalid.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.nimstack.multinode.plugins.module_utils.nim_contract import LAUNCH_CONTRACTS
from ansible_collections.nimstack.multinode.plugins.module_utils.nim_models import (
    BYTES_PER_PARAM,
    INTERCONNECT_GBPS,
    ModelError,
    lookup_interconnect_gbps,
    resolve_model,
)

BACKENDS = ('nim', 'lws', 'dynamo')

# NIM Operator guidance (docs/contracts.md, NIMService): 300-600 s under 70B parameters, 3000-6000 s from 70B up.
LARGE_MODEL_PARAMS_B = 70
MPI_START_TIMEOUT_RANGE_S = {'small': (300, 600), 'large': (3000, 6000)}
# The timeout only bounds how long the leader waits for its workers, so a larger value costs
# nothing on a healthy start: small models get the top of their range. Large models get the
# bottom of theirs, which is already 50 minutes, so that a start that is broken (a worker that
# never comes up) is still reported within the hour rather than after 100 minutes.
RECOMMENDED_MPI_START_TIMEOUT_S = {'small': 600, 'large': 3000}
# What the operator uses when nothing says otherwise; the fallback when the model is unknown.
OPERATOR_MPI_START_TIMEOUT_S = 300

# Below this share of the per-GPU budget the KV cache holds too few tokens to serve usefully.
KV_CACHE_LOW_FRACTION = 0.10

# TP all-reduces on every layer; anything slower than NVLink between its GPUs costs latency
# on every layer, so NVLink is the bar a cross-node TP group is measured against.
TP_CROSS_NODE_MIN_GBPS = INTERCONNECT_GBPS['nvlink']


def _count(name, value, errors):
    """Return value when it is an int >= 1, else record an error naming the option and return None."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        errors.append('%s=%r: must be an integer >= 1' % (name, value))
        return None
    return value


def _number(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _model_label(shape, precision):
    return '%s in %s' % (shape['name'], precision) if precision else shape['name']


def _size_class(shape):
    return 'large' if shape['params_b'] >= LARGE_MODEL_PARAMS_B else 'small'


def _check_layout(tp, pp, nodes, gpn, backend, launch_contract, errors, warnings):
    """Apply the backend's topology rule; return (tp_spans_nodes, gpus_per_rank)."""
    if backend == 'nim' and launch_contract == 'mpi':
        # docs/contracts.md: the operator sets GPUS_PER_NODE = TP and NIM_NUM_COMPUTE_NODES = PP.
        if nodes != pp:
            errors.append('nodes=%d, pipeline_parallel=%d: backend nim with launch_contract mpi runs one pipeline stage '
                          'per node, so nodes must equal pipeline_parallel' % (nodes, pp))
        if tp > gpn:
            errors.append('tensor_parallel=%d, gpus_per_node=%d: under launch_contract mpi one node holds a whole '
                          'pipeline stage of tensor_parallel GPUs, so tensor parallelism cannot span nodes; lower '
                          'tensor_parallel and raise pipeline_parallel, or use launch_contract ray or leader_address'
                          % (tp, gpn))
        elif tp < gpn:
            warnings.append('gpus_per_node=%d, tensor_parallel=%d: each node runs one rank of %d GPUs, so %d GPU(s) per '
                            'node (%d in all) sit idle' % (gpn, tp, tp, gpn - tp, (gpn - tp) * nodes))
        return tp > gpn, tp

    if backend == 'dynamo':
        if tp != nodes * gpn:
            errors.append('tensor_parallel=%d, nodes=%d, gpus_per_node=%d: backend dynamo runs one tensor-parallel '
                          'group over every GPU, so tensor_parallel must equal nodes x gpus_per_node = %d'
                          % (tp, nodes, gpn, nodes * gpn))
        if pp != 1:
            errors.append('pipeline_parallel=%d: backend dynamo runs one tensor-parallel group over every GPU, so '
                          'pipeline_parallel must be 1' % pp)
    elif tp * pp != nodes * gpn:
        errors.append('tensor_parallel=%d x pipeline_parallel=%d = %d, nodes=%d x gpus_per_node=%d = %d: %s uses every '
                      'GPU of every node, so tensor_parallel x pipeline_parallel must equal nodes x gpus_per_node'
                      % (tp, pp, tp * pp, nodes, gpn, nodes * gpn,
                         'backend nim with launch_contract %s' % launch_contract if backend == 'nim' else 'backend lws'))

    # Ranks are laid out node by node, so a TP group stays inside a node only when it fits in
    # one and the node holds a whole number of groups.
    misaligned = (tp > gpn and tp % gpn != 0) or (tp < gpn and gpn % tp != 0)
    if nodes > 1 and misaligned:
        warnings.append('tensor_parallel=%d, gpus_per_node=%d: tensor-parallel groups do not line up with node '
                        'boundaries, so some of them straddle two nodes' % (tp, gpn))
    return nodes > 1 and (tp > gpn or misaligned), gpn


def _judge_interconnect(tp, gpn, interconnect, bandwidth, warnings):
    if interconnect is None:
        warnings.append('tensor_parallel=%d spans nodes (gpus_per_node=%d) and interconnect is not set, so the cost '
                        'of its per-layer all-reduce across nodes could not be judged' % (tp, gpn))
    elif bandwidth is None:
        warnings.append('interconnect=%r: no bandwidth is known for it (known: %s), so tensor_parallel=%d across '
                        'nodes could not be judged' % (interconnect, ', '.join(sorted(INTERCONNECT_GBPS)), tp))
    elif bandwidth < TP_CROSS_NODE_MIN_GBPS:
        warnings.append('tensor_parallel=%d spans nodes over interconnect=%s (%g GB/s per direction, against NVLink\'s '
                        '%g GB/s inside a node): tensor parallelism all-reduces on every layer, so every layer pays '
                        'the cross-node latency; keep tensor_parallel inside a node and spread pipeline_parallel '
                        'across nodes where the model allows' % (tp, interconnect, bandwidth, TP_CROSS_NODE_MIN_GBPS))


def _check_model_shape(shape, tp, pp, errors):
    name = shape['name']
    if tp is not None:
        heads, kv_heads = shape['attention_heads'], shape['kv_heads']
        if heads % tp != 0:
            errors.append("tensor_parallel=%d: the model's %d attention heads are not divisible by %d (model %s)"
                          % (tp, heads, tp, name))
        if kv_heads % tp != 0 and tp % kv_heads != 0:
            errors.append("tensor_parallel=%d: the model's %d KV heads are neither divisible by %d nor a divisor of "
                          "it (model %s)" % (tp, kv_heads, tp, name))
    if pp is not None and pp > shape['layers']:
        errors.append("pipeline_parallel=%d: more pipeline stages than the model's %d layers (model %s)"
                      % (pp, shape['layers'], name))


def _check_memory(shape, precision, tp, pp, gpu_memory_gb, utilization, errors, warnings):
    """Return (weights_gb_per_gpu, budget_gb_per_gpu, kv_cache_gb_per_gpu); None where unknown."""
    bytes_per_param = BYTES_PER_PARAM[precision]
    # params_b is in billions and a GB is 1e9 bytes, so billions x bytes is GB directly.
    weights = shape['params_b'] * bytes_per_param / (tp * pp)
    if gpu_memory_gb is None or utilization is None:
        return weights, None, None
    budget = gpu_memory_gb * utilization
    kv_cache = budget - weights
    if kv_cache <= 0:
        errors.append('gpu_memory_gb=%g, gpu_memory_utilization=%g: %s needs %.2f GB of weights per GPU (%gB parameters '
                      'x %g bytes / (tensor_parallel %d x pipeline_parallel %d)), more than the %.2f GB budget per '
                      'GPU, leaving nothing for the KV cache; spread the model over more GPUs, lower precision, or use '
                      'larger GPUs' % (gpu_memory_gb, utilization, _model_label(shape, precision), weights,
                                       shape['params_b'], bytes_per_param, tp, pp, budget))
    elif kv_cache < KV_CACHE_LOW_FRACTION * budget:
        warnings.append('gpu_memory_gb=%g, gpu_memory_utilization=%g: %s leaves only %.2f GB per GPU for the KV cache, '
                        'under %d%% of the %.2f GB budget, so context length and concurrency will be tight'
                        % (gpu_memory_gb, utilization, _model_label(shape, precision), kv_cache,
                           int(KV_CACHE_LOW_FRACTION * 100), budget))
    return weights, budget, kv_cache


def _mpi_start_timeout(given, shape, judge, warnings):
    """Return the timeout to use: the given one, else the recommendation for the model's size.

    Only the MPI contract waits on it, so only there (``judge``) is a doubtful value warned about.
    """
    size = _size_class(shape) if shape is not None else None
    if given is not None:
        if judge and size is not None:
            low, high = MPI_START_TIMEOUT_RANGE_S[size]
            if given < low:
                warnings.append('mpi_start_timeout=%d: below the %d-%d s recommended for models %s %dB parameters (%s has '
                                '%gB); the leader may give up on workers that are still loading'
                                % (given, low, high, 'of' if size == 'large' else 'under', LARGE_MODEL_PARAMS_B,
                                   shape['name'], shape['params_b']))
        return given
    if size is None:
        if judge:
            warnings.append('mpi_start_timeout is not set and model is not known, so it falls back to the operator '
                            'default of %d s; models of %dB parameters and up want %d-%d s'
                            % ((OPERATOR_MPI_START_TIMEOUT_S, LARGE_MODEL_PARAMS_B) + MPI_START_TIMEOUT_RANGE_S['large']))
        return OPERATOR_MPI_START_TIMEOUT_S
    return RECOMMENDED_MPI_START_TIMEOUT_S[size]


def _round(value):
    return None if value is None else round(value, 2)


def plan_parallelism(tensor_parallel, pipeline_parallel=1, nodes=None, gpus_per_node=None, backend='nim', model=None,
                     precision=None, gpu_memory_gb=None, gpu_memory_utilization=0.9, interconnect=None,
                     mpi_start_timeout=None, replicas=1, autoscaling=False, launch_contract='mpi'):
    """Validate a multi-node layout and plan it.

    Returns dict(valid, errors, warnings, plan). Every problem found is in errors, each naming
    the option(s) and values involved; plan is filled as far as the inputs allow (None where a
    value cannot be computed). ``precision`` overrides the model's native precision.
    ``launch_contract`` only shapes the layout rules of backend nim.
    """
    errors = []
    warnings = []

    tp = _count('tensor_parallel', tensor_parallel, errors)
    pp = _count('pipeline_parallel', pipeline_parallel, errors)
    n_nodes = _count('nodes', nodes, errors)
    gpn = _count('gpus_per_node', gpus_per_node, errors)
    n_replicas = _count('replicas', replicas, errors)

    if backend not in BACKENDS:
        errors.append('backend=%r: must be one of %s' % (backend, ', '.join(BACKENDS)))
    if launch_contract not in LAUNCH_CONTRACTS:
        errors.append('launch_contract=%r: must be one of %s' % (launch_contract, ', '.join(LAUNCH_CONTRACTS)))

    shape = None
    if model is not None:
        try:
            shape = resolve_model(model)
        except ModelError as exc:
            errors.extend(exc.problems)

    # A list (a YAML mistake) cannot be looked up in the table: refuse it instead of raising.
    if precision is not None and (not isinstance(precision, str) or precision not in BYTES_PER_PARAM):
        errors.append('precision=%r: must be one of %s' % (precision, ', '.join(sorted(BYTES_PER_PARAM))))
        precision = None
    effective_precision = precision or (shape['precision'] if shape else None)

    memory = None
    if gpu_memory_gb is not None:
        memory = _number(gpu_memory_gb)
        if memory is None or memory <= 0:
            errors.append('gpu_memory_gb=%r: must be a number > 0 (GB of memory per GPU)' % (gpu_memory_gb,))
            memory = None
    utilization = _number(gpu_memory_utilization)
    if utilization is None or not 0 < utilization <= 1:
        errors.append('gpu_memory_utilization=%r: must be a number in (0, 1]' % (gpu_memory_utilization,))
        utilization = None

    timeout = None
    if mpi_start_timeout is not None:
        timeout = _count('mpi_start_timeout', mpi_start_timeout, errors)

    bandwidth = None
    if interconnect is not None:
        if isinstance(interconnect, str):
            bandwidth = lookup_interconnect_gbps(interconnect)
        else:
            errors.append('interconnect=%r: must be a name, one of %s' % (interconnect, ', '.join(sorted(INTERCONNECT_GBPS))))
            interconnect = None

    if not isinstance(autoscaling, bool):
        errors.append('autoscaling=%r: must be true or false' % (autoscaling,))
    elif autoscaling and n_nodes is not None and n_nodes > 1:
        errors.append('autoscaling=true, nodes=%d: a multi-node deployment cannot autoscale (the NIM Operator\'s CEL '
                      'rule rejects autoscaling together with multiNode); scale with replicas instead' % n_nodes)

    tp_spans_nodes = None
    gpus_per_rank = None
    if None not in (tp, pp, n_nodes, gpn) and backend in BACKENDS and launch_contract in LAUNCH_CONTRACTS:
        tp_spans_nodes, gpus_per_rank = _check_layout(tp, pp, n_nodes, gpn, backend, launch_contract, errors, warnings)
        # Under mpi a spanning TP is already an error; judging its interconnect would only add noise.
        if tp_spans_nodes and not (backend == 'nim' and launch_contract == 'mpi'):
            _judge_interconnect(tp, gpn, interconnect, bandwidth, warnings)

    weights = budget = kv_cache = None
    if shape is not None:
        _check_model_shape(shape, tp, pp, errors)
        if tp is not None and pp is not None:
            weights, budget, kv_cache = _check_memory(shape, effective_precision, tp, pp, memory, utilization,
                                                      errors, warnings)
        if memory is None and gpu_memory_gb is None:
            warnings.append('gpu_memory_gb is not set, so whether %s fits in GPU memory was not checked'
                            % _model_label(shape, effective_precision))
    elif model is None and memory is not None:
        warnings.append('gpu_memory_gb=%g is set but model is not, so the memory fit was not checked' % memory)

    if mpi_start_timeout is None or timeout is not None:
        timeout = _mpi_start_timeout(timeout, shape, backend == 'nim' and launch_contract == 'mpi', warnings)

    total_gpus = tp * pp if tp and pp else None
    gpus_on_nodes = n_nodes * gpn if n_nodes and gpn else None
    plan = {
        'backend': backend,
        'launch_contract': launch_contract,
        'nodes': n_nodes,
        'gpus_per_node': gpn,
        'tensor_parallel': tp,
        'pipeline_parallel': pp,
        'total_gpus': total_gpus,
        'gpus_on_nodes': gpus_on_nodes,
        'idle_gpus': max(0, gpus_on_nodes - total_gpus) if total_gpus and gpus_on_nodes else None,
        'tp_spans_nodes': tp_spans_nodes,
        'ranks': n_nodes,
        'gpus_per_rank': gpus_per_rank,
        'replicas': n_replicas,
        'gpus_all_replicas': gpus_on_nodes * n_replicas if gpus_on_nodes and n_replicas else None,
        'model': shape,
        'precision': effective_precision,
        'bytes_per_param': BYTES_PER_PARAM[effective_precision] if effective_precision else None,
        'gpu_memory_gb': memory,
        'gpu_memory_utilization': utilization,
        'memory_budget_gb_per_gpu': _round(budget),
        'weights_gb_per_gpu': _round(weights),
        'kv_cache_gb_per_gpu': _round(kv_cache),
        'interconnect': interconnect,
        'interconnect_gbps': bandwidth,
        'mpi_start_timeout': timeout,
    }
    return {'valid': not errors, 'errors': errors, 'warnings': warnings, 'plan': plan}
