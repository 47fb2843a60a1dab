#!/usr/bin/env bash
# The lab: N systemd hosts on one Docker network, reached over real SSH like real nodes.
#
#   tests/lab/lab.sh up [N]    start (or reconcile to) N hosts, default 3; writes the inventory
#   tests/lab/lab.sh down      remove the hosts, their volumes, the network and build/lab
#   tests/lab/lab.sh inventory rewrite build/lab/inventory.yml from the running hosts
#   tests/lab/lab.sh status    list the lab's containers
#
# With NIMSTACK_LAB_OFFLINE=1 the hosts are cut off from everything outside the lab network before
# they come up (tests/lab/bundle.sh cut), and the lab's offline bundle is made (cached) and served on the
# lab network (.4), its URL in the inventory as nimstack_bundle_url: every run on the lab is then a
# run of an air-gapped site (docs/offline.md).
#
# Layout of the lab network (NIMSTACK_LAB_SUBNET, a private /24 used only by these containers):
#   .1           the Docker bridge (this machine)
#   .2 - .9      reserved for lab services (e.g. a model download source), not used here
#   .11 - .(10+N) host i = nimstack-lab-i at .(10+i); address and name are stable across up/down
# Every host has its own Docker volume at /var/lib/docker (an inner engine then runs overlay2 on
# ext4 instead of copying every layer under vfs) and the machine directory build/lab/shared
# mounted at NIMSTACK_LAB_SHARED_PATH, the same path on every host: what NFS gives real nodes.
# The SSH key is made for the lab only, and the hosts' keys are read through `docker exec` (a
# channel that cannot be spoofed over the network) into the lab's own known_hosts, so the
# inventory keeps StrictHostKeyChecking on.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=tests/lab/lab-network.sh
source "$here/lab-network.sh"
shared_path=${NIMSTACK_LAB_SHARED_PATH:-/mnt/nimstack/model-cache}
state=${NIMSTACK_LAB_DIR:-$repo/build/lab}
boot_timeout=${NIMSTACK_LAB_BOOT_TIMEOUT:-60}
offline=${NIMSTACK_LAB_OFFLINE:-}
max_hosts=200

die() { echo "lab.sh: $*" >&2; exit 1; }
log() { echo "lab.sh: $*" >&2; }

host_name() { echo "$prefix-$1"; }
host_addr() { echo "$net_base.$((10 + $1))"; }

# Hosts of this lab, by index, ascending.
lab_indexes() {
  docker ps -a --filter "label=$label" --format '{{.Label "nimstack.lab.index"}}' | sort -n
}

ensure_key() {
  mkdir -p "$state/shared"
  chmod 0700 "$state"
  if [[ ! -f "$state/id_ed25519" ]]; then
    ssh-keygen -q -t ed25519 -N '' -C "$prefix" -f "$state/id_ed25519"
  fi
  chmod 0600 "$state/id_ed25519"
}

# Start host i unless a container of that name already runs with this image.
ensure_host() {
  local i=$1 image=$2 name addr
  name=$(host_name "$i")
  addr=$(host_addr "$i")
  if docker container inspect "$name" >/dev/null 2>&1; then
    local running have_image
    running=$(docker container inspect -f '{{.State.Running}}' "$name")
    have_image=$(docker container inspect -f '{{.Config.Image}}' "$name")
    if [[ "$running" == true && "$have_image" == "$image" ]]; then
      return
    fi
    docker rm -f "$name" >/dev/null
  fi
  docker run -d --name "$name" --hostname "$name" \
    --label "$label" --label "nimstack.lab.index=$i" \
    --network "$network" --ip "$addr" \
    --cap-add SYS_ADMIN --cap-add NET_ADMIN \
    --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
    --cgroupns host -v /sys/fs/cgroup:/sys/fs/cgroup:ro \
    --tmpfs /run --tmpfs /run/lock \
    -v "$name-docker:/var/lib/docker" \
    -v "$state/shared:$shared_path" \
    "$image" /sbin/init >/dev/null
}

# Wait (bounded) until sshd on host i has its keys and listens, then authorize the lab key.
ensure_ssh() {
  local i=$1 name deadline pub
  name=$(host_name "$i")
  deadline=$((SECONDS + boot_timeout))
  until docker exec "$name" systemctl is-active --quiet ssh 2>/dev/null; do
    ((SECONDS < deadline)) || die "$name: sshd not active after ${boot_timeout}s (docker logs $name)"
    sleep 0.5
  done
  pub=$(cat "$state/id_ed25519.pub")
  # Append rather than replace: roles under test (ssh_mesh) add their own keys to this file.
  docker exec -i "$name" sh -c 'umask 077; mkdir -p /root/.ssh; touch /root/.ssh/authorized_keys;
    read -r key; grep -qxF "$key" /root/.ssh/authorized_keys || echo "$key" >> /root/.ssh/authorized_keys' \
    <<<"$pub"
}

