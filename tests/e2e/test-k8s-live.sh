#!/usr/bin/env bash
# The live Kubernetes stage of `make test` (tests/e2e/test-k8s-live.py says what it covers): starts the
# test cluster (tests/cluster/cluster.sh, built from the Go module proxy and cached), runs every stage
# against it, takes it down and checks that no process of it and no file outside build/ is left.
#
#   tests/e2e/test-k8s-live.sh
#   NIMSTACK_LIVE_KUBECONFIG=~/.kube/config NIMSTACK_LIVE_STORAGE_CLASS=nfs-rwx tests/e2e/test-k8s-live.sh
#       against one's own cluster instead (docs/testing.md): no cluster is started, LWS is used as
#       installed, and only the stages that change nothing but their own namespace run.
#   LIVE_ONLY=stage_operator NIMSTACK_K8S_STATE=build/k8s-operator NIMSTACK_K8S_PORT_BASE=16460 \
#     NIMSTACK_LIVE_LOGS=build/k8s-live-operator tests/e2e/test-k8s-live.sh
#       some stages only, on a second cluster beside the first (make test runs the operator stage so).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
python=$repo/.venv/bin/python
state=$(realpath -m "${NIMSTACK_K8S_STATE:-$repo/build/k8s}")
logs=$(realpath -m "${NIMSTACK_LIVE_LOGS:-$repo/build/k8s-live}")
export NIMSTACK_K8S_STATE=$state NIMSTACK_LIVE_LOGS=$logs
t=$SECONDS

if [[ -n ${NIMSTACK_LIVE_KUBECONFIG:-} ]]; then
  "$python" tests/e2e/test-k8s-live.py
  exit
fi

tests/cluster/cluster.sh down >/dev/null 2>&1 || true
# Where Kubernetes tools write unless told otherwise: nothing may appear there (the stage runs
# beside the lab streams, so a scan of all of /tmp and ~ would catch their files too).
suspects=("$HOME/.kube" "$HOME/.cache/helm" "$HOME/.config/helm" "$HOME/.local/share/helm" /tmp/k8s-webhook-server)
existing=$(ls -d "${suspects[@]}" 2>/dev/null || true)
tests/cluster/cluster.sh up
echo "== the cluster was up in $((SECONDS - t)) s"

rc=0
"$python" tests/e2e/test-k8s-live.py || rc=$?

if ((rc != 0)); then
  # The cluster's own logs (API server, controllers, the LWS controller, the agent) go with the
  # stage's: build/k8s is removed below.
  cp -r "$state/logs" "$logs/cluster-logs" 2>/dev/null || true
fi
tests/cluster/cluster.sh down
left=$(pgrep -af -- "$state/" || true)
if [[ -n $left ]]; then
  echo "test-k8s-live.sh: processes of the cluster are left:" >&2
  echo "$left" >&2
  rc=1
fi
stray=$(comm -13 <(echo "$existing") <(ls -d "${suspects[@]}" 2>/dev/null || true))
if [[ -n $stray ]]; then
  echo "test-k8s-live.sh: written outside build/ during the run:" >&2
  echo "$stray" >&2
  rc=1
fi
[[ -d $state ]] && { echo "test-k8s-live.sh: $state is left" >&2; rc=1; }
if ((rc == 0)); then
  echo "test-k8s-live.sh: passed in $((SECONDS - t)) s; no process and no file of the cluster left"
fi
exit $rc
