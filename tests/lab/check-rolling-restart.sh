#!/usr/bin/env bash
# On a lab with two serving deployment groups: a daemon.json change that only a dockerd restart
# applies never takes both groups down at once, and each group serves again without a manual
# step. A probe asks every group's leader for /v1/health/ready once a second (rolling_probe.py)
# while prepare_hosts.yml --tags docker runs:
#   A. live-restore off (as on an engine in swarm mode; a reload turns it off first) and
#      log-opts.max-file changed on RESTART_HOSTS: each restart stops the host's rank, so the
#      restarts go in waves, one group at a time, and each group re-forms after its wave. At
#      every second one group answers. With LAB_ROLLING_DOOR (the host of a load-aware front door
#      on port 8080 that pools the groups), a client streams completions of about 3 s through it without pause:
#      none fails, for each wave drains its group from the front door before the restart stops
#      it, and no drain mark is left.
#   B. (LAB_ROLLING_LIVE_RESTORE=1; one more run of about 3.5 minutes on a loaded 2-core machine)
#      back to the role's defaults: a reload turns live-restore on first, then the restarts (in
#      waves again) stop no rank at all: no second without service in either group.
# A site's log-driver and default-runtime, put into daemon.json on the first restart host before
# A, must still be there after both runs (the role fills these keys in, never replaces them).
# Prints the seconds without service per group, the seconds with no group serving and the
# times; fails on a second with no group serving or a group that does not come back.
#
#   tests/lab/check-rolling-restart.sh LOGDIR HOST,HOST NAME=LEADER NAME=LEADER -- ANSIBLE_ARGS...
#
# Needs the lab of tests/e2e/lib-lab-test.sh (NIMSTACK_LAB_PREFIX, NIMSTACK_LAB_DIR) with the
# groups serving; tests/e2e/test-security.sh runs it. RESTART_HOSTS should hold a member of each
# group (a leader and a worker show both ways a group loses a rank).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
# shellcheck source=tests/e2e/lib-lab-test.sh
source "$repo/tests/e2e/lib-lab-test.sh"