write_inventory() {
  local indexes=("$@") i name addr tmp
  ensure_key
  tmp=$(mktemp "$state/.known_hosts.XXXXXX")
  for i in "${indexes[@]}"; do
    name=$(host_name "$i")
    addr=$(host_addr "$i")
    docker exec "$name" sh -c 'cat /etc/ssh/ssh_host_*_key.pub' | while read -r type key _; do
      echo "$addr,$name $type $key"
    done >>"$tmp"
  done
  mv "$tmp" "$state/known_hosts"
  chmod 0644 "$state/known_hosts"

  tmp=$(mktemp "$state/.inventory.XXXXXX")
  {
    echo "# Written by tests/lab/lab.sh for the lab on Docker network $network ($subnet)."
    echo "# Regenerate with 'tests/lab/lab.sh inventory'; add group_vars with a second -i."
    echo "all:"
    echo "  children:"
    echo "    nim_nodes:"
    echo "      hosts:"
    for i in "${indexes[@]}"; do
      echo "        $(host_name "$i"):"
      echo "          ansible_host: $(host_addr "$i")"
    done
    echo "      vars:"
    echo "        ansible_user: root"
    echo "        ansible_python_interpreter: /usr/bin/python3"
    echo "        ansible_ssh_private_key_file: $state/id_ed25519"
    echo "        ansible_ssh_common_args: >-"
    echo "          -o UserKnownHostsFile=$state/known_hosts"
    echo "          -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes"
    echo "        nimstack_lab_network: $network"
    echo "        nimstack_lab_subnet: $subnet"
    echo "        nimstack_lab_shared_path: $shared_path"
    echo "        nimstack_lab_shared_dir: $state/shared"
    if [[ -n "$offline" ]]; then
      echo "  vars:"
      echo "    nimstack_bundle_url: $("$here/bundle.sh" url)"
    fi
  } >"$tmp"
  mv "$tmp" "$state/inventory.yml"
  echo "$state/inventory.yml"
}

cmd_up() {
  local count=${1:-3} image i
  if ! [[ "$count" =~ ^[0-9]+$ ]] || ((count < 1 || count > max_hosts)); then
    die "up: N must be a whole number from 1 to $max_hosts, got '$count'"
  fi
  "$here/ensure-docker.sh"
  image=$("$here/build-image.sh")
  ensure_network
  ensure_key
  # Reconcile to exactly N: hosts beyond N from an earlier, larger lab go away with their volume.
  for i in $(lab_indexes); do
    if ((i > count)); then
      docker rm -f "$(host_name "$i")" >/dev/null
      docker volume rm "$(host_name "$i")-docker" >/dev/null 2>&1 || true
    fi
  done
  if [[ -n "$offline" ]]; then
    "$here/bundle.sh" cut
    "$here/bundle.sh" make >/dev/null
    "$here/bundle.sh" up >/dev/null
  fi
  for ((i = 1; i <= count; i++)); do ensure_host "$i" "$image"; done
  for ((i = 1; i <= count; i++)); do ensure_ssh "$i"; done
  write_inventory $(seq 1 "$count")
}

cmd_inventory() {
  local indexes
  mapfile -t indexes < <(lab_indexes)
  ((${#indexes[@]})) || die "inventory: no lab hosts run; use 'lab.sh up [N]'"
  write_inventory "${indexes[@]}"
}

cmd_down() {
  local ids i
  if docker info >/dev/null 2>&1; then
    mapfile -t ids < <(lab_indexes)
    for i in "${ids[@]}"; do
      docker rm -f "$(host_name "$i")" >/dev/null
    done
    # The model source sits on the lab's network, which cannot be removed while it is attached.
    "$here/model-source.sh" down >/dev/null
    "$here/registry.sh" down >/dev/null
    "$here/bundle.sh" down >/dev/null
    "$here/bundle.sh" uncut
    # Volumes are found by name as well, so a half-finished 'up' leaves none behind.
    docker volume ls -q --filter "name=^$prefix-[0-9]+-docker$" | xargs -r docker volume rm >/dev/null
    if docker network inspect "$network" >/dev/null 2>&1; then
      docker network rm "$network" >/dev/null
    fi
  fi
  rm -rf "$state"
}

case "${1:-}" in
  up) shift; cmd_up "$@" ;;
  down) cmd_down ;;
  inventory) cmd_inventory ;;
  status) docker ps -a --filter "label=$label" --format 'table {{.Names}}\t{{.Status}}\t{{.Image}}' ;;
  *) die "usage: lab.sh up [N] | down | inventory | status" ;;
esac
