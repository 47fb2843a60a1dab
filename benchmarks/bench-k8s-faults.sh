#!/usr/bin/env bash
# Benchmark (not a test, not in `make test`): faults on the Kubernetes path (a worker pod deleted,
# the API server restarted during a run, a node that stops answering), on a test cluster of its own
# (tests/cluster/cluster.sh: NIMSTACK_K8S_STATE build/k8s-faults, ports from 16480), taken down at
# the end. benchmarks/bench_k8s_faults.py says what each fault does and what it measures; the rows
# go to build/bench/k8s-faults/result.json. Needs LWS built from its source, as `make test` does
# (NIMSTACK_LWS_SRC, docs/testing.md).
#
#   benchmarks/bench-k8s-faults.sh
#   BENCH_K8S_FAULTS="pod-deleted" benchmarks/bench-k8s-faults.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
export NIMSTACK_K8S_STATE=${NIMSTACK_K8S_STATE:-$repo/build/k8s-faults}
export NIMSTACK_K8S_PORT_BASE=${NIMSTACK_K8S_PORT_BASE:-16480}
t=$SECONDS
trap 'tests/cluster/cluster.sh down >/dev/null 2>&1 || true' EXIT
tests/cluster/cluster.sh down >/dev/null 2>&1 || true
tests/cluster/cluster.sh up
"$repo/.venv/bin/python" benchmarks/bench_k8s_faults.py
echo "bench-k8s-faults.sh: done in $((SECONDS - t)) s"
