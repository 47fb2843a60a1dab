# shellcheck shell=bash
# What build-standin.sh and build-downloader.sh share (sourced): the
# --archive option, and writing `docker save` of the built image to that archive.
me=${0##*/}
archive=

die() { echo "$me: $*" >&2; exit 1; }

parse_archive_option() { # "$@"
  while (($#)); do
    case "$1" in
      --archive) (($# >= 2)) || die "--archive needs a path"; archive=$2; shift 2 ;;
      --archive=*) archive=${1#--archive=}; shift ;;
      *) die "usage: $me [--archive PATH]" ;;
    esac
  done
}

# docker save of the image (and its other names) to $archive, skipped when the archive already
# holds this image (the $archive.image stamp beside it names the image it holds).
save_archive() { # image [more names...]
  [[ -n "$archive" ]] || return 0
  if [[ ! -s "$archive" || "$(cat "$archive.image" 2>/dev/null)" != "$1" ]]; then
    mkdir -p "$(dirname "$archive")"
    docker save -o "$archive.tmp" "$@"
    chmod 0644 "$archive.tmp"
    mv "$archive.tmp" "$archive"
    echo "$1" >"$archive.image"
  fi
}
