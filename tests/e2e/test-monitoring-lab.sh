#!/usr/bin/env bash
# The bare-metal monitoring (role monitoring, docs/monitoring.md) on a 3-host lab of its own: a
# Docker group of two (mpi, PP 2, its supervisors on) on hosts 1 and 2; host 3 is the monitoring
# host (inventory group nim_monitoring, monitoring_mode server) and the front door (nim_frontend):
#   1. one site.yml: the group serves, node exporter runs on its hosts, Prometheus and Alertmanager
#      from Debian's packages run on host 3 with the collection's configuration (validated by
#      promtool and amtool on the way); a re-run of playbooks/monitoring.yml changes nothing;
#   2. Prometheus scrapes through the written file_sd targets, and within a bounded wait every
#      target is up: jobs nim, nimstack_supervisor, node and haproxy. Job dcgm has no target: the
#      lab has no GPU (the DCGM exporter runs only where the driver lists GPUs), and the test says so;
#   3. a query of the group's NIM series returns series with the group, model, rank and role labels,
#      and the supervisor's nimstack_group_state says formed;
#   4. the dashboards and the alert rules the role wrote name only metrics the live Prometheus has
#      (tests/monitoring/check_dashboards.py --prometheus), DCGM's from its catalogue
#      (tests/monitoring/served/dcgm.txt);
#   5. a deploy_docker.yml interrupted (SIGINT, as Ctrl-C) once it holds the supervisors, with a
#      lease of 45 s: status.yml reports its hold live (the run, expires in N s), then, once it
#      expired, stale and ignored, and the supervisor goes back to formed with the hold still there;
#   6. `docker kill` of the worker's container: NIMGroupNotServing fires (its `for:` shortened to
#      monitoring_alert_thresholds' not_serving_for, 2 s, with 1 s scrapes, well before the heal
#      ends: the stand-in loads for 15 s), Alertmanager has it (/api/v2/alerts), the
#      supervisor heals the group without Ansible, past the dead run's hold, and the alert resolves
#      in both; the times kill -> firing -> received -> resolved are printed as a JSON line;
#   7. a hang without an exit: a completion marked for it makes the worker's stand-in hang the
#      group (tests/lab/standin: node.HANG_MARK), every process keeps running and ready stays 200;
#      the front door's weights service takes the leader out (nim_frontend_stall_s, 10 s) before
#      the leader's serving check (nim_group_serving_timeout, 20 s here) re-forms the group without
#      Ansible, as one restart of its budget, and it serves again; the times are printed as JSON;
#   8. a partition: nftables on the worker's host drops everything between it and the leader for
#      30 s; the leader's supervisor restarts nothing while it cannot reach the worker's (it never
#      restarts on a guess), and the group serves again within 60 s of the link's return; the times
#      are printed as JSON;
#   9. playbooks/teardown.yml removes what the role made (its directory, drop-ins, the
#      collection's node exporter) and leaves the distribution's packages.
# Every wait is bounded.
#
#   tests/e2e/test-monitoring-lab.sh
#   LAB_KEEP=1 tests/e2e/test-monitoring-lab.sh     leave the lab up for a look
#   LAB_REUSE=1 tests/e2e/test-monitoring-lab.sh    the lab such a run left, or hosts 1-3 of a larger
#                                                   one (make test: the security test's, with its
#                                                   NIMSTACK_LAB_PREFIX, _SUBNET and _DIR)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
# A lab of its own, so that it can run beside make test's labs.
export NIMSTACK_LAB_PREFIX=${NIMSTACK_LAB_PREFIX:-nimstack-mon}
export NIMSTACK_LAB_SUBNET=${NIMSTACK_LAB_SUBNET:-172.30.88.0/24}
export NIMSTACK_LAB_DIR=${NIMSTACK_LAB_DIR:-$repo/build/lab-mon}
logs=build/monitoring-lab-test
mkdir -p "$logs"
# shellcheck source=tests/e2e/lib-lab-test.sh
source "$repo/tests/e2e/lib-lab-test.sh"

