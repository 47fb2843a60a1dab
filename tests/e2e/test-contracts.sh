#!/usr/bin/env bash
# The three launch contracts on one 3-host lab (TP 1, PP 3), changing only nim_launch_contract,
# with the stand-in image that speaks each for real (docs/lab-standin.md):
#   1. auto on an image tag that is no release version is refused before any host changes;
#   2. ray on the lab (a fresh one, or with LAB_REUSE the one test-docker-path.sh left), by a
#      site.yml whose inventory also holds a render-only Kubernetes group (inventories/lab-mixed):
#      the plan is made once and the inventory validated once, the Kubernetes group is rendered
#      and its hosts (which resolve nowhere) are never contacted; the Docker group is serving,
#      every worker in the leader's log, nothing of the mpi it switched from (SSH mesh, hostfile,
#      a second container), the run saying why; a worker killed after the
#      rollout: the next run restarts the group as a whole, says so, and it serves again (a
#      re-run of a ray group is test-security.sh's);
#   3. leader_address, switched to from the running ray group by deploy_docker.yml (the hosts'
#      preparation has nothing to change): serving, its re-run changes nothing (the recovery
#      after a kill does not depend on the contract: proven under ray);
#   4. the registry path (the lab's registry, TLS and basic auth as nvcr.io): a wrong key fails
#      before any container changes, naming nim_ngc_api_key; on nodes without the image, a pull
#      whose connection drops half way (tests/lab/cutting_proxy.py) is resumed by the engine
#      from where it was cut; cut more often than the engine resumes, the pull fails, the role
#      pulls again, and the group serves the pulled image;
#   5. on a lab cut off from the internet, every packet the cut refused during the test was Ray's
#      metadata probe or its DNS queries (docs/contracts.md, ray), none else.
# test-docker-path.sh covers mpi in depth (bad input, a worker down, recovery, teardown).
# Every wait is bounded; timings are printed.
#
#   tests/e2e/test-contracts.sh               the whole test
#   LAB_KEEP=1 tests/e2e/test-contracts.sh    leave the lab up for a look
#   LAB_REUSE=1 tests/e2e/test-contracts.sh   use the running lab (make test: the one the Docker
#                                           path test left), else a fresh one
# Without LAB_KEEP the lab goes down at the end, and nothing of it may be left.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
logs=build/contracts-test
mkdir -p "$logs"
# shellcheck source=tests/e2e/lib-lab-test.sh
source "$repo/tests/e2e/lib-lab-test.sh"

# The group serves: ready, and one completion answered by all three ranks.
serves() {
  probe_ready || return 1
  smoke >"$1" 2>&1 && grep -q '3 ranks answered' "$1"
}

# No SSH mesh on any host, no hostfile on the leader.
no_mpi_leftovers() {
  local h
  for h in "$leader" "${workers[@]}"; do
    ! on "$h" test -e /etc/nimstack/mesh || fail "$h: /etc/nimstack/mesh is left under $1"
  done
  ! on "$leader" test -e /etc/nimstack/nim/default/hostfile || fail "the leader keeps a hostfile under $1"
}

# The leader's log names every worker's address (each joined and took part).
workers_in_leader_log() {
  local w addr leader_log
  leader_log=$(on "$leader" docker logs "$container" 2>&1)
  for w in "${workers[@]}"; do
    addr=$(lab_addr "$w")
    grep -q "$addr" <<<"$leader_log" || { tail -20 <<<"$leader_log"; fail "the leader's log never names $w ($addr) under $1"; }
    echo "   $w ($addr): $(grep -m1 "$addr" <<<"$leader_log" | cut -c1-140)"
  done
}

