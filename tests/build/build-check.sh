#!/usr/bin/env bash
# Build the collection tarball, install it into an empty collections path, and run a playbook
# that calls a module by FQCN from that installed copy (on the implicit localhost, which runs
# with the controller's own Python).
set -euo pipefail
cd "$(dirname "$0")/../.."
work=build/install-check
rm -rf "$work" && mkdir -p "$work/dist" "$work/collections"
tree=$(scripts/collection-tree.sh "$work/src")
ansible-galaxy collection build "$tree" --output-path "$work/dist" --force
# The release is the collection and its docs: nothing of the test suite, the lab, the benchmarks or
# the tooling.
leaked=$(tar -tzf "$work"/dist/nimstack-multinode-*.tar.gz \
  | grep -E '^(scripts|tests|benchmarks|molecule|inventories/lab[^/]*|build|\.ci|\.config)(/|$)|/molecule(/|$)' || true)
if [[ -n "$leaked" ]]; then
  echo "build-check.sh: the release tarball holds files that are not the collection's:" >&2
  head -20 <<<"$leaked" >&2
  exit 1
fi
echo "build-check.sh: the tarball holds $(tar -tzf "$work"/dist/nimstack-multinode-*.tar.gz | grep -vc '/$') files, none of scripts/, tests/, benchmarks/, molecule/, inventories/lab*"
ansible-galaxy collection install "$work"/dist/nimstack-multinode-*.tar.gz \
  -p "$work/collections" --no-deps --force
ANSIBLE_COLLECTIONS_PATH="$PWD/$work/collections" \
  ansible-playbook tests/build/installed_collection.yml
