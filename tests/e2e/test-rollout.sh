#!/usr/bin/env bash
# Rollouts across groups and the front door, on a 4-host lab: group ro-a (leader_address) on hosts
# 1-2, group ro-b (mpi) on hosts 3-4, each with its group supervisor, the front door (role
# nim_frontend, HAProxy) on host 1, the image pulled from the lab's registry with the key:
#   1. site.yml: both groups start in one wave, side by side; the official openai client streams a
#      completion through the front door;
#   2. a client streams requests without pause through the front door while ro-a's worker is
#      killed (SIGKILL) and its supervisor re-forms the group: no request fails (a request the
#      broken group refuses is sent again to ro-b by the front door);
#   3. an image change (a new tag in the registry) with nim_max_unavailable_groups 1: two waves,
#      one group each, while a probe asks the front door once a second and two clients stream
#      through it: each wave drains its group from the front door before it stops it, and no probe
#      and no stream fails;
#   4. another change with nim_canary_group=ro-b, which turns ready but fails its smoke test: the
#      run stops after the canary's wave, ro-a keeps its image and its containers; the front door
#      never failed a probe.
# Every wait is bounded.
#
#   tests/e2e/test-rollout.sh
#   LAB_KEEP=1 tests/e2e/test-rollout.sh    leave the lab up for a look
#   LAB_REUSE=1 tests/e2e/test-rollout.sh   the lab such a run left, or the security test's (make test:
#                                         make security-rollout-test, one lab for both)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
export NIMSTACK_LAB_PREFIX=${NIMSTACK_LAB_PREFIX:-nimstack-ro}
export NIMSTACK_LAB_SUBNET=${NIMSTACK_LAB_SUBNET:-172.30.84.0/24}
export NIMSTACK_LAB_DIR=${NIMSTACK_LAB_DIR:-$repo/build/lab-ro}
logs=build/rollout-test
mkdir -p "$logs"
# shellcheck source=tests/e2e/lib-lab-test.sh
source "$repo/tests/e2e/lib-lab-test.sh"

load_s=${ROLLOUT_LOAD_S:-10}
a_hosts=("$prefix-1" "$prefix-2") b_hosts=("$prefix-3" "$prefix-4")
door_host=$prefix-1

trap '[[ -n "${LAB_KEEP:-}" ]] || { tests/lab/registry.sh down >/dev/null 2>&1; lab_down >/dev/null 2>&1; } || true' EXIT

