#!/usr/bin/env bash
# Prints the path of a promtool, the one of Debian's `prometheus` package, fetching it once.
# The package is never installed (its postinst would start a Prometheus service on the machine):
# `apt-get download` fetches the .deb and `dpkg-deb -x` unpacks it in a scratch directory, from
# which promtool alone is kept in /var/cache/nimstack/promtool/<package version>/ (outside the
# clone; NIMSTACK_PROMTOOL_CACHE moves it). A machine that cannot get it fails here, naming why:
# the rule tests never skip.
#
#   promtool=$(tests/monitoring/promtool.sh)
set -euo pipefail
root=${NIMSTACK_PROMTOOL_CACHE:-/var/cache/nimstack/promtool}
fail() { echo "promtool.sh: $*" >&2; exit 1; }

candidate() { apt-cache policy prometheus 2>/dev/null | awk '/Candidate:/ {print $2}'; }
version=$(candidate)
if [[ -z $version || $version == "(none)" ]]; then
  # A fresh machine's package lists may be empty: read them once.
  [[ $(id -u) -eq 0 ]] || fail "apt knows no prometheus package; run apt-get update as root"
  apt-get update -qq >/dev/null
  version=$(candidate)
fi
if [[ -z $version || $version == "(none)" ]]; then
  # No package source: a promtool fetched earlier still serves.
  cached=$(find "$root" -mindepth 2 -maxdepth 2 -name promtool -type f 2>/dev/null | sort | tail -1)
  [[ -n $cached ]] || fail "no prometheus package in apt's sources and none cached under $root"
  echo "$cached"
  exit 0
fi
out=$root/$version
if [[ -x $out/promtool ]]; then
  echo "$out/promtool"
  exit 0
fi
mkdir -p "$root"
exec 9>"$root/.lock"
flock 9
[[ -x $out/promtool ]] && { echo "$out/promtool"; exit 0; }
tmp=$(mktemp -d "$root/.fetch-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# As root, apt-get download warns that it cannot drop to its _apt user in this directory: harmless.
(cd "$tmp" && apt-get download -qq "prometheus=$version" 2> >(grep -v 'unsandboxed' >&2)) \
  || fail "apt-get download prometheus=$version failed"
dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/tree"
[[ -x $tmp/tree/usr/bin/promtool ]] || fail "the prometheus $version package holds no usr/bin/promtool"
mkdir -p "$tmp/keep"
mv "$tmp/tree/usr/bin/promtool" "$tmp/keep/promtool"
"$tmp/keep/promtool" --version >/dev/null || fail "the promtool of prometheus $version does not run here"
rm -rf "$out"
mv "$tmp/keep" "$out"
echo "$out/promtool"
