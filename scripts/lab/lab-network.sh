# shellcheck shell=bash
# The lab's network, shared by lab.sh and model-source.sh (sourced; the caller defines die).
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
