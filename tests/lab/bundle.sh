#!/usr/bin/env bash
# The lab's offline bundle (docs/offline.md), and the cut that keeps lab hosts off the internet.
#
#   tests/lab/bundle.sh make [DIR [VARS]]
#                                     make (or refresh) the lab's bundle with playbooks/bundle.yml (into
#                                     DIR instead, a name without a slash being a directory of the cache,
#                                     with more variables as JSON: a test's); prints its directory
#   tests/lab/bundle.sh up [DIR]      serve it (or DIR) on the lab network at .4:8080; prints its URL
#   tests/lab/bundle.sh down          remove the server container
#   tests/lab/bundle.sh url           print the URL
#   tests/lab/bundle.sh cut           let the lab's hosts reach only the lab network (below)
#   tests/lab/bundle.sh uncut         remove the cut
#   tests/lab/bundle.sh rule          print the cut's nftables table
#   tests/lab/bundle.sh cut-count [metadata|dns|other]
#                                     print how many packets the cut refused (of one kind)
#   tests/lab/bundle.sh cut-log       print what it refused, a "SRC DST PROTO DPT" line each (kernel log)
#
# The bundle is made for tests/lab/bundle-inventory.yml (a Docker node, the front door and the
# monitoring host, with the lab's variables) and the lab's host image as its Debian 12 platform, with
# the model cache of the stand-in image the lab tests run, into NIMSTACK_BUNDLE_CACHE
# (/var/cache/nimstack/bundle): like the lab's images, made once and made again only when the
# packages, the host image, the key or the stand-in image change (its manifest says which). Selects
# the lab as lab.sh does (NIMSTACK_LAB_PREFIX, NIMSTACK_LAB_SUBNET).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=tests/lab/lab-network.sh
source "$here/lab-network.sh"
cache=${NIMSTACK_BUNDLE_CACHE:-/var/cache/nimstack/bundle}
dir=$cache/lab
name=$prefix-bundle
addr=$net_base.4
port=8080
url=http://$addr:$port
timeout=${NIMSTACK_BUNDLE_TIMEOUT:-30}
# The loopback port of the model source the make fills the lab's model cache from.
model_port=${NIMSTACK_BUNDLE_MODEL_PORT:-18479}

die() { echo "bundle.sh: $*" >&2; exit 1; }

