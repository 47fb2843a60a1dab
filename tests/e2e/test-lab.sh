#!/usr/bin/env bash
# End-to-end test of the lab and host preparation, over real SSH, on an air-gapped lab:
#   1. a fresh 3-host lab comes up (timed) cut off from everything outside the lab network, with
#      the lab's offline bundle served on it (NIMSTACK_LAB_OFFLINE, docs/offline.md): a host's
#      apt-get update against Debian's archive fails; every host answers ansible.builtin.ping; its
#      last host is made brownfield: it runs Docker's docker-ce (a stand-in package with docker-ce's
#      relations, tests/lab/brownfield.yml) and a container of the site; the bundle maker refuses a
#      vendor's repository (a stand-in of NVIDIA's) that its key does not verify; the site's controller
#      installs the bundle's collections with no way to Galaxy; a run whose bundle
#      lacks a file, a package that a host showing a GPU would install, and the Docker group's model
#      cache, is refused before any host changes, naming each;
#   2. on the fresh and brownfield hosts, `site.yml --check --diff` finishes (rc=0), reports every
#      host, and changes nothing: package lists, file checksums (/etc, /usr/local, /opt), container
#      IDs and states, and the engine's start time are the same before and after;
#   3. playbooks/prepare_hosts.yml converges it; both NVIDIA roles report the skip of every host
#      (none has a GPU) and leave no package or file; rdma reports that no host has RDMA, installs
#      the userspace, sets memlock unlimited and lists no module, and refuses a host the inventory
#      requires RDMA of (rdma_required), naming it; the brownfield host keeps docker-ce and its
#      container (same ID, running); the deployment key's files are the secrets group's and no log
#      holds a line of them;
#   4. no packet left a host for outside the lab network from the dry run on (the cut counts them);
#   5. the lab goes down and leaves no container, volume, network or file behind.
# That a second preparation changes nothing is proven by the Docker path test on the lab this one
# hands on (its second site.yml run, preparation included, must change nothing), the dry run of
# the converged site there too, and that -vvv shows no key by the security test's site.yml -vvv:
# `make test` runs each once.
#
#   tests/e2e/test-lab.sh                            the whole test
#   LAB_SKIP_TAGS=rdma tests/e2e/test-lab.sh           skip roles (comma-separated tags)
#   LAB_KEEP=1 tests/e2e/test-lab.sh                 leave the prepared lab running (`make test`
#                                                  hands it on to the Docker path tests)
#   NIMSTACK_LAB_PREFIX, NIMSTACK_LAB_SUBNET, NIMSTACK_LAB_DIR   a lab of its own (tests/lab/lab.sh)
#   NIMSTACK_LAB_OFFLINE=   a lab with its way out (default 1: cut off)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
lab=tests/lab/lab.sh
hosts=${LAB_HOSTS:-3}
skip_tags=${LAB_SKIP_TAGS:-}
prefix=${NIMSTACK_LAB_PREFIX:-nimstack-lab}
export NIMSTACK_LAB_DIR=${NIMSTACK_LAB_DIR:-$repo/build/lab}
export NIMSTACK_LAB_OFFLINE=${NIMSTACK_LAB_OFFLINE-1}
inventory=$NIMSTACK_LAB_DIR/inventory.yml
logs=build/lab-test${NIMSTACK_LAB_PREFIX:+-$NIMSTACK_LAB_PREFIX}
export ANSIBLE_CONFIG=$repo/ansible.cfg ANSIBLE_NOCOLOR=1 NO_COLOR=1
# Facts are cached per lab (the lab's directory is removed by `down`), so a fresh lab never sees
# the facts of an earlier one under the same host names.
export ANSIBLE_CACHE_PLUGIN_CONNECTION=$NIMSTACK_LAB_DIR/facts

mkdir -p "$logs" build/collections/ansible_collections/nimstack
ln -sfn ../../../.. build/collections/ansible_collections/nimstack/multinode

