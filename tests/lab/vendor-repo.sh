#!/usr/bin/env bash
# Stand-ins of NVIDIA's apt repositories, for the lab's offline bundle (tests/lab/bundle.sh make):
# this machine cannot reach NVIDIA's, so the bundle maker's path for a vendor's repository (its key
# fetched, apt verifying the repository with it, its packages resolved beside the platform's own) is
# proven against repositories of the same shape: flat, signed with a key of their own, served over
# HTTP, holding packages of NVIDIA's names and versions that install nothing.
#
#   tests/lab/vendor-repo.sh up      make them (once; again only when this script changes) and serve
#                                    them from this machine on Docker's default bridge, where the
#                                    maker's containers run; prints the base URL
#   tests/lab/vendor-repo.sh down    stop serving
#
#   <url>/cuda/       NVIDIA's CUDA repository: the driver branch 580's pinning package, nvidia-open,
#                     the fabric manager and its NVSwitch library
#   <url>/toolkit/    libnvidia-container: the toolkit's four packages, with their real dependencies
#   <url>/<repo>/key.asc   the key each is signed with
#
# Into NIMSTACK_BUNDLE_CACHE/vendor (/var/cache/nimstack/bundle), port NIMSTACK_VENDOR_PORT (18099):
# a fixed address, so that the bundle made from it stays the same from one make to the next.
set -euo pipefail
cache=${NIMSTACK_BUNDLE_CACHE:-/var/cache/nimstack/bundle}
dir=$cache/vendor
port=${NIMSTACK_VENDOR_PORT:-18099}

die() { echo "vendor-repo.sh: $*" >&2; exit 1; }

# name version architecture depends (one line each, "|" between fields) per repository.
CUDA='nvidia-driver-pinning-580|580.95.05-1|all|
nvidia-open|580.95.05-1|amd64|
nvidia-fabricmanager|580.95.05-1|amd64|
libnvidia-nscq|580.95.05-1|amd64|'
TOOLKIT='nvidia-container-toolkit|1.18.0-1|amd64|nvidia-container-toolkit-base (= 1.18.0-1), libnvidia-container-tools (= 1.18.0-1)
nvidia-container-toolkit-base|1.18.0-1|amd64|
libnvidia-container-tools|1.18.0-1|amd64|libnvidia-container1 (= 1.18.0-1)
libnvidia-container1|1.18.0-1|amd64|'

gpg_cmd() { gpg --batch --quiet --homedir "$cache/vendor.signing" "$@"; }

# One flat repository: the packages (dpkg-deb), Packages and Release written here (no dpkg-dev
# needed), InRelease signed.
make_repo() {
  local repo=$1 list=$2 name version arch depends work deb
  mkdir -p "$repo/pool"
  while IFS='|' read -r name version arch depends; do
    work=$(mktemp -d)
    mkdir "$work/DEBIAN"
    {
      echo "Package: $name"
      echo "Version: $version"
      echo "Architecture: $arch"
      echo "Maintainer: nimstack lab <lab@nimstack.invalid>"
      [[ -z $depends ]] || echo "Depends: $depends"
      echo "Description: stand-in of NVIDIA's $name for the lab's offline bundle"
      echo " It installs nothing: the lab has no GPU."
    } >"$work/DEBIAN/control"
    deb=$repo/pool/${name}_${version}_$arch.deb
    SOURCE_DATE_EPOCH=0 dpkg-deb --root-owner-group -Zgzip --build "$work" "$deb" >/dev/null
    rm -rf "$work"
  done <<<"$list"
  (
    cd "$repo"
    for deb in pool/*.deb; do
      dpkg-deb -f "$deb"
      echo "Filename: ./$deb"
      echo "Size: $(stat -c %s "$deb")"
      echo "SHA256: $(sha256sum "$deb" | cut -d' ' -f1)"
      echo
    done >Packages
    gzip -9nc Packages >Packages.gz
    {
      echo "Origin: nimstack lab stand-in"
      echo "Label: nimstack lab stand-in"
      echo "Date: $(LC_ALL=C date -u -d @0 '+%a, %d %b %Y %H:%M:%S UTC')"
      echo "SHA256:"
      for f in Packages Packages.gz; do echo " $(sha256sum "$f" | cut -d' ' -f1) $(stat -c %s "$f") $f"; done
    } >Release
    gpg_cmd --clearsign --digest-algo SHA256 -o InRelease Release
    gpg_cmd --armor --export >key.asc
  )
}

cmd_make() {
  local recipe
  recipe=$(sha256sum "$0" | cut -c1-16)
  [[ $(cat "$dir/.recipe" 2>/dev/null) == "$recipe" ]] && return 0
  rm -rf "$dir"
  mkdir -p "$dir" "$cache/vendor.signing"
  chmod 700 "$cache/vendor.signing"
  gpg_cmd --list-secret-keys 2>/dev/null | grep -q . \
    || gpg_cmd --passphrase '' --pinentry-mode loopback --quick-gen-key 'nimstack lab stand-in of NVIDIA' ed25519 sign never
  make_repo "$dir/cuda" "$CUDA"
  make_repo "$dir/toolkit" "$TOOLKIT"
  echo "$recipe" >"$dir/.recipe"
}

# The engine lists the bridge's gateway in its IPAM config, or (a fresh engine that chose the
# subnet itself) only on the bridge's interface.
gateway() {
  local addr
  addr=$(docker network inspect -f '{{range .IPAM.Config}}{{.Gateway}}{{end}}' bridge)
  [[ -n $addr ]] || addr=$(ip -4 -o addr show docker0 2>/dev/null | awk '{sub("/.*", "", $4); print $4; exit}')
  echo "$addr"
}

cmd_up() {
  local addr deadline
  cmd_make
  addr=$(gateway)
  [[ -n $addr ]] || die "Docker's default bridge has no gateway address"
  cmd_down
  setsid python3 -m http.server --directory "$dir" --bind "$addr" "$port" >"$cache/vendor.log" 2>&1 &
  echo $! >"$cache/vendor.pid"
  deadline=$((SECONDS + 15))
  until python3 -c "import urllib.request; urllib.request.urlopen('http://$addr:$port/cuda/InRelease', timeout=2)" 2>/dev/null; do
    ((SECONDS < deadline)) || die "the stand-in repositories did not answer at http://$addr:$port within 15 s ($cache/vendor.log)"
    sleep 0.2
  done
  echo "http://$addr:$port"
}

cmd_down() {
  if [[ -s $cache/vendor.pid ]]; then
    kill "$(cat "$cache/vendor.pid")" 2>/dev/null || true
    rm -f "$cache/vendor.pid"
  fi
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  *) die "usage: vendor-repo.sh up | down" ;;
esac