logs=${1:?LOGDIR}
IFS=, read -r -a restart_hosts <<<"${2:?HOST,HOST}"
shift 2
urls=()
while [[ $# -gt 0 && $1 != -- ]]; do
  urls+=("${1%%=*}=http://$(lab_addr "${1#*=}"):8000/v1/health/ready")
  shift
done
[[ ${1:-} == -- ]] || fail "usage: $0 LOGDIR HOST,HOST NAME=LEADER... -- ANSIBLE_ARGS..."
shift
play_args=("$@")
mkdir -p "$logs"
site_host=${restart_hosts[0]}
daemon_json=/etc/docker/daemon.json

# prepare_hosts.yml, docker role only, under the probe.
rolling() {
  local name=$1; shift
  local t=$SECONDS rc=0
  tests/lab/rolling_probe.py --settle 5 --bound 240 --timeline --log "$logs/rolling-$name.log" "${urls[@]}" -- \
    ansible-playbook -i "$inventory" -i inventories/lab -i inventories/lab-docker -i inventories/lab-tests "${play_args[@]}" "$@" \
    --tags docker playbooks/prepare_hosts.yml >"$logs/rolling-$name.probe" 2>&1 || rc=$?
  grep -v '^  t=' "$logs/rolling-$name.probe" | sed 's/^/   /'
  echo "   $name: $((SECONDS - t)) s, changed=$(recap changed "$logs/rolling-$name.log"), failed=$(recap failed "$logs/rolling-$name.log")"
  grep -o 'restarting the engine of .*' "$logs/rolling-$name.log" | head -1 | sed 's/^/   /' || true
  return "$rc"
}
site_keys() {
  on "$site_host" python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); print(c.get("log-driver"), c.get("default-runtime"))' "$daemon_json"
}

# A site's own keys, as another tool or the site's policy would have left them.
docker exec -i "$site_host" python3 - "$daemon_json" <<'EOF'
import json, sys
path = sys.argv[1]
config = json.load(open(path))
config.update({'log-driver': 'local', 'default-runtime': 'runc'})
with open(path, 'w') as f:
    json.dump(config, f, indent=2)
EOF

# Only the restart hosts change a key that needs a restart.
{
  echo "all:"
  echo "  hosts:"
  for h in "${restart_hosts[@]}"; do echo "    $h: {docker_log_max_file: 4}"; done
} >"$NIMSTACK_LAB_DIR/rolling.yml"

echo "   A: live-restore off, log-opts.max-file 4 on ${restart_hosts[*]}: each restart stops the host's rank"
door_host=${LAB_ROLLING_DOOR:-} door=''
if [[ -n $door_host ]]; then
  door=http://$(lab_addr "$door_host"):8080/v1
  model=$(curl -fsS --max-time 5 "$door/models" | python3 -c 'import json, sys; print(json.load(sys.stdin)["data"][0]["id"])')
  stop=$logs/rolling-door.stop
  rm -f "$stop"
  python3 tests/lab/stream_load.py "$door" "$model" "$stop" --bound 900 --max-tokens 150 >"$logs/rolling-door.json" &
  load_pid=$!
fi
rolling live-restore-off -i "$NIMSTACK_LAB_DIR/rolling.yml" -e docker_live_restore=false \
  || { [[ -z $door ]] || touch "$stop"; tail -30 "$logs/rolling-live-restore-off.log"; fail "A: a second with no group serving, a group that did not come back, or the play failed (see $logs/rolling-live-restore-off.*)"; }
if [[ -n $door ]]; then
  touch "$stop"
  wait "$load_pid" || fail "A: a stream through the front door failed during the restarts: $(cat "$logs/rolling-door.json")"
  echo "   A: client through the front door: $(cat "$logs/rolling-door.json")"
  drained=$(log_count "$logs/rolling-live-restore-off.log" "out of the front door ([^)]*), no request in flight after")
  ((drained >= 2)) || { grep -n "drain\|front door" "$logs/rolling-live-restore-off.log" | head; fail "A: $drained wave(s) drained their group from the front door before the restart, not 2"; }
  [[ -z $(on "$door_host" ls -A /etc/nimstack/frontend/drains) ]] || fail "A: drain marks left on $door_host after the restarts"
  echo "   A: each wave drained its group from the front door before the restart ($drained report lines); no drain mark left"
fi
reformed=$(log_count "$logs/rolling-live-restore-off.log" 'stopped by a restart of its host or engine')
((reformed > 0)) || fail "A: no group re-formed after its wave; the restarts stopped no rank, so A proved nothing"
[[ $(site_keys) == "local runc" ]] || fail "A: $site_host's daemon.json lost the site's log-driver or default-runtime: $(site_keys)"
echo "   A: the groups re-formed after their waves ($reformed report lines); $site_host keeps log-driver and default-runtime: $(site_keys)"
rm -f "$NIMSTACK_LAB_DIR/rolling.yml"
[[ -n ${LAB_ROLLING_LIVE_RESTORE:-} ]] || exit 0

echo "   B: the role's defaults again: live-restore on by a reload, then the restarts keep every rank"
rolling live-restore-on || { tail -30 "$logs/rolling-live-restore-on.log"; fail "B failed (see $logs/rolling-live-restore-on.*)"; }
if grep -E '^group .*: [1-9][0-9]* s without service' "$logs/rolling-live-restore-on.probe"; then
  fail "B: a group lost service although live-restore keeps the ranks through a restart"
fi
grep -q 'restarting the engine of' "$logs/rolling-live-restore-on.log" || fail "B: no engine was restarted, so B proved nothing"
for h in "${restart_hosts[@]}"; do
  [[ $(on "$h" docker info --format '{{.LiveRestoreEnabled}}') == true ]] || fail "B: live-restore is not on in $h's engine"
done
[[ $(site_keys) == "local runc" ]] || fail "B: $site_host's daemon.json lost the site's log-driver or default-runtime: $(site_keys)"
echo "   B: live-restore on in every restarted engine, no second without service; $site_host still: $(site_keys)"
