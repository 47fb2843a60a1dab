#!/usr/bin/env bash
# Prove the lab's stand-in NIM image for real, for each launch contract: 1 leader + 2 workers on a
# Docker network of their own, started exactly as nim_env's build_env says (TP 1, PP 3), with a
# shared model cache filled by the leader from the lab's model source. Every contract must turn
# ready only once every worker joined, answer a chat completion with all three hosts, show each
# worker joining in the leader's log, and fail the endpoint and end the leader within bounds when
# a worker dies.
#   mpi             a per-deployment RSA key, pinned known_hosts and a hostfile; the workers' sshd
#                   accepting the key; after the kill: the group restarts and serves again without
#                   a second download, a new leader alone takes the workers, and a frozen worker
#                   (docker pause, or SIGSTOP to its processes where the freezer gives up) fails
#                   the bounded collectives as well
#   ray             a real Ray cluster with token authentication (RAY_AUTH_MODE=token, one token
#                   file for every rank); /v1/completions as well; a client without the token is
#                   refused; after the kill the other worker leaves on its own
#   leader_address  the TCP rendezvous on MASTER_ADDR:MASTER_PORT; workers started before the
#                   leader keep retrying; a duplicate rank is refused; after the kill the other
#                   worker leaves on its own
# Everything it made is removed at the end, whatever happens. Prints timings.
#
#   tests/lab/test-standin.sh [--contract mpi|ray|leader_address]...   (default: all three)
#
# NIMSTACK_STANDIN_IMAGE names an image to test instead of building tests/lab/standin.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
contracts=()
while (($#)); do
  case "$1" in
    --contract) (($# >= 2)) || { echo "test-standin.sh: --contract needs a value" >&2; exit 2; }; contracts+=("$2"); shift 2 ;;
    --contract=*) contracts+=("${1#--contract=}"); shift ;;
    *) echo "usage: test-standin.sh [--contract mpi|ray|leader_address]..." >&2; exit 2 ;;
  esac
done
((${#contracts[@]})) || contracts=(mpi ray leader_address)
for c in "${contracts[@]}"; do
  case "$c" in mpi|ray|leader_address) ;; *) echo "test-standin.sh: unknown contract $c" >&2; exit 2 ;; esac
done

prefix=${NIMSTACK_STANDIN_TEST_PREFIX:-nimstack-standin-test}
subnet=${NIMSTACK_STANDIN_TEST_SUBNET:-172.30.78.0/24}
ready_timeout=${NIMSTACK_STANDIN_READY_TIMEOUT:-120}
ray_ready_timeout=${NIMSTACK_STANDIN_RAY_READY_TIMEOUT:-300}
fail_timeout=${NIMSTACK_STANDIN_FAIL_TIMEOUT:-60}
rate=${NIMSTACK_STANDIN_TEST_RATE:-1048576}
# The model load time of the leader_address ranks (NIM_STANDIN_LOAD_S): ready must wait for it.
load_s=${NIMSTACK_STANDIN_TEST_LOAD_S:-6}
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

# Hang container $1 and every process in it. docker pause uses the cgroup freezer, which on
# cgroup v1 can give up ("OCI runtime pause failed: unable to freeze") when the container's
# processes do not all reach the frozen state in time; seen once in a clean-clone CI run, 3 s after
# the leader's mpirun reached the worker. Try it 3 times, then stop every process with SIGSTOP,
# which hangs the rank the same way. thaw undoes whichever it was: Docker knows a paused container.
container_pids() { docker top "$1" -eo pid | tail -n +2; }
freeze() {
  local try err pids
  for try in 1 2 3; do
    if err=$(docker pause "$1" 2>&1 >/dev/null); then return; fi
    step "docker pause $1 failed (try $try of 3): $err"
    sleep 1
  done
  mapfile -t pids < <(container_pids "$1")
  ((${#pids[@]})) || fail "no process of $1 to stop"
  kill -STOP "${pids[@]}"
  step "stopped the ${#pids[@]} processes of $1 with SIGSTOP instead"
}
thaw() {
  if [[ "$(docker container inspect -f '{{.State.Paused}}' "$1")" == true ]]; then
    docker unpause "$1" >/dev/null
  else
    container_pids "$1" | xargs -r kill -CONT
  fi
}

work=$(mktemp -d /var/tmp/nimstack-standin-test-XXXXXX)
chmod 0755 "$work"
# Outside $work, which the mpi test hands to uid 1000 as a whole (chown -R).
links=$(mktemp -d /var/tmp/nimstack-standin-links-XXXXXX)
cleanup() {
  local rc=$?
  if ((rc != 0)); then
    for c in "$leader" "${workers[@]}"; do
      echo "---- docker logs $c (last 30 lines)" >&2
      docker logs --tail 30 "$c" >&2 2>&1 || true
      # Ray's own logs, where the rank ran Ray.
      for f in gcs_server.out raylet.out; do
        docker cp "$c:/tmp/ray/session_latest/logs/$f" "$work/$c-$f" >/dev/null 2>&1 || continue
        echo "---- $c: Ray's $f (last 15 lines)" >&2
        tail -n 15 "$work/$c-$f" >&2
      done
    done
  fi
  docker rm -f "$leader" "${workers[@]}" "$prefix-dup" >/dev/null 2>&1 || true
  "$here/model-source.sh" down
  docker network rm "$prefix" >/dev/null 2>&1 || true
  rm -rf "$work" "$links"
  if docker ps -a --format '{{.Names}}' | grep -q "^$prefix-"; then
    echo "test-standin: containers left behind" >&2
    rc=1
  fi
  exit "$rc"
}
trap cleanup EXIT

step "building the stand-in image"
image=${NIMSTACK_STANDIN_IMAGE:-$("$here/build-standin.sh")}
step "image $image ($(docker image inspect -f '{{.Size}}' "$image" | awk '{printf "%d MB", $1 / 1e6}'))"
# Rate-limited, so that the leader's own download at start takes a few seconds during which it
# must be live but not ready.
model_url=$("$here/model-source.sh" up --rate "$rate")
step "model source at $model_url"
docker network create --driver bridge --subnet "$subnet" --gateway "$net_base.1" "$prefix" >/dev/null 2>&1 \
  || docker network inspect "$prefix" >/dev/null

# Env and command of every rank of one contract, from the collection's own build_env: writes
# $work/<contract>/<container>.env and .cmd (the command's words, each ended by a NUL).
write_env() {
  local contract=$1
  shift
  mkdir -p "$work/$contract"
  # The collection's own module, imported the way Ansible does: through a private
  # ansible_collections tree that points at this repository.
  mkdir -p "$links/ansible_collections/nimstack"
  ln -sfn "$repo" "$links/ansible_collections/nimstack/multinode"
  python3 - "$links" "$work/$contract" "$contract" "$subnet" "$leader_addr" \
    "$leader" "${workers[@]}" <<'PY'
import sys

collections, out, contract, cidr, leader_addr, leader = sys.argv[1:7]
workers = sys.argv[7:]
sys.path.insert(0, collections)
from ansible_collections.nimstack.multinode.plugins.module_utils import nim_env  # noqa: E402

options = {
    'mpi': dict(leader_name=leader,
                extra_env={'OMPI_MCA_btl_tcp_if_include': cidr, 'OMPI_MCA_oob_tcp_if_include': cidr}),
    # One token file for every rank of the group (the secret itself never goes through nim_env).
    'ray': dict(leader_address=leader_addr,
                extra_env={'RAY_AUTH_MODE': 'token', 'RAY_AUTH_TOKEN_PATH': '/run/nimstack/ray-token'}),
    'leader_address': dict(leader_address=leader_addr, socket_ifname='eth0'),
}[contract]
for rank, name in enumerate([leader] + workers):
    # Ray gets longer to form: three Ray nodes, a dozen Python processes, start on 2 cores.
    result = nim_env.build_env(node_rank=rank, tensor_parallel=1, pipeline_parallel=3,
                               mpi_start_timeout=240 if contract == 'ray' else 60,
                               launch_contract=contract, **options)
    assert result['role'] == ('leader' if rank == 0 else 'worker'), result['role']
    with open('%s/%s.env' % (out, name), 'w') as handle:
        for key in sorted(result['env']):
            handle.write('%s=%s\n' % (key, result['env'][key]))
    with open('%s/%s.cmd' % (out, name), 'w') as handle:
        handle.write(''.join(word + '\0' for word in result['command']))
PY
}
# The leader's and each worker's log, captured (grep reads captured text, never a pipe: with
# pipefail, grep -q closing a pipe early fails it).
expect_joined() {
  local leader_log w
  leader_log=$(docker logs "$leader" 2>&1)
  for w in "${workers[@]}"; do
    grep -q "joined from host $w" <<<"$leader_log" || fail "the leader's log does not show $w joining"
  done
  step "the leader's log shows both workers joining:"
  grep 'joined from host' <<<"$leader_log" | sed 's/^/    /'
}
# A chat completion (and $1 = also: a text completion) answered by all three hosts.
expect_answer() {
  local t=$SECONDS answer h
  answer=$(curl -sf --max-time 30 "$api/v1/chat/completions" -H 'Content-Type: application/json' \
    -d '{"model": "nimstack/standin-llm", "messages": [{"role": "user", "content": "who answers?"}]}') \
    || fail "the chat completion failed"
  for h in "$leader" "${workers[@]}"; do
    grep -q "$h (rank" <<<"$answer" || fail "the completion lacks $h: $answer"
  done
  step "chat completion in $((SECONDS - t))s names all 3 hosts: $(python3 -c 'import json,sys; print(json.load(sys.stdin)["choices"][0]["message"]["content"])' <<<"$answer")"
  if [[ "${1:-}" == also-text ]]; then
    answer=$(curl -sf --max-time 30 "$api/v1/completions" -H 'Content-Type: application/json' \
      -d '{"model": "nimstack/standin-llm", "prompt": "and now?", "max_tokens": 8}') || fail "the text completion failed"
    if ! grep -q '"object": "text_completion"' <<<"$answer" || ! grep -q "${workers[1]} (rank 2)" <<<"$answer"; then
      fail "/v1/completions did not answer with every rank: $answer"
    fi
    step "/v1/completions answered by all 3 hosts too"
  fi
  grep -q "took part" <<<"$(docker logs "$leader" 2>&1)" || fail "the leader's log does not show the ranks taking part"
}
# A streamed chat completion: server-sent events in the OpenAI format, read raw (every event a
# `data:` line, the last one [DONE]) and with the official OpenAI client (every rank's host in the
# streamed text).
expect_stream() {
  local raw events client
  raw=$(curl -sfN --max-time 30 "$api/v1/chat/completions" -H 'Content-Type: application/json' \
    -d '{"model": "nimstack/standin-llm", "stream": true, "stream_options": {"include_usage": true},
         "messages": [{"role": "user", "content": "stream"}]}') || fail "the streamed chat completion failed"
  events=$(grep -c '^data: ' <<<"$raw" || true)
  [[ "$(grep '^data: ' <<<"$raw" | tail -1)" == "data: [DONE]" ]] || fail "the stream does not end with data: [DONE]: $raw"
  grep -q '"object": "chat.completion.chunk"' <<<"$raw" || fail "the stream carries no chat.completion.chunk: $raw"
  grep -q '"usage": {' <<<"$raw" || fail "stream_options.include_usage gave no usage chunk"
  ((events > 5)) || fail "the stream came in $events events: $raw"
  client=$("$repo/.venv/bin/python" "$repo/tests/lab/openai-stream.py" "$api/v1" nimstack/standin-llm \
    --expect "$leader (rank 0)" --expect "${workers[1]} (rank 2)") || fail "the OpenAI client's stream failed: $client"
  step "streamed: $events server-sent events raw; the openai client: $client"
}
# The leader runs one request at a time (NIM_STANDIN_MAX_RUNNING=1): of three streams sent at
# once, one runs and two wait, as /v1/metrics shows while they stream; all three then complete.
expect_queue() {
  local pids=() i metrics running waiting
  for i in 1 2 3; do
    curl -sfN --max-time 30 -o "$work/queue-$i.out" "$api/v1/completions" -H 'Content-Type: application/json' \
      -d '{"prompt": "queue", "max_tokens": 60, "stream": true}' &
    pids+=($!)
  done
  sleep 0.6
  metrics=$(curl -sf --max-time 5 "$api/v1/metrics")
  running=$(sed -n 's/^num_requests_running{model_name="[^"]*"} //p' <<<"$metrics")
  waiting=$(sed -n 's/^num_requests_waiting{model_name="[^"]*"} //p' <<<"$metrics")
  for i in "${pids[@]}"; do wait "$i" || fail "a queued stream failed"; done
  [[ "$running" == 1 && "$waiting" =~ ^[12]$ ]] || fail "three streams at once on one slot: running=$running waiting=$waiting"
  for i in 1 2 3; do
    [[ "$(grep '^data: ' "$work/queue-$i.out" | tail -1)" == "data: [DONE]" ]] || fail "queued stream $i did not end with [DONE]"
  done
  metrics=$(curl -sf --max-time 5 "$api/v1/metrics")
  step "three streams on one slot: running $running, waiting $waiting while they streamed, all answered;" \
    "$(grep -E '^(num_requests_waiting|time_to_first_token_seconds_sum|request_success_total)' <<<"$metrics" | tr '\n' ' ')"
}
# After the leader is gone, the surviving worker $1 must leave on its own within fail_timeout.
expect_worker_leaves() {
  local since=$SECONDS deadline=$((SECONDS + fail_timeout))
  while [[ "$(docker container inspect -f '{{.State.Running}}' "$1")" == true ]]; do
    ((SECONDS < deadline)) || fail "$1 still runs ${fail_timeout}s after the leader exited"
    sleep 0.5
  done
  step "$1 left $((SECONDS - since))s after the leader, with status $(docker container inspect -f '{{.State.ExitCode}}' "$1"): $(docker logs --tail 1 "$1" 2>&1)"
}
remove_group() { docker rm -f "$leader" "${workers[@]}" >/dev/null 2>&1 || true; }

test_mpi() {
  write_env mpi
  # The deployment's key, the workers' host keys and the leader's pinned known_hosts: what the
  # collection's ssh mesh makes for a group. Owned by uid 1000, the user NIM runs as.
  ssh-keygen -q -t rsa -b 3072 -N '' -C "$prefix" -f "$work/private.key"
  chmod 0400 "$work/private.key"
  mkdir -p "$work/leader-ssh" "$work/mpi-cache"
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

  step "starting 2 workers and the leader"
  i=11
  for w in "${workers[@]}"; do
    mapfile -d '' -t cmd <"$work/mpi/$w.cmd"
    docker run -d --name "$w" --hostname "$w" --network "$prefix" --ip "$net_base.$i" \
      --env-file "$work/mpi/$w.env" \
      -v "$work/private.key:/opt/nim/llm/pk/private.key:ro" \
      -v "$work/$w-ssh:/opt/nim/llm/.ssh" \
      -v "$work/$w-confs:/ssh-confs" \
      -v "$work/mpi-cache:/model-store" \
      "$image" "${cmd[@]}" >/dev/null
    i=$((i + 1))
  done
  start=$SECONDS
  mapfile -d '' -t cmd <"$work/mpi/$leader.cmd"
  docker run -d --name "$leader" --hostname "$leader" --network "$prefix" --ip "$leader_addr" \
    --env-file "$work/mpi/$leader.env" -e "NIM_STANDIN_MODEL_URL=$model_url" \
    -e NIM_STANDIN_COLLECTIVE_TIMEOUT=5 -e NIM_STANDIN_HEARTBEAT_S=2 \
    -v "$work/private.key:/opt/nim/llm/pk/private.key:ro" \
    -v "$work/leader-ssh:/opt/nim/llm/.ssh" \
    -v "$work/hostfile:/etc/mpi/hostfile:ro" \
    -v "$work/mpi-cache:/model-store" \
    "$image" "${cmd[@]}" >/dev/null

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
  grep -q '^request_success_total{model_name="nimstack/standin-llm"} 1$' <<<"$metrics" || fail "/v1/metrics does not count the completion: $metrics"
  grep -q '^generation_tokens_total{model_name="nimstack/standin-llm"} [1-9]' <<<"$metrics" || fail "/v1/metrics counts no generated token"
  grep -q '^time_to_first_token_seconds_count{model_name="nimstack/standin-llm"} 1$' <<<"$metrics" || fail "/v1/metrics has no time to first token"
  step "/v1/metrics: $(grep -E '^(request_success_total|generation_tokens_total|num_request_max|time_to_first_token_seconds_sum)' <<<"$metrics" | tr '\n' ' ')"

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
  again=$(docker run --rm --network "$prefix" -v "$work/mpi-cache:/model-store" -e "NIM_STANDIN_MODEL_URL=$model_url" \
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
  # The killed job's daemons on the workers end once their SSH session drops. The new leader is the
  # same host name with mpirun at the same pid of a fresh container, so Open MPI gives its job the
  # same job family: a daemon of the old job still there makes the new one fail in orte_ess_init
  # (seen when the machine was idle and the restart came within a second). A restart policy's delay,
  # or the group supervisor restarting every rank, never meets them either.
  for w in "${workers[@]}"; do
    until ! docker top "$w" -eo pid,args | grep -q '[o]rted'; do
      ((SECONDS - start < 30)) || fail "the killed job's daemon still runs on $w after 30 s"
      sleep 0.5
    done
  done
  docker start "$leader" >/dev/null
  wait_ready
  answer=$(curl -sf --max-time 30 "$api/v1/chat/completions" -H 'Content-Type: application/json' \
    -d '{"messages": [{"role": "user", "content": "new leader?"}]}')
  for h in "${workers[@]}"; do
    grep -q "$h (rank" <<<"$answer" || fail "the new leader's group does not answer with $h: $answer"
  done
  step "the new leader was ready in $((SECONDS - start))s and answers with both workers"

  step "freezing ${workers[0]}"
  freeze "${workers[0]}"
  expect_group_down "freezing ${workers[0]}"
  leader_log=$(docker logs "$leader" 2>&1)
  grep -m1 'aborting the MPI job' <<<"$leader_log" | sed 's/^/    /'
  thaw "${workers[0]}"
  remove_group
}

# Start one rank of contract $1 in container $2 at address $3, with extra docker run options after.
start_rank() {
  local contract=$1 name=$2 addr=$3 cmd
  shift 3
  mapfile -d '' -t cmd <"$work/$contract/$name.cmd"
  docker run -d --name "$name" --hostname "$name" --network "$prefix" --ip "$addr" \
    --env-file "$work/$contract/$name.env" -v "$work/$contract-cache:/model-store" "$@" \
    "$image" "${cmd[@]}" >/dev/null
}

test_ray() {
  write_env ray
  mkdir -p "$work/ray-cache" "$work/ray-secret"
  # The group's token, one file for every rank, readable by uid 1000 only.
  head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/ray-secret/ray-token"
  chmod 0400 "$work/ray-secret/ray-token"
  chown -R 1000:1000 "$work/ray-cache" "$work/ray-secret"
  local token=(-v "$work/ray-secret/ray-token:/run/nimstack/ray-token:ro") i=11 w start code t
  step "ray: starting 2 workers (nim-serve-ray --head-address), then the leader (nim-serve-ray --head)"
  for w in "${workers[@]}"; do
    start_rank ray "$w" "$net_base.$i" "${token[@]}" --shm-size 128m
    i=$((i + 1))
  done
  start=$SECONDS
  start_rank ray "$leader" "$leader_addr" "${token[@]}" --shm-size 128m -e "NIM_STANDIN_MODEL_URL=$model_url" \
    -e NIM_STANDIN_COLLECTIVE_TIMEOUT=10 -e NIM_STANDIN_HEARTBEAT_S=2
  ready_timeout=$ray_ready_timeout wait_ready
  step "ray: ready in $((SECONDS - start))s after the leader started (download at $rate B/s included)"
  ((not_ready_live > 0)) || fail "the leader was never seen live (200) and not ready (503) before the group formed"
  expect_joined
  expect_answer also-text
  step "ray: idle CPU and memory: $(docker stats --no-stream --format '{{.Name}} {{.CPUPerc}} {{.MemUsage}}' \
    "$leader" "${workers[@]}" | sed "s/$prefix-//" | awk '{printf "%s %s %s; ", $1, $2, $3}')"
  # Token authentication is on: a client with no token and one with a wrong token are turned
  # away by the head, one with the group's token is let in.
  t=$SECONDS
  for code in none wrong; do
    local auth=()
    [[ "$code" == none ]] || auth=(-e RAY_AUTH_MODE=token -e RAY_AUTH_TOKEN=0123456789abcdef0123456789abcdef)
    docker run --rm --network "$prefix" "${auth[@]}" "$image" timeout 60 ray status --address "$leader_addr:6379" \
      >"$work/ray-status-$code.log" 2>&1 && fail "ray status with $code token was let in: $(tail -n 5 "$work/ray-status-$code.log")"
    grep -q 'InvalidAuthToken' "$work/ray-status-$code.log" \
      || fail "ray status with $code token failed, but not for its token: $(tail -n 5 "$work/ray-status-$code.log")"
  done
  step "ray: the head refused ray status with no token and with a wrong one (InvalidAuthToken) in $((SECONDS - t))s"
  t=$SECONDS
  docker run --rm --network "$prefix" -e RAY_AUTH_MODE=token -e RAY_AUTH_TOKEN_PATH=/run/nimstack/ray-token \
    "${token[@]}" "$image" timeout 60 ray status --address "$leader_addr:6379" >"$work/ray-status.log" 2>&1 \
    || fail "ray status with the group's token failed: $(tail -n 5 "$work/ray-status.log")"
  grep -q 'Active:' "$work/ray-status.log" || fail "ray status shows no active nodes: $(cat "$work/ray-status.log")"
  step "ray: ray status with the group's token lists $(grep -c ' node_' "$work/ray-status.log") nodes ($((SECONDS - t))s)"
  step "ray: killing ${workers[1]}"
  docker kill "${workers[1]}" >/dev/null
  expect_group_down "killing ${workers[1]}"
  docker logs --tail 3 "$leader" 2>&1 | sed 's/^/    /'
  expect_worker_leaves "${workers[0]}"
  remove_group
}

test_leader_address() {
  write_env leader_address
  mkdir -p "$work/leader_address-cache"
  chown 1000:1000 "$work/leader_address-cache"
  local i=11 w start leader_log dup
  step "leader_address: starting 2 workers (/opt/nim/start_server.sh), then the leader, 3 s later; model load time ${load_s}s"
  for w in "${workers[@]}"; do
    start_rank leader_address "$w" "$net_base.$i" -e "NIM_STANDIN_LOAD_S=$load_s"
    i=$((i + 1))
  done
  sleep 3
  start=$SECONDS
  start_rank leader_address "$leader" "$leader_addr" -e "NIM_STANDIN_MODEL_URL=$model_url" \
    -e NIM_STANDIN_COLLECTIVE_TIMEOUT=5 -e NIM_STANDIN_HEARTBEAT_S=2 -e "NIM_STANDIN_LOAD_S=$load_s" \
    -e NIM_STANDIN_MAX_RUNNING=1
  wait_ready
  step "leader_address: ready in $((SECONDS - start))s after the leader started (download at $rate B/s and the ${load_s}s load included)"
  ((SECONDS - start >= load_s)) || fail "ready after $((SECONDS - start))s, before the ${load_s}s model load could have ended"
  ((not_ready_live > 0)) || fail "the leader was never seen live (200) and not ready (503) while it downloaded"
  load_logged=$(docker logs "$leader" 2>&1 | sed -n 's/.*model downloaded and loaded in \([0-9.]*\) s.*/\1/p' | tail -1)
  python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= float(sys.argv[2]) else 1)' "${load_logged:-0}" "$load_s" \
    || fail "the leader's log says the load took ${load_logged:-nothing} s, not at least ${load_s} s"
  step "leader_address: the leader's log says the model was downloaded and loaded in $load_logged s"
  expect_joined
  expect_answer also-text
  expect_stream
  expect_queue
  # A second rank 1 is refused, and the group keeps serving.
  dup=$prefix-dup
  docker run --rm --name "$dup" --hostname "$dup" --network "$prefix" --env-file "$work/leader_address/${workers[0]}.env" \
    -e CLUSTER_START_TIMEOUT=20 -v "$work/leader_address-cache:/model-store" "$image" /opt/nim/start_server.sh \
    >"$work/dup.log" 2>&1 && fail "a duplicate rank 1 was let in: $(cat "$work/dup.log")"
  leader_log=$(docker logs "$leader" 2>&1)
  grep -q "refused a join .*rank 1 of $dup is taken by ${workers[0]}" <<<"$leader_log" \
    || fail "the leader's log does not show the duplicate rank refused"
  step "leader_address: a duplicate rank 1 was refused: $(grep -m1 'refused a join' <<<"$leader_log" | sed 's/.*WARNING: //')"
  expect_answer
  step "leader_address: killing ${workers[1]}"
  docker kill "${workers[1]}" >/dev/null
  expect_group_down "killing ${workers[1]}"
  docker logs --tail 3 "$leader" 2>&1 | sed 's/^/    /'
  expect_worker_leaves "${workers[0]}"
  remove_group
}

for contract in "${contracts[@]}"; do
  "$here/model-source.sh" reset >/dev/null
  c0=$SECONDS
  step "==== launch contract $contract"
  "test_$contract"
  remove_group
  step "==== launch contract $contract: PASS in $((SECONDS - c0))s"
done
step "PASS (${contracts[*]}) in $((SECONDS - t0))s"
