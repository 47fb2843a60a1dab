#!/usr/bin/env bash
# One inventory, two modes: the lab's Docker group (3 hosts, mpi) and a Kubernetes group whose
# hosts are never contacted (inventories/lab-mixed, render-only), deployed by one site.yml run:
#   1. site.yml passes; the plan was made once and the inventory validated once (counted in the
#      run's output);
#   2. the Kubernetes group's objects are rendered, and its hosts appear in no play that
#      contacts hosts (they resolve nowhere: any contact would be unreachable);
#   3. the Docker group serves (readiness, one completion across every rank);
#   4. teardown.yml, on the same inventory, removes the Docker group and contacts no
#      Kubernetes host.
#
#   scripts/test-mixed-modes.sh               on a fresh lab
#   LAB_REUSE=1 LAB_KEEP=1 scripts/test-mixed-modes.sh
#                                             on the running lab (make test: after the Docker
#                                             path test), left up for the next test
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
logs=build/mixed-modes-test
rm -rf "$logs"
mkdir -p "$logs"
# shellcheck source=scripts/lib-lab-test.sh
source "$repo/scripts/lib-lab-test.sh"
render=$repo/$logs/k8s-render
k8s_hosts=(lab-k8s-1 lab-k8s-2)

# How many hosts a task ran on (ok or changed, not skipped) in a log of the default callback.
task_runs() {
  awk -v task="$2" '
    /^(TASK|PLAY|RUNNING HANDLER) \[/ { inside = index($0, "TASK [" task "]") == 1 }
    inside && /^(ok|changed): \[/ { count++ }
    END { print count + 0 }' "$1"
}

trap '[[ -n "${LAB_KEEP:-}" ]] || lab_down >/dev/null 2>&1 || true' EXIT

step "lab, model source and stand-in image archive"
lab_fresh build/standin/nim-standin.tar

step "site.yml on the Docker group and the Kubernetes group at once"
play_args+=(-i inventories/lab-mixed -e "nim_k8s_render_dir=$render" -e nim_k8s_backend=lws
            -e nim_k8s_install_components=false)
play_ok "$logs/site.log"
plans=$(task_runs "$logs/site.log" "Plan every deployment group once, on the controller")
checks=$(task_runs "$logs/site.log" \
  "nimstack.multinode.validate_inventory : Ensure the controller and the inventory meet the collection's requirements")
echo "   nim_plan ran $plans time(s), the inventory validation $checks time(s)"
((plans == 1)) || fail "nim_plan ran $plans times in one site.yml run"
((checks == 1)) || fail "the inventory was validated $checks times in one site.yml run"

step "the Kubernetes group: rendered, its hosts never contacted"
[[ -f $render/k8s/LeaderWorkerSet-nim-k8s.yaml ]] || { find "$render"; fail "no LeaderWorkerSet rendered for group k8s"; }
echo "   rendered: $(cd "$render" && find . -type f | sort | tr '\n' ' ')"
for host in "${k8s_hosts[@]}"; do
  # After the preflight's plays, a Kubernetes host must not appear in any task result.
  if sed -n '/^PLAY \[Check the distribution of every Docker node\]/,/^PLAY RECAP/p' "$logs/site.log" \
      | grep -q "\[$host\]"; then
    fail "$host appears in a play after the preflight"
  fi
  # In the recap only where a task of the preflight counted on it (its tasks run once, on the
  # first host); never unreachable, never failed.
  recap_line=$(grep -E "^$host +:" "$logs/site.log" || true)
  [[ -z $recap_line ]] || grep -Eq 'unreachable=0 +failed=0' <<<"$recap_line" || fail "$recap_line"
done
echo "   ${k8s_hosts[*]}: in the preflight only (the plan run on the controller), never unreachable"

step "the Docker group serves"
probe_ready || fail "the Docker group's endpoint is not ready"
smoke >"$logs/smoke.json" || { cat "$logs/smoke.json"; fail "the smoke test failed"; }
echo "   ready; one completion across every rank: $(head -c 200 "$logs/smoke.json")"

step "teardown.yml on the same inventory"
PLAYBOOK=playbooks/teardown.yml play_ok "$logs/teardown.log"
for host in "$leader" "${workers[@]}"; do
  (($(nim_containers "$host") == 0)) || fail "a NIM container is left on $host"
done
if grep -q "\[lab-k8s-" <(sed -n '/^PLAY \[Remove the front door\]/,/^PLAY RECAP/p' "$logs/teardown.log"); then
  fail "teardown contacted a host of the Kubernetes group"
fi
echo "   no NIM container left; no Kubernetes host contacted"
echo "test-mixed-modes.sh: passed in $((SECONDS - t_start)) s"
