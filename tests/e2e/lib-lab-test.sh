# shellcheck shell=bash
# Sourced by the end-to-end tests on a 3-host lab (test-docker-path.sh, test-contracts.sh): the
# lab's names, a bounded readiness probe, the role's own smoke test and site.yml with the lab's
# inventories. The caller sets repo, cds there, and defines nothing else first.
# The names below are the callers' to use.
# shellcheck disable=SC2034
: "${repo:?set repo to the checkout before sourcing lib-lab-test.sh}"
# shellcheck source=tests/e2e/lib-recap.sh
source "$repo/tests/e2e/lib-recap.sh"

lab=tests/lab/lab.sh
prefix=${NIMSTACK_LAB_PREFIX:-nimstack-lab}
export NIMSTACK_LAB_DIR=${NIMSTACK_LAB_DIR:-$repo/build/lab}
inventory=$NIMSTACK_LAB_DIR/inventory.yml
shared=$NIMSTACK_LAB_DIR/shared
leader=$prefix-1
workers=("$prefix-2" "$prefix-3")
container=nim-default
boot_timeout=${LAB_TEST_BOOT_TIMEOUT:-90}
export ANSIBLE_CONFIG=$repo/ansible.cfg ANSIBLE_NOCOLOR=1 NO_COLOR=1
export ANSIBLE_CACHE_PLUGIN_CONNECTION=$NIMSTACK_LAB_DIR/facts
# Every log ends with its slowest tasks: where a slow run spent its time.
export ANSIBLE_CALLBACKS_ENABLED=${ANSIBLE_CALLBACKS_ENABLED:-ansible.posix.profile_tasks}
mkdir -p build/collections/ansible_collections/nimstack
ln -sfn ../../../.. build/collections/ansible_collections/nimstack/multinode

# Every play pins the tag the stand-in build printed (the archive holds that tag only).
play_args=()
t_start=$SECONDS
step() { printf '\n== %s (t=%ds)\n' "$*" "$((SECONDS - t_start))"; }
fail() { echo "$(basename "$0"): FAILED: $*" >&2; exit 1; }

# site.yml (or another playbook given as PLAYBOOK) on the lab with the Docker overlay.
play() {
  local log=$1; shift
  local book=${PLAYBOOK:-playbooks/site.yml}
  local start=$SECONDS rc=0
  ansible-playbook -i "$inventory" -i inventories/lab -i inventories/lab-docker -i inventories/lab-tests \
    "${play_args[@]}" "$@" "$book" >"$log" 2>&1 || rc=$?
  echo "   $(basename "$log"): rc=$rc, $((SECONDS - start)) s, changed=$(recap changed "$log")," \
    "failed=$(recap failed "$log"), unreachable=$(recap unreachable "$log")"
  return "$rc"
}

# play, and stop with the log's tail when it fails.
play_ok() {
  local log=$1
  play "$@" || { tail -40 "$log"; fail "$(basename "$log") failed (see $log)"; }
}

