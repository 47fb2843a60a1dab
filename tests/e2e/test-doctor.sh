#!/usr/bin/env bash
# The preflight doctor on a 3-host lab of its own (1 leader, 2 workers, launch contract mpi):
#   1. the hosts get the SSH mesh (prepare_hosts.yml --tags ssh_mesh; lab.sh already shares the
#      cache path between them) and a fake nvidia-smi that prints the real H100 capture of
#      tests/unit/fixtures/nvidia_smi;
#   2. a healthy lab passes playbooks/check_hosts.yml (preflight, OS check, doctor), within DOCTOR_MAX_S seconds (default 60);
#   3. faults, injected one at a time and undone, each fail the run and are named in the JSON
#      report (check + host), and no other check fails:
#        a worker with a different GPU inventory (the 8-GPU fixture), a TCP port blocked with
#        nftables on a worker, a worker without the deployment key, a worker whose model cache
#        is a local directory (a tmpfs over the shared path).
# Every run is timed; every wait is bounded.
#
#   tests/e2e/test-doctor.sh               the whole test
#   LAB_KEEP=1 tests/e2e/test-doctor.sh    leave the lab up for a look
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
export NIMSTACK_LAB_PREFIX=${NIMSTACK_LAB_PREFIX:-nimstack-doc}
export NIMSTACK_LAB_SUBNET=${NIMSTACK_LAB_SUBNET:-172.30.82.0/24}
export NIMSTACK_LAB_DIR=${NIMSTACK_LAB_DIR:-$repo/build/lab-doctor}
export ANSIBLE_CONFIG=$repo/ansible.cfg ANSIBLE_NOCOLOR=1 NO_COLOR=1
export ANSIBLE_CACHE_PLUGIN_CONNECTION=$NIMSTACK_LAB_DIR/facts
# Per-task times in every log, to see where a slow run spent them.
export ANSIBLE_CALLBACKS_ENABLED=ansible.posix.profile_tasks
lab=tests/lab/lab.sh
logs=build/doctor-test
inventory=$NIMSTACK_LAB_DIR/inventory.yml
report=$NIMSTACK_LAB_DIR/doctor/doctor-report.json
prefix=$NIMSTACK_LAB_PREFIX
leader=$prefix-1
workers=("$prefix-2" "$prefix-3")
max_s=${DOCTOR_MAX_S:-60}
fixtures=tests/unit/fixtures/nvidia_smi
cache=/mnt/nimstack/model-cache
mesh=/etc/nimstack/mesh/default
nft_table=nimstack_doctor_test

mkdir -p "$logs" build/collections/ansible_collections/nimstack
ln -sfn ../../../.. build/collections/ansible_collections/nimstack/multinode
# shellcheck source=tests/e2e/lib-recap.sh
source "$repo/tests/e2e/lib-recap.sh"

t_start=$SECONDS
step() { printf '\n== %s (t=%ds)\n' "$*" "$((SECONDS - t_start))"; }
fail() { echo "test-doctor.sh: FAILED: $*" >&2; exit 1; }
on() { local host=$1; shift; docker exec "$host" "$@"; }
# on_stdin HOST CMD...: the same, with this script's stdin (a here-document) passed in.
on_stdin() { local host=$1; shift; docker exec -i "$host" "$@"; }

play() {
  local log=$1; shift
  local start=$SECONDS rc=0
  ansible-playbook -i "$inventory" -i inventories/lab -i inventories/lab-docker -i inventories/lab-tests "$@" >"$log" 2>&1 || rc=$?
  last_s=$((SECONDS - start))
  echo "   $(basename "$log"): rc=$rc, ${last_s} s, changed=$(recap changed "$log"), failed=$(recap failed "$log")"
  return "$rc"
}

# failures NAME: the (check, host) pairs of the last report, one per line.
failures() {
  python3 -c 'import json, sys
for f in json.load(open(sys.argv[1]))["failures"]:
    print(f["check"], f["host"])' "$report" | sort -u
}

doctor() { play "$logs/$1.log" playbooks/check_hosts.yml; }

# expect_fault NAME CHECK HOST [OTHER_ALLOWED_CHECK...]: the doctor fails, names CHECK on HOST and
# fails no check outside the listed ones.
expect_fault() {
  local name=$1 check=$2 host=$3; shift 3
  local allowed=("$check" "$@")
  rm -f "$report"
  if doctor "fault-$name"; then fail "fault '$name': the doctor passed"; fi
  [[ -f $report ]] || { tail -30 "$logs/fault-$name.log"; fail "fault '$name': no report written"; }
  cp "$report" "$logs/fault-$name.json"
  failures | grep -qx "$check $host" \
    || { failures; fail "fault '$name': the report does not name '$check' on $host"; }
  local other
  other=$(failures | awk '{print $1}' | sort -u | grep -vxF -f <(printf '%s\n' "${allowed[@]}") || true)
  [[ -z $other ]] || { failures; fail "fault '$name': other checks failed too: $other"; }
  python3 -c 'import json, sys
for f in json.load(open(sys.argv[1]))["failures"]:
    print("   named: %(check)s on %(host)s: expected %(expected)s; found %(found)s" % f)' "$report" | cut -c1-220
}

