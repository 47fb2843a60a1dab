#!/usr/bin/env bash
# Benchmark (not a test, not in `make test`): what overlapping the image transfer with the model
# download buys. On a 3-host lab with a rate-limited model source and a padded stand-in image (so
# that its archive load takes measurable seconds), deploy_docker.yml runs from clean nodes (no
# image, empty cache, no containers) once per mode:
#   sequential   nim_docker_overlap_transfers=false: the image on every node, then the download
#   overlap      the default, with the lab's small downloader image (nim_docker_download_image)
#   overlap-nim-image   (optional) the default with the NIM image as its own downloader
# and prints, side by side as JSON, each run's time to ready (first transfer task to ready), its
# image load (slowest node) and model download times and its container start, all measured in
# that run (benchmarks/bench_overlap_report.py), with the acceptance: the overlapped time to ready is
# within 15% of max(pull, download) + container start. Exits 1 when it is not.
#
#   benchmarks/bench-rollout-overlap.sh                         sequential and overlap
#   benchmarks/bench-rollout-overlap.sh sequential overlap overlap-nim-image
#   BENCH_RATE=2097152 BENCH_MODEL_MIB=160 BENCH_PAD_MIB=1536 benchmarks/bench-rollout-overlap.sh
#   LAB_KEEP=1 ... then BENCH_REUSE_LAB=1 ...                  keep the prepared lab for the next run
#
# Its own lab (NIMSTACK_LAB_PREFIX, default nimstack-ovl on 172.30.85.0/24), brought up and
# prepared once, torn down at the end unless LAB_KEEP=1. Every run is bounded (BENCH_RUN_TIMEOUT).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
export NIMSTACK_LAB_PREFIX=${NIMSTACK_LAB_PREFIX:-nimstack-ovl}
export NIMSTACK_LAB_SUBNET=${NIMSTACK_LAB_SUBNET:-172.30.85.0/24}
export NIMSTACK_LAB_DIR=${NIMSTACK_LAB_DIR:-$repo/build/lab-ovl}
export PATH=$repo/.venv/bin:$PATH
rate=${BENCH_RATE:-2097152}
export NIMSTACK_MODEL_SOURCE_SIZE_MIB=${BENCH_MODEL_MIB:-160}
# The source hashes its synthetic model before it answers: longer than 30 s on a loaded machine.
export NIMSTACK_MODEL_SOURCE_TIMEOUT=${NIMSTACK_MODEL_SOURCE_TIMEOUT:-300}
pad_mib=${BENCH_PAD_MIB:-1536}
run_timeout=${BENCH_RUN_TIMEOUT:-900}
out=$repo/build/bench-rollout-overlap
modes=("$@")
((${#modes[@]})) || modes=(sequential overlap)
# shellcheck source=tests/e2e/lib-lab-test.sh
source "$repo/tests/e2e/lib-lab-test.sh"
trap '[[ -n "${LAB_KEEP:-}" ]] || lab_down >/dev/null 2>&1 || true' EXIT

step "images: the stand-in padded by $pad_mib MiB, the small downloader, both as archives"
tests/lab/ensure-docker.sh
standin=$(tests/lab/build-standin.sh)
downloader=$(tests/lab/build-downloader.sh --archive build/downloader/nim-downloader.tar)
# Incompressible padding in a layer of its own: every node writes all of it when it loads.
padded_tag=$(echo "$standin $pad_mib" | sha256sum | cut -c1-12)
padded=nimstack-lab/nim-standin-padded:$padded_tag
if ! docker image inspect "$padded" >/dev/null 2>&1; then
  ctx=$(mktemp -d /var/tmp/nimstack-pad-XXXXXX)
  head -c "$((pad_mib * 1048576))" /dev/urandom >"$ctx/padding.bin"
  printf 'FROM %s\nCOPY padding.bin /opt/nim/padding.bin\n' "$standin" >"$ctx/Dockerfile"
  docker build -q -t "$padded" "$ctx" >/dev/null
  rm -rf "$ctx"
fi
padded_archive=build/bench-rollout-overlap/nim-padded.tar
if [[ "$(cat "$padded_archive.image" 2>/dev/null)" != "$padded" ]]; then
  mkdir -p "$(dirname "$padded_archive")"
  docker save -o "$padded_archive" "$padded"
  echo "$padded" >"$padded_archive.image"
fi
echo "   $padded ($(du -m "$padded_archive" | cut -f1) MiB archive), $downloader"

step "lab $NIMSTACK_LAB_PREFIX: 3 hosts, prepared once; model source ${NIMSTACK_MODEL_SOURCE_SIZE_MIB} MiB at $rate B/s"
# BENCH_REUSE_LAB=1: the lab a LAB_KEEP=1 run of this script left, already prepared.
if [[ -z "${BENCH_REUSE_LAB:-}" ]]; then
  lab_down >/dev/null 2>&1 || true
  "$lab" up 3 >/dev/null
fi
tests/lab/model-source.sh up --rate "$rate" >/dev/null
mkdir -p "$shared/.images"
cmp -s "$padded_archive" "$shared/.images/nim-padded.tar" || cp "$padded_archive" "$shared/.images/nim-padded.tar"
cp build/downloader/nim-downloader.tar "$shared/.images/nim-downloader.tar"
[[ -n "${BENCH_REUSE_LAB:-}" ]] || PLAYBOOK=playbooks/prepare_hosts.yml play_ok "$out-prepare.log"
shared_path=$(awk '/nimstack_lab_shared_path:/ {print $2}' "$inventory")

# Clean nodes: no NIM container, image or stamp, an empty model cache.
# shellcheck disable=SC2016  # the single-quoted scripts run in sh on the nodes, with arguments
reset_nodes() {
  local h
  for h in "$leader" "${workers[@]}"; do
    on "$h" sh -c 'ids=$(docker ps -aq --filter label=nimstack.managed=true); [ -z "$ids" ] || docker rm -f $ids >/dev/null
      docker image rm -f "$1" "$2" >/dev/null 2>&1 || true
      rm -rf /etc/nimstack/nim' sh "$padded" "$downloader"
  done
  on "$leader" sh -c 'rm -rf "$1"/nimstack-standin "$1"/nimstack-standin.lock' sh "$shared_path"
}

run_mode() {
  local mode=$1 dir=$out/$1 extra=() h pids=() start rc=0
  case $mode in
    sequential) extra=(-e nim_docker_overlap_transfers=false) ;;
    overlap) extra=(-e "nim_docker_download_image=$downloader"
                    -e "nim_docker_download_image_archive=$shared_path/.images/nim-downloader.tar") ;;
    overlap-nim-image) ;;
    *) fail "unknown mode $mode (sequential, overlap, overlap-nim-image)" ;;
  esac
  rm -rf "$dir"
  mkdir -p "$dir"
  reset_nodes
  local since
  since=$(date +%s)
  for h in "$leader" "${workers[@]}"; do
    timeout "$((run_timeout + 60))" docker exec "$h" docker events --since "$since" --format '{{json .}}' \
      >"$dir/events-$h.jsonl" 2>/dev/null &
    pids+=($!)
  done
  start=$SECONDS
  ANSIBLE_STDOUT_CALLBACK=ansible.posix.json timeout "$run_timeout" ansible-playbook \
    -i "$inventory" -i inventories/lab -i inventories/lab-docker -i inventories/lab-tests \
    -e "nim_image=${padded%:*}" -e "nim_image_tag=$padded_tag" \
    -e "nim_docker_image_archive=$shared_path/.images/nim-padded.tar" \
    -e doctor_enabled=false -e nim_docker_smoke_test=false -e nim_docker_transfer_poll_interval=2 \
    "${extra[@]}" playbooks/deploy_docker.yml >"$dir/play.json" 2>"$dir/play.err" || rc=$?
  local took=$((SECONDS - start))
  sleep 2
  kill "${pids[@]}" 2>/dev/null || true
  wait "${pids[@]}" 2>/dev/null || true
  ((rc == 0)) || { tail -20 "$dir/play.err"; fail "deploy_docker.yml failed in mode $mode (rc=$rc, see $dir/play.json)"; }
  probe_ready || fail "mode $mode: the endpoint is not ready after the run"
  printf '{"mode": "%s", "playbook_s": %d}\n' "$mode" "$took" >"$dir/meta.json"
  echo "   $mode: deploy_docker.yml $took s"
}

dirs=()
for mode in "${modes[@]}"; do
  step "mode $mode from clean nodes"
  run_mode "$mode"
  dirs+=("$out/$mode")
done
step "report"
rc=0
python3 benchmarks/bench_overlap_report.py "${dirs[@]}" | tee "$out.json" || rc=$?
echo "bench-rollout-overlap.sh: $( ((rc == 0)) && echo passed || echo 'FAILED the 15% bound') in $((SECONDS - t_start)) s" >&2
exit "$rc"
