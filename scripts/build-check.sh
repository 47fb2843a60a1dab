#!/usr/bin/env bash
# Build the collection tarball, install it into an empty collections path, and run a playbook
# that calls a module by FQCN from that installed copy (on the implicit localhost, which runs
# with the controller's own Python).
set -euo pipefail
cd "$(dirname "$0")/.."
work=build/install-check
rm -rf "$work" && mkdir -p "$work/dist" "$work/collections"
tree=$(scripts/collection-tree.sh "$work/src")
ansible-galaxy collection build "$tree" --output-path "$work/dist" --force
ansible-galaxy collection install "$work"/dist/nimstack-multinode-*.tar.gz \
  -p "$work/collections" --no-deps --force
ANSIBLE_COLLECTIONS_PATH="$PWD/$work/collections" \
  ansible-playbook tests/build/installed_collection.yml
