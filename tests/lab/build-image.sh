#!/usr/bin/env bash
# Build the lab's systemd host image from Debian's archive (no registry needed), cached by its
# recipe: the debootstrap root file system is tagged with a hash of its package list, the host
# image with a hash of that, host.Dockerfile and pyc/lab_pyc.py, so only a changed recipe builds anew.
# Prints the image reference and tags it nimstack-lab-host:latest for tools that need a fixed name.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=nimstack-lab-host
suite=bookworm
packages=python3,systemd,systemd-sysv,openssh-server,sudo,iproute2,ca-certificates
# openssh-server's install made SSH host keys in the root file system; they stay out of it (and out
# of every layer and image archive built on it): each host makes its own at first boot.
exclude='./etc/ssh/ssh_host_*'
rootfs="$repo:rootfs-$(echo "$suite $packages $exclude" | sha256sum | cut -c1-12)"
image="$repo:$( (echo "$rootfs"; cat "$here/host.Dockerfile" "$here/pyc/lab_pyc.py") | sha256sum | cut -c1-12)"

if ! docker image inspect "$image" >/dev/null 2>&1; then
  work=$(mktemp -d /var/tmp/nimstack-lab-XXXXXX)
  trap 'rm -rf "$work"' EXIT
  if ! docker image inspect "$rootfs" >/dev/null 2>&1; then
    debootstrap --variant=minbase --include="$packages" "$suite" "$work/rootfs" \
      >"$work/debootstrap.log" 2>&1 || { tail -n 30 "$work/debootstrap.log" >&2; exit 1; }
    tar -C "$work/rootfs" --exclude="$exclude" -c . | docker import - "$rootfs" >/dev/null
  fi
  docker build -q -t "$image" --build-arg "BASE=$rootfs" -f "$here/host.Dockerfile" "$here" \
    >"$work/build.log" 2>&1 || { tail -n 30 "$work/build.log" >&2; exit 1; }
fi
docker tag "$image" "$repo:latest"
echo "$image"
