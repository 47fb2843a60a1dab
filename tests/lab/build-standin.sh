#!/usr/bin/env bash
# Build the lab's stand-in NIM image (tests/lab/standin: launch contracts mpi, ray and
# leader_address) from the lab's host image, cached by recipe: the tag is a hash of the base image
# reference and every file of the recipe, so only a changed recipe builds anew. Tags
# nimstack-lab/nim-standin:<hash> and :latest and prints the <hash> reference. pip in the build
# reaches PyPI with this machine's CA bundle (NIMSTACK_CA_BUNDLE, default Debian's).
#
#   tests/lab/build-standin.sh [--archive PATH]
#
# --archive PATH also writes `docker save` of the image to PATH (how the collection ships an image
# to sites without a registry), skipped when PATH already holds this hash's archive (a
# PATH.image stamp beside it names the image it holds).
set -euo pipefail
# Glob order feeds the recipe hash: make it the same under every locale.
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
repo=nimstack-lab/nim-standin
# shellcheck source=tests/lab/lib-build.sh
source "$here/lib-build.sh"
parse_archive_option "$@"

base=$("$here/build-image.sh")
hash=$( (echo "$base"; for f in "$here"/standin/*; do [[ -f "$f" ]] || continue; echo "== ${f##*/}"; cat "$f"; done) \
  | sha256sum | cut -c1-12)
image="$repo:$hash"

if ! docker image inspect "$image" >/dev/null 2>&1; then
  work=$(mktemp -d /var/tmp/nimstack-standin-XXXXXX)
  trap 'rm -rf "$work"' EXIT
  # The build context: the recipe plus this machine's CA bundle, which pip in the build needs to
  # reach the package index (not part of the recipe hash: it only opens the way).
  mkdir "$work/context"
  find "$here/standin" -maxdepth 1 -type f -exec cp -p {} "$work/context/" \;
  ca=${NIMSTACK_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
  [[ -r "$ca" ]] || die "no CA bundle at $ca for pip in the build (set NIMSTACK_CA_BUNDLE)"
  cp "$ca" "$work/context/pip-ca.crt"
  docker build -q -t "$image" --build-arg "BASE=$base" -f "$work/context/Dockerfile" "$work/context" \
    >"$work/build.log" 2>&1 || { tail -n 40 "$work/build.log" >&2; exit 1; }
fi
docker tag "$image" "$repo:latest"

save_archive "$image" "$repo:latest"
echo "$image"
