#!/usr/bin/env bash
# The lab's model source: a small HTTP server container on the lab network at .2 of the lab
# subnet (reserved for lab services) serving a synthetic model for the stand-in NIM's
# download-to-cache, and counting downloads, so that tests can prove the shared cache is filled
# once. Runs tests/lab/model-source.py on the lab's base image: no registry, no package.
#
#   tests/lab/model-source.sh up [--rate BYTES_PER_SECOND]   start (or reconcile); prints the model URL
#   tests/lab/model-source.sh down                           remove the container
#   tests/lab/model-source.sh count                          print the number of whole downloads
#   tests/lab/model-source.sh stats                          print the counters as JSON
#   tests/lab/model-source.sh reset                          zero the counters
#   tests/lab/model-source.sh url                            print the model URL
#
# The network is created like lab.sh does when it does not exist yet. NIMSTACK_LAB_PREFIX,
# NIMSTACK_LAB_NETWORK and NIMSTACK_LAB_SUBNET select the lab as for lab.sh;
# NIMSTACK_MODEL_SOURCE_RATE (bytes per second, 0 = no limit) and NIMSTACK_MODEL_SOURCE_SIZE_MIB
# (default 4) shape the source.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lab/lab-network.sh
source "$here/lab-network.sh"
rate=${NIMSTACK_MODEL_SOURCE_RATE:-0}
size_mib=${NIMSTACK_MODEL_SOURCE_SIZE_MIB:-4}
timeout=${NIMSTACK_MODEL_SOURCE_TIMEOUT:-30}
name=$prefix-model-source
addr=$net_base.2
port=8080
url=http://$addr:$port/model

die() { echo "model-source.sh: $*" >&2; exit 1; }

# Ask the server from inside its own container: works whatever routes this machine has.
query() {
  docker exec "$name" python3 -c 'import sys, urllib.request
req = urllib.request.Request("http://127.0.0.1:%s%s" % (sys.argv[1], sys.argv[2]), method=sys.argv[3])
print(urllib.request.urlopen(req, timeout=5).read().decode())' "$port" "$1" "${2:-GET}"
}

cmd_up() {
  while (($#)); do
    case "$1" in
      --rate) (($# >= 2)) || die "--rate needs a number"; rate=$2; shift 2 ;;
      *) die "up: unknown argument '$1'" ;;
    esac
  done
  [[ "$rate" =~ ^[0-9]+$ ]] || die "rate must be a whole number of bytes per second, got '$rate'"
  [[ "$size_mib" =~ ^[1-9][0-9]*$ ]] || die "NIMSTACK_MODEL_SOURCE_SIZE_MIB must be a whole number >= 1"
  local image recipe deadline
  image=$("$here/build-image.sh")
  recipe=$( (echo "$image $rate $size_mib $network $addr"; cat "$here/model-source.py") | sha256sum | cut -c1-12)
  ensure_network
  if service_current "$name" "$recipe"; then
    echo "$url"
    return
  fi
  docker run -d --name "$name" --hostname "$name" --restart unless-stopped \
    --label "nimstack.lab.service=model-source" --label "nimstack.lab.recipe=$recipe" \
    --network "$network" --ip "$addr" \
    -v "$here/model-source.py:/srv/model-source.py:ro" \
    "$image" python3 /srv/model-source.py --port "$port" --size-mib "$size_mib" --rate "$rate" >/dev/null
  deadline=$((SECONDS + timeout))
  until query /stats >/dev/null 2>&1; do
    ((SECONDS < deadline)) || die "$name did not answer within ${timeout}s (docker logs $name)"
    sleep 0.3
  done
  echo "$url"
}

running() {
  [[ "$(docker container inspect -f '{{.State.Running}}' "$name" 2>/dev/null)" == true ]] \
    || die "$name does not run; use 'model-source.sh up'"
}

case "${1:-}" in
  up) shift; cmd_up "$@" ;;
  down) docker rm -f "$name" >/dev/null 2>&1 || true ;;
  count) running; query /stats | python3 -c 'import json, sys; print(json.load(sys.stdin)["downloads"])' ;;
  stats) running; query /stats ;;
  reset) running; query /stats/reset POST ;;
  url) echo "$url" ;;
  *) die "usage: model-source.sh up [--rate BYTES_PER_SECOND] | down | count | stats | reset | url" ;;
esac
