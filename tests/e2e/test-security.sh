#!/usr/bin/env bash
# The group security rules on a 4-host lab: two 2-node deployment groups in one inventory, `a` under mpi (hosts
# 1, 2) and `b` under ray (hosts 3, 4), one site.yml run (with -vvv and a stand-in NGC key), then:
#   1. while both serve, from the other group's hosts the worker's sshd (2222), the Ray head, an
#      MPI and a Ray port a worker listens on and the API from a source outside
#      nim_api_allowed_cidrs are closed; from members (and an allowed source, for the API) open;
#   2. no Ray token, deployment key or NGC key in the -vvv output, in any process's arguments on
#      the hosts, in a file on them that a non-root user (nobody) or a login account with the
#      containers' uid 1000 can read, in an Ansible background job's result file, or in a process
#      environment that account reads (the serving ranks run as uid 1000 and, the cache being
#      filled by the downloader, carry no NGC key);
#   3. a re-run of deploy_docker.yml changes nothing;
#   4. firewall switched off (its table goes, every other table stays byte-identical): a Ray client
#      (ray status) without the token is refused, with it answers; the deployment key from a non-member is
#      refused by the worker's sshd, from a member accepted;
#   5. a daemon.json change only a dockerd restart applies, with live-restore off, on a member of
#      each group (tests/lab/check-rolling-restart.sh): probed every second, never both groups
#      down, each re-forms and serves again; a client streaming through the front door (on host 1,
#      both groups in its pool) sees no failure: each wave drains its group from the front door
#      before the restart stops it; a site's log-driver and default-runtime survive;
#   6. firewall on again, then teardown.yml: no table, no ruleset file, no token, no key, and the
#      other tables as before.
# Every connect and wait is bounded; timings are printed.
#
#   tests/e2e/test-security.sh               the whole test
#   LAB_KEEP=1 tests/e2e/test-security.sh    leave the lab up for a look
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
logs=build/security-test
mkdir -p "$logs"
# A lab of its own, so that it can run beside the lab the other Docker path tests share.
export NIMSTACK_LAB_PREFIX=${NIMSTACK_LAB_PREFIX:-nimstack-sec}
export NIMSTACK_LAB_SUBNET=${NIMSTACK_LAB_SUBNET:-172.30.83.0/24}
export NIMSTACK_LAB_DIR=${NIMSTACK_LAB_DIR:-$repo/build/lab-sec}
# shellcheck source=tests/e2e/lib-lab-test.sh
source "$repo/tests/e2e/lib-lab-test.sh"

h1=$prefix-1 h2=$prefix-2 h3=$prefix-3 h4=$prefix-4
hosts=("$h1" "$h2" "$h3" "$h4")
group_dir=/etc/nimstack/nim
rules=/etc/nimstack/nftables-nimstack.nft

# Bounded TCP connects from one host, all at once: prints "ip:port open|closed" per target.
probe() {
  local from=$1; shift
  docker exec -i "$from" python3 - "$@" <<'EOF'
import socket, sys, threading
out = {}
def one(target):
    host, port = target.rsplit(':', 1)
    s = socket.socket()
    s.settimeout(3)
    try:
        s.connect((host, int(port)))
        out[target] = 'open'
    except OSError as exc:
        out[target] = 'closed (%s)' % type(exc).__name__
    finally:
        s.close()
threads = [threading.Thread(target=one, args=(t,)) for t in sys.argv[1:]]
for t in threads:
    t.start()
for t in threads:
    t.join()
for t in sys.argv[1:]:
    print(t, out[t])
EOF
}
# expect FROM open|dropped|reached TARGET...: dropped is a connect that times out (the table
# drops, it never refuses); reached is open or refused, i.e. not dropped (an ephemeral listener
# may be gone by the time the probe comes).
expect() {
  local from=$1 want=$2 line got; shift 2
  while read -r line; do
    echo "   from $from: $line"
    got=${line#* }
    case $want:$got in
      open:open | dropped:"closed (TimeoutError)" | reached:open | reached:"closed (ConnectionRefusedError)") ;;
      *) fail "$from -> ${line%% *}: expected $want, got $got" ;;
    esac
  done < <(probe "$from" "$@")
}
# A TCP port a rank listens on (not loopback) in a range, from /proc/net/tcp and tcp6 (a
# dual-stack socket bound to :: is listed in tcp6 only).
listening_in() {
  docker exec -i "$1" python3 - "$2" "$3" <<'EOF'
import sys
lo, hi = int(sys.argv[1]), int(sys.argv[2])
loopback = ('0100007F', '00000000000000000000000001000000')
ports = set()
for table in ('/proc/net/tcp', '/proc/net/tcp6'):
    for line in open(table).readlines()[1:]:
        f = line.split()
        addr, port = f[1].split(':')
        if f[3] == '0A' and addr not in loopback and lo <= int(port, 16) <= hi:
            ports.add(int(port, 16))
if ports:
    print(min(ports))
EOF
}
# The ruleset without our table and without counters (Docker's counters move).
others() { on "$1" sh -c 'nft -s list ruleset 2>/dev/null' | awk '/^table inet nimstack /{skip=1} !skip{print} skip&&/^}/{skip=0}'; }
has_table() { on "$1" sh -c 'nft list tables 2>/dev/null' | grep -qx 'table inet nimstack'; }

