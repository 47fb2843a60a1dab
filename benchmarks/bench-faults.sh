#!/usr/bin/env bash
# Benchmark (not a test, not in `make test`): faults under load, on the Docker path. On a 5-host
# lab, two groups of two hosts (fa on hosts 1-2, fb on hosts 3-4; mpi, supervisors on,
# nim_group_serving_timeout BENCH_SERVING_TIMEOUT) serve one model behind the front door, and host
# 5 also runs the monitoring (Prometheus and Alertmanager, NIMGroupNotServing after 10 s); each group
# may restart 20 times an hour (nim_group_max_restarts), so that every fault finds budget left.
# bench_faults.py streams BENCH_CLIENTS clients through the front door all along, and one client
# straight to each leader. Each fault strikes the worker of one group, the groups taking turns,
# after both have served for BENCH_STEADY_S:
#   rank-killed            docker kill of the rank's container
#   rank-frozen            docker pause of the rank's container (running, but hung)
#   group-hung             the stand-in's hang: a rank hangs the group, no process exits
#   completions-failing    the stand-in fails every completion, health still ready
#   worker-partitioned     nftables drops everything between the worker and the leader, BENCH_PARTITION_S
#   engine-restarted       systemctl restart docker on the worker's host
#   host-rebooted          the worker's host restarted (docker restart of the lab host)
#   run-interrupted        a deploy_docker.yml of the group killed while it holds the supervisors
#                          (lease BENCH_LEASE_S), then the rank killed: healed once the hold expires
#   wave-interrupted       a deploy_docker.yml that re-forms the group (nim_log_level DEBUG, --limit
#                          to its hosts) killed with SIGKILL (a lost controller) as soon as its
#                          restart wave stopped or replaced a rank; it ends when the dead run's hold
#                          expires, and the group serves or is failed naming why
#   source-down            the group's model downloaded again (its download stamp removed, as a
#                          new image or profile does) by a deploy limited to its hosts, the model
#                          source slowed to 128 KiB/s and stopped once 1 MiB came: the run must fail
#                          naming it with nothing changed and the group serving; the source back
#                          (its end), the deploy again must resume the cut file and succeed
#   cache-full             the same download into a leader's cache of 1 MiB (a tmpfs over the cache
#                          path): the run must stop before any change naming the full disk; space
#                          freed (its end), the deploy again must succeed
#   cache-fills            the same with room for the model when the run starts (24 MiB), filled by
#                          another writer once 1 MiB came (the source slowed): the run must fail
#                          naming the full disk, nothing used; space freed (its end), the deploy
#                          again must resume the cut file and succeed
#   host-lost              the worker's host stopped for good (started again for the re-run); the
#                          supervisor calls it lost after BENCH_LOST_AFTER_S (nim_group_lost_after, 90 s:
#                          longer than the partition, which stays isolated)
# For each: when the group serves again (a completion straight to its leader; for the download
# faults, whether it answers when the fault ends, before the run again), its supervisor's
# state, NIMGroupNotServing firing and clearing in Prometheus; then one site.yml re-run (BENCH_RERUN=0:
# only after a fault that left the group failed), which must end serving; its changed count in the row. Writes build/bench/faults/{requests,series,faults}.jsonl, result.json (one row per
# fault: bench_faults.py report) and faults.png (bench_faults.py plot).
#
#   benchmarks/bench-faults.sh
#   BENCH_FAULTS="rank-killed group-hung" benchmarks/bench-faults.sh     some faults only
#   LAB_KEEP=1 benchmarks/bench-faults.sh     leave the lab up (LAB_REUSE=1 takes it again)
#   LAB_REUSE=1 BENCH_APPEND=1 BENCH_FAULTS="host-lost" benchmarks/bench-faults.sh
#                                             more faults on that lab, added to the same rows
#
# Its own lab (NIMSTACK_LAB_PREFIX, default nimstack-flt on 172.30.91.0/24), torn down at the end
# unless LAB_KEEP=1. A registry cut mid-pull is make test's (tests/e2e/test-contracts.sh); the
# Kubernetes faults are benchmarks/bench-k8s-faults.sh's.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
export NIMSTACK_LAB_PREFIX=${NIMSTACK_LAB_PREFIX:-nimstack-flt}
export NIMSTACK_LAB_SUBNET=${NIMSTACK_LAB_SUBNET:-172.30.91.0/24}
export NIMSTACK_LAB_DIR=${NIMSTACK_LAB_DIR:-$repo/build/lab-flt}
export PATH=$repo/.venv/bin:$PATH
out=build/bench/faults
logs=$out/logs
# shellcheck source=tests/e2e/lib-lab-test.sh
source "$repo/tests/e2e/lib-lab-test.sh"
clients=${BENCH_CLIENTS:-4}
steady=${BENCH_STEADY_S:-10}
serving_timeout=${BENCH_SERVING_TIMEOUT:-20}
partition_s=${BENCH_PARTITION_S:-60}
lease=${BENCH_LEASE_S:-45}
lost_after=${BENCH_LOST_AFTER_S:-90}
# The model cache's path on the lab hosts (the shared path; $shared on this machine).
cache_path=/mnt/nimstack/model-cache
# How long after a fault's end the group may take to serve again before the row says it did not.
serve_bound=${BENCH_SERVE_BOUND_S:-180}
read -r -a faults <<<"${BENCH_FAULTS:-rank-killed rank-frozen group-hung completions-failing worker-partitioned engine-restarted host-rebooted run-interrupted wave-interrupted source-down cache-full cache-fills host-lost}"
declare -A leader_of=([fa]=$prefix-1 [fb]=$prefix-3) worker_of=([fa]=$prefix-2 [fb]=$prefix-4) other_of=([fa]=fb [fb]=fa)
door_host=$prefix-5
now() { date +%s.%N; }
# deploy_docker.yml limited to group $1's hosts, logged to $logs/$2.log, with the arguments after.
deploy_group() {
  local g=$1 log=$2
  shift 2
  PLAYBOOK=playbooks/deploy_docker.yml play "$logs/$log.log" --limit "${leader_of[$g]},${worker_of[$g]}" "$@"
}
# Where the model source's transfers since its start were resumed from (a list of first bytes).
resumed_from() {
  tests/lab/model-source.sh stats | python3 -c 'import json, sys; print(json.load(sys.stdin)["resumed_from"])'
}

