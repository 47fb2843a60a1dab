#!/usr/bin/env bash
# End-to-end test of the lab and host preparation, over real SSH:
#   1. a fresh 3-host lab comes up (timed) and every host answers ansible.builtin.ping;
#   2. on the fresh lab, `--check --diff` finishes without a failure;
#   3. playbooks/prepare_hosts.yml converges it; the deployment key's files are the secrets
#      group's and no log holds a line of them;
#   4. the lab goes down and leaves no container, volume, network or file behind.
# That a second preparation changes nothing is proven by the Docker path test on the lab this one
# hands on (its second site.yml run, preparation included, must change nothing), and that -vvv
# shows no key by the security test's site.yml -vvv: `make test` runs each once.
#
#   scripts/test-lab.sh                            the whole test
#   LAB_SKIP_TAGS=rdma scripts/test-lab.sh           skip roles (comma-separated tags)
#   LAB_KEEP=1 scripts/test-lab.sh                 leave the prepared lab running (`make test`
#                                                  hands it on to the Docker path tests)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
lab=scripts/lab/lab.sh
hosts=${LAB_HOSTS:-3}
skip_tags=${LAB_SKIP_TAGS:-}
logs=build/lab-test
export ANSIBLE_CONFIG=$repo/ansible.cfg ANSIBLE_NOCOLOR=1 NO_COLOR=1
# Facts are cached per lab (build/lab is removed by `down`), so a fresh lab never sees the
# facts of an earlier one under the same host names.
export ANSIBLE_CACHE_PLUGIN_CONNECTION=$repo/build/lab/facts

mkdir -p "$logs" build/collections/ansible_collections/nimstack
ln -sfn ../../../.. build/collections/ansible_collections/nimstack/multinode

step() { printf '\n== %s\n' "$*"; }
fail() { echo "test-lab.sh: FAILED: $*" >&2; exit 1; }

# shellcheck source=scripts/lib-recap.sh
source "$repo/scripts/lib-recap.sh"

playbook() {
  local log=$1; shift
  local args=(-i build/lab/inventory.yml -i inventories/lab playbooks/prepare_hosts.yml)
  [[ -n "$skip_tags" ]] && args+=(--skip-tags "$skip_tags")
  local start=$SECONDS rc=0
  ansible-playbook "${args[@]}" "$@" >"$log" 2>&1 || rc=$?
  echo "   $(basename "$log"): rc=$rc, $((SECONDS - start)) s, changed=$(recap changed "$log")," \
    "failed=$(recap failed "$log"), unreachable=$(recap unreachable "$log")"
  return "$rc"
}

lab_up() {
  local start=$SECONDS
  "$lab" up "$hosts" >/dev/null
  echo "   lab up $hosts: $((SECONDS - start)) s"
}

lab_down() {
  local start=$SECONDS
  "$lab" down
  echo "   lab down: $((SECONDS - start)) s"
}

trap '[[ -n "${LAB_KEEP:-}" ]] || "$lab" down' EXIT

step "fresh lab"
scripts/lab/ensure-docker.sh
scripts/lab/build-image.sh >/dev/null
"$lab" down
lab_up

step "ping over SSH with the lab key and pinned host keys"
ansible -i build/lab/inventory.yml nim_nodes -m ansible.builtin.ping >"$logs/ping.log" 2>&1 \
  || { cat "$logs/ping.log"; fail "ping"; }
pongs=$(grep -c '"ping": "pong"\|ping: pong' "$logs/ping.log" || true)
((pongs == hosts)) || { cat "$logs/ping.log"; fail "$pongs of $hosts hosts answered ping"; }
echo "   $pongs of $hosts hosts answered"

step "prepare_hosts.yml --check --diff on the fresh lab"
playbook "$logs/check.log" --check --diff || fail "check mode (see $logs/check.log)"

step "prepare_hosts.yml converges"
playbook "$logs/prepare-1.log" || fail "first run (see $logs/prepare-1.log)"

step "the deployment key stays secret: modes, and absent from every log"
mesh=/etc/nimstack/mesh/default
prefix=${NIMSTACK_LAB_PREFIX:-nimstack-lab}
for i in $(seq 1 "$hosts"); do
  # root's and the group nimstack-secrets's, which only the containers get.
  modes=$(docker exec "$prefix-$i" stat -c '%n %a %u %g' "$mesh/private.key" "$mesh/ssh_host_ed25519_key")
  grep -qx "$mesh/private.key 440 0 64910" <<<"$modes" || fail "$prefix-$i: $modes"
  grep -qx "$mesh/ssh_host_ed25519_key 640 0 64910" <<<"$modes" || fail "$prefix-$i: $modes"
done
# Every base64 line of the private key (and the host key) must be absent from the logs.
secret_lines=$(docker exec "$prefix-1" sh -c "grep -hv -- '-----' $mesh/private.key $mesh/ssh_host_ed25519_key")
leaks=$(cat "$logs"/check.log "$logs"/prepare-*.log | grep -cFf <(printf '%s\n' "$secret_lines") || true)
((leaks == 0)) || fail "$leaks log lines contain private key material"
echo "   key files 0400/0600 owned by uid 1000 on $hosts hosts; $(wc -l <<<"$secret_lines") key lines found in no log"

step "down leaves nothing behind"
if [[ -n "${LAB_KEEP:-}" ]]; then
  echo "   LAB_KEEP set: the lab stays up"
  exit 0
fi
lab_down
trap - EXIT
left=$(docker ps -aq --filter label=nimstack.lab=nimstack-lab | wc -l)
vols=$(docker volume ls -q --filter 'name=^nimstack-lab-[0-9]+-docker$' | wc -l)
((left == 0 && vols == 0)) || fail "$left containers and $vols volumes left"
! docker network inspect nimstack-lab >/dev/null 2>&1 || fail "network nimstack-lab left"
[[ ! -e build/lab ]] || fail "build/lab left"
echo "   nothing left"
echo "test-lab.sh: passed"
