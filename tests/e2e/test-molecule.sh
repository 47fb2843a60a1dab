#!/usr/bin/env bash
# Run `molecule test` for every scenario of every role that has one, one at a time (the lab
# hosts share one Docker engine and a few cores), on the locally built lab image.
#
#   tests/e2e/test-molecule.sh                 every role
#   tests/e2e/test-molecule.sh docker rdma     only these roles
#   tests/e2e/test-molecule.sh --except nvidia_driver nvidia_container_toolkit
#                                            every role but these
#   MOLECULE_SKIP="docker/default ssh_mesh/default" tests/e2e/test-molecule.sh
#                                            leave these scenarios out (make test's halves do)
#
# Prints each scenario's result and wall time, then `N passed, M failed`; exits non-zero when
# any scenario failed. Logs go to build/molecule/<role>-<scenario>.log.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"

tests/lab/ensure-docker.sh
tests/lab/build-image.sh >/dev/null
mkdir -p build/collections/ansible_collections/nimstack build/molecule
ln -sfn ../../../.. build/collections/ansible_collections/nimstack/multinode

except=()
if [[ "${1:-}" == --except ]]; then
  shift
  except=("$@")
  set --
fi
if (($#)); then
  roles=("$@")
else
  roles=()
  for dir in roles/*/molecule; do
    role=$(basename "$(dirname "$dir")")
    [[ -d "$dir" && " ${except[*]} " != *" $role "* ]] && roles+=("$role")
  done
fi

passed=0
failed=0
failures=()
for role in "${roles[@]}"; do
  [[ -d "roles/$role/molecule" ]] || { echo "no molecule scenarios in roles/$role" >&2; exit 2; }
  for scenario_dir in "roles/$role"/molecule/*/; do
    scenario=$(basename "$scenario_dir")
    [[ -f "$scenario_dir/molecule.yml" ]] || continue
    if [[ " ${MOLECULE_SKIP:-} " == *" $role/$scenario "* ]]; then
      printf '%-32s %s\n' "$role/$scenario" "left out (MOLECULE_SKIP)"
      continue
    fi
    log="build/molecule/$role-$scenario.log"
    start=$SECONDS
    if (cd "roles/$role" && NO_COLOR=1 ANSIBLE_NOCOLOR=1 molecule test -s "$scenario") >"$log" 2>&1; then
      result=passed
      passed=$((passed + 1))
    else
      result=FAILED
      failed=$((failed + 1))
      failures+=("$role/$scenario")
    fi
    printf '%-32s %-7s %4ds  %s\n' "$role/$scenario" "$result" $((SECONDS - start)) "$log"
  done
done

echo "$passed passed, $failed failed"
if ((failed)); then
  printf 'failed: %s\n' "${failures[@]}" >&2
  exit 1
fi