load_pid=''
finish() {
  [[ -z $load_pid ]] || { touch "$out/stop"; wait "$load_pid" 2>/dev/null || true; }
  [[ -n "${LAB_KEEP:-}" ]] || lab_down >/dev/null 2>&1 || true
}
trap finish EXIT

# BENCH_APPEND keeps the rows and requests of an earlier run (more faults on the same lab).
[[ -n ${BENCH_APPEND:-} ]] || rm -rf "$out"
rm -f "$out/stop"
mkdir -p "$logs"
step "5-host lab, model source and stand-in image archive"
lab_fresh build/standin/nim-standin.tar 5
# Every fault of the run counts against its group's restart budget: the budget is raised so that
# each fault meets a group with budget left (a group out of budget ends failed: docs/operations.md).
lab_group_vars=("nim_group_supervisor: true" "nim_group_serving_timeout: $serving_timeout" "nim_group_max_restarts: 20"
                "nim_group_lost_after: $lost_after")
lab_watch_host "$door_host" faults-hosts.yml
{
  echo "all:"
  echo "  hosts:"
  lab_group fa mpi 5 "${leader_of[fa]}" "${worker_of[fa]}"
  lab_group fb mpi 5 "${leader_of[fb]}" "${worker_of[fb]}"
  echo "  children:"
  echo "    nim_monitoring:"
  echo "      vars:"
  echo "        monitoring_scrape_interval: 5s"
  echo "        monitoring_evaluation_interval: 5s"
  echo "        monitoring_alert_thresholds:"
  echo "          not_serving_for: 10s"
} >"$NIMSTACK_LAB_DIR/faults.yml"
play_args+=(-i "$NIMSTACK_LAB_DIR/faults.yml")

