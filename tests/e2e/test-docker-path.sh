#!/usr/bin/env bash
# End-to-end test of the Docker path on a fresh 3-host lab (1 leader, 2 workers, TP 1 / PP 3,
# launch contract mpi) with the stand-in NIM image shipped as a `docker save` archive and its model
# from the lab's model source (on a lab cut off from the internet, as make test's: both in the
# offline bundle, from which each node downloads the image and the leader the model cache):
#   1. bad input (a layout the planner rejects, no NGC key for a registry pull, a group whose size
#      differs from PP) fails site.yml before any host changes, naming it;
#   2. a worker host stopped before the rollout: the leader is never started and the error names
#      the worker; once it is back, site.yml converges to ready and the smoke test passes;
#   3. the model came once (offline: the leader fetched the bundle's cache once, the model source
#      saw no download);
#   4. the leader really reached both workers over SSH (their sshd logs, the leader's log);
#   5. a worker rank killed after the rollout is restarted by its restart policy and the
#      endpoint is ready again (bounded wait); the next run restarts the group as a whole, naming
#      the rank that died; a dry run of the whole site after it (`site.yml --check --diff`) finds
#      nothing to change and touches nothing (containers, their states and start times, the
#      engine): the site's idempotence, proven without a second real run (the security and
#      contract tests run deploy_docker.yml again for real and expect changed=0);
#      A worker whose engine is down when a changed setting would restart the group: the run
#      fails naming it and leaves the group as it runs (no member re-forms it without the worker);
#   6. teardown.yml leaves no container, key or file behind, and removes nothing it did not make:
#      a container of a rank's (and of the downloader's) name without the collection's labels, a
#      directory beside the mesh group directories, a staging directory and a ruleset file
#      without the collection's marker, a registry login of the site all stay, reported.
# Every wait is bounded; timings are printed.
#
#   tests/e2e/test-docker-path.sh               the whole test
#   LAB_KEEP=1 tests/e2e/test-docker-path.sh    leave the lab up for a look (or for the next test)
#   LAB_REUSE=1 tests/e2e/test-docker-path.sh   start from the running lab (make test: the one
#                                             test-lab.sh prepared), else a fresh one
#   NIMSTACK_LAB_PREFIX=nd NIMSTACK_LAB_SUBNET=172.30.79.0/24 NIMSTACK_LAB_DIR=$PWD/build/lab-nd \
#     tests/e2e/test-docker-path.sh               a lab of its own beside another one
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
logs=build/docker-path-test
recover_timeout=${DOCKER_PATH_RECOVER_TIMEOUT:-240}
mkdir -p "$logs"
# shellcheck source=tests/e2e/lib-lab-test.sh
source "$repo/tests/e2e/lib-lab-test.sh"

# A bad input must fail before any host changes: nothing changed and no preparation task ran.
expect_refused() {
  local name=$1 pattern=$2; shift 2
  local log=$logs/bad-$name.log
  if play "$log" "$@"; then fail "bad input '$name' was accepted"; fi
  grep -q -- "$pattern" "$log" || { tail -30 "$log"; fail "bad input '$name': no message matching '$pattern'"; }
  (($(recap changed "$log") == 0)) || fail "bad input '$name' changed a host"
  ! grep -q 'TASK \[nimstack.multinode.docker' "$log" || fail "bad input '$name' reached host preparation"
  echo "   refused, naming it: $(grep -o -m1 -- "${pattern}[^\"]*" "$log" | cut -c1-150)"
}

trap '[[ -n "${LAB_KEEP:-}" ]] || lab_down >/dev/null 2>&1 || true' EXIT

step "fresh lab, model source and stand-in image archive"
lab_fresh build/standin/nim-standin.tar
if tests/lab/bundle.sh rule >/dev/null 2>&1; then
  refused_before=$(tests/lab/bundle.sh cut-count)
  # Offline (make test), the image comes from the bundle, as a site's does: no archive named, the
  # lab's bundle made again with the stand-in image in it (in a directory of the cache of its own,
  # so that other labs' bundle stays as it is) and served in its place; each node downloads the
  # archive from it and checks it against the bundle's images/SHA256SUMS.
  step "the stand-in image in the offline bundle: no archive named, the nodes load the bundle's"
  t=$SECONDS
  images_dir=$(tests/lab/bundle.sh make lab-images \
    "{\"nimstack_bundle_images\": [\"nimstack-lab/bundle-probe:1\", \"$image\"]}" 2>"$logs/bundle-images.txt") \
    || { cat "$logs/bundle-images.txt"; fail "the bundle with the stand-in image could not be made"; }
  tests/lab/bundle.sh up "$images_dir" >/dev/null
  play_args+=(-e nim_docker_image_archive=)
  image_file=${image//[\/:@]/_}.tar
  model_file=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["models"][0]["file"])' "$images_dir/manifest.json")
  echo "   $(tr -s ' ' <"$logs/bundle-images.txt" | grep -o 'fetched .*; saved [^;]*'), served at $(tests/lab/bundle.sh url):" \
    "$((SECONDS - t)) s"