step() { printf '\n== %s\n' "$*"; }
fail() { echo "test-lab.sh: FAILED: $*" >&2; exit 1; }

# shellcheck source=tests/e2e/lib-recap.sh
source "$repo/tests/e2e/lib-recap.sh"

playbook() {
  local log=$1; shift
  local book=${PLAYBOOK:-playbooks/prepare_hosts.yml}
  local args=(-i "$inventory" -i inventories/lab)
  # The stand-in image the lab runs, at its tag, whose model cache the lab's offline bundle carries.
  [[ $book == playbooks/site.yml ]] && args+=(-i inventories/lab-docker -i inventories/lab-tests -e "nim_image_tag=$standin_tag")
  args+=("$book")
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
tests/lab/ensure-docker.sh
tests/lab/build-image.sh >/dev/null
standin_tag=$(tests/lab/build-standin.sh)
standin_tag=${standin_tag##*:}
"$lab" down
lab_up

step "ping over SSH with the lab key and pinned host keys"
ansible -i "$inventory" nim_nodes -m ansible.builtin.ping >"$logs/ping.log" 2>&1 \
  || { cat "$logs/ping.log"; fail "ping"; }
pongs=$(grep -c '"ping": "pong"\|ping: pong' "$logs/ping.log" || true)
((pongs == hosts)) || { cat "$logs/ping.log"; fail "$pongs of $hosts hosts answered ping"; }
echo "   $pongs of $hosts hosts answered"


if [[ -n "$NIMSTACK_LAB_OFFLINE" ]]; then
  step "cut off: only the lab network; the bundle at $(tests/lab/bundle.sh url)"
  tests/lab/bundle.sh rule | sed -n '/chain forward/,/}/p' | sed 's/^/   /'
  rc=0
  docker exec "$prefix-1" timeout 120 apt-get update >"$logs/apt-update-cut.log" 2>&1 || rc=$?
  grep -q "Failed to fetch\|Could not connect\|Unable to connect\|Connection refused" "$logs/apt-update-cut.log" \
    || { cat "$logs/apt-update-cut.log"; fail "apt-get update on a cut-off host did not fail to reach Debian's archive"; }
  echo "   $prefix-1: apt-get update rc=$rc: $(grep -m1 -o "Failed to fetch [^ ]*\|Could not connect to [^ ]*" \
    "$logs/apt-update-cut.log" || true)"
fi

brown=$prefix-$hosts
step "brownfield: $brown runs docker-ce and a container of the site"
start=$SECONDS
ansible-playbook -i "$inventory" --limit "$brown" tests/lab/brownfield.yml >"$logs/brownfield.log" 2>&1 \
  || { tail -30 "$logs/brownfield.log"; fail "brownfield setup (see $logs/brownfield.log)"; }
app_id=$(docker exec "$brown" cat /tmp/site-app-id)
echo "   $brown: docker-ce and site-app ${app_id:0:12} in $((SECONDS - start)) s"

# What a dry run must leave as it is, on every host: the package list, the checksums of the files
# under /etc, /usr/local and /opt (and which directories and links are there), every container
# and since when the engine runs.
snapshot() {
  local out=$1 i
  for i in $(seq 1 "$hosts"); do
    echo "### $prefix-$i"
    docker exec "$prefix-$i" sh -c '
      dpkg-query -W -f="\${Package} \${Version} \${db:Status-Abbrev}\n"
      find /etc /usr/local /opt -xdev -type f -print0 2>/dev/null | sort -z | xargs -0 sha256sum
      find /etc /usr/local /opt -xdev ! -type f 2>/dev/null | sort
      if command -v docker >/dev/null; then docker ps -a --no-trunc --format "{{.ID}} {{.State}}"; fi
      systemctl show -p ActiveEnterTimestampMonotonic docker.service containerd.service'
  done >"$out"
}

# The dry run (site.yml --check --diff; LAB_DRY_RUN_PLAYBOOK=playbooks/prepare_hosts.yml for the
# preparation alone): rc=0, a recap line for every host, a report of what a real run does on the
# brownfield host, nothing changed.
dry_run() {
  local name=$1 log=$logs/check-$1.log
  snapshot "$logs/snapshot-$name-before.txt"
  PLAYBOOK=${LAB_DRY_RUN_PLAYBOOK:-playbooks/site.yml} playbook "$log" --check --diff \
    || fail "--check on the $name lab (see $log)"
  snapshot "$logs/snapshot-$name-after.txt"
  diff "$logs/snapshot-$name-before.txt" "$logs/snapshot-$name-after.txt" >"$logs/snapshot-$name.diff" \
    || { head -20 "$logs/snapshot-$name.diff"; fail "--check changed the $name lab (see $logs/snapshot-$name.diff)"; }
  local recaps
  recaps=$(grep -c "^$prefix-[0-9]* *: ok=" "$log" || true)
  ((recaps == hosts)) || fail "the recap of $log names $recaps of $hosts hosts"
  log_says "$log" "docker on $brown: docker-ce 28.1.1 is installed: adopted" \
    || fail "$log does not report the adopted docker-ce of $brown"
  echo "   $(wc -l <"$logs/snapshot-$name-before.txt") lines of packages, checksums, containers and engine start times: unchanged"
}

if [[ -n "$NIMSTACK_LAB_OFFLINE" ]]; then
  # NVIDIA's repositories are stand-ins here (tests/lab/vendor-repo.sh): the maker must refuse one
  # that its key does not verify, naming it.
  step "the bundle maker: a vendor's repository signed by another key is refused, naming it"
  rm -rf "$NIMSTACK_LAB_DIR/bundle-forged"
  if tests/lab/bundle.sh make "$NIMSTACK_LAB_DIR/bundle-forged" \
      "{\"nvidia_container_toolkit_repo_key_url\": \"file://$(tests/lab/bundle.sh make)/keys/bundle.asc\"}" 2>"$logs/bundle-forged.log"; then
    fail "a bundle was made from a repository its key does not verify (see $logs/bundle-forged.log)"
  fi
  { grep -q "nvidia-container-toolkit (http://[^ ]*/toolkit/) failed" "$logs/bundle-forged.log" \
      && grep -q "The repository 'http://[^ ]*/toolkit  *InRelease' is not signed" "$logs/bundle-forged.log"; } \
    || { tail -5 "$logs/bundle-forged.log"; fail "$logs/bundle-forged.log does not name the repository that did not verify"; }
  rm -rf "$NIMSTACK_LAB_DIR/bundle-forged"
  echo "   refused: $(grep -o "The repository '[^']*' is not signed" "$logs/bundle-forged.log" | head -1)"

  # Which NVIDIA packages a host needs is read from the host before the check: $prefix-1 shows a GPU
  # (a sysfs tree of its own, nvidia_driver_sysfs_root), so the bundle must hold what the NVIDIA roles
  # would install on it, the headers of the kernel it runs included.
  step "the bundle's collections install offline; a bundle that lacks a file, and a package a GPU host needs: refused before any host changes, naming both"
  bundle=$(tests/lab/bundle.sh make 2>"$logs/bundle-make.log")
  # The image the lab's bundle carries in (tests/lab/bundle-inventory.yml), listed with its archive.
  python3 - "$bundle" <<'PY' || fail "the bundle's manifest does not list nimstack-lab/bundle-probe:1 with its archive"
import hashlib, json, os, sys
images = json.load(open(os.path.join(sys.argv[1], 'manifest.json'))).get('images') or []
probe = [i for i in images if i['ref'] == 'nimstack-lab/bundle-probe:1']
path = os.path.join(sys.argv[1], probe[0]['path']) if probe else ''
assert probe and hashlib.sha256(open(path, 'rb').read()).hexdigest() == probe[0]['sha256'], images
PY
  # The site's controller, which has no collection yet (only the collections path below, not this one's nor
  # the ansible package's), installs them from the bundle with no way to Galaxy (--offline; any proxy a dead
  # port): each at the version this controller runs, every file checked by ansible-galaxy.
  controller=$NIMSTACK_LAB_DIR/controller-collections
  rm -rf "$controller" && mkdir -p "$controller" && printf '[defaults]\n' >"$controller/ansible.cfg"
  ANSIBLE_CONFIG=$controller/ansible.cfg ANSIBLE_COLLECTIONS_PATH=$controller ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=false \
    http_proxy=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 \
    ansible-galaxy collection install --offline -p "$controller" "$bundle"/collections/*.tar.gz \
    >"$logs/bundle-collections.log" 2>&1 \
    || { tail -5 "$logs/bundle-collections.log"; fail "the bundle's collections did not install offline (see $logs/bundle-collections.log)"; }
  python3 - "$bundle" "$controller/ansible_collections" <<'PY' || fail "the collections installed from the bundle are not those it lists"
import glob, json, os, sys
carried = json.load(open(os.path.join(sys.argv[1], 'manifest.json'))).get('collections') or []
wanted = dict((c['name'], c['version']) for c in carried)
got = {}
for path in glob.glob(os.path.join(sys.argv[2], '*', '*', 'MANIFEST.json')):
    info = json.load(open(path))['collection_info']
    got['%s.%s' % (info['namespace'], info['name'])] = info['version']
assert {'nimstack.multinode', 'community.docker', 'community.library_inventory_filtering_v1'} <= set(wanted), wanted
assert got == wanted, (got, wanted)
print('   the site\'s controller installed, offline, the %d collections of the bundle (%d KiB): %s'
      % (len(got), sum(c['size'] for c in carried) // 1024, ', '.join('%s %s' % i for i in sorted(got.items()))))
PY
  rm -rf "$controller"
  partial=$NIMSTACK_LAB_DIR/bundle-partial
  rm -rf "$partial"
  cp -al "$bundle" "$partial" 2>/dev/null || { rm -rf "$partial"; cp -a "$bundle" "$partial"; }
  debs=("$partial"/apt/debian-12/pool/docker.io_*.deb)
  gone=${debs[0]##*/}
  rm "$partial/apt/debian-12/pool/$gone"
  # The driver's metapackage, as if the bundle were made with the NVIDIA roles off.
  model=$(python3 - "$partial/manifest.json" <<'PY'
import json, sys
path = sys.argv[1]
manifest = json.load(open(path))
record = manifest['platforms']['debian-12']
del record['requested']['nvidia-open=580.*']
record['files'] = [f for f in record['files'] if f['name'] != 'nvidia-open']
# And the model cache the Docker group's leader would unpack, as if made with nimstack_bundle_models=false.
print(manifest.pop('models')[0]['file'])
open(path + '.new', 'w').write(json.dumps(manifest))
PY
)
  mv "$partial/manifest.json.new" "$partial/manifest.json"
  fake=/tmp/nimstack-test-sysfs
  docker exec "$prefix-1" sh -c "mkdir -p $fake/bus/pci/devices/0000:3b:00.0 && echo 0x10de >$fake/bus/pci/devices/0000:3b:00.0/vendor \
    && echo 0x030200 >$fake/bus/pci/devices/0000:3b:00.0/class"
  if PLAYBOOK=playbooks/site.yml playbook "$logs/bundle-partial.log" -e "nimstack_bundle_url=file://$partial" \
      -e "nvidia_driver_sysfs_root=$fake"; then
    fail "a run with $gone missing from the bundle passed (see $logs/bundle-partial.log)"
  fi
  docker exec "$prefix-1" rm -rf "$fake"
  log_says "$logs/bundle-partial.log" "lists apt/debian-12/pool/$gone (docker.io) but does not serve it" \
    || fail "$logs/bundle-partial.log does not name apt/debian-12/pool/$gone"
  log_says "$logs/bundle-partial.log" "no package nvidia-open=580.\* for debian-12, which role nvidia_driver installs" \
    || fail "$logs/bundle-partial.log does not name nvidia-open, which the GPU host $prefix-1 needs"
  # The bundle holds the headers of Debian's current kernel; the lab's hosts run this machine's.
  kernel=$(docker exec "$prefix-1" uname -r)
  if ! grep -q "\"name\": \"linux-headers-$kernel\"" "$partial/manifest.json"; then
    log_says "$logs/bundle-partial.log" "no package linux-headers-$kernel for debian-12" \
      || fail "$logs/bundle-partial.log does not name the headers of the kernel $kernel that $prefix-1 runs"
  fi
  log_says "$logs/bundle-partial.log" "the bundle has no model cache for nimstack-lab/nim-standin:$standin_tag with no nim_model_profile (models/$model)" \
    || fail "$logs/bundle-partial.log does not name the model cache models/$model"
  changed=$(recap changed "$logs/bundle-partial.log")
  [[ $changed == 0 ]] || fail "the refused run changed $changed"
  rm -rf "$partial"
  echo "   without $gone, nvidia-open and the model cache: refused, naming the three and the headers of $kernel; changed=0"
  refused_before=$(tests/lab/bundle.sh cut-count)
