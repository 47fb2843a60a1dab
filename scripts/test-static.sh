#!/usr/bin/env bash
# The static steps of `make test`, two at a time where that fills the two cores: ansible-lint (one
# core for about 4 minutes) runs beside units, build-check, sanity and docs-check (one core, about
# as long), then the render tests (both cores) and the bad inputs (two cases at a time). Lint's
# output is kept in build/static/lint.log and printed when it ends. Stops at the first failing
# step, naming it.
#
#   scripts/test-static.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
mkdir -p build/static

step() {
  local target=$1 t=$SECONDS
  make --no-print-directory "$target" || { echo "test-static.sh: $target FAILED after $((SECONDS - t)) s" >&2; return 1; }
  echo "== $target passed in $((SECONDS - t)) s"
}

t=$SECONDS
(make --no-print-directory lint >build/static/lint.log 2>&1; echo $? >build/static/lint.rc) &
lint=$!
trap 'kill "$lint" 2>/dev/null || true' EXIT
rest_rc=0
for target in units build-check sanity docs-check; do
  step "$target" || { rest_rc=1; break; }
done
wait "$lint" || true
trap - EXIT
cat build/static/lint.log
if [[ $(cat build/static/lint.rc 2>/dev/null) != 0 ]]; then
  echo "test-static.sh: lint FAILED" >&2
  exit 1
fi
echo "== lint passed (beside the steps above, $((SECONDS - t)) s for all of them)"
((rest_rc == 0)) || exit 1

for target in k8s bad-inputs; do
  step "$target" || exit 1
done