step "site.yml: groups fa and fb, the front door and the monitoring on $door_host"
play_ok "$logs/site.log"
door=http://$(lab_addr "$door_host"):8080
prom=http://$(lab_addr "$door_host"):9090
model=$(curl -fsS --max-time 5 "$door/v1/models" | python3 -c 'import json, sys; print(json.load(sys.stdin)["data"][0]["id"])')
driver=(python3 benchmarks/bench_faults.py load --door "$door" --door-metrics "http://$(lab_addr "$door_host"):8405/metrics"
        --model "$model" --clients "$clients" --out "$out")
for g in fa fb; do
  driver+=(--group "$g=http://$(lab_addr "${leader_of[$g]}"):8000" --host "${leader_of[$g]}=$g" --host "${worker_of[$g]}=$g")
done
"${driver[@]}" >"$logs/load.log" 2>&1 &
load_pid=$!

# Whether group $1 answers one completion straight from its leader within $2 s.
answers() {
  docker exec -i "${leader_of[$1]}" python3 - 127.0.0.1 8000 'Say hi' 8 "${2:-10}" \
    <roles/nim_docker/files/nim_smoke.py >/dev/null 2>&1
}
# The supervisor's state of group $1 (on its leader), or "?".
sup_state() {
  on "${leader_of[$1]}" python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["state"])' \
    "/etc/nimstack/nim/$1/supervisor-state.json" 2>/dev/null || echo "?"
}
# NIMGroupNotServing of group $1 in Prometheus: firing, pending or "".
alert_state() {
  curl -fsS --max-time 5 "$prom/api/v1/alerts" 2>/dev/null | python3 -c 'import json, sys
states = [a["state"] for a in json.load(sys.stdin)["data"]["alerts"]
          if a["labels"].get("alertname") == "NIMGroupNotServing" and a["labels"].get("group") == sys.argv[1]]
print("firing" if "firing" in states else (states[0] if states else ""))' "$1" || echo "?"
}
# A completion from group $1's leader whose prompt holds the stand-in's mark $2, left to hang or fail.
marked_completion() {
  docker exec -i "${leader_of[$1]}" python3 - "$2" <<'EOF' || true
import json
import sys
import urllib.request
api = 'http://127.0.0.1:8000/v1/'
model = json.load(urllib.request.urlopen(api + 'models', timeout=5))['data'][0]['id']
body = {'model': model, 'max_tokens': 4, 'messages': [{'role': 'user', 'content': sys.argv[1]}]}
request = urllib.request.Request(api + 'chat/completions', data=json.dumps(body).encode(), method='POST',
                                 headers={'Content-Type': 'application/json'})
try:
    urllib.request.urlopen(request, timeout=5).read()
except OSError:
    pass
EOF
}
# Both groups serve, straight and through the front door, for $steady s.
steady_state() {
  local t_end=$((SECONDS + 240)) since=''
  while :; do
    if answers fa 10 && answers fb 10 && [[ -z $(alert_state fa) && -z $(alert_state fb) ]]; then
      [[ -n $since ]] || since=$SECONDS
      ((SECONDS - since >= steady)) && return 0
    else
      since=''
    fi
    ((SECONDS < t_end)) || fail "the groups did not both serve, with no alert, within 240 s (fa $(sup_state fa), fb $(sup_state fb))"
    sleep 2
  done
}

