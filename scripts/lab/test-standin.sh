#!/usr/bin/env bash
# Prove the lab's stand-in NIM image for real: 1 leader + 2 workers on a Docker network of their
# own, started exactly as nim_env's build_env says (TP 1, PP 3, launch contract mpi), with a
# per-deployment RSA key, pinned known_hosts, a hostfile and a shared model cache filled from the
# lab's model source. Checks readiness, /v1/models, a chat completion answered by all three
# hosts, the workers' sshd accepting the deployment key and every worker joining in the leader's
# log; then kills a worker and checks that the endpoint fails and the leader exits within bounds;
# restarts the group (what the launcher's restart does) and checks that it serves again without a
# second download; then freezes a worker (docker pause: alive but silent) and checks that the
# bounded collectives fail the endpoint and end the leader as well.
# Everything it made is removed at the end, whatever happens. Prints timings.
#
#   scripts/lab/test-standin.sh
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
prefix=${NIMSTACK_STANDIN_TEST_PREFIX:-nimstack-standin-test}
subnet=${NIMSTACK_STANDIN_TEST_SUBNET:-172.30.78.0/24}
ready_timeout=${NIMSTACK_STANDIN_READY_TIMEOUT:-120}
fail_timeout=${NIMSTACK_STANDIN_FAIL_TIMEOUT:-60}
rate=${NIMSTACK_STANDIN_TEST_RATE:-1048576}
net_base=${subnet%.*}
leader=$prefix-leader
workers=("$prefix-w1" "$prefix-w2")
leader_addr=$net_base.10
api=http://$leader_addr:8000
# The model source of this test lives on the test's own network, as the lab's lives on the lab's.
export NIMSTACK_LAB_PREFIX=$prefix NIMSTACK_LAB_NETWORK=$prefix NIMSTACK_LAB_SUBNET=$subnet

t0=$SECONDS
# Wait for ready; counts in not_ready_live the polls that found the leader live but not ready.
not_ready_live=0
wait_ready() {
  local deadline=$((SECONDS + ready_timeout)) code
  not_ready_live=0
  until code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 3 "$api/v1/health/ready"); [[ "$code" == 200 ]]; do
    if [[ "$code" == 503 && "$(curl -s -o /dev/null -w '%{http_code}' --max-time 3 "$api/v1/health/live")" == 200 ]]; then
      not_ready_live=$((not_ready_live + 1))
    fi
    [[ "$(docker container inspect -f '{{.State.Running}}' "$leader")" == true ]] || fail "the leader exited before ready"
    ((SECONDS < deadline)) || fail "not ready within ${ready_timeout}s"
    sleep 0.5
  done
}
# A completion with a broken group must fail, and the leader must then exit; $1 is what broke it.
expect_group_down() {
  local since=$SECONDS code deadline
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time "$fail_timeout" "$api/v1/chat/completions" \
    -H 'Content-Type: application/json' -d '{"messages": [{"role": "user", "content": "still there?"}]}' || true)
  [[ "$code" != 200 ]] || fail "a completion succeeded after $1"
  step "completion after $1 failed in $((SECONDS - since))s (HTTP ${code/000/000: no connection})"
  deadline=$((since + fail_timeout))
  while [[ "$(docker container inspect -f '{{.State.Running}}' "$leader")" == true ]]; do
    ((SECONDS < deadline)) || fail "the leader still runs ${fail_timeout}s after $1"
    sleep 0.5
  done
  step "leader exited $((SECONDS - since))s after $1 with status $(docker container inspect -f '{{.State.ExitCode}}' "$leader")"
}
step() { echo "test-standin: [$((SECONDS - t0))s] $*"; }
fail() { echo "test-standin: FAIL: $*" >&2; exit 1; }

work=$(mktemp -d /var/tmp/nimstack-standin-test-XXXXXX)
cleanup() {
  local rc=$?
  if ((rc != 0)); then
    for c in "$leader" "${workers[@]}"; do
      echo "---- docker logs $c (last 30 lines)" >&2
      docker logs --tail 30 "$c" >&2 2>&1 || true
    done
  fi
  docker rm -f "$leader" "${workers[@]}" >/dev/null 2>&1 || true
  "$here/model-source.sh" down
  docker network rm "$prefix" >/dev/null 2>&1 || true
  rm -rf "$work"
  if docker ps -a --format '{{.Names}}' | grep -q "^$prefix-"; then
    echo "test-standin: containers left behind" >&2
    rc=1
  fi
  exit "$rc"
}
trap cleanup EXIT

step "building the stand-in image"
image=$("$here/build-standin.sh")
step "image $image ($(docker image inspect -f '{{.Size}}' "$image" | awk '{printf "%d MB", $1 / 1e6}'))"
# Rate-limited, so that the leader's own download at start takes a few seconds during which it
# must be live but not ready.
model_url=$("$here/model-source.sh" up --rate "$rate")
step "model source at $model_url"