trap '[[ -n "${LAB_KEEP:-}" ]] || lab_down >/dev/null 2>&1 || true' EXIT

step "fresh 4-host lab, model source and stand-in image archive"
lab_fresh build/standin/nim-standin.tar 4
a1=$(lab_addr "$h1") a2=$(lab_addr "$h2") a3=$(lab_addr "$h3") a4=$(lab_addr "$h4")

# Two groups of two (PP 2 each); the API open to hosts 1 and 3 only (besides members). Host vars:
# the lab-docker overlay sets PP 3 for the whole group nim_nodes.
vars="nim_pipeline_parallel: 2, nim_api_allowed_cidrs: [\"$a1/32\", \"$a3\"]"
# The front door on host 1 (both groups of the model in its pool) admits this machine too: a client
# streams through it during step 5.
controller=$(ip -o route get "$a1" | sed -n 's/.* src \([0-9.]*\).*/\1/p')
cat >"$NIMSTACK_LAB_DIR/security.yml" <<EOF
all:
  hosts:
    $h1: {nim_group: a, nim_node_rank: 0, nim_launch_contract: mpi, $vars}
    $h2: {nim_group: a, nim_node_rank: 1, nim_launch_contract: mpi, $vars}
    $h3: {nim_group: b, nim_node_rank: 0, nim_launch_contract: ray, $vars}
    $h4: {nim_group: b, nim_node_rank: 1, nim_launch_contract: ray, $vars}
  children:
    nim_frontend:
      hosts:
        $h1: {nim_frontend_api_allowed_cidrs: ["$a1/32", "$a3", "$controller/32"]}
EOF
# A stand-in NGC key from a file (not on any command line): it must leak nowhere either.
ngc_key="nvapi-sectest-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
umask 077
printf 'nim_ngc_api_key: %s\n' "$ngc_key" >"$NIMSTACK_LAB_DIR/ngc.yml"
umask 022
play_args+=(-i "$NIMSTACK_LAB_DIR/security.yml" -e "@$NIMSTACK_LAB_DIR/ngc.yml")

step "site.yml -vvv: both groups, firewall and Ray token on by default"
play_ok "$logs/site.log" -vvv
for g in a:"$h1" b:"$h3"; do
  if ! docker exec -i "${g#*:}" python3 - 127.0.0.1 8000 'Say hi' 8 20 <roles/nim_docker/files/nim_smoke.py \
       >"$logs/smoke-${g%%:*}.json" 2>&1 || ! grep -q '2 ranks answered' "$logs/smoke-${g%%:*}.json"; then
    cat "$logs/smoke-${g%%:*}.json"; fail "group ${g%%:*} does not serve"
  fi
  echo "   group ${g%%:*}: $(cut -c1-150 "$logs/smoke-${g%%:*}.json")"
done
for h in "${hosts[@]}"; do
  has_table "$h" || fail "$h: no table inet nimstack"
  others "$h" >"$logs/others-on-$h.nft"
done
echo "   table inet nimstack on all 4 hosts; $h1's file is $(on "$h1" stat -c '%U %a' "$rules")"

step "while both serve: each group's ports closed to the other's hosts, open to its members"
# Open MPI's TCP BTL (from 1024 up) and its out-of-band channel (ephemeral) on the mpi worker.
btl_port=$(listening_in "$h2" 1024 2047)
mpi_port=$(listening_in "$h2" 32768 60999)
ray_port=$(listening_in "$h4" 10002 60999)
[[ -n "$btl_port" && -n "$mpi_port" && -n "$ray_port" ]] \
  || fail "no listening rank port found on $h2 ($btl_port, $mpi_port) or $h4 ($ray_port)"