fi

step "bad input fails before any host changes"
expect_refused layout "nim_tensor_parallel=3" -e nim_tensor_parallel=3
# Online: offline, an image no archive carries in comes from the bundle and needs no key.
expect_refused ngc-key "nim_ngc_api_key (nim_docker_ngc_api_key) is empty" -e nim_docker_image_archive= -e nimstack_bundle_url=
expect_refused pp "has 3 hosts" -e nim_pipeline_parallel=2
# Two leaders, and an offline run whose bundle lacks an item, are the bad inputs' test's and the lab
# test's (no host reached, the item named).

step "a worker host down before the rollout: the leader is never started"
docker stop "${workers[1]}" >/dev/null
if play "$logs/worker-down.log"; then fail "site.yml passed with ${workers[1]} down"; fi
grep -q "${workers[1]}" "$logs/worker-down.log" || fail "the failure does not name ${workers[1]}"
(($(nim_containers "$leader") == 0)) || fail "a NIM container exists on the leader $leader"
echo "   failed naming ${workers[1]}: $(grep -m1 -o "${workers[1]}[^\"]*" "$logs/worker-down.log" | cut -c1-150)"
echo "   no NIM container on the leader"
docker start "${workers[1]}" >/dev/null
deadline=$((SECONDS + boot_timeout))
until on "${workers[1]}" systemctl is-active --quiet ssh 2>/dev/null; do
  ((SECONDS < deadline)) || fail "${workers[1]} did not boot within ${boot_timeout}s"
  sleep 1
done

step "site.yml with the worker back: ready and smoke test"
play "$logs/site-1.log" || { tail -60 "$logs/site-1.log"; fail "site.yml (see $logs/site-1.log)"; }
grep -A14 'Report the smoke test' "$logs/site-1.log" | grep -E 'time_to_first_byte_s|total_s|reply|^ +- ' | sed 's/^ */   /'
probe_ready || fail "the endpoint is not ready after site.yml"
if [[ -n ${images_dir:-} ]]; then
  fetched=$(docker logs "$prefix-bundle" 2>&1 | grep -c "\"GET /images/$image_file HTTP/1.[01]\" 200" || true)
  sums=$(docker logs "$prefix-bundle" 2>&1 | grep -c '"GET /images/SHA256SUMS HTTP/1.[01]" 200' || true)
  ((fetched == 3)) || fail "the nodes fetched images/$image_file $fetched times from the bundle, not once each"
  echo "   each of the 3 nodes fetched images/$image_file ($(du -m "$images_dir/images/$image_file" | cut -f1) MiB)" \
    "from the bundle once, checked against images/SHA256SUMS ($sums reads), and loaded it"
fi
# Offline, the leader unpacks the model cache of the bundle's models/ and nothing reaches the
# model source; online, the leader downloads it once.
model_fetches() { docker logs "$prefix-bundle" 2>&1 | grep -c "\"GET /models/$model_file HTTP/1.[01]\" 200" || true; }
downloads=$(tests/lab/model-source.sh count)
if [[ -n ${images_dir:-} ]]; then
  ((downloads == 0)) || fail "offline, the model was downloaded $downloads times from the lab's model source"
  (($(model_fetches) == 1)) || fail "the leader fetched models/$model_file $(model_fetches) times from the bundle, not once"
  echo "   the leader fetched models/$model_file ($(du -k "$images_dir/models/$model_file" | cut -f1) KiB) from the bundle" \
    "once and unpacked it into the shared cache; downloads from the model source: 0"
else
  echo "   model downloads from the source: $downloads"
  ((downloads == 1)) || fail "the model was downloaded $downloads times, not once"
fi

step "the leader reached both workers over SSH"
leader_log=$(on "$leader" docker logs "$container" 2>&1)
for w in "${workers[@]}"; do
  addr=$(lab_addr "$w")
  accepted=$(on "$w" docker logs "$container" 2>&1 | grep -c 'Accepted publickey' || true)
  ((accepted > 0)) || fail "$w: its sshd logged no 'Accepted publickey'"
  grep -q "$addr" <<<"$leader_log" || fail "the leader's log never names $w ($addr)"
  echo "   $w ($addr): sshd accepted the deployment key $accepted time(s); leader log: $(grep -m1 "$addr" <<<"$leader_log" | cut -c1-120)"
