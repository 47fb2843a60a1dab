#!/usr/bin/env bash
# ansible-test sanity, offline: ansible-test bootstraps pip into each of its virtualenvs with a
# get-pip script downloaded from a host this network cannot reach. A stand-in at the cache path
# it checks first does the same job with the venv's own ensurepip.
set -euo pipefail
cd "$(dirname "$0")/.."
python_version=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
at_dir=$(python3 -c 'import ansible_test, os; print(os.path.dirname(ansible_test.__file__))')
pip_version=$(sed -n "s/^ *pip='\([0-9.]*\)',\$/\1/p" "$at_dir/_internal/python_requirements.py" | head -n1)
[[ -n "$pip_version" ]] || { echo "sanity.sh: cannot find the pip version ansible-test bootstraps" >&2; exit 1; }
shim="$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py"
mkdir -p "$(dirname "$shim")"
cat > "$shim" <<'PY'
"""Offline stand-in for get-pip.py: ensurepip, then pip install what ansible-test asked for."""
import subprocess
import sys

args = [a for a in sys.argv[1:] if a not in ('--no-setuptools', '--no-wheel')]
subprocess.check_call([sys.executable, '-m', 'ensurepip', '--default-pip'])
subprocess.check_call([sys.executable, '-m', 'pip', 'install'] + args)
PY
tree=$(scripts/collection-tree.sh build/sanity)
# The collections whose module_utils this one's modules import (kubernetes.core's API client),
# beside it, where ansible-test looks for them.
dependencies=(kubernetes/core)
for dependency in "${dependencies[@]}"; do
  source=$(python3 -c 'import importlib.util, sys; print(list(importlib.util.find_spec(sys.argv[1]).submodule_search_locations)[0])' \
    "ansible_collections.${dependency/\//.}")
  mkdir -p "build/sanity/ansible_collections/${dependency%/*}"
  ln -sfn "$source" "build/sanity/ansible_collections/$dependency"
done
cd "$tree"
git init -q . && git add -A >/dev/null
ansible-test sanity --local --python "$python_version" --color no "$@"
