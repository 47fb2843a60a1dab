#!/usr/bin/env bash
# Benchmark (not a test, not in `make test`): whether G Docker groups become ready in the time of
# one. On a 4-host lab, two groups of two hosts (bench-a, bench-b, leader_address), every rank of
# the stand-in loading for BENCH_LOAD_S s (60): the hosts are prepared once by site.yml, then,
# from no container on any host (the images and the model cache stay), deploy_docker.yml runs
#   one   on bench-a alone (--limit its hosts)
#   two   on both groups
# and the time of each run (start to every group ready and smoke-tested) is printed side by side
# as JSON with the acceptance: two within 1.3 x one. Exits 1 when it is not.
#
#   benchmarks/bench-groups-at-once.sh
#   BENCH_LOAD_S=30 BENCH_BOUND=1.3 benchmarks/bench-groups-at-once.sh
#   LAB_KEEP=1 benchmarks/bench-groups-at-once.sh     leave the lab up
#
# Its own lab (NIMSTACK_LAB_PREFIX, default nimstack-bg on 172.30.86.0/24), torn down at the end
# unless LAB_KEEP=1. The result is also written to build/bench/groups-at-once.json.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
export NIMSTACK_LAB_PREFIX=${NIMSTACK_LAB_PREFIX:-nimstack-bg}
export NIMSTACK_LAB_SUBNET=${NIMSTACK_LAB_SUBNET:-172.30.86.0/24}
export NIMSTACK_LAB_DIR=${NIMSTACK_LAB_DIR:-$repo/build/lab-bg}
export PATH=$repo/.venv/bin:$PATH
logs=build/bench/groups-at-once
mkdir -p "$logs"
# shellcheck source=tests/e2e/lib-lab-test.sh
source "$repo/tests/e2e/lib-lab-test.sh"
load_s=${BENCH_LOAD_S:-60}
bound=${BENCH_BOUND:-1.3}
a_hosts=("$prefix-1" "$prefix-2") b_hosts=("$prefix-3" "$prefix-4")

trap '[[ -n "${LAB_KEEP:-}" ]] || lab_down >/dev/null 2>&1 || true' EXIT

step "fresh 4-host lab, model source and stand-in image archive"
lab_fresh build/standin/nim-standin.tar 4
lab_group_vars=("nim_group_supervisor: false")
{
  echo "all:"
  echo "  hosts:"
  lab_group bench-a leader_address "$load_s" "${a_hosts[@]}"
  lab_group bench-b leader_address "$load_s" "${b_hosts[@]}"
} >"$NIMSTACK_LAB_DIR/bench.yml"
play_args+=(-i "$NIMSTACK_LAB_DIR/bench.yml")

step "site.yml: the hosts prepared, the image on every node, the model in the shared cache"
play_ok "$logs/site.yml.log"

# deploy_docker.yml from no container on any host; prints its seconds.
from_nothing() {
  local name=$1 h t
  shift
  for h in "${a_hosts[@]}" "${b_hosts[@]}"; do
    # shellcheck disable=SC2016  # expanded on the lab host
    on "$h" sh -c 'ids=$(docker ps -aq --filter label=nimstack.managed=true); [ -z "$ids" ] || docker rm -f $ids >/dev/null'
  done
  t=$(date +%s.%N)
  PLAYBOOK=playbooks/deploy_docker.yml play_ok "$logs/$name.log" "$@" >&2
  python3 -c 'import sys, time; print("%.1f" % (time.time() - float(sys.argv[1])))' "$t"
}

step "one group alone, then two groups, each from no container (load $load_s s)"
one=$(from_nothing one --limit "$(IFS=,; echo "${a_hosts[*]}")")
two=$(from_nothing two)
log_says "$logs/two.log" "wave 1 of 1: bench-a, bench-b" || fail "the two groups did not start in one wave"
python3 - "$load_s" "$one" "$two" "$bound" <<'PY' | tee build/bench/groups-at-once.json
import json, sys
load_s, one, two, bound = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
print(json.dumps({'benchmark': 'groups-at-once', 'hosts_per_group': 2, 'load_s': load_s,
                  'one_group_s': one, 'two_groups_s': two, 'ratio': round(two / one, 2),
                  'bound': bound, 'within_bound': two <= bound * one}, indent=2))
PY
python3 -c 'import json, sys; sys.exit(0 if json.load(open(sys.argv[1]))["within_bound"] else 1)' \
  build/bench/groups-at-once.json || fail "two groups took more than $bound x one group"