# Each inject_<fault> strikes group $1's worker and returns once the fault has ended (its end is
# when it returns); ended='' where the fault lasts (host-lost).
inject_rank-killed() { on "${worker_of[$1]}" docker kill "nim-$1" >/dev/null; }
inject_rank-frozen() {
  local w=${worker_of[$1]} t_end=$((SECONDS + serving_timeout + 120))
  on "$w" docker pause "nim-$1" >/dev/null
  # It ends when the supervisor restarts the rank (a paused container stopped and started).
  while [[ $(on "$w" docker inspect -f '{{.State.Paused}}' "nim-$1") == true ]]; do
    if ((SECONDS >= t_end)); then
      on "$w" docker unpause "nim-$1" >/dev/null
      note="still paused $((serving_timeout + 120)) s after the fault: unpaused by the benchmark"
      return
    fi
    sleep 1
  done
}
inject_group-hung() { marked_completion "$1" 'nimstack-standin: hang the group'; }
inject_completions-failing() { marked_completion "$1" 'nimstack-standin: fail every completion'; }
inject_worker-partitioned() {
  local w=${worker_of[$1]} l
  l=$(lab_addr "${leader_of[$1]}")
  docker exec -i "$w" nft -f - <<EOF
table inet nimstack_bench_fault {
  chain input { type filter hook input priority -10; policy accept; ip saddr $l drop; }
  chain output { type filter hook output priority -10; policy accept; ip daddr $l drop; }
}
EOF
  sleep "$partition_s"
  on "$w" nft delete table inet nimstack_bench_fault
}
inject_engine-restarted() { on "${worker_of[$1]}" systemctl restart docker; }
inject_host-rebooted() {
  local w=${worker_of[$1]} t_end=$((SECONDS + 120))
  docker restart "$w" >/dev/null
  until on "$w" systemctl is-active --quiet docker 2>/dev/null; do
    ((SECONDS < t_end)) || { note="the host's Docker engine was not active 120 s after the reboot"; return; }
    sleep 1
  done
}
inject_run-interrupted() {
  local g=$1 hold=/etc/nimstack/nim/$1/maintenance bg run_pid t_end=$((SECONDS + 240)) expires
  # Of both groups (a deploy of converged groups re-forms neither): only group $g's rank is killed.
  PLAYBOOK=playbooks/deploy_docker.yml play "$logs/deploy-interrupted-$g.log" -e "nim_group_hold_lease=$lease" &
  bg=$!
  until on "${worker_of[$g]}" test -s "$hold" 2>/dev/null; do
    ((SECONDS < t_end)) || { note="the deploy held no supervisor within 240 s"; kill "$bg"; wait "$bg" || true; return; }
    sleep 1
  done
  run_pid=$(pgrep -P "$bg" -f ansible-playbook || true)
  if [[ -n $run_pid ]]; then
    kill -INT "$run_pid"
    for _ in $(seq 20); do kill -0 "$run_pid" 2>/dev/null || break; sleep 1; done
    kill -KILL "$run_pid" 2>/dev/null || true
  fi
  wait "$bg" || true
  expires=$(on "${worker_of[$g]}" python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["expires"])' "$hold")
  # The fault's times count from the rank's kill, which the dead run's hold keeps from being healed.
  struck=$(now)
  on "${worker_of[$g]}" docker kill "nim-$g" >/dev/null
  note="the run killed with its hold live; the rank killed $((expires - $(date +%s))) s before the hold expired"
  # The fault lasts as long as the dead run's hold does.
  while (($(date +%s) < expires)); do sleep 1; done
}
# The ranks of group $1: each container's id, start and whether it runs (or missing).
ranks_of() {
  local h
  for h in "${leader_of[$1]}" "${worker_of[$1]}"; do
    on "$h" docker inspect -f '{{.Id}} {{.State.StartedAt}} {{.State.Running}}' "nim-$1" 2>/dev/null || echo missing
  done
}
inject_wave-interrupted() {
  local g=$1 hold=/etc/nimstack/nim/$1/maintenance bg run_pid t_end=$((SECONDS + 300)) before expires
  before=$(ranks_of "$g")
  deploy_group "$g" "deploy-wave-$g" -e "nim_group_hold_lease=$lease" -e nim_log_level=DEBUG &
  bg=$!
  # The wave has begun once a rank of the group is stopped, replaced or restarted.
  while [[ $(ranks_of "$g") == "$before" ]]; do
    if ((SECONDS >= t_end)) || ! kill -0 "$bg" 2>/dev/null; then
      note="the deploy changed no rank of the group (see deploy-wave-$g.log)"; wait "$bg" || true; return
    fi
    sleep 0.5
  done
  # The fault's times count from here, the wave's first change of a rank: what it cuts is the
  # fault's. A lost controller: no signal handler runs, nothing is cleaned up.
  struck=$(now)
  run_pid=$(pgrep -P "$bg" -f ansible-playbook || true)
  [[ -z $run_pid ]] || kill -KILL "$run_pid" 2>/dev/null || true
  wait "$bg" || true
  expires=$(on "${worker_of[$g]}" python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["expires"])' "$hold" \
            2>/dev/null || date +%s)
  note="the deploy killed (SIGKILL) in its restart wave: ranks then $(ranks_of "$g" | awk '{print $NF}' | paste -sd/); its hold expired $((expires - $(date +%s))) s later"
  while (($(date +%s) < expires)); do sleep 1; done
}
inject_host-lost() { docker stop "${worker_of[$1]}" >/dev/null; lost=1; }
# The group's model downloaded again on its leader (its download stamp removed, as a new image or
# profile does) by a deploy_docker.yml limited to the group's hosts, in the background ($bg).
redownload() {
  local g=$1 log=$2
  shift 2
  ranks_before=$(ranks_of "$g")
  on "${leader_of[$g]}" sh -c "rm -f /etc/nimstack/nim/$g/download-*.done"
  deploy_group "$g" "$log" "$@" &
  bg=$!
}
# Whether the ranks of group $1 are the ones redownload found (no container changed by the failed run).
ranks_untouched() {
  [[ $(ranks_of "$1") == "$ranks_before" ]] && echo "no rank touched" || echo "RANKS CHANGED by the failed run"
}
# What the run of log $1 failed with: the download's failure or the doctor's (300 characters).
run_said() {
  log_folded "$logs/$1.log" \
    | grep -o -e "the model download (container [^)]*) [^\"]*last lines: [^\"]*" -e "doctor: [0-9]* check(s) failed: [^\"']*" \
    | head -1 | sed 's/ The container is kept.*//' | cut -c1-300 || true
}
# Wait (bounded, $2 s) until the download's cut file on the leader of group $1 holds 1 MiB.
part_grows() {
  local t_end=$((SECONDS + $2))
  until on "${leader_of[$1]}" sh -c "test \$(stat -c %s $cache_path/nimstack-standin/weights.bin.part 2>/dev/null || echo 0) -ge 1048576"; do
    ((SECONDS < t_end)) && kill -0 "$bg" 2>/dev/null || return 1
    sleep 0.5
  done
}
inject_source-down() {
  local g=$1 part=$shared/nimstack-standin/weights.bin.part rc=0 rerun=0 cut said resumed
  # Slow enough to be cut half way: the 4 MiB at 128 KiB/s, about 32 s. The cached model goes
  # (a new version of it would be new files): the download has to fetch it.
  NIMSTACK_MODEL_SOURCE_RATE=131072 tests/lab/model-source.sh up >/dev/null
  rm -f "$shared/nimstack-standin/weights.bin" "$shared/nimstack-standin/.complete"
  redownload "$g" "deploy-source-down-$g"
  if ! part_grows "$g" 240; then
    note="the download never got 1 MiB (see deploy-source-down-$g.log)"; wait "$bg" || true; return
  fi
  struck=$(now)
  docker stop "$prefix-model-source" >/dev/null
  wait "$bg" || rc=$?
  said=$(run_said "deploy-source-down-$g") cut=$(stat -c %s "$part" 2>/dev/null || echo 0)
  untouched=$(ranks_untouched "$g")
  sleep 10
  # The source back (at full speed): the fault's end; then the deployment again, which resumes.
  tests/lab/model-source.sh up >/dev/null
  fault_end=$(now)
  ! answers "$g" 10 || served_at_end=$(now)
  deploy_group "$g" "deploy-source-back-$g" || rerun=$?
  resumed=$(resumed_from)
  note="the run that lost its source: rc $rc, $said; $cut bytes kept in weights.bin.part, no download stamp, $untouched;"
  note+=" the source back, the run again: rc $rerun, changed=$(recap changed "$logs/deploy-source-back-$g.log"),"
  note+=" resumed from byte(s) $resumed, cache complete: $(on "${leader_of[$g]}" test -f "$cache_path/nimstack-standin/.complete" && echo yes || echo no)"
}
inject_cache-full() {
  local g=$1 l=${leader_of[$1]} rc=0 rerun=0 said
  # The leader's cache on a 1 MiB file system, smaller than the model (4 MiB): the disk full.
  on "$l" mount -t tmpfs -o size=1m,mode=1777 nimstack-bench-full "$cache_path"
  redownload "$g" "deploy-cache-full-$g"
  wait "$bg" || rc=$?
  said=$(run_said "deploy-cache-full-$g")
  untouched=$(ranks_untouched "$g")
  # Space freed: the small file system gone, the cache as it was.
  on "$l" umount "$cache_path"
  fault_end=$(now)
  ! answers "$g" 10 || served_at_end=$(now)
  deploy_group "$g" "deploy-cache-freed-$g" || rerun=$?
  note="the run with the cache full: rc $rc, $said, $untouched; space freed, the run again: rc $rerun,"
  note+=" changed=$(recap changed "$logs/deploy-cache-freed-$g.log")"
}
inject_cache-fills() {
  local g=$1 l=${leader_of[$1]} rc=0 rerun=0 said resumed
  # The leader's cache on a file system with room for the model when the run starts (24 MiB, the
  # doctor asks 1.1 x the weights), filled by another writer once 1 MiB of the model came. Only
  # the leader has it (the doctor would find the cache not shared: its findings are warnings here).
  NIMSTACK_MODEL_SOURCE_RATE=131072 tests/lab/model-source.sh up >/dev/null
  on "$l" mount -t tmpfs -o size=24m,mode=1777 nimstack-bench-fills "$cache_path"
  redownload "$g" "deploy-cache-fills-$g" -e doctor_fail=false
  if ! part_grows "$g" 240; then
    note="the download never got 1 MiB (see deploy-cache-fills-$g.log)"; wait "$bg" || true
    on "$l" umount "$cache_path"; return
  fi
  struck=$(now)
  on "$l" sh -c "dd if=/dev/zero of=$cache_path/filler bs=1M 2>/dev/null" || true
  wait "$bg" || rc=$?
  said=$(run_said "deploy-cache-fills-$g")
  untouched=$(ranks_untouched "$g")
  # Space freed: the filler removed, the source at full speed.
  on "$l" rm -f "$cache_path/filler"
  tests/lab/model-source.sh up >/dev/null
  fault_end=$(now)
  ! answers "$g" 10 || served_at_end=$(now)
  deploy_group "$g" "deploy-cache-room-$g" -e doctor_fail=false || rerun=$?
  resumed=$(resumed_from)
  note="the run whose cache filled: rc $rc, $said, $untouched; space freed, the run again: rc $rerun,"
  note+=" changed=$(recap changed "$logs/deploy-cache-room-$g.log"), resumed from byte(s) $resumed,"
  note+=" cache complete: $(on "$l" test -f "$cache_path/nimstack-standin/.complete" && echo yes || echo no)"
  # The small file system gone: the shared cache as it was (whole).
  on "$l" umount "$cache_path"
}