group=mon
# The stand-in loads for 15 s at every start: the heal after the kill takes at least that long,
# while the alert fires within about 7 s of it (1 s scrapes and evaluations, the supervisor's 2 s
# looks, a 2 s `for:`), so the test does not race the heal for the alert.
load_s=${MONITORING_LOAD_S:-15}
scrape_interval=1s not_serving_for=2s
g_leader=$prefix-1 g_worker=$prefix-2 mon_host=$prefix-3
now() { date +%s.%N; }
since() { python3 -c 'import sys; print("%.1f" % (float(sys.argv[2]) - float(sys.argv[1])))' "$1" "$(now)"; }

trap '[[ -n "${LAB_KEEP:-}" ]] || lab_down >/dev/null 2>&1 || true' EXIT

step "fresh 3-host lab, model source and stand-in image archive"
lab_fresh build/standin/nim-standin.tar 3

# The lab's inventory puts every host in nim_nodes; host 3 moves to nim_monitoring and
# nim_frontend (a host of no deployment group), the connection settings to all.
serving_timeout=20
lab_group_vars=("nim_group_supervisor: true" "nim_group_serving_timeout: $serving_timeout")
lab_watch_host "$mon_host" monitoring-hosts.yml
{
  echo "all:"
  echo "  hosts:"
  lab_group "$group" mpi "$load_s" "$g_leader" "$g_worker"
  echo "  children:"
  echo "    nim_monitoring:"
  echo "      vars:"
  echo "        monitoring_scrape_interval: $scrape_interval"
  echo "        monitoring_evaluation_interval: $scrape_interval"
  echo "        monitoring_alertmanager_group_wait: 1s"
  echo "        monitoring_alertmanager_group_interval: 5s"
  echo "        monitoring_alert_thresholds:"
  echo "          not_serving_for: $not_serving_for"
} >"$NIMSTACK_LAB_DIR/monitoring.yml"
play_args+=(-i "$NIMSTACK_LAB_DIR/monitoring.yml")

mon_addr=$(lab_addr "$mon_host")
prom=http://$mon_addr:9090
am=http://$mon_addr:9093
# A Prometheus API query ($1 path and query string), its JSON on stdout.
papi() { curl -fsS --max-time 5 "$prom/api/v1/$1"; }

t=$(now)
step "site.yml: group $group (mpi, 2 hosts, supervisors on), $mon_host monitoring (server) and front door"
play_ok "$logs/site.log"
echo "   site.yml: $(since "$t") s"
probe_ready "$g_leader" || fail "group $group does not serve after site.yml"
for h in "$g_leader" "$g_worker"; do
  on "$h" systemctl is-active --quiet prometheus-node-exporter || fail "$h: node exporter is not active"
done
for s in prometheus prometheus-alertmanager; do
  on "$mon_host" systemctl is-active --quiet "$s" || fail "$mon_host: $s is not active"
done
on "$mon_host" systemctl show -p ExecStart prometheus | grep -q -- "--config.file=/etc/prometheus/nimstack/prometheus.yml" \
  || fail "prometheus does not run with the collection's configuration"

step "a re-run of playbooks/monitoring.yml changes nothing"
PLAYBOOK=playbooks/monitoring.yml play_ok "$logs/monitoring-2.log"
changed=$(recap changed "$logs/monitoring-2.log")
((changed == 0)) || { grep -B3 '^changed:' "$logs/monitoring-2.log" | head -30; fail "the re-run changed $changed"; }