done

step "a worker rank killed after the rollout comes back by its restart policy"
w=${workers[0]}
before=$(on "$w" docker inspect -f '{{.RestartCount}}' "$container")
kill_rank "$w"
t=$SECONDS
deadline=$((SECONDS + recover_timeout))
# First the endpoint has to notice (the group breaks), then become ready again.
# Serving again means a completion that crosses every rank, not only a ready leader that has not
# noticed the loss yet.
until (($(on "$w" docker inspect -f '{{.RestartCount}}' "$container") > before)) && probe_ready \
    && smoke >"$logs/recovered.json" 2>&1 && grep -q '3 ranks answered' "$logs/recovered.json"; do
  ((SECONDS < deadline)) || fail "not serving again within ${recover_timeout}s after killing the rank on $w"
  sleep 2
done
echo "   $w restarted ($(on "$w" docker inspect -f '{{.RestartCount}}' "$container") restarts), the leader" \
  "$(on "$leader" docker inspect -f '{{.RestartCount}}' "$container") restarts; serving again after $((SECONDS - t)) s:" \
  "$(cut -c1-160 "$logs/recovered.json")"
# Docker brought the rank back, but the group formed without it: the next run restarts the whole
# group and says why; a dry run of the whole site after that finds nothing to do and touches
# nothing (every host in the recap, the same containers, states and engine start times).
PLAYBOOK=playbooks/deploy_docker.yml play "$logs/after-recovery.log" || fail "deploy after recovery"
log_says "$logs/after-recovery.log" "restarting the whole group .* ranks not current: .*$w (died and was restarted by Docker" \
  || fail "the run after recovery did not restart the group naming the rank that died on $w"
