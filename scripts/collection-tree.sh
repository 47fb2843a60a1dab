#!/usr/bin/env bash
# Copy the checkout (tracked and untracked-but-not-ignored files) to
# DEST/ansible_collections/nimstack/multinode, the path ansible-test and installs expect.
set -euo pipefail
dest_root=${1:?usage: collection-tree.sh DEST_ROOT}
dest="$dest_root/ansible_collections/nimstack/multinode"
rm -rf "$dest"
mkdir -p "$dest"
git ls-files -z --cached --others --exclude-standard \
  | while IFS= read -r -d '' f; do [[ -e "$f" ]] && printf '%s\0' "$f"; done \
  | tar --null -T - -cf - | tar -C "$dest" -xf -
echo "$dest"
