#!/usr/bin/env bash
# Debian packages the test suite needs beyond Python: shellcheck for ansible-test sanity; openssl,
# curl and procps for the live Kubernetes cluster (tests/cluster/cluster.sh), whose Go 1.26 toolchain
# the machine provides at /usr/local/go; gpg to sign the lab's offline bundle and nft to cut the lab
# hosts off (tests/lab/bundle.sh). (The Docker engine and debootstrap for the lab come from
# tests/lab/ensure-docker.sh.)
set -euo pipefail
need=()
command -v shellcheck >/dev/null 2>&1 || need+=(shellcheck)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v pkill >/dev/null 2>&1 || need+=(procps)
command -v gpg >/dev/null 2>&1 || need+=(gpg)
command -v nft >/dev/null 2>&1 || need+=(nftables)
((${#need[@]})) || exit 0
if [[ $(id -u) -ne 0 ]]; then
  echo "setup-system.sh: missing ${need[*]}; install them (apt-get install ${need[*]}) or run as root" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${need[@]}" >/dev/null
