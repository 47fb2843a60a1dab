#!/usr/bin/env bash
# Build the lab's small downloader image (tests/lab/downloader: the stand-in's download-to-cache
# on a bare python3, nothing else) from the lab's host image, cached by recipe like
# build-standin.sh: the tag is a hash of the base image and the recipe's files. Tags
# nimstack-lab/nim-standin-downloader:<hash> and prints that reference. It is what
# nim_docker_download_image points at in the lab, so a group's model download starts before any
# image transfer.
#
#   tests/lab/build-downloader.sh [--archive PATH]
#
# --archive PATH also writes `docker save` of the image to PATH, skipped when PATH already holds it
# (a PATH.image stamp beside it names the image).
set -euo pipefail
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
repo=nimstack-lab/nim-standin-downloader
# shellcheck source=tests/lab/lib-build.sh
source "$here/lib-build.sh"
parse_archive_option "$@"

base=$("$here/build-image.sh")
hash=$( (echo "$base"; for f in "$here"/downloader/* "$here/standin/download_to_cache.py"; do
          echo "== ${f##*/}"; cat "$f"; done) | sha256sum | cut -c1-12)
image="$repo:$hash"

if ! docker image inspect "$image" >/dev/null 2>&1; then
  work=$(mktemp -d /var/tmp/nimstack-downloader-XXXXXX)
  trap 'rm -rf "$work"' EXIT
  cp "$here"/downloader/* "$here/standin/download_to_cache.py" "$work/"
  docker build -q -t "$image" --build-arg "BASE=$base" "$work" >"$work/build.log" 2>&1 \
    || { tail -n 40 "$work/build.log" >&2; exit 1; }
  docker run --rm "$image" download-to-cache --help >/dev/null || die "$image cannot run download-to-cache"
fi

save_archive "$image"
echo "$image"
