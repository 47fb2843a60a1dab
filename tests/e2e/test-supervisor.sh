#!/usr/bin/env bash
# The group supervisor (nimstack-supervisor@<group>, roles/nim_docker) on one lab with a group of two
# hosts per launch contract (SUPERVISOR_CONTRACTS, default: mpi leader_address ray), the stand-in
# loading for NIM_STANDIN_LOAD_S (SUPERVISOR_LOAD_S, 20 s) on every rank:
#   1. site.yml deploys every group; every member's supervisor runs and reports the group formed;
#   2. per group, the cold start: every rank stopped (the supervisor held), then started in the
#      contract's order by hand, seconds until /v1/health/ready answers;
#   3. per group, a rank's main process killed with SIGKILL (a worker, under leader_address the
#      leader): seconds until /v1/health/ready answers again with no Ansible run; must be below
#      2 x the cold start, and the supervisor's journal says it restarted the whole group;
#   4. a member's supervisor stopped: the leader's reports isolated and restarts nothing;
#   5. a rank that dies at every start (its container replaced by one of the same name and labels
#      whose process exits at once): after nim_group_max_restarts restarts the group is failed,
#      the cause names the rank and the budget, the ranks' last logs are saved, and
#      playbooks/status.yml says so; deploy_docker.yml clears it and the group serves again;
#   6. teardown.yml removes the supervisors with the groups.
# Numbers are printed as JSON lines ({"test": ...}). Every wait is bounded.
#
#   tests/e2e/test-supervisor.sh
#   SUPERVISOR_CONTRACTS="mpi leader_address" tests/e2e/test-supervisor.sh
#   LAB_KEEP=1 tests/e2e/test-supervisor.sh      leave the lab up for a look
#   LAB_REUSE=1 tests/e2e/test-supervisor.sh     the lab such a run left: deploy_docker.yml instead of site.yml
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
# A lab of its own, so that it can run beside make test's labs.
export NIMSTACK_LAB_PREFIX=${NIMSTACK_LAB_PREFIX:-nimstack-sup}
export NIMSTACK_LAB_SUBNET=${NIMSTACK_LAB_SUBNET:-172.30.87.0/24}
export NIMSTACK_LAB_DIR=${NIMSTACK_LAB_DIR:-$repo/build/lab-sup}
logs=build/supervisor-test
mkdir -p "$logs"
# shellcheck source=tests/e2e/lib-lab-test.sh
source "$repo/tests/e2e/lib-lab-test.sh"

read -r -a contracts <<<"${SUPERVISOR_CONTRACTS:-mpi leader_address ray}"
load_s=${SUPERVISOR_LOAD_S:-20}
max_restarts=${SUPERVISOR_MAX_RESTARTS:-3}
# One JSON line from name value pairs (a value that reads as JSON, a number or a list, stays one).
json() {
  python3 -c 'import json, sys
def value(v):
    try:
        return json.loads(v)
    except ValueError:
        return v
print(json.dumps(dict(zip(sys.argv[1::2], map(value, sys.argv[2::2])))))' "$@"
}
now() { date +%s.%N; }
since() { python3 -c 'import sys; print("%.1f" % (float(sys.argv[2]) - float(sys.argv[1])))' "$1" "$(now)"; }

# Group of contract c: sup-<short>, on hosts 2i+1 (leader) and 2i+2.
short() { case $1 in mpi) echo mpi ;; ray) echo ray ;; leader_address) echo la ;; esac; }
declare -A g_leader g_worker g_name
i=0
for c in "${contracts[@]}"; do
  g_name[$c]=sup-$(short "$c")
  g_leader[$c]=$prefix-$((2 * i + 1))
  g_worker[$c]=$prefix-$((2 * i + 2))
  i=$((i + 1))
