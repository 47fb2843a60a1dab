#!/usr/bin/env bash
# Build the lab's stand-in NIM image (scripts/lab/standin, launch contract mpi) from the lab's
# host image, cached by recipe: the tag is a hash of the base image reference and every file of
# the recipe, so only a changed recipe builds anew. Tags nimstack-lab/nim-standin:<hash> and
# :latest and prints the <hash> reference.
#
#   scripts/lab/build-standin.sh [--archive PATH]
#
# --archive PATH also writes `docker save` of the image to PATH (how the collection ships an image
# to sites without a registry), skipped when PATH already holds this hash's archive (a
# PATH.image stamp beside it names the image it holds).
set -euo pipefail
# Glob order feeds the recipe hash: make it the same under every locale.
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
repo=nimstack-lab/nim-standin
archive=

die() { echo "build-standin.sh: $*" >&2; exit 1; }

while (($#)); do
  case "$1" in
    --archive) (($# >= 2)) || die "--archive needs a path"; archive=$2; shift 2 ;;
    --archive=*) archive=${1#--archive=}; shift ;;
    *) die "usage: build-standin.sh [--archive PATH]" ;;
  esac
done

base=$("$here/build-image.sh")
hash=$( (echo "$base"; for f in "$here"/standin/*; do echo "== ${f##*/}"; cat "$f"; done) \
  | sha256sum | cut -c1-12)
image="$repo:$hash"

if ! docker image inspect "$image" >/dev/null 2>&1; then
  work=$(mktemp -d /var/tmp/nimstack-standin-XXXXXX)
  trap 'rm -rf "$work"' EXIT
  docker build -q -t "$image" --build-arg "BASE=$base" -f "$here/standin/Dockerfile" "$here/standin" \
    >"$work/build.log" 2>&1 || { tail -n 40 "$work/build.log" >&2; exit 1; }
fi
docker tag "$image" "$repo:latest"

if [[ -n "$archive" ]]; then
  if [[ ! -s "$archive" || "$(cat "$archive.image" 2>/dev/null)" != "$image" ]]; then
    mkdir -p "$(dirname "$archive")"
    docker save -o "$archive.tmp" "$image" "$repo:latest"
    chmod 0644 "$archive.tmp"
    mv "$archive.tmp" "$archive"
    echo "$image" >"$archive.image"
  fi
fi
echo "$image"
