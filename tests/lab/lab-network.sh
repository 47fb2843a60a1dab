# shellcheck shell=bash
# The lab's network and its service containers, shared by lab.sh, model-source.sh and registry.sh
# (sourced; the caller defines die).
prefix=${NIMSTACK_LAB_PREFIX:-nimstack-lab}
network=${NIMSTACK_LAB_NETWORK:-$prefix}
subnet=${NIMSTACK_LAB_SUBNET:-172.30.77.0/24}
net_base=${subnet%.*}
label=nimstack.lab=$prefix

# Create the network, or check that an existing one has the lab's subnet.
ensure_network() {
  if docker network inspect "$network" >/dev/null 2>&1; then
    local have
    have=$(docker network inspect -f '{{range .IPAM.Config}}{{.Subnet}}{{end}}' "$network")
    [[ "$have" == "$subnet" ]] || die "network $network exists with subnet $have, not $subnet; run 'lab.sh down' first"
    return
  fi
  docker network create --driver bridge --subnet "$subnet" --gateway "$net_base.1" \
    --label "$label" "$network" >/dev/null
}

# A lab service container (model source, registry) that already runs the given recipe is kept:
# returns 0. One that runs another recipe, or has stopped, is removed: returns 1, and the caller
# starts it anew.
service_current() { # name recipe
  docker container inspect "$1" >/dev/null 2>&1 || return 1
  if [[ "$(docker container inspect -f '{{.State.Running}} {{index .Config.Labels "nimstack.lab.recipe"}}' "$1")" \
        == "true $2" ]]; then
    return 0
  fi
  docker rm -f "$1" >/dev/null
  return 1
}