# The playbook's output goes to $cache/lab.log; its last words (what the bundle holds, what was
# fetched) to stderr.
# NVIDIA's repositories, which this machine cannot reach, are stand-ins of theirs (vendor-repo.sh),
# served for the make only, at the URLs the roles' variables name.
cmd_make() {
  local dir=${1:-$dir} more=${2:-} image vendor standin source deadline rc=0
  [[ -n $more ]] || more='{}'
  [[ $dir == */* ]] || dir=$cache/$dir
  image=$("$here/build-image.sh")
  mkdir -p "$cache"
  # One make at a time: the lab tests' streams start labs at once.
  exec 9>"$cache/.lock"
  flock 9
  vendor=$("$here/vendor-repo.sh" up)
  # The image the lab's bundle carries in (bundle-inventory.yml): a tiny one of its own, made once.
  if ! docker image inspect nimstack-lab/bundle-probe:1 >/dev/null 2>&1; then
    local context
    context=$(mktemp -d)
    echo "An image the lab's offline bundle carries in, as a site's bundle carries its NIM image." >"$context/README"
    printf 'FROM scratch\nCOPY README /README\n' >"$context/Dockerfile"
    docker build -q -t nimstack-lab/bundle-probe:1 "$context" >/dev/null
    rm -rf "$context"
  fi
  # The model cache the lab's groups unpack (models/): filled by the stand-in image's own downloader, for
  # the stand-in image the lab tests run, from a model source of this machine's on loopback (the connected
  # side's stand-in of NGC, which no lab host reaches), at one URL whichever lab makes the bundle.
  standin=$("$here/build-standin.sh")
  python3 "$here/model-source.py" --bind 127.0.0.1 --port "$model_port" 2>"$cache/model-source.log" &
  source=$!
  deadline=$((SECONDS + timeout))
  until python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$model_port/stats', timeout=2)" 2>/dev/null; do
    if ! kill -0 "$source" 2>/dev/null || ((SECONDS >= deadline)); then
      cat "$cache/model-source.log" >&2
      die "the model source did not start"
    fi
    sleep 0.2
  done
  ANSIBLE_FORCE_COLOR=0 ANSIBLE_NOCOLOR=1 ansible-playbook -i "$here/bundle-inventory.yml" -i "$repo/inventories/lab" \
    -i "$repo/inventories/lab-docker" "$repo/playbooks/bundle.yml" \
    -e "$(printf '{"nimstack_bundle_dir": "%s", "nimstack_bundle_signing_dir": "%s", "nimstack_bundle_platforms": ["debian-12"], "nimstack_bundle_platform_images": {"debian-12": "%s"}}' \
      "$dir" "$cache/lab.signing" "$image")" \
    -e "$(printf '{"nvidia_driver_repo_url": "%s/cuda/", "nvidia_driver_repo_key_url": "%s/cuda/key.asc", "nvidia_container_toolkit_repo_url": "%s/toolkit/", "nvidia_container_toolkit_repo_key_url": "%s/toolkit/key.asc"}' \
      "$vendor" "$vendor" "$vendor" "$vendor")" \
    -e "$(printf '{"nim_image_tag": "%s", "nim_extra_env": {"NIM_STANDIN_MODEL_URL": "http://127.0.0.1:%s/model"}}' \
      "${standin##*:}" "$model_port")" -e "$more" >"$cache/lab.log" 2>&1 || rc=$?
  kill "$source" 2>/dev/null || true
  wait "$source" 2>/dev/null || true
  "$here/vendor-repo.sh" down
  if ((rc)); then
    tail -n 30 "$cache/lab.log" >&2
    die "make: playbooks/bundle.yml failed (rc $rc, $cache/lab.log)"
  fi
  echo "bundle.sh: $(tr -s ' \n' '  ' <"$cache/lab.log" | grep -o "bundle $dir: .*manifest.json" || true)" >&2
  echo "$dir"
}

cmd_up() {
  local dir=${1:-$dir} image recipe deadline
  [[ -s "$dir/manifest.json" ]] || die "no bundle in $dir; use 'bundle.sh make'"
  image=$("$here/build-image.sh")
  recipe=$(echo "$image $network $addr $dir" | sha256sum | cut -c1-12)
  ensure_network
  if ! service_current "$name" "$recipe"; then
    docker run -d --name "$name" --hostname "$name" --restart unless-stopped \
      --label "nimstack.lab.service=bundle" --label "nimstack.lab.recipe=$recipe" \
      --network "$network" --ip "$addr" -v "$dir:/srv/bundle:ro" \
      "$image" python3 -m http.server --directory /srv/bundle --bind 0.0.0.0 "$port" >/dev/null
  fi
  deadline=$((SECONDS + timeout))
  until docker exec "$name" python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/manifest.json', timeout=3)" \
      >/dev/null 2>&1; do
    ((SECONDS < deadline)) || die "$name did not answer within ${timeout}s (docker logs $name)"
    sleep 0.3
  done
  echo "$url"
}

# The lab's way out: only the lab network. An nftables table of this machine's, one per lab,
# refuses (a reject, not a drop, so a tool that tries says so at once instead of hanging) and
# counts every packet that comes in from the lab's bridge for anything outside the lab network,
# whether it is forwarded (the internet, other networks) or meant for this machine (its other
# addresses), and logs it to the kernel log (dmesg: the source and destination). It holds whatever the hosts do, a restart of a host included; `lab.sh down` removes it.
table=nimstack_cut_${prefix//[^a-zA-Z0-9]/_}

bridge() {
  local id
  id=$(docker network inspect -f '{{.Id}}' "$network" 2>/dev/null) || die "no lab network $network"
  echo "br-${id:0:12}"
}

cmd_cut() {
  local br
  br=$(bridge)
  nft -f - <<NFT
table inet $table
delete table inet $table
table inet $table {
  chain forward {
    type filter hook forward priority -10; policy accept;
    iifname "$br" ip daddr 169.254.169.254 tcp dport 80 counter log prefix "$table: " level info reject comment "metadata"
    iifname "$br" ip daddr != $subnet udp dport 53 counter log prefix "$table: " level info reject comment "dns"
    iifname "$br" ip daddr != $subnet counter log prefix "$table: " level info reject comment "other"
  }
  chain input {
    type filter hook input priority -10; policy accept;
    iifname "$br" ip daddr != $subnet udp dport 53 counter log prefix "$table: " level info reject comment "dns"
    iifname "$br" ip daddr != $subnet counter log prefix "$table: " level info reject comment "other"
  }
}
NFT
}

cmd_uncut() {
  nft delete table inet "$table" 2>/dev/null || true
}

cmd_rule() {
  nft list table inet "$table"
}

# Packets refused so far: all of them, or those of one kind (metadata: to the cloud metadata address
# 169.254.169.254:80; dns: to a name server outside the lab; other: the rest), counted by the cut's
# own counters, which unlike the kernel log lose none.
cmd_cut_count() {
  nft list table inet "$table" | awk -v kind="${1:-}" '/counter packets/ && (kind == "" || index($0, "comment \"" kind "\"")) {
    for (i = 1; i <= NF; i++) if ($i == "packets") n += $(i + 1)} END {print n + 0}'
}

# What the cut refused, one "SRC DST PROTO DPT" line per packet, oldest first, from the kernel log.
cmd_cut_log() {
  dmesg | grep -F "$table: " | sed -E 's/.* SRC=([^ ]+) DST=([^ ]+) .* PROTO=([^ ]+) .*DPT=([0-9]+).*/\1 \2 \3 \4/' || true
}

case "${1:-}" in
  make) cmd_make "${@:2}" ;;
  up) cmd_up "${2:-}" ;;
  down) docker rm -f "$name" >/dev/null 2>&1 || true ;;
  url) echo "$url" ;;
  cut) cmd_cut ;;
  uncut) cmd_uncut ;;
  rule) cmd_rule ;;
  cut-count) cmd_cut_count "${2:-}" ;;
  cut-log) cmd_cut_log ;;
  *) die "usage: bundle.sh make [DIR [VARS]] | up | down | url | cut | uncut | rule | cut-count [KIND] | cut-log" ;;
esac