step "every target Prometheus has from the written files is up"
t=$(now) t_end=$((SECONDS + 90))
while :; do
  papi targets >"$logs/targets.json" 2>/dev/null || true
  summary=$(python3 - "$logs/targets.json" <<'EOF'
import json, sys
try:
    targets = json.load(open(sys.argv[1]))['data']['activeTargets']
except (ValueError, KeyError):
    targets = []
jobs = {}
for t in targets:
    jobs.setdefault(t['labels']['job'], []).append(t)
want = ('nim', 'nimstack_supervisor', 'node', 'haproxy')
ok = all(jobs.get(j) for j in want) and all(t['health'] == 'up' for t in targets)
parts = []
for job, ts in sorted(jobs.items()):
    each = ['%s %s%s' % (t['labels'].get('instance'), t['health'], ' (%s)' % t['lastError'] if t.get('lastError') else '')
            for t in ts]
    parts.append('%s: %s' % (job, ', '.join(each)))
missing = [j for j in want if not jobs.get(j)]
print(('ok ' if ok else 'wait ') + '; '.join(parts) + ('; no target yet: ' + ', '.join(missing) if missing else ''))
EOF
)
  [[ $summary == ok* ]] && break
  ((SECONDS < t_end)) || fail "not every target up within 90 s: ${summary#wait }"
  sleep 2
done
echo "   all up after $(since "$t") s: ${summary#ok }"
dcgm=$(python3 -c 'import json, sys; print(sum(t["labels"]["job"] == "dcgm" for t in json.load(open(sys.argv[1]))["data"]["activeTargets"]))' "$logs/targets.json")
((dcgm == 0)) || fail "job dcgm has $dcgm target(s) on a lab without GPUs"
on "$mon_host" test -f /etc/prometheus/nimstack/targets/dcgm.json || fail "no targets/dcgm.json written"
echo "   job dcgm: no target (the lab has no GPU; the DCGM exporter runs only where the driver lists GPUs)"

step "the group's series carry the group and model labels"
papi 'query?query=num_requests_running%7Bjob%3D%22nim%22%2Cgroup%3D%22'"$group"'%22%7D' >"$logs/query-nim.json"
python3 - "$logs/query-nim.json" "$group" <<'EOF' || fail "no NIM series with the group and model labels (see $logs/query-nim.json)"
import json, sys
result = json.load(open(sys.argv[1]))['data']['result']
assert result, 'no series'
for series in result:
    labels = series['metric']
    assert labels.get('group') == sys.argv[2], labels
    # model is the plan's served model name (the front door's); model_name the NIM's own label.
    assert labels.get('model'), labels
    assert labels.get('role') == 'leader' and labels.get('rank') == '0', labels
    print('   num_requests_running%s = %s' % (json.dumps(labels, sort_keys=True), series['value'][1]))
EOF
t=$(now) t_end=$((SECONDS + 60))
until papi 'query?query=nimstack_group_state%7Bgroup%3D%22'"$group"'%22%2Cstate%3D%22formed%22%7D%3D%3D1' 2>/dev/null \
    | python3 -c 'import json, sys; sys.exit(0 if json.load(sys.stdin)["data"]["result"] else 1)'; do
  ((SECONDS < t_end)) || fail "nimstack_group_state{group=\"$group\",state=\"formed\"} is not 1 within 60 s"
  sleep 2
done
echo "   nimstack_group_state{group=\"$group\",state=\"formed\"} = 1 (after $(since "$t") s)"