turn=0
for fault in "${faults[@]}"; do
  declare -F "inject_$fault" >/dev/null || fail "no such fault: $fault"
  g=$([[ $((turn % 2)) == 0 ]] && echo fa || echo fb) turn=$((turn + 1))
  step "$fault in group $g (worker ${worker_of[$g]}), the clients streaming all along"
  steady_state
  note='' lost='' fault_end='' served_at_end=''
  struck=$(now)
  "inject_$fault" "$g"
  ended=None
  [[ -n $lost ]] || ended=${fault_end:-$(now)}
  served=$served_at_end fired='' cleared='' t_end=$((SECONDS + serve_bound))
  while :; do
    state=$(alert_state "$g")
    [[ -z $fired && $state == firing ]] && fired=$(python3 -c "print(round($(now) - $struck, 1))")
    if [[ -z $served ]] && answers "$g" 10; then
      served=$(now)
      echo "   serves again $(python3 -c "print(round($served - $struck, 1))") s after the fault struck"
    fi
    if [[ -n $served ]]; then
      if [[ -z $fired || -z $state ]]; then
        [[ -n $fired ]] && cleared=$(python3 -c "print(round($(now) - $struck, 1))")
        break
      fi
      ((SECONDS < t_end + 60)) || break
    fi
    # Failed with the alert firing is an end too (a lost host, a group the supervisor cannot re-form).
    if [[ -z $served ]] && { ((SECONDS >= t_end)) || [[ $(sup_state "$g") == failed && -n $fired ]]; }; then
      break
    fi
    sleep 1
  done
  sup=$(sup_state "$g")
  # A group that serves again may not have written its state yet (healing -> formed, a run's hold
  # just released): 10 s at most.
  for _ in 1 2 3 4 5; do
    [[ -n $served && ($sup == healing || $sup == maintenance) ]] || break
    sleep 2; sup=$(sup_state "$g")
  done
  echo "   supervisor: $sup; NIMGroupNotServing fired ${fired:-never}, cleared ${cleared:-no}${note:+; $note}"
  # Then site.yml, as docs/operations.md says to run after a fault that left the group failed (a
  # lost host back first), and after every other one too (BENCH_RERUN=0: only after those): it
  # must change only what the fault changed and end serving.
  rerun=None
  if [[ -n $lost || $sup == failed || ${BENCH_RERUN:-1} != 0 ]]; then
    step "${lost:+the lost host back, then }site.yml: it changes what the fault changed and ends serving"
    [[ -z $lost ]] || docker start "${worker_of[$g]}" >/dev/null
    play_ok "$logs/site-after-$fault.log"
    answers "$g" 20 || fail "group $g does not serve after the re-run of site.yml"
    rerun="{'changed': $(recap changed "$logs/site-after-$fault.log"), 'serves': True}"
    echo "   re-run: changed=$(recap changed "$logs/site-after-$fault.log"), serving"
  fi
  python3 - "$out/faults.jsonl" <<EOF
