#!/usr/bin/env bash
# The quick static checks of `make test`, before any lab: ansible-lint, build-check, docs-check and
# the monitoring checks (promtool over the alert rules and the dashboards' check) beside the units
# and the sanity tests (together 250 s in a clean-clone run with lint alone beside the others, where
# one after the other took about 8 minutes). The render tests and the bad
# inputs are static too, but long: they run in the streams beside the labs (tests/e2e/test-labs.sh).
# The steps that run beside the others keep their output in build/static/aside.log, printed when
# they end. Exits non-zero naming every step that failed.
#
#   tests/e2e/test-static.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
mkdir -p build/static
failed=()

step() {
  local target=$1 t=$SECONDS
  if make --no-print-directory "$target"; then
    echo "== $target passed in $((SECONDS - t)) s"
  else
    echo "== $target FAILED after $((SECONDS - t)) s"
    return 1
  fi
}

# lanes ASIDE... -- STEP...: the ASIDE steps one after the other in the background, the STEPs one
# after the other here (in each lane the first failure ends it), then the background lane's output.
lanes() {
  local t=$SECONDS pid target aside=()
  while [[ $1 != -- ]]; do aside+=("$1"); shift; done
  shift
  (for target in "${aside[@]}"; do step "$target" || { echo "$target" >build/static/aside.failed; exit 1; }; done) \
    >build/static/aside.log 2>&1 &
  pid=$!
  for target in "$@"; do
    step "$target" || { failed+=("$target"); break; }
  done
  wait "$pid" || failed+=("$(cat build/static/aside.failed)")
  cat build/static/aside.log
  echo "== ${aside[*]} beside $*: $((SECONDS - t)) s for all of them"
}

# ansible-lint alone takes about as long as the units and sanity together (134 s against 87 + 128
# in a clean-clone run): the short steps go beside it, so that neither core waits for the other.
rm -f build/static/aside.failed
lanes lint build-check docs-check monitoring-test -- units sanity
((${#failed[@]} == 0)) || { echo "test-static.sh: FAILED: ${failed[*]}" >&2; exit 1; }
echo "test-static.sh: every static step passed"