trap '[[ -n "${LAB_KEEP:-}" ]] || "$lab" down >/dev/null 2>&1 || true' EXIT

step "fresh lab of our own, SSH mesh, fake nvidia-smi"
tests/lab/ensure-docker.sh
"$lab" down >/dev/null 2>&1 || true
t=$SECONDS
"$lab" up 3 >/dev/null
echo "   lab up 3: $((SECONDS - t)) s"
play "$logs/prepare.log" playbooks/prepare_hosts.yml --tags ssh_mesh \
  || { tail -30 "$logs/prepare.log"; fail "prepare_hosts.yml --tags ssh_mesh"; }
for h in "$leader" "${workers[@]}"; do
  on "$h" mkdir -p /usr/local/share/nimstack-fake-gpu
  docker cp "$fixtures/query-gpu.csv" "$h:/usr/local/share/nimstack-fake-gpu/query.csv"
  docker cp "$fixtures/nvidia-smi.txt" "$h:/usr/local/share/nimstack-fake-gpu/banner.txt"
  # Prints the captures the way nvidia-smi prints them: the query CSV, else the banner.
  on_stdin "$h" sh -c 'cat >/usr/local/bin/nvidia-smi && chmod 0755 /usr/local/bin/nvidia-smi' <<'EOF'
#!/bin/sh
case "$*" in
  *--query-gpu=*) exec cat /usr/local/share/nimstack-fake-gpu/query.csv ;;
  *) exec cat /usr/local/share/nimstack-fake-gpu/banner.txt ;;
esac
EOF
done

step "a healthy lab passes, within ${max_s} s"
rm -f "$report"
doctor healthy || { tail -40 "$logs/healthy.log"; fail "the doctor failed on a healthy lab"; }
cp "$report" "$logs/healthy.json"
python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
assert r["ok"] and not r["failures"], r["failures"]
gpu = [c for c in r["checks"] if c["check"] == "gpu"]
assert gpu and all(c["status"] == "pass" for c in gpu), gpu
print("   report: %(pass)d passed, %(skip)d skipped, %(warn)d warnings, %(fail)d failed" % r["summary"])' "$report"
((last_s < max_s)) || fail "the healthy preflight took ${last_s} s (limit ${max_s} s)"

step "fault: a worker with a different GPU inventory"
on "${workers[1]}" cp /usr/local/share/nimstack-fake-gpu/query.csv /usr/local/share/nimstack-fake-gpu/query.csv.good
docker cp "$fixtures/query-gpu-8x-synthetic.csv" "${workers[1]}:/usr/local/share/nimstack-fake-gpu/query.csv"
expect_fault gpu gpu "${workers[1]}"
on "${workers[1]}" mv /usr/local/share/nimstack-fake-gpu/query.csv.good /usr/local/share/nimstack-fake-gpu/query.csv

step "fault: the API port blocked by nftables on a worker"
on "${workers[0]}" sh -c 'command -v nft >/dev/null || timeout 120 apt-get install -y -q --no-install-recommends nftables >/dev/null 2>&1' \
  || fail "cannot install nftables on ${workers[0]}"
on_stdin "${workers[0]}" nft -f - <<EOF
table inet $nft_table {
  chain input {
    type filter hook input priority -10; policy accept;
    tcp dport 8000 drop
  }
}
EOF
expect_fault port port "${workers[0]}"
python3 -c 'import json, sys
assert any(f["check"] == "port" and f["host"] == sys.argv[2] and "TCP 8000 " in f["expected"]
           for f in json.load(open(sys.argv[1]))["failures"])' "$logs/fault-port.json" "${workers[0]}" \
  || fail "fault 'port': the report does not name port 8000 on ${workers[0]}"
on "${workers[0]}" nft delete table inet "$nft_table"
# Nobody could reach the blocked port, so its listener waited for peers that never came: it must
# still be gone with the run, or the next run finds the port taken (CI saw exactly that).
left=$(on "${workers[0]}" ss -Hltn 'sport = :8000')
[[ -z $left ]] || fail "a doctor listener outlived its run on ${workers[0]}: $left"

step "fault: a worker without the deployment key"
on "${workers[1]}" sh -c "mkdir -p /root/mesh-aside && mv $mesh/private.key $mesh/authorized_keys /root/mesh-aside/"
expect_fault key ssh_key "${workers[1]}" mesh_key
failures | grep -qx "mesh_key ${workers[1]}" || fail "fault 'key': mesh_key does not name ${workers[1]}"
on "${workers[1]}" sh -c "mv /root/mesh-aside/private.key /root/mesh-aside/authorized_keys $mesh/"

step "fault: a worker whose model cache is a local directory"
on "${workers[0]}" mount -t tmpfs -o size=512m nimstack-doctor-local "$cache"
expect_fault cache shared_cache "${workers[0]}"
on "${workers[0]}" umount "$cache"

echo
echo "test-doctor.sh: PASSED in $((SECONDS - t_start)) s"