runtime_state() {
  local h
  for h in "$leader" "${workers[@]}"; do
    echo "### $h"
    on "$h" sh -c 'docker ps -aq | xargs -r docker inspect -f "{{.Id}} {{.State.Status}} {{.State.StartedAt}}"
      systemctl show -p ActiveEnterTimestampMonotonic docker.service containerd.service'
  done
}
runtime_state >"$logs/state-before-check.txt"
play "$logs/after-recovery-check.log" --check --diff || { tail -40 "$logs/after-recovery-check.log"; fail "site.yml --check on the converged lab"; }
runtime_state >"$logs/state-after-check.txt"
diff "$logs/state-before-check.txt" "$logs/state-after-check.txt" || fail "site.yml --check changed what runs"
changed=$(recap changed "$logs/after-recovery-check.log")
((changed == 0)) || { grep -B3 '^changed:' "$logs/after-recovery-check.log" | head -30; fail "the dry run after recovery would change $changed"; }
recaps=$(grep -cE "^($leader|$(IFS='|'; echo "${workers[*]}")) +: ok=" "$logs/after-recovery-check.log" || true)
((recaps == 1 + ${#workers[@]})) || fail "the dry run's recap names $recaps hosts"
downloads=$(tests/lab/model-source.sh count)
if [[ -n ${images_dir:-} ]]; then
  ((downloads == 0 && $(model_fetches) == 1)) || fail "the runs after the first fetched the model again"
else
  ((downloads == 1)) || fail "the runs after the first downloaded the model again ($downloads)"
fi
echo "   the next run restarted the group naming $w; site.yml --check --diff after it: nothing to change," \
  "$(grep -c . "$logs/state-before-check.txt") lines of containers, states and engine start times untouched"

step "a worker whose engine is down: the group is left as it runs and the run names the worker"
# A changed setting would restart the whole group; the worker's engine is down (its rank runs on,
# live-restore), so the run fails on it before any wave: no member may re-form the group without it.
w=${workers[1]}
before=$(on "$leader" docker inspect -f '{{.Id}} {{.State.StartedAt}} {{.State.Running}}' "$container")
on "$w" systemctl stop docker.socket docker.service
if PLAYBOOK=playbooks/deploy_docker.yml play "$logs/worker-broken.log" -e nim_log_level=DEBUG; then
  fail "deploy passed with the engine of $w down"
fi
log_says "$logs/worker-broken.log" "default: $w failed earlier in this run, so no wave changes them" \
  || { tail -30 "$logs/worker-broken.log"; fail "the run does not name the worker $w and the group it left"; }
[[ $(on "$leader" docker inspect -f '{{.Id}} {{.State.StartedAt}} {{.State.Running}}' "$container") == "$before" ]] \
  || fail "the leader's rank was changed although its worker $w failed in the run"
echo "   failed naming $w; the leader's rank untouched: ${before:0:12} ... running ${before##* }"
# That the next run converges once the worker is back is step 2's (a worker host down, then back)
# and step 5's (the group restarted as a whole); teardown below takes the group as it is.
on "$w" systemctl start docker.service

step "teardown removes what the collection made, and nothing else"
# Things of the site with the names the collection uses, none carrying its mark.
w0=${workers[0]} w1=${workers[1]}
site_login='{"auths": {"nvcr.io": {"auth": "c2l0ZTpzaXRl"}}}'
on "$leader" sh -c 'mkdir -p /etc/nimstack/mesh/site-notes && echo site >/etc/nimstack/mesh/site-notes/keep.txt'
on "$w0" docker run -d --name "$container-download" --label site=yes --entrypoint sleep "$image" 3600 >/dev/null
on "$w0" sh -c 'printf "table inet site {}\n" >/etc/nimstack/nftables-nimstack.nft'
on "$w0" sh -c "mkdir -p /root/.docker && printf '%s\n' '$site_login' >/root/.docker/config.json"
on "$w1" docker rm -f "$container" >/dev/null
on "$w1" docker run -d --name "$container" --label site=yes --entrypoint sleep "$image" 3600 >/dev/null
on "$w1" sh -c 'mkdir -p /var/tmp/nimstack-images && echo site >/var/tmp/nimstack-images/site.txt'
# An image from a registry (its key only passes the preflight), so that teardown decides about
# the registry login too.
PLAYBOOK=playbooks/teardown.yml play "$logs/teardown.log" -e nim_docker_image_archive= -e nim_ngc_api_key=unused \
  || fail "teardown (see $logs/teardown.log)"
for c in "$w0:$container-download" "$w1:$container"; do
  (($(on "${c%%:*}" docker ps -q --filter "name=^${c#*:}\$" --filter label=site=yes | wc -l) == 1)) \
    || fail "${c%%:*}: the site's container ${c#*:} was removed"
  log_says "$logs/teardown.log" "the container ${c#*:} on ${c%%:*} is not a container of deployment group default .* teardown left it as it is" \
    || fail "teardown did not report the site's container ${c#*:} on ${c%%:*}"
done
[[ $(on "$leader" cat /etc/nimstack/mesh/site-notes/keep.txt) == site ]] || fail "$leader: the site's directory beside the mesh went"
[[ $(on "$leader" ls -A /etc/nimstack/mesh | tr '\n' ' ') == '.nimstack-managed site-notes ' ]] \
  || fail "$leader: the mesh directory holds $(on "$leader" ls -A /etc/nimstack/mesh)"
[[ $(on "$w0" cat /etc/nimstack/nftables-nimstack.nft) == 'table inet site {}' ]] || fail "$w0: the site's ruleset file went"
on "$w0" grep -q c2l0ZTpzaXRl /root/.docker/config.json || fail "$w0: teardown logged the site out of the registry"
[[ $(on "$w1" cat /var/tmp/nimstack-images/site.txt) == site ]] || fail "$w1: the site's staging directory went"
echo "   the site's containers, mesh neighbour, ruleset file, staging directory and registry login stayed"
on "$leader" rm -r /etc/nimstack/mesh
on "$w0" docker rm -f "$container-download" >/dev/null
on "$w0" rm /etc/nimstack/nftables-nimstack.nft /root/.docker/config.json
on "$w1" docker rm -f "$container" >/dev/null
on "$w1" rm -r /var/tmp/nimstack-images
for h in "$leader" "${workers[@]}"; do
  n=$(nim_containers "$h")
  files=$(on "$h" sh -c 'find /etc/nimstack /var/tmp/nimstack-images -mindepth 1 2>/dev/null | wc -l')
  ((n == 0)) || fail "$h: $n NIM containers left"
  ((files == 0)) || fail "$h: $(on "$h" find /etc/nimstack -mindepth 1) left"
  ! on "$h" grep -qs nvcr.io /root/.docker/config.json || fail "$h: a registry login is left"
done
echo "   no container, key or file left on any host"
PLAYBOOK=playbooks/teardown.yml play "$logs/teardown-2.log" || fail "second teardown"
((($(recap changed "$logs/teardown-2.log")) == 0)) || fail "a second teardown changed something"

# On a lab cut off from the internet (tests/lab/bundle.sh), nothing of the whole test reached out.
if [[ -n "${refused_before:-}" ]]; then
  refused_now=$(tests/lab/bundle.sh cut-count)
  ((refused_now == refused_before)) || fail "the cut refused $((refused_now - refused_before)) packets for outside the lab"
  echo "   the lab is cut off from the internet: the cut refused 0 packets during the test"
fi

trap - EXIT
if [[ -z "${LAB_KEEP:-}" ]]; then
  lab_down
fi
echo "test-docker-path.sh: passed in $((SECONDS - t_start)) s"
