#!/usr/bin/env bash
# Create the project's virtualenv and install the pinned toolchain into it.
set -euo pipefail
venv=${1:-.venv}
req=${2:-requirements-dev.txt}
if [[ ! -x "$venv/bin/python" ]]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip 2> >(grep -v "^WARNING: Location" >&2)
# --no-compile: pip would byte-compile every file of every package, the hundred-odd collections of
# the ansible package among them, which ansible loads from source whatever the cache (133 s -> 67 s
# on a 2-core machine with a warm pip cache). What Python imports from the venv (ansible-core,
# kubernetes, molecule...) is compiled below instead, once: Python writes no cache where
# PYTHONDONTWRITEBYTECODE is set, as on the machines the suite is timed on, and without one every
# ansible-playbook run, worker and module compiled its imports again: a kubernetes.core module call
# took 2.1 CPU-s instead of 1.4, a render-only run 10.3 instead of 7.6 (docs/testing.md). About 25 s.
"$venv/bin/python" -m pip install --quiet --no-compile --disable-pip-version-check -r "$req" 2> >(grep -v "^WARNING: Location" >&2)
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$venv/bin/python" -m compileall -q -j 0 -x '/ansible_collections/' "$site" >/dev/null