step "fresh 4-host lab, model source, the lab registry with the stand-in image"
lab_fresh build/standin/nim-standin.tar 4
tag=${image##*:}
registry=$(tests/lab/registry.sh up)
pushed=$(tests/lab/registry.sh push "$image")
for h in "${a_hosts[@]}" "${b_hosts[@]}"; do tests/lab/registry.sh trust "$h"; done
NGC_API_KEY=$(cat "$(tests/lab/registry.sh key)")
export NGC_API_KEY
echo "   $pushed in $registry"

# One group per pair of hosts, PP 2, every rank loading for $load_s s, with its supervisor.
lab_group_vars=("nim_group_supervisor: true")
{
  echo "all:"
  echo "  hosts:"
  lab_group ro-a leader_address "$load_s" "${a_hosts[@]}"
  lab_group ro-b mpi "$load_s" "${b_hosts[@]}"
  echo "  children:"
  echo "    nim_frontend:"
  echo "      hosts:"
  echo "        $door_host: {}"
} >"$NIMSTACK_LAB_DIR/rollout.yml"
play_args+=(-i inventories/lab-registry -i "$NIMSTACK_LAB_DIR/rollout.yml")

door=http://$(lab_addr "$door_host"):8080
images_of() { local h; for h in "$@"; do on "$h" docker inspect -f '{{.Config.Image}}' "nim-$(on "$h" docker ps --format '{{.Names}}' --filter label=nimstack.managed=true | sed 's/^nim-//')"; done; }
ids_of() { local h; for h in "$@"; do on "$h" docker ps -q --no-trunc --filter label=nimstack.managed=true; done; }

step "site.yml: both groups in one wave, the front door on $door_host"
t=$SECONDS
play_ok "$logs/site.log"
log_says "$logs/site.log" "wave 1 of 1: ro-a, ro-b; serving groups it stops: none" \
  || { grep -n "wave " "$logs/site.log" | head; fail "site.yml did not start both groups in one wave"; }
echo "   both groups in one wave, serving after $((SECONDS - t)) s (the run, host preparation included)"
model=$(curl -fsS --max-time 5 "$door/v1/models" | python3 -c 'import json, sys; print(json.load(sys.stdin)["data"][0]["id"])')
client=$("$repo/.venv/bin/python" tests/lab/openai-stream.py "$door/v1" "$model") \
  || { echo "$client"; fail "the openai client did not stream a completion through the front door"; }
echo "   openai client through the front door: $(cut -c1-150 <<<"$client")"

step "ro-a's worker killed (SIGKILL) under a client streaming without pause through the front door"
stop=$logs/load.stop
rm -f "$stop"
python3 tests/lab/stream_load.py "$door/v1" "$model" "$stop" --bound 300 >"$logs/load.json" &
load_pid=$!
sleep 3
pid=$(on "${a_hosts[1]}" docker inspect -f '{{.State.Pid}}' nim-ro-a)
t=$SECONDS
on "${a_hosts[1]}" kill -9 "$pid"
saw_down='' t_end=$((SECONDS + 180))
while :; do
  ((SECONDS < t_end)) || { touch "$stop"; wait "$load_pid" || true; fail "ro-a did not serve again within 180 s of the kill"; }
  if probe_ready "${a_hosts[0]}" 2; then [[ -n $saw_down ]] && break; else saw_down=1; fi
  sleep 0.5
done
echo "   ro-a serves again $((SECONDS - t)) s after the kill, with no Ansible run"
sleep 8  # the front door takes it back after nim_frontend_check_rise checks
touch "$stop"
load_rc=0
wait "$load_pid" || load_rc=$?
echo "   client: $(cat "$logs/load.json")"
((load_rc == 0)) || fail "a request through the front door failed during ro-a's kill and recovery"

step "an image change, nim_max_unavailable_groups 1: one group per wave, the front door probed every second and two clients streaming through it"
docker tag "$image" "${image%:*}:$tag-v2"
pushed2=$(tests/lab/registry.sh push "${image%:*}:$tag-v2")
before_b=$(ids_of "${b_hosts[@]}")
# Streams of about 3 s without pause: each wave drains its group from the front door before it stops
# it (nim_docker_drain_timeout), so that no stream in flight is cut.
stop=$logs/change.stop
rm -f "$stop"
load_pids=()
for c in 1 2; do
  python3 tests/lab/stream_load.py "$door/v1" "$model" "$stop" --bound 600 --max-tokens 150 >"$logs/change-load-$c.json" &
  load_pids+=($!)
done
tests/lab/rolling_probe.py --settle 3 --bound 120 --log "$logs/change.log" "frontdoor=$door/v1/health/ready" -- \
  ansible-playbook -i "$inventory" -i inventories/lab -i inventories/lab-docker -i inventories/lab-tests "${play_args[@]}" \
  -e "nim_image_tag=$tag-v2" -e nim_max_unavailable_groups=1 playbooks/deploy_docker.yml >"$logs/change.probe" 2>&1 \
  || { cat "$logs/change.probe"; tail -30 "$logs/change.log"; fail "the front door failed a probe, or the change failed"; }
touch "$stop"
for c in 1 2; do
  wait "${load_pids[c - 1]}" || fail "client $c: a stream through the front door failed during the change: $(cat "$logs/change-load-$c.json")"
  echo "   client $c: $(cat "$logs/change-load-$c.json")"
done
sed 's/^/   /' "$logs/change.probe"
for g in ro-a ro-b; do
  # The callback doubles the quotes around the group's name.
  log_says "$logs/change.log" "group '*$g'*: out of the front door ($door_host), no request in flight after" \
    || { grep -n "drain\|front door" "$logs/change.log" | head; fail "the change did not drain $g before stopping it"; }
done
on "$door_host" journalctl -u nimstack-frontend-weights.service --no-pager | grep -q "drained for a planned restart of group ro-a" \
  || fail "the front door's weights service did not take ro-a out while it was drained"
[[ -z $(on "$door_host" ls -A /etc/nimstack/frontend/drains) ]] || fail "drain marks left on $door_host after the change"
echo "   each group drained from the front door before it stopped; no drain mark left"
for wave in "wave 1 of 2: ro-a; serving groups it stops: ro-a" "wave 2 of 2: ro-b; serving groups it stops: ro-b"; do
  log_says "$logs/change.log" "$wave" || { grep -n "wave " "$logs/change.log" | head; fail "the change did not go one group per wave"; }
done
for i in $(images_of "${a_hosts[@]}" "${b_hosts[@]}"); do [[ $i == "$pushed2" ]] || fail "a rank runs $i, not $pushed2"; done
[[ $(ids_of "${b_hosts[@]}") != "$before_b" ]] || fail "ro-b was not restarted by the change"
echo "   every rank runs $pushed2"

step "a canary (ro-b) that fails its smoke test: the run stops, ro-a keeps its image and containers"
docker tag "$image" "${image%:*}:$tag-v3"
tests/lab/registry.sh push "${image%:*}:$tag-v3" >/dev/null
# ro-b's change: a release that turns ready but fails every completion (the stand-in's fault switch).
lab_group_env=('NIM_STANDIN_FAIL_COMPLETIONS: "1"')
{ echo "all:"; echo "  hosts:"; lab_group ro-b mpi "$load_s" "${b_hosts[@]}"; } >"$NIMSTACK_LAB_DIR/canary.yml"
before_a=$(ids_of "${a_hosts[@]}")
rc=0
tests/lab/rolling_probe.py --settle 3 --bound 120 --log "$logs/canary.log" "frontdoor=$door/v1/health/ready" -- \
  bash -c '! "$@"' _ ansible-playbook -i "$inventory" -i inventories/lab -i inventories/lab-docker -i inventories/lab-tests "${play_args[@]}" \
  -i "$NIMSTACK_LAB_DIR/canary.yml" -e "nim_image_tag=$tag-v3" -e nim_canary_group=ro-b \
  playbooks/deploy_docker.yml >"$logs/canary.probe" 2>&1 || rc=$?
sed 's/^/   /' "$logs/canary.probe"
((rc == 0)) || { tail -30 "$logs/canary.log"; fail "the front door failed a probe, or the canary's run did not fail"; }
log_says "$logs/canary.log" "rollout wave 1 of 2 (the canary group, nim_canary_group=ro-b) failed in group(s) ro-b" \
  || { tail -30 "$logs/canary.log"; fail "the run did not stop on the canary's failure"; }
[[ $(ids_of "${a_hosts[@]}") == "$before_a" ]] || fail "ro-a's containers changed although the canary failed"
for i in $(images_of "${a_hosts[@]}"); do [[ $i == "$pushed2" ]] || fail "ro-a runs $i, not $pushed2"; done
echo "   the run stopped after the canary's wave; ro-a still runs $pushed2 in the same containers"
echo
echo "test-rollout.sh: passed in $((SECONDS - t_start)) s"