step "the dashboards and the rules name only metrics the live Prometheus has (DCGM's from its catalogue)"
on "$mon_host" cat /etc/prometheus/nimstack/rules/nimstack.yml >"$logs/nimstack-rules.yml"
on "$mon_host" sh -c 'ls /etc/prometheus/nimstack/dashboards/*.json' >"$logs/dashboards.txt"
[[ -s $logs/dashboards.txt ]] || fail "the role wrote no dashboard"
mkdir -p "$logs/dashboards"
while read -r f; do on "$mon_host" cat "$f" >"$logs/dashboards/$(basename "$f")"; done <"$logs/dashboards.txt"
"$repo/.venv/bin/python" tests/monitoring/check_dashboards.py --prometheus "$prom" \
  --served tests/monitoring/served/dcgm.txt --rules "$logs/nimstack-rules.yml" "$logs"/dashboards/*.json \
  || fail "a dashboard or rule names a metric the live Prometheus does not have"

# Prometheus's alerts for the group: "firing", "pending" or "" (none).
alert_state() {
  papi alerts 2>/dev/null | python3 -c 'import json, sys
states = [a["state"] for a in json.load(sys.stdin)["data"]["alerts"]
          if a["labels"].get("alertname") == "NIMGroupNotServing" and a["labels"].get("group") == sys.argv[1]]
print("firing" if "firing" in states else (states[0] if states else ""))' "$group" || echo "?"
}
# Whether Alertmanager holds the alert for the group as active.
am_has() {
  curl -fsS --max-time 5 "$am/api/v2/alerts?active=true&silenced=false&inhibited=false" 2>/dev/null | python3 -c 'import json, sys
sys.exit(0 if any(a["labels"].get("alertname") == "NIMGroupNotServing" and a["labels"].get("group") == sys.argv[1]
                  and a["status"]["state"] == "active" for a in json.load(sys.stdin)) else 1)' "$group"
}
[[ -z $(alert_state) ]] || fail "NIMGroupNotServing is $(alert_state) before any kill"

step "a deploy interrupted while it holds the supervisors: its hold is live, then expires and is ignored"
hold=/etc/nimstack/nim/$group/maintenance lease=45
PLAYBOOK=playbooks/deploy_docker.yml play "$logs/deploy-interrupted.log" -e "nim_group_hold_lease=$lease" &
bg=$! t_end=$((SECONDS + 240))
until on "$g_leader" test -s "$hold" && on "$g_worker" test -s "$hold"; do
  ((SECONDS < t_end)) || fail "the deploy holds no supervisor within 240 s"
  sleep 1
done
run_pid=$(pgrep -P "$bg" -f ansible-playbook)
kill -INT "$run_pid"
for _ in $(seq 20); do kill -0 "$run_pid" 2>/dev/null || break; sleep 1; done
kill -KILL "$run_pid" 2>/dev/null || true
wait "$bg" || true
read -r run_id holder_pid expires < <(on "$g_worker" cat "$hold" \
  | python3 -c 'import json, sys; h = json.load(sys.stdin); print(h["owner"]["run"], h["owner"]["pid"], h["expires"])')
((holder_pid == run_pid)) || fail "the hold names pid $holder_pid, not the interrupted run's $run_pid"
echo "   interrupted run $run_id; its hold expires $((expires - $(date +%s))) s from now"
# The supervisor itself holds while the lease runs (its state file, read at once)...
t_end=$((SECONDS + 20))
until on "$g_leader" grep -q '"state": "maintenance"' "/etc/nimstack/nim/$group/supervisor-state.json"; do
  (($(date +%s) < expires && SECONDS < t_end)) || fail "the leader's supervisor does not hold while the interrupted run's lease runs"
  sleep 1
done
# ...and status.yml says so, where it ends before the lease does (a loaded machine can take longer
# than the lease for the playbook: then its report may be either, and the stale one is checked below).
PLAYBOOK=playbooks/status.yml play_ok "$logs/status-held.log"
if (($(date +%s) < expires)); then
  log_says "$logs/status-held.log" "hold by run $run_id of controller [^ ]* (the deployment of group $group) expires in" \
    || fail "status.yml does not report the live hold of run $run_id (see $logs/status-held.log)"
  log_says "$logs/status-held.log" "state: maintenance" || fail "status.yml does not say maintenance while the hold is live"
else
  echo "   status.yml ended after the lease ran out (a loaded machine): its live report not checked"
fi
while (($(date +%s) <= expires)); do sleep 1; done
t_end=$((SECONDS + 30))
until on "$g_leader" grep -q '"state": "formed"' "/etc/nimstack/nim/$group/supervisor-state.json"; do
  ((SECONDS < t_end)) || fail "the supervisor still holds 30 s after the dead run's hold expired"
  sleep 1
done
PLAYBOOK=playbooks/status.yml play_ok "$logs/status-stale.log"
log_says "$logs/status-stale.log" "hold by run $run_id of controller [^ ]* (the deployment of group $group) expired [0-9]* s ago (at [^)]*), ignored by the supervisors" \
  || fail "status.yml does not report the stale hold of run $run_id (see $logs/status-stale.log)"
log_says "$logs/status-stale.log" "state: formed" || fail "status.yml does not say formed once the hold expired"
echo "   status.yml: live, then stale; the supervisor formed again with the hold left on both hosts"

step "docker kill of the worker's container: NIMGroupNotServing fires, Alertmanager has it, the heal resolves it"
t0=$(now)
on "$g_worker" docker kill "nim-$group" >/dev/null
pending='' firing='' received='' resolved='' am_resolved='' served='' t_end=$((SECONDS + 300))
while [[ -z $am_resolved ]]; do
  if ((SECONDS >= t_end)); then
    on "$g_leader" journalctl -u "nimstack-supervisor@$group" --no-pager -o cat | tail -20 | sed 's/^/   supervisor: /'
    fail "within 300 s of the kill: pending=${pending:-never} firing=${firing:-never} received=${received:-never} resolved=${resolved:-never}, serving now: $(probe_ready "$g_leader" 2 && echo yes || echo no) (Prometheus says '$(alert_state)')"
  fi
  state=$(alert_state)
  [[ -z $pending && -n $state ]] && pending=$(since "$t0")
  [[ -z $firing && $state == firing ]] && { firing=$(since "$t0"); echo "   firing in Prometheus $firing s after the kill"; }
  if [[ -n $firing && -z $received ]] && am_has; then received=$(since "$t0"); echo "   received by Alertmanager $received s after the kill"; fi
  [[ -z $served ]] && probe_ready "$g_leader" 2 && [[ -n $firing ]] && { served=$(since "$t0"); echo "   the group serves again $served s after the kill (no Ansible run)"; }
  if [[ -n $received && -z $resolved && -z $state ]]; then resolved=$(since "$t0"); echo "   resolved in Prometheus $resolved s after the kill"; fi
  if [[ -n $resolved ]] && ! am_has; then am_resolved=$(since "$t0"); echo "   resolved in Alertmanager $am_resolved s after the kill"; fi
  sleep 1
done
probe_ready "$g_leader" || fail "group $group does not serve after the alert resolved"
on "$g_leader" journalctl -u "nimstack-supervisor@$group" --no-pager -o cat >"$logs/journal-$group.log"
grep -q "restarting the whole group" "$logs/journal-$group.log" || fail "the supervisor's journal does not say it restarted the group"
grep -q "$g_worker: hold by run $run_id of controller .* expired at .*, ignored" "$logs/journal-$group.log" \
  || fail "the supervisor's journal does not say it ignored the interrupted run's hold"
on "$g_worker" test -f "$hold" || fail "the interrupted run's hold went before the heal: the heal proves nothing about it"
printf '{"test": "monitoring_alert", "alert": "NIMGroupNotServing", "for": "%s", "scrape_interval": "%s", "kill_to_pending_s": %s, "kill_to_firing_s": %s, "kill_to_received_s": %s, "kill_to_serving_s": %s, "kill_to_resolved_s": %s, "kill_to_am_resolved_s": %s}\n' \
  "$not_serving_for" "$scrape_interval" "$pending" "$firing" "$received" "${served:-null}" "$resolved" "$am_resolved"

step "a hang without an exit: the serving check re-forms the group within nim_group_serving_timeout ($serving_timeout s)"
state_file=/etc/nimstack/nim/$group/supervisor-state.json
restarts() { on "$g_leader" python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["restarts"]))' "$state_file"; }
started() { on "$1" docker inspect -f '{{.State.StartedAt}}' "nim-$group"; }
# One completion from the leader's host within $1 s: the role's smoke test.
answers() { docker exec -i "$g_leader" python3 - 127.0.0.1 8000 'Say hi' 8 "$1" <roles/nim_docker/files/nim_smoke.py >/dev/null 2>&1; }
# Within 60 s, the supervisor says formed and a completion comes back; else fail naming $1.
formed_and_serving() {
  local t_end=$((SECONDS + 60))
  until on "$g_leader" grep -q '"state": "formed"' "$state_file" && answers 10; do
    ((SECONDS < t_end)) || fail "the group does not serve 60 s after $1"
    sleep 2
  done
}
formed_and_serving "the heal"
restarts_before=$(restarts) journal_from=$(on "$g_leader" journalctl -u "nimstack-supervisor@$group" --no-pager -o cat | wc -l)
leader_started=$(started "$g_leader") worker_started=$(started "$g_worker")
door_from=$(on "$mon_host" date +%s)
t0=$(now)
# A completion whose prompt holds the stand-in's hang mark makes the worker hang the group
# (tests/lab/standin: node.HANG_MARK); it never comes back, nor does any completion after it.
docker exec -i "$g_leader" python3 - <<'EOF' && fail "the completion that hangs the group came back"
import json
import urllib.request
api = 'http://127.0.0.1:8000/v1/'
model = json.load(urllib.request.urlopen(api + 'models', timeout=5))['data'][0]['id']
body = {'model': model, 'max_tokens': 4, 'messages': [{'role': 'user', 'content': 'nimstack-standin: hang the group'}]}
request = urllib.request.Request(api + 'chat/completions', data=json.dumps(body).encode(), method='POST',
                                 headers={'Content-Type': 'application/json'})
try:
    urllib.request.urlopen(request, timeout=5).read()
except OSError as exc:
    raise SystemExit('no answer within 5 s (%s)' % exc)
EOF
! answers 5 || fail "a completion came back after the group was hung"
probe_ready "$g_leader" || fail "/v1/health/ready does not answer 200 while the group hangs"
[[ $(started "$g_leader") == "$leader_started" && $(started "$g_worker") == "$worker_started" ]] \
  || fail "a rank restarted at the hang: the test needs one that does not exit"
echo "   hung $(since "$t0") s after the marked completion: ready 200, no completion, both ranks still running"
detected='' served='' door_out='' t_end=$((SECONDS + 150))
while [[ -z $served ]]; do
  ((SECONDS < t_end)) || fail "within 150 s of the hang: re-formed=${detected:-never}, serving=${served:-never}"
  # The front door's weights service takes the leader out once its tokens stop for
  # nim_frontend_stall_s (10 s); a pool of one leader keeps it at the floor weight, and says so.
  if [[ -z $door_out ]] && on "$mon_host" journalctl -u nimstack-frontend-weights --no-pager -o cat \
      --since "@$door_from" | grep -q ': out, no new request sent to it: .* no token served'; then
    door_out=$(since "$t0"); echo "   the front door takes the leader out $door_out s after the hang"
  fi
  journal=$(on "$g_leader" journalctl -u "nimstack-supervisor@$group" --no-pager -o cat | tail -n +"$((journal_from + 1))")
  if [[ -z $detected ]] && grep -q "restarting the whole group .*the group runs but does not serve" <<<"$journal"; then
    detected=$(since "$t0"); echo "   the supervisor re-forms the group $detected s after the hang"
  fi
  [[ -n $detected ]] && answers 10 && { served=$(since "$t0"); echo "   the group serves again $served s after the hang (no Ansible run)"; }
  sleep 1
done
on "$g_leader" journalctl -u "nimstack-supervisor@$group" --no-pager -o cat | tail -n +"$((journal_from + 1))" >"$logs/journal-hang.log"
grep "restarting the whole group" "$logs/journal-hang.log" | head -1 | sed 's/^/   /'
restarts_after=$(restarts)
((restarts_after == restarts_before + 1)) || fail "the hang did not count one restart against the budget ($restarts_before before, $restarts_after now)"
[[ $(started "$g_worker") != "$worker_started" ]] || fail "the worker's rank was not restarted"
[[ -n $door_out ]] || fail "the front door's weights service never took the hung leader out"
# The stall bound (10 s) and a sample of the weights service (2 s), counted from the marked
# completion, with room for a loaded 2-core machine (18.1 s seen there, the lab beside two others).
awk -v out="$door_out" -v re="$detected" 'BEGIN { exit !(out + 0 <= 25 && out + 0 < re + 0) }' \
  || fail "the front door took the leader out $door_out s after the hang: not within 25 s and before the re-forming ($detected s)"
printf '{"test": "supervisor_serving_check", "serving_timeout_s": %s, "hang_to_frontdoor_out_s": %s, "hang_to_reformed_s": %s, "hang_to_serving_s": %s}\n' \
  "$serving_timeout" "$door_out" "$detected" "$served"

step "a partition of 30 s between the worker and the leader: no restart on a guess, serving within 60 s of its end"
partition_s=30
formed_and_serving "the hang's heal"
restarts_before=$(restarts) journal_from=$(on "$g_leader" journalctl -u "nimstack-supervisor@$group" --no-pager -o cat | wc -l)
leader_addr=$(lab_addr "$g_leader")
t0=$(now) t_cut=$((SECONDS + partition_s))
docker exec -i "$g_worker" nft -f - <<EOF
table inet nimstack_test_partition {
  chain input { type filter hook input priority -10; policy accept; ip saddr $leader_addr drop; }
  chain output { type filter hook output priority -10; policy accept; ip daddr $leader_addr drop; }
}
EOF
seen_isolated=''
while ((SECONDS < t_cut)); do
  if [[ -z $seen_isolated ]] && on "$g_leader" grep -q '"state": "isolated"' "$state_file"; then
    seen_isolated=$(since "$t0")
  fi
  sleep 1
done
restarts_cut=$(restarts)
on "$g_worker" nft delete table inet nimstack_test_partition
t_back=$(now)
((restarts_cut == restarts_before)) \
  || fail "the supervisor restarted the group while it could not reach the worker ($restarts_before restarts before, $restarts_cut at the link's return)"
echo "   the leader's supervisor: ${seen_isolated:+isolated $seen_isolated s into the partition, }no restart during the $partition_s s"
t_end=$((SECONDS + 60))
until answers 10; do
  ((SECONDS < t_end)) || fail "the group does not serve 60 s after the partition ended (supervisor: $(on "$g_leader" head -c 400 "$state_file"))"
  sleep 1
done
served=$(since "$t_back")
echo "   the group serves again $served s after the link came back"
on "$g_leader" journalctl -u "nimstack-supervisor@$group" --no-pager -o cat | tail -n +"$((journal_from + 1))" >"$logs/journal-partition.log"
printf '{"test": "partition", "partition_s": %s, "isolated_after_s": %s, "back_to_serving_s": %s, "restarts": %s}\n' \
  "$partition_s" "${seen_isolated:-null}" "$served" "$(($(restarts) - restarts_before))"

step "teardown.yml removes what the role made, and only that"
PLAYBOOK=playbooks/teardown.yml play_ok "$logs/teardown.log"
on "$mon_host" test ! -e /etc/prometheus/nimstack || fail "$mon_host: /etc/prometheus/nimstack is left"
on "$mon_host" test ! -e /etc/systemd/system/prometheus.service.d/nimstack.conf || fail "$mon_host: the Prometheus drop-in is left"
on "$mon_host" test -f /etc/prometheus/prometheus.yml || fail "$mon_host: the distribution's prometheus.yml went"
for h in "$g_leader" "$g_worker"; do
  ! on "$h" sh -c 'ls /var/lib/prometheus/node-exporter/nimstack_group_*.prom' >/dev/null 2>&1 || fail "$h: a supervisor textfile is left"
done
echo "   nothing of the role's left on $mon_host; the distribution's files stay"

if [[ -z "${LAB_KEEP:-}" ]]; then
  step "lab down"
  lab_down_clean
fi
echo "test-monitoring-lab.sh: passed in $((SECONDS - t_start)) s"