done
hosts=$((2 * ${#contracts[@]}))

ready_on() { probe_ready "$1" 2; }
state_on() { on "$1" sh -c "cat /etc/nimstack/nim/$2/supervisor-state.json 2>/dev/null" | python3 -c 'import json, sys
try:
    d = json.load(sys.stdin)
except ValueError:
    d = {}
print(d.get(sys.argv[1], ""))' "${3:-state}"; }
# Wait (bounded) until the leader's supervisor reports $3 for group $2.
wait_state() {
  local host=$1 group=$2 want=$3 limit=${4:-60} t=$SECONDS
  while ((SECONDS - t < limit)); do
    [[ $(state_on "$host" "$group") == "$want" ]] && return 0
    sleep 1
  done
  fail "group $group: the supervisor on $host did not report $want within $limit s (it says $(state_on "$host" "$group"): $(state_on "$host" "$group" cause))"
}
hold() { local h; for h in "${@:3}"; do on "$h" sh -c "$1 /etc/nimstack/nim/$2/maintenance"; done; }

trap '[[ -n "${LAB_KEEP:-}" ]] || lab_down >/dev/null 2>&1 || true' EXIT

step "fresh $hosts-host lab, model source and stand-in image archive"
lab_fresh build/standin/nim-standin.tar "$hosts"

# One group of two per contract (PP 2), every rank loading for $load_s s.
lab_group_vars=("nim_group_max_restarts: $max_restarts" "nim_group_supervisor: true")
{
  echo "all:"
  echo "  hosts:"
  for c in "${contracts[@]}"; do lab_group "${g_name[$c]}" "$c" "$load_s" "${g_leader[$c]}" "${g_worker[$c]}"; done
} >"$NIMSTACK_LAB_DIR/supervisor.yml"
play_args+=(-i "$NIMSTACK_LAB_DIR/supervisor.yml")

t=$(now)
if [[ -n ${LAB_REUSE:-} ]]; then
  # The hosts were prepared by an earlier run that left the lab (LAB_KEEP): the deployment only.
  step "LAB_REUSE: deploy_docker.yml: ${contracts[*]}, a group of two each, supervisors on every member"
  PLAYBOOK=playbooks/deploy_docker.yml play_ok "$logs/site.log"
else
  step "site.yml: ${contracts[*]}, a group of two each, supervisors on every member"
  play_ok "$logs/site.log"
fi
json test deploy groups "${#contracts[@]}" seconds "$(since "$t")"
for c in "${contracts[@]}"; do
  g=${g_name[$c]}
  for h in "${g_leader[$c]}" "${g_worker[$c]}"; do
    on "$h" systemctl is-active --quiet "nimstack-supervisor@$g.service" || fail "$h: nimstack-supervisor@$g is not active"
    [[ $(on "$h" stat -c %a "/etc/nimstack/nim/$g/supervisor-secret") == 600 ]] || fail "$h: the supervisor secret is not 0600"
    [[ $(on "$h" stat -c %a "/etc/nimstack/nim/$g/supervisor.json") == 600 ]] || fail "$h: the supervisor config is not 0600"
  done
  wait_state "${g_leader[$c]}" "$g" formed 60
  echo "   $g ($c): supervisors active on ${g_leader[$c]} and ${g_worker[$c]}, formed"
done

step "a re-run of the deployment changes nothing"
PLAYBOOK=playbooks/deploy_docker.yml play_ok "$logs/deploy-2.log"
changed=$(recap changed "$logs/deploy-2.log")
((changed == 0)) || { grep -B3 '^changed:' "$logs/deploy-2.log" | head -30; fail "the re-run changed $changed"; }

for c in "${contracts[@]}"; do
  g=${g_name[$c]} l=${g_leader[$c]} w=${g_worker[$c]}
  step "$g ($c): cold start of the group, by hand, the supervisor held"
  hold touch "$g" "$l" "$w"
  wait_state "$l" "$g" maintenance 30
  on "$l" docker stop -t 10 "nim-$g" >/dev/null
  on "$w" docker stop -t 10 "nim-$g" >/dev/null
  t=$(now)
  if [[ $c == mpi ]]; then order=("$w" "$l"); else order=("$l" "$w"); fi
  for h in "${order[@]}"; do on "$h" docker start "nim-$g" >/dev/null; done
  t_end=$((SECONDS + 300))
  until ready_on "$l"; do
    ((SECONDS < t_end)) || fail "$g: not ready within 300 s of a cold start"
    sleep 0.5
  done
  cold=$(since "$t")
  hold 'rm -f' "$g" "$l" "$w"
  wait_state "$l" "$g" formed 30
  json test cold_start group "$g" contract "$c" load_s "$load_s" seconds "$cold"

  victim=$w role=worker
  [[ $c == leader_address ]] && victim=$l role=leader
  step "$g ($c): the $role's main process killed (SIGKILL); no Ansible runs"
  restarts_before=$(on "$victim" docker inspect -f '{{.RestartCount}}' "nim-$g")
  pid=$(on "$victim" docker inspect -f '{{.State.Pid}}' "nim-$g")
  t=$(now)
  on "$victim" kill -9 "$pid"
  saw_down='' t_end=$((SECONDS + 4 * ${cold%.*} + 60))
  while :; do
    ((SECONDS < t_end)) || fail "$g: not ready again within $((4 * ${cold%.*} + 60)) s of the kill"
    if ready_on "$l"; then
      [[ -n $saw_down ]] && break
    else
      [[ -n $saw_down ]] || echo "   unready $(since "$t") s after the kill"
      saw_down=1
    fi
    sleep 0.5
  done
  heal=$(since "$t")
  ratio=$(python3 -c 'import sys; print("%.2f" % (float(sys.argv[1]) / float(sys.argv[2])))' "$heal" "$cold")
  json test heal group "$g" contract "$c" killed "$role" cold_start_s "$cold" heal_s "$heal" ratio "$ratio"
  python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) < 2 * float(sys.argv[2]) else 1)' "$heal" "$cold" \
    || fail "$g: serving again took $heal s, not below 2 x the cold start ($cold s)"
  wait_state "$l" "$g" formed 30
  on "$l" journalctl -u "nimstack-supervisor@$g" --no-pager -o cat >"$logs/journal-$g.log"
  grep -q "restarting the whole group" "$logs/journal-$g.log" || fail "$g: the journal does not say it restarted the group"
  grep "restarting the whole group\|serves again" "$logs/journal-$g.log" | tail -2 | cut -c1-200 | sed 's/^/   journal: /'
  [[ $(state_on "$l" "$g" restarts) == "["*"]" ]] || fail "$g: no restart history in the state file"
  echo "   restart count of the killed rank: $restarts_before -> $(on "$victim" docker inspect -f '{{.RestartCount}}' "nim-$g")"
done

c=${contracts[0]} g=${g_name[${contracts[0]}]} l=${g_leader[${contracts[0]}]} w=${g_worker[${contracts[0]}]}
step "$g: a member's supervisor stopped: the leader's is isolated and restarts nothing"
on "$w" systemctl stop "nimstack-supervisor@$g.service"
t=$(now)
wait_state "$l" "$g" isolated 30
json test isolated group "$g" seconds "$(since "$t")" cause "$(state_on "$l" "$g" cause)"
on "$w" systemctl start "nimstack-supervisor@$g.service"
wait_state "$l" "$g" formed 30
ready_on "$l" || fail "$g: not serving after the isolation"

step "$g: a worker that dies at every start; after $max_restarts restarts the group is failed"
image=$(on "$w" docker inspect -f '{{.Config.Image}}' "nim-$g")
hold touch "$g" "$w"
wait_state "$l" "$g" maintenance 30
on "$w" docker rm -f "nim-$g" >/dev/null
on "$w" docker run -d --name "nim-$g" --network host --restart unless-stopped \
  --label nimstack.managed=true --label "nimstack.group=$g" --label nimstack.rank=1 --label nimstack.role=worker \
  --entrypoint /bin/sh "$image" -c 'echo "poisoned rank: exits at every start"; exit 3' >/dev/null
t=$(now)
hold 'rm -f' "$g" "$w"
wait_state "$l" "$g" failed $((max_restarts * 120 + 60))
failed_s=$(since "$t")
cause=$(state_on "$l" "$g" cause)
json test failed group "$g" max_restarts "$max_restarts" seconds "$failed_s" cause "$cause"
grep -q "nim_group_max_restarts=$max_restarts" <<<"$cause" || fail "$g: the cause does not name the budget: $cause"
grep -q "rank on $w" <<<"$cause" || fail "$g: the cause does not name the rank on $w: $cause"
[[ $(state_on "$w" "$g") == failed ]] || fail "$g: the worker's state file does not say failed"
on "$w" grep -q "poisoned rank" "/etc/nimstack/nim/$g/supervisor-logs/nim-$g-$w.log" || fail "$g: the worker's last log is not saved"
on "$l" test -s "/etc/nimstack/nim/$g/supervisor-logs/nim-$g-$l.log" || fail "$g: the leader's last log is not saved"
sleep 5
[[ $(state_on "$l" "$g") == failed ]] || fail "$g: the failed state did not stay"
on "$l" journalctl -u "nimstack-supervisor@$g" --no-pager -o cat | grep -m1 "failed:" | cut -c1-250 | sed 's/^/   journal: /'

step "status.yml reports every group, the failed one with its cause, and changes nothing"
PLAYBOOK=playbooks/status.yml play_ok "$logs/status.log"
(($(recap changed "$logs/status.log") == 0)) || fail "status.yml changed a host"
log_says "$logs/status.log" "state: failed" || log_says "$logs/status.log" '"state": "failed"' || fail "status.yml does not say failed"
log_says "$logs/status.log" "nim_group_max_restarts=$max_restarts" || fail "status.yml does not give the cause"
for c2 in "${contracts[@]:1}"; do
  log_says "$logs/status.log" "group: ${g_name[$c2]}" || log_says "$logs/status.log" "\"group\": \"${g_name[$c2]}\"" \
    || fail "status.yml does not report ${g_name[$c2]}"
done
grep -E '"?(group|state|cause)"?:' "$logs/status.log" | cut -c1-200 | sed 's/^/  /' | head -20

step "$g: deploy_docker.yml clears the failed state and the group serves again"
t=$(now)
PLAYBOOK=playbooks/deploy_docker.yml play_ok "$logs/deploy-clear.log"
wait_state "$l" "$g" formed 60
ready_on "$l" || fail "$g: not serving after the deployment"
json test cleared group "$g" seconds "$(since "$t")" restarts "$(state_on "$l" "$g" restarts)"

step "teardown.yml removes the supervisors with the groups"
PLAYBOOK=playbooks/teardown.yml play_ok "$logs/teardown.log"
for ((n = 1; n <= hosts; n++)); do
  h=$prefix-$n
  ! on "$h" test -e /etc/systemd/system/nimstack-supervisor@.service || fail "$h: the supervisor unit is left"
  ! on "$h" test -e /usr/local/lib/nimstack-supervisor || fail "$h: the supervisor program is left"
  ! on "$h" sh -c 'systemctl list-units --all --no-legend "nimstack-supervisor@*" | grep -q .' || fail "$h: a supervisor unit is still loaded"
done
echo "   no unit, program or state left"

trap - EXIT
if [[ -z "${LAB_KEEP:-}" ]]; then
  step "the lab goes down and leaves nothing behind"
  lab_down_clean
fi
echo "test-supervisor.sh: passed in $((SECONDS - t_start)) s"