# The deployment's key, the workers' host keys and the leader's pinned known_hosts: what the
# collection's ssh mesh makes for a group. Owned by uid 1000, the user NIM runs as.
ssh-keygen -q -t rsa -b 3072 -N '' -C "$prefix" -f "$work/private.key"
chmod 0400 "$work/private.key"
mkdir -p "$work/leader-ssh" "$work/cache"
: >"$work/leader-ssh/known_hosts"
for w in "${workers[@]}"; do
  mkdir -p "$work/$w-ssh" "$work/$w-confs"
  ssh-keygen -q -t ed25519 -N '' -C "$w" -f "$work/$w-confs/ssh_host_ed25519_key"
  read -r type key _ <"$work/$w-confs/ssh_host_ed25519_key.pub"
  echo "[$w]:2222 $type $key" >>"$work/leader-ssh/known_hosts"
done
cat >"$work/leader-ssh/config" <<CONFIG
Host *
  IdentityFile /opt/nim/llm/pk/private.key
  IdentitiesOnly yes
  StrictHostKeyChecking yes
  UserKnownHostsFile /opt/nim/llm/.ssh/known_hosts
CONFIG
{
  echo "localhost slots=1"
  for w in "${workers[@]}"; do echo "$w slots=1"; done
} >"$work/hostfile"
chmod 0600 "$work/leader-ssh/"* "$work"/*-confs/ssh_host_ed25519_key
chmod 0700 "$work/leader-ssh" "$work"/*-ssh
chmod 0644 "$work/hostfile"
chown -R 1000:1000 "$work"

# Env and command of every rank, from the collection's own build_env.
python3 - "$repo/plugins/module_utils/nim_env.py" "$work" "$leader" "$subnet" "${workers[@]}" <<'PY'
import importlib.util
import sys

path, work, leader, cidr = sys.argv[1:5]
workers = sys.argv[5:]
spec = importlib.util.spec_from_file_location('nim_env', path)
nim_env = importlib.util.module_from_spec(spec)
spec.loader.exec_module(nim_env)
extra = {'OMPI_MCA_btl_tcp_if_include': cidr, 'OMPI_MCA_oob_tcp_if_include': cidr}
for rank, name in enumerate([leader] + workers):
    result = nim_env.build_env(node_rank=rank, tensor_parallel=1, pipeline_parallel=3, mpi_start_timeout=60,
                               leader_name=leader, extra_env=extra)
    assert result['role'] == ('leader' if rank == 0 else 'worker'), result['role']
    with open('%s/%s.env' % (work, name), 'w') as handle:
        for key in sorted(result['env']):
            handle.write('%s=%s\n' % (key, result['env'][key]))
    assert result['command'][:2] == ['/bin/bash', '-c'], result['command']
    with open('%s/%s.cmd' % (work, name), 'w') as handle:
        handle.write(result['command'][2])
PY

docker network create --driver bridge --subnet "$subnet" --gateway "$net_base.1" "$prefix" >/dev/null 2>&1 \
  || docker network inspect "$prefix" >/dev/null

step "starting 2 workers and the leader"
i=11
for w in "${workers[@]}"; do
  docker run -d --name "$w" --hostname "$w" --network "$prefix" --ip "$net_base.$i" \
    --env-file "$work/$w.env" \
    -v "$work/private.key:/opt/nim/llm/pk/private.key:ro" \
    -v "$work/$w-ssh:/opt/nim/llm/.ssh" \
    -v "$work/$w-confs:/ssh-confs" \
    -v "$work/cache:/model-store" \
    "$image" /bin/bash -c "$(cat "$work/$w.cmd")" >/dev/null
  i=$((i + 1))
done
start=$SECONDS
docker run -d --name "$leader" --hostname "$leader" --network "$prefix" --ip "$leader_addr" \
  --env-file "$work/$leader.env" -e "NIM_STANDIN_MODEL_URL=$model_url" \
  -e NIM_STANDIN_COLLECTIVE_TIMEOUT=5 -e NIM_STANDIN_HEARTBEAT_S=2 \
  -v "$work/private.key:/opt/nim/llm/pk/private.key:ro" \
  -v "$work/leader-ssh:/opt/nim/llm/.ssh" \
  -v "$work/hostfile:/etc/mpi/hostfile:ro" \
  -v "$work/cache:/model-store" \
  "$image" /bin/bash -c "$(cat "$work/$leader.cmd")" >/dev/null

wait_ready
step "ready in $((SECONDS - start))s after the leader started (download at $rate B/s included)"
((not_ready_live > 0)) || fail "the leader was never seen live (200) and not ready (503) while it downloaded"
step "seen live and not ready $not_ready_live times while the model downloaded"
# Idle ranks poll their barrier with sleeps instead of spinning in a blocking collective.
step "idle CPU and memory: $(docker stats --no-stream --format '{{.Name}} {{.CPUPerc}} {{.MemUsage}}' \
  "$leader" "${workers[@]}" | sed "s/$prefix-//" | awk '{printf "%s %s %s; ", $1, $2, $3}')"

models=$(curl -sf --max-time 5 "$api/v1/models")
grep -q '"id": "nimstack/standin-llm"' <<<"$models" || fail "/v1/models lacks the model: $models"
step "/v1/models: $models"

t=$SECONDS
answer=$(curl -sf --max-time 30 "$api/v1/chat/completions" -H 'Content-Type: application/json' \
  -d '{"model": "nimstack/standin-llm", "messages": [{"role": "user", "content": "who answers?"}]}')
for h in "$leader" "${workers[@]}"; do
  grep -q "$h (rank" <<<"$answer" || fail "the completion lacks $h: $answer"
done
step "chat completion in $((SECONDS - t))s names all 3 hosts: $(python3 -c 'import json,sys; print(json.load(sys.stdin)["choices"][0]["message"]["content"])' <<<"$answer")"
metrics=$(curl -sf --max-time 5 "$api/v1/metrics")
grep -q 'nim_standin_requests_total{outcome="ok"} 1' <<<"$metrics" || fail "/v1/metrics does not count the completion"

leader_log=$(docker logs "$leader" 2>&1)
for w in "${workers[@]}"; do
  worker_log=$(docker logs "$w" 2>&1)
  grep -q 'Accepted publickey for nim' <<<"$worker_log" || fail "$w's sshd shows no accepted deployment key"
  grep -q "joined from host $w" <<<"$leader_log" || fail "the leader's log does not show $w joining"
done
step "workers' sshd accepted the deployment key; the leader's log shows both workers joining:"
grep 'joined from host' <<<"$leader_log" | sed 's/^/    /'
[[ "$("$here/model-source.sh" count)" == 1 ]] || fail "expected exactly 1 download by the leader"
# grep reads captured text, never a pipe: with pipefail, grep -q closing a pipe early fails it.
again=$(docker run --rm --network "$prefix" -v "$work/cache:/model-store" -e "NIM_STANDIN_MODEL_URL=$model_url" \
  "$image" download-to-cache 2>&1)
grep -q 'is complete, nothing to download' <<<"$again" || fail "download-to-cache did not skip the complete cache: $again"
[[ "$("$here/model-source.sh" count)" == 1 ]] || fail "download-to-cache downloaded a complete cache again"
step "one-shot download-to-cache skipped the complete cache; model source counted 1 download in all"

step "killing ${workers[1]}"
docker kill "${workers[1]}" >/dev/null
expect_group_down "killing ${workers[1]}"
docker logs --tail 3 "$leader" 2>&1 | sed 's/^/    /'

step "restarting the group (worker first, then the leader, as a restart policy or the launcher does)"
docker start "${workers[1]}" >/dev/null
start=$SECONDS
docker start "$leader" >/dev/null
wait_ready
step "ready again in $((SECONDS - start))s"
answer=$(curl -sf --max-time 30 "$api/v1/chat/completions" -H 'Content-Type: application/json' \
  -d '{"messages": [{"role": "user", "content": "back?"}]}')
grep -q "${workers[1]} (rank" <<<"$answer" || fail "the restarted group does not answer with ${workers[1]}: $answer"
[[ "$("$here/model-source.sh" count)" == 1 ]] || fail "the restarted leader downloaded the model again"
step "the restarted group answers with all 3 hosts; still 1 download"

step "killing the leader alone, then starting it again: the workers must take a new job"
docker kill "$leader" >/dev/null
start=$SECONDS
docker start "$leader" >/dev/null
wait_ready
answer=$(curl -sf --max-time 30 "$api/v1/chat/completions" -H 'Content-Type: application/json' \
  -d '{"messages": [{"role": "user", "content": "new leader?"}]}')
for h in "${workers[@]}"; do
  grep -q "$h (rank" <<<"$answer" || fail "the new leader's group does not answer with $h: $answer"
done
step "the new leader was ready in $((SECONDS - start))s and answers with both workers"

step "freezing ${workers[0]} (docker pause)"
docker pause "${workers[0]}" >/dev/null
expect_group_down "freezing ${workers[0]}"
leader_log=$(docker logs "$leader" 2>&1)
grep -m1 'aborting the MPI job' <<<"$leader_log" | sed 's/^/    /'
docker unpause "${workers[0]}" >/dev/null
step "PASS in $((SECONDS - t0))s"
