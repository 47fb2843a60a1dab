#!/usr/bin/env bash
# Make sure a Docker engine runs on this machine: install Debian's docker.io when the daemon is
# missing, start dockerd when nothing answers, wait (bounded) until it does.
set -euo pipefail
if ! command -v dockerd >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq docker.io debootstrap >/dev/null
fi
if docker info >/dev/null 2>&1; then
  exit 0
fi
log=${DOCKERD_LOG:-/var/log/nimstack-dockerd.log}
setsid nohup dockerd >"$log" 2>&1 </dev/null &
for _ in $(seq 1 60); do
  docker info >/dev/null 2>&1 && exit 0
  sleep 1
done
echo "ensure-docker.sh: dockerd did not answer within 60 s; see $log" >&2
tail -n 20 "$log" >&2 || true
exit 1
