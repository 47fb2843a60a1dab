#!/usr/bin/env bash
# Debian packages the test suite needs beyond Python: shellcheck for ansible-test sanity.
# (The Docker engine and debootstrap for the lab come from scripts/lab/ensure-docker.sh.)
set -euo pipefail
need=()
command -v shellcheck >/dev/null 2>&1 || need+=(shellcheck)
((${#need[@]})) || exit 0
if [[ $(id -u) -ne 0 ]]; then
  echo "setup-system.sh: missing ${need[*]}; install them (apt-get install ${need[*]}) or run as root" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${need[@]}" >/dev/null
