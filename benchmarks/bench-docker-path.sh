#!/usr/bin/env bash
# Benchmark (not a test): roll site.yml out onto fresh labs of 2, 4 and 8 hosts (one group,
# TP 1, PP = hosts, the stand-in image from its archive) under each launch contract asked for, and
# print, as JSON, the first-run and re-run wall times and changed counts of each. Not part of
# `make test`.
#
#   benchmarks/bench-docker-path.sh                       2, 4 and 8 hosts, mpi
#   benchmarks/bench-docker-path.sh 2 3                   other sizes (at most 8: the lab model has 8 layers)
#   benchmarks/bench-docker-path.sh --contracts mpi,ray,leader_address 3
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
export ANSIBLE_CONFIG=$repo/ansible.cfg ANSIBLE_NOCOLOR=1
export NIMSTACK_LAB_DIR=${NIMSTACK_LAB_DIR:-$repo/build/lab}
export ANSIBLE_CACHE_PLUGIN_CONNECTION=$NIMSTACK_LAB_DIR/facts
logs=build/bench-docker-path
mkdir -p "$logs"
contracts=(mpi)
sizes=()
while (($#)); do
  case $1 in
    --contracts) (($# >= 2)) || { echo "--contracts needs a list" >&2; exit 2; }; IFS=, read -ra contracts <<<"$2"; shift 2 ;;
    *) sizes+=("$1"); shift ;;
  esac
done
((${#sizes[@]})) || sizes=(2 4 8)

# shellcheck source=tests/e2e/lib-recap.sh
source "$repo/tests/e2e/lib-recap.sh"

run_site() {
  local log=$1 n=$2 contract=$3 start=$SECONDS
  ansible-playbook -i "$NIMSTACK_LAB_DIR/inventory.yml" -i inventories/lab -i inventories/lab-docker -i inventories/lab-tests \
    -e "nim_image_tag=$tag" -e "nim_pipeline_parallel=$n" -e "nim_launch_contract=$contract" \
    playbooks/site.yml >"$log" 2>&1 \
    || { tail -30 "$log" >&2; echo "bench-docker-path.sh: site.yml failed on $n hosts, $contract (see $log)" >&2; exit 1; }
  echo "$((SECONDS - start)) $(recap changed "$log")"
}

tests/lab/ensure-docker.sh
image=$(tests/lab/build-standin.sh --archive build/standin/nim-standin.tar)
tag=${image##*:}
results=()
for contract in "${contracts[@]}"; do
  for n in "${sizes[@]}"; do
    tests/lab/model-source.sh down >/dev/null
    tests/lab/lab.sh down
    tests/lab/lab.sh up "$n" >/dev/null
    tests/lab/model-source.sh up >/dev/null
    mkdir -p "$NIMSTACK_LAB_DIR/shared/.images"
    cp build/standin/nim-standin.tar "$NIMSTACK_LAB_DIR/shared/.images/nim-standin.tar"
    read -r first_s first_changed < <(run_site "$logs/site-$contract-$n-1.log" "$n" "$contract")
    read -r rerun_s rerun_changed < <(run_site "$logs/site-$contract-$n-2.log" "$n" "$contract")
    results+=("{\"contract\": \"$contract\", \"hosts\": $n, \"first_run_s\": $first_s, \"first_run_changed\": $first_changed, \"rerun_s\": $rerun_s, \"rerun_changed\": $rerun_changed}")
    echo "bench-docker-path.sh: $contract, $n hosts: first run $first_s s (changed=$first_changed), re-run $rerun_s s (changed=$rerun_changed)" >&2
  done
done
tests/lab/model-source.sh down >/dev/null
tests/lab/lab.sh down
(IFS=,; echo "[${results[*]}]") | python3 -m json.tool