# How many hosts a task ran on (ok, changed or included; not skipped) in a log of the default
# callback. The task is named without its role: the log prefixes it or not by how it was reached.
task_runs() {
  awk -v task="$2" '
    /^(TASK|PLAY|RUNNING HANDLER) \[/ {
      name = $0; sub(/^TASK \[([^]]* : )?/, "", name)
      inside = /^TASK \[/ && index(name, task "]") == 1
    }
    inside && /^((ok|changed): \[|included: )/ { count++ }
    END { print count + 0 }' "$1"
}

# One site.yml run for a Docker group and a render-only Kubernetes group (inventories/lab-mixed):
# one plan, one validation, the Kubernetes group rendered and its hosts never contacted.
mixed_run_checks() {
  local log=$1 plans checks host recap_line
  plans=$(task_runs "$log" "Plan every deployment group once, on the controller")
  checks=$(task_runs "$log" "Stop on an unusable inventory or controller, naming every problem")
  echo "   nim_plan ran $plans time(s), the inventory validation $checks time(s) in one site.yml run"
  ((plans == 1)) || fail "nim_plan ran $plans times in one site.yml run"
  ((checks == 1)) || fail "the inventory was validated $checks times in one site.yml run"
  [[ -f $render/k8s/LeaderWorkerSet-nim-k8s.yaml ]] || { find "$render"; fail "no LeaderWorkerSet rendered for group k8s"; }
  for host in lab-k8s-1 lab-k8s-2; do
    # After the preflight, a Kubernetes host appears in no task result but those of the Kubernetes
    # play, which runs on the controller in the name of the group's first host; in the recap never
    # unreachable or failed (its address resolves nowhere: a contact would fail the run).
    if awk '/^PLAY \[Check the distribution of every Docker node\]/ { after = 1 }
            /^PLAY (\[|RECAP)/ { k8s = /^PLAY \[Deploy the Kubernetes deployment groups of the plan\]/ }
            after && !k8s' "$log" | grep -q "\[$host\]"; then
      fail "$host appears in a play after the preflight other than the Kubernetes play"
    fi
    recap_line=$(grep -E "^$host +:" "$log" || true)
    [[ -z $recap_line ]] || grep -Eq 'unreachable=0 +failed=0' <<<"$recap_line" || fail "$recap_line"
  done
  echo "   the Kubernetes group rendered ($(cd "$render" && find . -type f | wc -l) files), its hosts never contacted"
}

# Deploy under one contract by playbook $4 and check it serves as that contract; then either
# (`rerun`) re-run its deployment, which changes nothing, or (`recover`) kill a worker and let the
# next run recover the group. Neither depends on much more than the contract's objects: the
# recovery is proven under ray here and under mpi by test-docker-path.sh, the re-run under
# leader_address here and under mpi and ray by test-security.sh (a group of each,
# deploy_docker.yml run again).
contract_round() {
  local contract=$1 expect_cmd=$2 then=$3 book=$4 w=${workers[0]}
  step "$contract: $(basename "$book") (switching from what runs)"
  PLAYBOOK=$book play_ok "$logs/site-$contract.log" -e "nim_launch_contract=$contract"
  log_says "$logs/site-$contract.log" "launch contract $contract: nim_launch_contract=$contract is set explicitly" \
    || fail "$(basename "$book") did not report the contract decision"
  [[ $contract != ray || -n ${ray_done:-} ]] || { mixed_run_checks "$logs/site-$contract.log"; ray_done=1; }
  serves "$logs/smoke-$contract.json" || { cat "$logs/smoke-$contract.json"; fail "not serving under $contract"; }
  echo "   $(cut -c1-170 "$logs/smoke-$contract.json")"
  on "$leader" docker inspect -f '{{json .Config.Cmd}}' "$container" | grep -q -- "$expect_cmd" \
    || fail "the leader's command is not $expect_cmd under $contract"
  workers_in_leader_log "$contract"
  no_mpi_leftovers "$contract"

  if [[ $then == rerun ]]; then
    step "$contract: a re-run changes nothing"
    PLAYBOOK=playbooks/deploy_docker.yml play_ok "$logs/site-$contract-2.log" -e "nim_launch_contract=$contract"
    local changed
    changed=$(recap changed "$logs/site-$contract-2.log")
    ((changed == 0)) || { grep -B3 '^changed:' "$logs/site-$contract-2.log" | head -30; fail "the re-run under $contract changed $changed"; }
    return 0
  fi
  step "$contract: a worker killed after the rollout; the next run recovers the group"
  local t=$SECONDS
  kill_rank "$w"
  PLAYBOOK=playbooks/deploy_docker.yml play_ok "$logs/recover-$contract.log" -e "nim_launch_contract=$contract"
  log_says "$logs/recover-$contract.log" "restarting the whole group ($contract contract.* ranks not current: .*$w (" \
    || fail "the recovering run under $contract did not say it restarted the group naming $w"
  serves "$logs/recovered-$contract.json" || fail "not serving after the recovering run under $contract"
  echo "   serving again $((SECONDS - t)) s after the kill; the run said:" \
    "$(log_folded "$logs/recover-$contract.log" | grep -o "restarting the whole group[^\"]*" | head -1 | cut -c1-220)"
}

trap '[[ -n "${LAB_KEEP:-}" ]] || lab_down >/dev/null 2>&1 || true' EXIT

step "fresh lab, model source and stand-in image archive"
lab_fresh build/standin/nim-standin.tar
# On a lab cut off from the internet (tests/lab/bundle.sh): what the cut refuses from here on.
if tests/lab/bundle.sh rule >/dev/null 2>&1; then
  before_metadata=$(tests/lab/bundle.sh cut-count metadata)
  before_dns=$(tests/lab/bundle.sh cut-count dns)
  refused_before=$(tests/lab/bundle.sh cut-count other)
fi

step "auto with a tag that is no NIM release is refused before any host changes"
if play "$logs/auto-refused.log" -e nim_launch_contract=auto; then fail "auto accepted the stand-in's tag"; fi
log_says "$logs/auto-refused.log" "nim_launch_contract=auto cannot tell the NIM version from nim_image_tag=" \
  || { tail -20 "$logs/auto-refused.log"; fail "the refusal does not name nim_launch_contract"; }
(($(recap changed "$logs/auto-refused.log") == 0)) || fail "the refused run changed a host"

# Every run of this test also carries a render-only Kubernetes group: one site.yml, two modes.
render=$repo/$logs/k8s-render
rm -rf "$render"
play_args+=(-i inventories/lab-mixed -e "nim_k8s_render_dir=$render" -e nim_k8s_backend=lws
            -e nim_k8s_install_components=false)
contract_round ray '"nim-serve-ray","--head"' recover playbooks/site.yml
# The ray round switched the group from the mpi that test-docker-path.sh left (or a fresh lab's):
# nothing of mpi is left (no_mpi_leftovers above), the run said why, one container per host.
log_says "$logs/site-ray.log" "gets no SSH mesh" || fail "site.yml did not say the ray group gets no SSH mesh"
for h in "$leader" "${workers[@]}"; do
  n=$(nim_containers "$h")
  ((n == 1)) || fail "$h: $n NIM containers, not 1, after the switch to ray"
done
# From ray to leader_address the hosts' preparation has nothing to change (neither contract has an
# SSH mesh): the switch is the deployment's alone.
contract_round leader_address '"/opt/nim/start_server.sh"' rerun playbooks/deploy_docker.yml

step "the registry path: a wrong key fails before any container changes, naming nim_ngc_api_key"
registry=$(tests/lab/registry.sh up)
pushed=$(tests/lab/registry.sh push "$image")
reg_addr=${registry%:*}
cut_registry=$reg_addr:5001
for h in "$leader" "${workers[@]}"; do
  tests/lab/registry.sh trust "$h"
  on "$h" sh -c "mkdir -p /etc/docker/certs.d/$cut_registry && cp /etc/docker/certs.d/$registry/ca.crt /etc/docker/certs.d/$cut_registry/"
done
ids_before=$(for h in "$leader" "${workers[@]}"; do on "$h" docker ps -q --filter label=nimstack.managed=true; done)
# The image of the site's registry is another image to the model's cache: offline, the lab's bundle has
# no cache for it. The shared cache holds the model already (the rounds above filled it), as a site's
# cache filled beforehand does: no download.
filled=(-e nim_docker_download_model=false)
wrong_key=nvapi-wrong-$RANDOM$RANDOM
if NGC_API_KEY=$wrong_key PLAYBOOK=playbooks/deploy_docker.yml play "$logs/registry-wrong-key.log" \
    -i inventories/lab-registry -e nim_launch_contract=ray "${filled[@]}"; then
  fail "a wrong NGC key was accepted"
fi
log_says "$logs/registry-wrong-key.log" "the key in nim_ngc_api_key (nim_docker_ngc_api_key) is wrong" \
  || { tail -30 "$logs/registry-wrong-key.log"; fail "the refused login does not name nim_ngc_api_key"; }
! grep -q "$wrong_key" "$logs/registry-wrong-key.log" || fail "the key is in the log"
ids_after=$(for h in "$leader" "${workers[@]}"; do on "$h" docker ps -q --filter label=nimstack.managed=true; done)
[[ "$ids_before" == "$ids_after" ]] || fail "a container changed although the login failed"
echo "   refused, no container changed: $(log_folded "$logs/registry-wrong-key.log" | grep -o "refused the login of user[^:]*: the key in nim_ngc_api_key[^;]*" | head -1)"

step "the registry path: a pull cut half way is resumed, then tried again once the engine gives up"
# Nodes without the image: the group's containers and the stand-in image go, as on new nodes.
# shellcheck disable=SC2016  # the single-quoted script runs in sh on the nodes
for h in "$leader" "${workers[@]}"; do
  on "$h" sh -c 'docker ps -aq --filter label=nimstack.managed=true | xargs -r docker rm -f >/dev/null
    docker image ls --format "{{.ID}} {{.Repository}}" | awk "/nim-standin\$/ {print \$1}" | sort -u | xargs -r docker rmi -f >/dev/null'
done
victim=${workers[0]}
victim_addr=$(lab_addr "$victim")
reg_container=$prefix-registry
# The layer to cut: the highest one of the image above 20 MiB, so that layers below it complete.
docker exec "$reg_container" rm -f /srv/cuts.jsonl
# The key reaches curl in a config on a pipe (printf is a shell builtin), never on a command line.
# shellcheck disable=SC2016  # $oauthtoken is the user name, literally
curl -sf --cacert "$NIMSTACK_LAB_DIR/registry/ca.crt" -K <(printf 'user = "$oauthtoken:%s"\n' "$(cat "$(tests/lab/registry.sh key)")") \
  -H 'Accept: application/vnd.docker.distribution.manifest.v2+json' \
  "https://$registry/v2/nim/nimstack-lab/nim-standin/manifests/${image##*:}" >"$logs/manifest.json" \
  || fail "cannot read the image's manifest from $registry"
target=$(python3 -c 'import json, sys
layers = json.load(open(sys.argv[1]))["layers"]
print([layer["digest"] for layer in layers if layer["size"] >= 20 * 2 ** 20][-1])' "$logs/manifest.json")
docker cp tests/lab/cutting_proxy.py "$reg_container:/srv/cutting_proxy.py"
docker exec -d "$reg_container" python3 /srv/cutting_proxy.py --listen 0.0.0.0:5001 --upstream 127.0.0.1:5000 \
  --cert /srv/registry/registry.crt --key /srv/registry/registry.key --victim "$victim_addr" --target "$target" --cuts 8 \
  --log /srv/cuts.jsonl
NGC_API_KEY=$(cat "$(tests/lab/registry.sh key)") PLAYBOOK=playbooks/deploy_docker.yml play_ok \
  "$logs/registry-cut.log" -i inventories/lab-registry -e nim_launch_contract=ray -e nim_docker_pull_retry_delay=2 \
  -e "nim_docker_registry=$cut_registry" -e "nim_image=$cut_registry/nim/nimstack-lab/nim-standin" "${filled[@]}"
serves "$logs/smoke-registry.json" || fail "not serving the image pulled from the registry"
docker exec "$reg_container" cat /srv/cuts.jsonl >"$logs/cuts.jsonl"
python3 - "$logs/cuts.jsonl" "$victim_addr" "$logs/manifest.json" "$target" <<'PY' || fail "the pull after the cut is not what it should be (see $logs/cuts.jsonl)"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
layers, target = [layer['digest'] for layer in json.load(open(sys.argv[3]))['layers']], sys.argv[4]
victim = [r for r in rows if r['client'] == sys.argv[2]]
cut = [r for r in victim if r['digest'] == target]
resumed = [r for r in cut if r['range']]
# Each resume asks for the bytes from where the cut left them: the start of its range is what
# the earlier requests of the same pull delivered.
starts_ok = all(int(r['range'].split('=')[1].rstrip('-')) % (4 * 2 ** 20) == 0 for r in resumed)
again = len([r for r in victim if r['digest'] != target]) - (len(layers) - 1)
print('   victim %s: the layer %d of %d cut %d times, resumed from where it was cut %d times (Range);'
      ' the pull failed and was pulled again: %d other layer requests were fetched again'
      % (sys.argv[2], layers.index(target) + 1, len(layers), len([r for r in cut if r['cut']]), len(resumed), again))
sys.exit(0 if len([r for r in cut if r['cut']]) >= 8 and len(resumed) >= 4 and starts_ok and cut[-1]['sent'] == cut[-1]['length']
         else 1)
PY
grep -A4 "Pull again what a failed pull left half done" "$logs/registry-cut.log" | grep -q "changed: \[$victim\]" \
  || fail "the role did not pull again on $victim after the cut (see $logs/registry-cut.log)"
echo "   $victim pulled again after the cut pull failed; the group serves $pushed via $cut_registry"

# Nothing reached out but what Ray's head does at each formation whatever the settings
# (docs/contracts.md, ray): its dashboard asks the cloud metadata address for the provider
# (169.254.169.254:80) and resolves names (DNS) to send one "usage statistics disabled" notice. The
# cut counts those two kinds apart from every other packet (tests/lab/bundle.sh cut-count KIND):
# no other packet may have been refused.
if [[ -n "${refused_before:-}" ]]; then
  step "cut off: the cut refused only Ray's metadata probe and its DNS queries"
  metadata=$(($(tests/lab/bundle.sh cut-count metadata) - before_metadata))
  dns=$(($(tests/lab/bundle.sh cut-count dns) - before_dns))
  other=$(($(tests/lab/bundle.sh cut-count other) - refused_before))
  ((other == 0)) || fail "the cut refused $other packets for outside the lab that were neither Ray's metadata probe nor DNS" \
    "(the kernel log has them: tests/lab/bundle.sh cut-log)"
  echo "   refused during the test: $metadata to 169.254.169.254:80 and $dns DNS queries (Ray's head, at each formation);" \
    "0 others"
fi

trap - EXIT
if [[ -z "${LAB_KEEP:-}" ]]; then
  step "the lab goes down and leaves nothing behind"
  lab_down_clean
fi
echo "test-contracts.sh: passed in $((SECONDS - t_start)) s"