import json, sys
row = {'fault': '$fault', 'group': '$g', 'other': '${other_of[$g]}', 'struck': $struck, 'ended': $ended,
       'served': ${served:-None}, 'state': '$sup', 'alert_fired_s': ${fired:-None}, 'alert_cleared_s': ${cleared:-None},
       'rerun': $rerun, 'note': '''$note'''}
with open(sys.argv[1], 'a') as handle:
    handle.write(json.dumps(row) + '\n')
EOF
done

touch "$out/stop"
wait "$load_pid" || true
load_pid=''
step "result"
python3 benchmarks/bench_faults.py report --out "$out" | tee "$logs/report.json" | python3 -c 'import json, sys
for row in json.load(sys.stdin)["faults"]:
    print("   %(fault)-20s %(group)s door failed %(door_failed_in_flight)s in flight + %(door_failed_after)s after, "
          "other group failed %(other_group_failed)s, door out %(door_out_s)s s, serving %(served_again_after_fault_s)s s, "
          "state %(state)s, alert %(alert_fired_s)s/%(alert_cleared_s)s" % row)'
python3 benchmarks/bench_faults.py plot --out "$out" "$out/faults.png"
echo "bench-faults.sh: done in $((SECONDS - t_start)) s; $out/result.json, $out/faults.png"