on() { local host=$1; shift; docker exec "$host" "$@"; }
# Whether /v1/health/ready answers 200 on a leader: $1 (default the lab's leader), within $2 s (3).
# shellcheck disable=SC2120  # both arguments are optional
probe_ready() {
  on "${1:-$leader}" python3 -c 'import sys, urllib.request
try:
    sys.exit(0 if urllib.request.urlopen("http://127.0.0.1:8000/v1/health/ready", timeout=float(sys.argv[1])).status == 200 else 1)
except Exception:
    sys.exit(1)' "${2:-3}"
}
# The role's own smoke test, run on the leader: one completion must cross every rank.
smoke() { docker exec -i "$leader" python3 - 127.0.0.1 8000 'Say hi' 8 20 <roles/nim_docker/files/nim_smoke.py; }
nim_containers() { on "$1" sh -c 'command -v docker >/dev/null && docker ps -aq --filter label=nimstack.managed=true || true' | wc -l; }
lab_addr() { docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$1"; }

# The model source sits on the lab's network: it goes first, or the network cannot be removed.
lab_down() { tests/lab/model-source.sh down >/dev/null && "$lab" down; }

# Whether the lab's first $1 hosts (3) run and its inventory is there.
lab_running() {
  local count=${1:-3} states
  [[ -f $inventory ]] || return 1
  states=$(docker inspect -f '{{.State.Running}}' $(seq -f "$prefix-%g" 1 "$count") 2>/dev/null) || return 1
  [[ $(grep -c '^true$' <<<"$states") -eq $count ]]
}

# Take the lab down and prove that nothing of it is left: containers, volumes, network, files.
lab_down_clean() {
  lab_down
  local left vols
  left=$(docker ps -aq --filter "label=nimstack.lab=$prefix" | wc -l)
  vols=$(docker volume ls -q --filter "name=^$prefix-[0-9]+-docker\$" | wc -l)
  ((left == 0 && vols == 0)) || fail "lab down left $left containers and $vols volumes"
  ! docker network inspect "$prefix" >/dev/null 2>&1 || fail "lab down left the network $prefix"
  [[ ! -e $NIMSTACK_LAB_DIR ]] || fail "lab down left $NIMSTACK_LAB_DIR"
  echo "   lab down: nothing left"
}

# A fresh lab of 3 hosts (or $2), the model source (its download counter reset) and the stand-in
# image as an archive on the shared path; sets image and play_args to pin its tag. $1 is where the
# archive is kept between runs (a build of the same recipe is not saved again).
# With LAB_REUSE set, a lab whose hosts already run (the one test-lab.sh or an earlier test
# left with LAB_KEEP) is taken as it is: `make test` prepares one lab and hands it on.
lab_fresh() {
  local archive=$1 hosts=${2:-3}
  tests/lab/ensure-docker.sh
  local t=$SECONDS
  if [[ -n ${LAB_REUSE:-} ]] && lab_running "$hosts"; then
    if docker inspect "$prefix-$((hosts + 1))" >/dev/null 2>&1; then
      # A larger lab handed on (make test: the security test's 4 hosts to the monitoring lab
      # test's 3): the hosts beyond $hosts go, the others and the inventory stay as they are.
      "$lab" up "$hosts" >/dev/null
      echo "   LAB_REUSE: the running lab $prefix, cut to $hosts hosts: $((SECONDS - t)) s"
    else
      echo "   LAB_REUSE: the running lab $prefix is used as it is"
    fi
  else
    lab_down
    "$lab" up "$hosts" >/dev/null
    echo "   lab up $hosts: $((SECONDS - t)) s"
  fi
  t=$SECONDS
  tests/lab/model-source.sh up >/dev/null
  tests/lab/model-source.sh reset >/dev/null
  image=$(tests/lab/build-standin.sh --archive "$archive")
  play_args=(-e "nim_image_tag=${image##*:}")
  mkdir -p "$shared/.images"
  ln -f "$archive" "$shared/.images/nim-standin.tar" 2>/dev/null || cp "$archive" "$shared/.images/nim-standin.tar"
  echo "   $image, archive $(du -m "$archive" | cut -f1) MiB, model source up: $((SECONDS - t)) s"
}

# The inventory lines (under all: hosts:) of deployment group $1 under launch contract $2 on the
# hosts after $4, one rank each in that order (PP = their number), every rank loading for $3 s:
# host variables in lab_group_vars and env in lab_group_env (YAML lines, without indent) are
# added. The lab-docker overlay's nim_extra_env is repeated because a host's value replaces it.
lab_group() {
  local group=$1 contract=$2 load_s=$3 rank=0 h line
  shift 3
  for h in "$@"; do
    printf '    %s:
' "$h"
    printf '      nim_group: %s
      nim_node_rank: %s
      nim_launch_contract: %s
' "$group" "$rank" "$contract"
    printf '      nim_pipeline_parallel: %s
' "$#"
    for line in "${lab_group_vars[@]}"; do printf '      %s
' "$line"; done
    printf '      nim_extra_env:
'
    printf '        NIM_STANDIN_MODEL_URL: "http://{{ nimstack_lab_subnet | regex_replace('"'"'\\\\.0/24$'"'"', '"'"'.2'"'"') }}:8080/model"\n'
    printf '        OMPI_MCA_btl_tcp_if_include: "{{ nimstack_lab_subnet }}"\n'
    printf '        OMPI_MCA_oob_tcp_if_include: "{{ nimstack_lab_subnet }}"\n'
    printf '        NIM_STANDIN_LOAD_S: "%s"\n' "$load_s"
    for line in "${lab_group_env[@]}"; do printf '        %s\n' "$line"; done
    rank=$((rank + 1))
  done
}
lab_group_vars=()
lab_group_env=()

# Move lab host $1 out of nim_nodes into nim_monitoring and nim_frontend (a host of no deployment
# group; the connection settings go to all): the inventory becomes $NIMSTACK_LAB_DIR/$2.
lab_watch_host() {
  python3 - "$inventory" "$NIMSTACK_LAB_DIR/$2" "$1" <<'EOF'
import sys
import yaml
src, dest, watcher = sys.argv[1:]
with open(src) as handle:
    inv = yaml.safe_load(handle)
nodes = inv['all']['children']['nim_nodes']
host = nodes['hosts'].pop(watcher)
# The lab's own inventory-wide vars (nimstack_bundle_url on a cut-off lab) stay.
inv['all'].setdefault('vars', {}).update(nodes.pop('vars'))
inv['all']['children']['nim_monitoring'] = {'hosts': {watcher: host}}
inv['all']['children']['nim_frontend'] = {'hosts': {watcher: None}}
with open(dest, 'w') as handle:
    yaml.safe_dump(inv, handle, default_flow_style=False)
EOF
  inventory=$NIMSTACK_LAB_DIR/$2
}

# Kill a rank's main process (not `docker kill`: Docker's restart policy then brings it back, as
# after a crash).
kill_rank() {
  local host=$1 pid
  pid=$(on "$host" docker inspect -f '{{.State.Pid}}' "$container")
  on "$host" kill -9 "$pid"
}
