#!/usr/bin/env bash
# The static steps of `make test`, on both cores: the render tests (about 500 s, one core: their
# runs that build on an earlier one go one after the other) beside lint, units, build-check,
# sanity and docs-check one after the other (about as long together), then the bad inputs (two
# cases at a time) once both sides are done. In a clean-clone run lint beside the four others took
# 276 s and the render tests after them 509 s, with the bad inputs beside the render tests for
# only 130 s of that: one core was idle for about 380 s.
# The step that runs beside the others keeps its output in build/static/<step>.log, printed when it
# ends. Exits non-zero naming every step that failed.
#
#   scripts/test-static.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
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

pair k8s lint units build-check sanity docs-check
((${#failed[@]} == 0)) || { echo "test-static.sh: FAILED: ${failed[*]}" >&2; exit 1; }
step bad-inputs || failed+=(bad-inputs)
((${#failed[@]} == 0)) || { echo "test-static.sh: FAILED: ${failed[*]}" >&2; exit 1; }
echo "test-static.sh: every static step passed"