fi

step "--check --diff on the fresh lab with a brownfield host"
dry_run fresh

step "prepare_hosts.yml converges"
playbook "$logs/prepare-1.log" || fail "first run (see $logs/prepare-1.log)"

# The lab's hosts have no NVIDIA GPU: both NVIDIA roles must say so per host and leave nothing.
step "hosts without a GPU: the NVIDIA roles report the skip, install and write nothing"
for i in $(seq 1 "$hosts"); do
  for role in nvidia_driver nvidia_container_toolkit; do
    log_says "$logs/prepare-1.log" "$role: skipping $prefix-$i: no NVIDIA GPU found" \
      || fail "$logs/prepare-1.log: $role does not report the skip of $prefix-$i"
  done
  found=$(docker exec "$prefix-$i" sh -c '
    dpkg-query -W -f="\${Package}\n" "*nvidia*" "cuda-*" dkms 2>/dev/null
    ls -d /etc/apt/sources.list.d/nvidia-* /etc/apt/keyrings/nvidia-* /etc/modprobe.d/blacklist-nouveau.conf \
      /etc/nvidia-imex /etc/cdi/nvidia.yaml 2>/dev/null
    grep -l "\"nvidia\"" /etc/docker/daemon.json 2>/dev/null' || true)
  [[ -z $found ]] || fail "$prefix-$i: the NVIDIA roles left $(tr '\n' ' ' <<<"$found")"
done
echo "   $hosts hosts: both roles reported the skip; no NVIDIA package, repository, key, blacklist, CDI spec or runtime"

# Nor any RDMA hardware: the rdma role must say so per host, install the userspace, set locked
# memory unlimited and load and list no kernel module; a host the inventory requires RDMA of is
# refused, naming rdma_required and what to set (make molecule's rdma/default checks the same on a
# host of its own).
if [[ ",$skip_tags," != *,rdma,* ]]; then
  step "hosts without RDMA: the rdma role says so, installs the userspace, lists no module; rdma_required refuses them"
  for i in $(seq 1 "$hosts"); do
    log_says "$logs/prepare-1.log" "$prefix-$i: no RDMA devices" \
      || fail "$logs/prepare-1.log: rdma does not report that $prefix-$i has no RDMA devices"
    # shellcheck disable=SC2016  # the single-quoted script runs in sh on the host
    state=$(docker exec "$prefix-$i" sh -c '
      dpkg-query -W -f="\${db:Status-Abbrev}\n" rdma-core perftest infiniband-diags 2>/dev/null | grep -c "^ii"
      grep -cE "^(\*|root) +(soft|hard) +memlock +unlimited$" /etc/security/limits.d/90-nimstack-rdma.conf
      ls /etc/modules-load.d/nimstack-rdma.conf 2>/dev/null | wc -l' | tr '\n' ' ')
    [[ $state == "3 4 0 " ]] || fail "$prefix-$i: RDMA packages installed, memlock lines, module lists: $state, not 3 4 0"
  done
  if playbook "$logs/rdma-required.log" --tags rdma --limit "$prefix-1" -e rdma_required=true; then
    fail "a host without RDMA was accepted with rdma_required=true"
  fi
  for said in "rdma_required is true for $prefix-1, but it has no RDMA devices" "set rdma_required: false for this host"; do
    log_says "$logs/rdma-required.log" "$said" \
      || { tail -20 "$logs/rdma-required.log"; fail "the refusal does not say: $said"; }
  done
  (($(recap changed "$logs/rdma-required.log") == 0)) || fail "the refused rdma_required run changed a host"
  echo "   $hosts hosts: no RDMA reported, rdma-core, perftest and infiniband-diags installed, memlock unlimited, no module list; rdma_required refused $prefix-1"
fi

step "the brownfield host keeps its engine and its container"
engines=$(docker exec "$brown" dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' docker-ce docker.io 2>/dev/null \
  | awk '$2 == "ii" {print $1}' | tr '\n' ' ') || true
[[ $engines == "docker-ce " ]] || fail "$brown: engine packages now '$engines'"
app_now=$(docker exec "$brown" docker inspect --format '{{.Id}} {{.State.Running}}' site-app)
[[ $app_now == "$app_id true" ]] || fail "$brown: site-app is now '$app_now', was $app_id"
echo "   $brown: docker-ce kept, site-app ${app_id:0:12} still running"

step "the deployment key stays secret: modes, and absent from every log"
mesh=/etc/nimstack/mesh/default
for i in $(seq 1 "$hosts"); do
  # root's and the group nimstack-secrets's, which only the containers get.
  modes=$(docker exec "$prefix-$i" stat -c '%n %a %u %g' "$mesh/private.key" "$mesh/ssh_host_ed25519_key")
  grep -qx "$mesh/private.key 440 0 64910" <<<"$modes" || fail "$prefix-$i: $modes"
  grep -qx "$mesh/ssh_host_ed25519_key 640 0 64910" <<<"$modes" || fail "$prefix-$i: $modes"
done
# Every base64 line of the private key (and the host key) must be absent from the logs.
secret_lines=$(docker exec "$prefix-1" sh -c "grep -hv -- '-----' $mesh/private.key $mesh/ssh_host_ed25519_key")
leaks=$(cat "$logs"/check-*.log "$logs"/prepare-*.log | grep -cFf <(printf '%s\n' "$secret_lines") || true)
((leaks == 0)) || fail "$leaks log lines contain private key material"
echo "   key files 0400/0600 owned by uid 1000 on $hosts hosts; $(wc -l <<<"$secret_lines") key lines found in no log"

if [[ -n "$NIMSTACK_LAB_OFFLINE" ]]; then
  step "nothing reached outside the lab network from the dry run on"
  refused_now=$(tests/lab/bundle.sh cut-count)
  ((refused_now == refused_before)) \
    || fail "the cut refused $((refused_now - refused_before)) packets for outside the lab since the dry run began"
  echo "   the cut refused 0 packets since the dry run began ($refused_before before it, by the apt-get update above):" \
    "the dry run and the preparation took everything from the bundle and the lab"
fi

step "down leaves nothing behind"
if [[ -n "${LAB_KEEP:-}" ]]; then
  echo "   LAB_KEEP set: the lab stays up"
  exit 0
fi
lab_down
trap - EXIT
left=$(docker ps -aq --filter "label=nimstack.lab=$prefix" | wc -l)
vols=$(docker volume ls -q --filter "name=^$prefix-[0-9]+-docker\$" | wc -l)
((left == 0 && vols == 0)) || fail "$left containers and $vols volumes left"
! docker network inspect "$prefix" >/dev/null 2>&1 || fail "network $prefix left"
[[ ! -e $NIMSTACK_LAB_DIR ]] || fail "$NIMSTACK_LAB_DIR left"
echo "   nothing left"
echo "test-lab.sh: passed"
