#!/usr/bin/env bash
# Benchmark (not a test, not in `make test`): whether the front door's load-aware weights serve
# clients better than plain leastconn when one group is slower. On a 4-host lab, two groups of two
# hosts serve the same model behind the front door (role nim_frontend with the collection's
# defaults, on host 1): fd-fast, and fd-slow whose stand-in generates at half the rate
# (NIM_STANDIN_TOKENS_PER_S through the group's env); each runs BENCH_MAX_RUNNING requests at once
# and queues the rest. A closed loop of BENCH_CLIENTS clients streams chat completions of
# BENCH_MAX_TOKENS tokens through the front door, once per mode, on the same lab:
#   leastconn    the weights service stopped: every leader at its static weight
#   load-aware   the weights service running (nimstack-frontend-weights.service)
# and prints, per mode, each group's share of the requests, p50/p95 TTFT as the client sees it and
# the errors, as JSON (also build/bench/frontdoor-load/result.json); the per-second series (time,
# mode, group, waiting, running, KV cache, weight) go to build/bench/frontdoor-load/series.{json,csv}.
# Exits 1 when load-aware does not show a lower p95 TTFT, or a request failed.
#
#   benchmarks/bench-frontdoor-load.sh
#   BENCH_CLIENTS=16 BENCH_SECONDS=60 benchmarks/bench-frontdoor-load.sh
#   LAB_KEEP=1 benchmarks/bench-frontdoor-load.sh     leave the lab up (LAB_REUSE=1 takes it again)
#
# Its own lab (NIMSTACK_LAB_PREFIX, default nimstack-fd on 172.30.88.0/24), torn down at the end
# unless LAB_KEEP=1.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
export NIMSTACK_LAB_PREFIX=${NIMSTACK_LAB_PREFIX:-nimstack-fd}
export NIMSTACK_LAB_SUBNET=${NIMSTACK_LAB_SUBNET:-172.30.88.0/24}
export NIMSTACK_LAB_DIR=${NIMSTACK_LAB_DIR:-$repo/build/lab-fd}
export PATH=$repo/.venv/bin:$PATH
out=build/bench/frontdoor-load
logs=$out/logs
mkdir -p "$logs"
# shellcheck source=tests/e2e/lib-lab-test.sh
source "$repo/tests/e2e/lib-lab-test.sh"
clients=${BENCH_CLIENTS:-16}
seconds=${BENCH_SECONDS:-60}
warmup=${BENCH_WARMUP:-10}
max_tokens=${BENCH_MAX_TOKENS:-40}
max_running=${BENCH_MAX_RUNNING:-4}
rate=${BENCH_TOKENS_PER_S:-40}
fast_hosts=("$prefix-1" "$prefix-2") slow_hosts=("$prefix-3" "$prefix-4")
door_host=$prefix-1

trap '[[ -n "${LAB_KEEP:-}" ]] || lab_down >/dev/null 2>&1 || true' EXIT

step "4-host lab, model source and stand-in image archive"
lab_fresh build/standin/nim-standin.tar 4
# The group supervisors stay out of it: nothing here kills a rank.
lab_group_vars=("nim_group_supervisor: false")
{
  echo "all:"
  echo "  hosts:"
  lab_group_env=("NIM_STANDIN_MAX_RUNNING: \"$max_running\"" "NIM_STANDIN_TOKENS_PER_S: \"$rate\"")
  lab_group fd-fast leader_address 0 "${fast_hosts[@]}"
  lab_group_env=("NIM_STANDIN_MAX_RUNNING: \"$max_running\"" "NIM_STANDIN_TOKENS_PER_S: \"$((rate / 2))\"")
  lab_group fd-slow leader_address 0 "${slow_hosts[@]}"
  echo "  children:"
  echo "    nim_frontend:"
  echo "      hosts:"
  echo "        $door_host: {}"
} >"$NIMSTACK_LAB_DIR/bench-fd.yml"
play_args+=(-i "$NIMSTACK_LAB_DIR/bench-fd.yml")

step "site.yml: both groups and the front door (its defaults: load-aware weights on)"
play_ok "$logs/site.log"
door=http://$(lab_addr "$door_host"):8080
door_metrics=http://$(lab_addr "$door_host"):8405/metrics
model=$(curl -fsS --max-time 5 "$door/v1/models" | python3 -c 'import json, sys; print(json.load(sys.stdin)["data"][0]["id"])')
on "$door_host" systemctl is-active --quiet nimstack-frontend-weights.service \
  || fail "the front door's weights service does not run with the role's defaults"
driver=(python3 benchmarks/bench_frontdoor_load.py run --door "$door" --door-metrics "$door_metrics" --model "$model"
        --leader "fd-fast=http://$(lab_addr "${fast_hosts[0]}"):8000/v1/metrics"
        --leader "fd-slow=http://$(lab_addr "${slow_hosts[0]}"):8000/v1/metrics"
        --clients "$clients" --seconds "$seconds" --warmup "$warmup" --max-tokens "$max_tokens" --out "$out")
for h in "${fast_hosts[@]}"; do driver+=(--host "$h=fd-fast"); done
for h in "${slow_hosts[@]}"; do driver+=(--host "$h=fd-slow"); done

# Until neither leader has a request running or waiting: each mode starts from idle groups.
drain() {
  local deadline=$((SECONDS + 120)) h busy
  while :; do
    busy=0
    for h in "${fast_hosts[0]}" "${slow_hosts[0]}"; do
      curl -fsS --max-time 3 "http://$(lab_addr "$h"):8000/v1/metrics" \
        | grep -Eq '^num_requests_(running|waiting)\{[^}]*\} [1-9]' && busy=1
    done
    ((busy == 0)) && return
    ((SECONDS < deadline)) || fail "the groups did not drain within 120 s"
    sleep 1
  done
}

step "leastconn: the weights service stopped, every leader at its static weight"
on "$door_host" systemctl stop nimstack-frontend-weights.service
curl -fsS --max-time 5 "$door_metrics" | grep '^haproxy_server_weight' | sed 's/^/   /'
"${driver[@]}" --mode leastconn | tee "$logs/leastconn.line"
drain

step "load-aware: the weights service running"
on "$door_host" systemctl start nimstack-frontend-weights.service
sleep 3
"${driver[@]}" --mode load-aware | tee "$logs/load-aware.line"

step "result"
python3 benchmarks/bench_frontdoor_load.py report --out "$out" leastconn load-aware | tee "$out/result.json"
python3 - "$out/result.json" <<'PY' || fail "load-aware weights did not lower the p95 TTFT, or a request failed"
import json, sys
doc = json.load(open(sys.argv[1]))
sys.exit(0 if doc['ttft_p95_lower_with_load-aware'] and not any(m['errors'] for m in doc['modes'].values()) else 1)
PY
echo "bench-frontdoor-load.sh: done in $((SECONDS - t_start)) s; series in $out/series.csv"