echo "   $h2 (mpi worker) listens on $btl_port and $mpi_port, $h4 (ray worker) on $ray_port"
t=$SECONDS
expect "$h3" dropped "$a2:2222" "$a2:$btl_port" "$a2:$mpi_port"
expect "$h1" open "$a2:2222" "$a2:$btl_port"
expect "$h1" reached "$a2:$mpi_port"
expect "$h1" dropped "$a3:6379" "$a4:$ray_port"
expect "$h3" reached "$a4:$ray_port"
expect "$h4" open "$a3:6379"
# The API: host 3 is in nim_api_allowed_cidrs, host 4 is not (for a); host 1 is, host 2 not (b).
expect "$h3" open "$a1:8000"
expect "$h4" dropped "$a1:8000"
expect "$h1" open "$a3:8000"
expect "$h2" dropped "$a3:8000"
on "$h3" python3 -c "import urllib.request as u; assert u.urlopen('http://$a1:8000/v1/models', timeout=5).status == 200" \
  || fail "the allowed source $h3 gets no answer from a's API"
echo "   $h3 reads a's /v1/models; probes took $((SECONDS - t)) s"

step "no token, deployment key or NGC key in the -vvv output, in process arguments or in open files"
token=$(on "$h3" cat "$group_dir/b/ray-token")
[[ ${#token} -ge 32 ]] || fail "the Ray token on $h3 is ${#token} characters"
[[ "$(on "$h4" cat "$group_dir/b/ray-token")" == "$token" ]] || fail "$h3 and $h4 hold different Ray tokens"
key_line=$(on "$h1" sed -n 2p /etc/nimstack/mesh/a/private.key)
[[ ${#key_line} -ge 40 ]] || fail "no deployment key body on $h1"
for secret in "$token" "$key_line" "$ngc_key"; do
  ! grep -qF -- "$secret" "$logs/site.log" || fail "a secret (${secret:0:6}...) is in the -vvv output"
done
echo "   $(wc -l <"$logs/site.log") lines of -vvv output: none of the three secrets"
# A login account with the containers' uid, as the first account of an Ubuntu cloud or DGX image
# is: it must read none of the secrets, neither in a file nor in a rank's environment.
for h in "${hosts[@]}"; do
  on "$h" sh -c 'getent passwd 1000 >/dev/null || useradd -m -u 1000 -U -s /bin/bash sectest'
done
login=$(on "$h1" getent passwd 1000 | cut -d: -f1)
echo "   login account with uid 1000 on every host: $login"
for h in "${hosts[@]}"; do
  on "$h" sh -c 'cat /proc/[0-9]*/cmdline 2>/dev/null | tr "\0" " "' >"$logs/args-$h.txt"
  for secret in "$token" "$key_line" "$ngc_key"; do
    ! grep -qF -- "$secret" "$logs/args-$h.txt" || fail "$h: a secret (${secret:0:6}...) is in a process's arguments"
  done
  # Every file holding one must be unreadable to anybody but root and the containers (Docker's
  # and containerd's own copies of a container's env hold what the container got: see README,
  # Security): read as nobody and as the uid-1000 login account (with its groups), and its mode.
  # Then, as that account, every process environment it can read. The secrets go in on stdin: an
  # argument would be in the process list.
  printf '%s\n' "$token" "$key_line" "$ngc_key" | docker exec -i "$h" sh -c 'cat >/root/.sectest-patterns; chmod 600 /root/.sectest-patterns
    as() { python3 -c "import os, pwd, sys
u = pwd.getpwnam(sys.argv[1]); os.setgroups(os.getgrouplist(u.pw_name, u.pw_gid)); os.setgid(u.pw_gid); os.setuid(u.pw_uid)
exec(sys.argv[2])" "$@"; }
    login=$(getent passwd 1000 | cut -d: -f1)
    grep -rlsF -f /root/.sectest-patterns /etc /opt /root /home /tmp /var/tmp /var/log /var/lib/docker/containers /run 2>/dev/null |
    grep -vx /root/.sectest-patterns | sort -u | while read -r f; do
      if as nobody "open(sys.argv[3]).read(1)" "$f" 2>/dev/null; then echo "READABLE $(stat -c %a "$f") $f"
      elif as "$login" "open(sys.argv[3]).read(1)" "$f" 2>/dev/null; then echo "READABLE-BY-UID-1000 $(stat -c %a "$f") $f"
      else echo "root-only $(stat -c %a "$f") $f"; fi
    done
    for f in $(grep -rlsF -f /root/.sectest-patterns /root/.ansible_async 2>/dev/null); do echo "ASYNC-RESULT $f"; done
    as "$login" "
import glob
secrets = [line for line in sys.stdin.read().splitlines() if line]
for path in glob.glob(\"/proc/[0-9]*/environ\"):
    try:
        env = open(path, \"rb\").read().decode(\"utf-8\", \"replace\")
    except OSError:
        continue
    if any(s in env for s in secrets):
        print(\"ENVIRON-READABLE-BY-UID-1000\", path, open(path.replace(\"environ\", \"comm\")).read().strip())
" </root/.sectest-patterns 2>/dev/null || echo "ENVIRON-CHECK-FAILED"
    rm -f /root/.sectest-patterns' >"$logs/files-$h.txt" || true
  if grep -E '^(READABLE|ASYNC-RESULT|ENVIRON)' "$logs/files-$h.txt"; then
    fail "$h: a secret is where others may read it (a file, a background job's result, a process environment)"
  fi
  echo "   $h: $(grep -c '^root-only' "$logs/files-$h.txt") files hold a secret, none readable by nobody or uid 1000," \
    "no secret in a job result or an environment uid 1000 reads:" \
    "$(awk '{print $2, $3}' "$logs/files-$h.txt" | sed 's|/[0-9a-f]\{64\}/|/<id>/|' | sort -u | tr '\n' ' ')"
done
# The downloader filled the cache, so no serving rank got the key; the key, the host key and the
# token reach the ranks through the secrets group only.
for r in a:"$h1" a:"$h2" b:"$h3" b:"$h4"; do
  env_json=$(on "${r#*:}" docker inspect -f '{{json .Config.Env}}' "nim-${r%%:*}")
  [[ $env_json != *NGC_API_KEY=* ]] || fail "${r#*:}: the serving rank nim-${r%%:*} has NGC_API_KEY in its env"
  groups=$(on "${r#*:}" docker inspect -f '{{json .HostConfig.GroupAdd}}' "nim-${r%%:*}")
  [[ $groups == *'"64910"'* ]] || fail "${r#*:}: nim-${r%%:*} does not get the secrets group (GroupAdd $groups)"
done
echo "   no serving rank has NGC_API_KEY in its env; every rank gets the group nimstack-secrets (64910)"
for f in "$h3:$group_dir/b/ray-token" "$h1:/etc/nimstack/mesh/a/private.key" "$h2:/etc/nimstack/mesh/a/ssh_host_ed25519_key"; do
  echo "   ${f%%:*}: $(on "${f%%:*}" stat -c '%U:%G %a %n' "${f#*:}")"
done
on "$h3" docker inspect -f '{{json .Config.Env}}' nim-b | grep -q 'RAY_AUTH_TOKEN_PATH=' || fail "nim-b has no RAY_AUTH_TOKEN_PATH"

step "a re-run changes nothing"
PLAYBOOK=playbooks/deploy_docker.yml play_ok "$logs/rerun.log" --skip-tags doctor
changed=$(recap changed "$logs/rerun.log")
((changed == 0)) || { grep -B3 '^changed:' "$logs/rerun.log" | head -30; fail "the re-run changed $changed"; }

step "firewall switched off: only our table goes"
PLAYBOOK=playbooks/deploy_docker.yml play_ok "$logs/firewall-off.log" --tags nim_firewall -e nim_group_firewall=false
log_says "$logs/firewall-off.log" "runs without its firewall (nim_group_firewall=false)" || fail "no warning that the firewall is off"
for h in "${hosts[@]}"; do
  ! has_table "$h" || fail "$h: table inet nimstack left with the firewall off"
  others "$h" >"$logs/others-off-$h.nft"
  cmp -s "$logs/others-on-$h.nft" "$logs/others-off-$h.nft" || { diff "$logs/others-on-$h.nft" "$logs/others-off-$h.nft" | head; fail "$h: other tables changed"; }
done
echo "   no table on any host; the other tables byte-identical ($(wc -l <"$logs/others-off-$h1.nft") lines on $h1)"

step "firewall off: the Ray head refuses a client without the token, admits one with it"
# `ray status` speaks to the head's GCS the way a driver does first (docker exec into a rank does
# not work in the nested lab; a driver in its own container would need the node's raylet sockets).
ray_client() { on "$h4" timeout 120 docker run --rm --network host "$@" --entrypoint /opt/nim/venv/bin/ray "$image" status --address "$a3:6379"; }
t=$SECONDS
if ray_client >"$logs/ray-no-token.log" 2>&1; then tail -5 "$logs/ray-no-token.log"; fail "a Ray client without the token got b's status"; fi
grep -q 'AuthenticationError' "$logs/ray-no-token.log" || { tail -15 "$logs/ray-no-token.log"; fail "the Ray client failed, but not for want of the token"; }
echo "   without: $(grep -o 'AuthenticationError.*is missing or incorrect' "$logs/ray-no-token.log" | head -1) ($((SECONDS - t)) s)"
t=$SECONDS
# A client that holds the token as a rank does: uid 1000 with the group nimstack-secrets (the
# token is root's and that group's, 0640).
ray_client --group-add 64910 -v "$group_dir/b/ray-token:/run/secrets/t:ro" -e RAY_AUTH_MODE=token -e RAY_AUTH_TOKEN_PATH=/run/secrets/t \
  >"$logs/ray-token.log" 2>&1 || { tail -15 "$logs/ray-token.log"; fail "a Ray client with the token was refused"; }
nodes=$(grep -c ' node_' "$logs/ray-token.log" || true)
((nodes == 2)) || { cat "$logs/ray-token.log"; fail "with the token, b's head reports $nodes nodes, not 2"; }
echo "   with the token: b's head reports $nodes active nodes ($((SECONDS - t)) s)"

step "firewall off: the worker's sshd refuses the deployment key from a non-member"
on "$h1" cat /etc/nimstack/mesh/a/private.key | docker exec -i "$h3" sh -c 'umask 077; cat >/root/sectest.key'
[[ "$(on "$h3" sha256sum /root/sectest.key | cut -d' ' -f1)" == "$(on "$h1" sha256sum /etc/nimstack/mesh/a/private.key | cut -d' ' -f1)" ]] \
  || fail "the deployment key did not reach $h3 intact"
ssh_opts=(-p 2222 -o BatchMode=yes -o ConnectTimeout=5 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR)
if on "$h3" timeout 20 ssh -i /root/sectest.key "${ssh_opts[@]}" "nim@$a2" true >"$logs/ssh-outsider.log" 2>&1; then
  on "$h3" rm -f /root/sectest.key; fail "$h2's sshd accepted the deployment key from $h3"
fi
on "$h3" rm -f /root/sectest.key
grep -q 'Permission denied' "$logs/ssh-outsider.log" || { cat "$logs/ssh-outsider.log"; fail "the outsider's ssh failed, but not with Permission denied"; }
# The key is root's and nimstack-secrets's (0440): root's own ssh takes a 0600 copy of it.
on "$h1" sh -c 'umask 077; cp /etc/nimstack/mesh/a/private.key /root/sectest-member.key'
on "$h1" timeout 20 ssh -i /root/sectest-member.key "${ssh_opts[@]}" "nim@$a2" true \
  || { on "$h1" rm -f /root/sectest-member.key; fail "$h2's sshd refused the deployment key from the member $h1"; }
on "$h1" rm -f /root/sectest-member.key
# sshd's own word that from= refused it (the key itself was right).
why=$(on "$h2" docker logs nim-a 2>&1 | grep -m1 "correct key but not from a permitted host (host=$a3" || true)
[[ -n "$why" ]] || fail "$h2's sshd did not log that from= refused $h3"
echo "   from $h3: $(head -1 "$logs/ssh-outsider.log") sshd: ${why##*authorized_keys:}; from $h1: accepted"

step "a daemon.json change that needs dockerd restarts: never both groups down, each serves again"
LAB_ROLLING_DOOR=$h1 tests/lab/check-rolling-restart.sh "$logs" "$h1,$h4" a="$h1" b="$h3" -- "${play_args[@]}"

step "firewall on again, then teardown.yml"
PLAYBOOK=playbooks/deploy_docker.yml play_ok "$logs/firewall-on.log" --tags nim_firewall
for h in "${hosts[@]}"; do has_table "$h" || fail "$h: the firewall did not come back"; done
PLAYBOOK=playbooks/teardown.yml play_ok "$logs/teardown.log"
for h in "${hosts[@]}"; do
  ! has_table "$h" || fail "$h: table inet nimstack left after teardown"
  for f in "$rules" /etc/systemd/system/nimstack-firewall.service "$group_dir" /etc/nimstack/mesh; do
    ! on "$h" test -e "$f" || fail "$h: $f left after teardown"
  done
  others "$h" >"$logs/others-after-$h.nft"
  cmp -s "$logs/others-on-$h.nft" "$logs/others-after-$h.nft" || { diff "$logs/others-on-$h.nft" "$logs/others-after-$h.nft" | head; fail "$h: other tables changed by teardown"; }
done
echo "   no table, ruleset file, unit, token or key on any host; the other tables byte-identical"

trap - EXIT
[[ -n "${LAB_KEEP:-}" ]] || lab_down
rm -f "$NIMSTACK_LAB_DIR/ngc.yml"
echo "test-security.sh: passed in $((SECONDS - t_start)) s"
