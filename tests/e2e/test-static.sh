#!/usr/bin/env bash
# The quick static checks of `make test`, before any lab: ansible-lint beside units, build-check,
# sanity, docs-check and the monitoring checks (about 4 minutes each side; together 276 s in a
# clean-clone run, where one after the other took about 8 minutes; the monitoring checks, promtool
# over the alert rules and the dashboards' check, add about 20 s). The render tests and the bad
# inputs are static too, but long: they run as a stream of their own beside the labs
# (tests/e2e/test-labs.sh).
# The step that runs beside the others keeps its output in build/static/<step>.log, printed when it
# ends. Exits non-zero naming every step that failed.
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

# pair ASIDE STEP...: ASIDE in the background, the STEPs one after the other (the first failure
# ends them), then ASIDE's output.
pair() {
  local aside=$1 t=$SECONDS pid target; shift
  (step "$aside" >"build/static/$aside.log" 2>&1) &
  pid=$!
  for target in "$@"; do
    step "$target" || { failed+=("$target"); break; }
  done
  if wait "$pid"; then
    cat "build/static/$aside.log"
  else
    cat "build/static/$aside.log"
    failed+=("$aside")
  fi
  echo "== $aside beside $*: $((SECONDS - t)) s for all of them"
}

pair lint units build-check sanity docs-check monitoring-test
((${#failed[@]} == 0)) || { echo "test-static.sh: FAILED: ${failed[*]}" >&2; exit 1; }
echo "test-static.sh: every static step passed"
