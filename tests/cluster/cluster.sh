#!/usr/bin/env bash
# A real Kubernetes control plane on this machine, for the live tests of the Kubernetes path:
# etcd, kube-apiserver, kube-controller-manager and kube-scheduler, kwok for fake GPU nodes and
# pod lifecycles without kubelets, and the node agent (agent.py) that runs the real LWS controller
# and NIM Operator once they are installed and carries the API server's webhook calls to them. Everything listens on
# loopback only; every file it writes is under build/k8s/.
#
#   tests/cluster/cluster.sh up      # build (cached), start, wait until ready: build/k8s/kubeconfig
#   tests/cluster/cluster.sh down    # stop every process it started, remove build/k8s
#   tests/cluster/cluster.sh status
#   tests/cluster/cluster.sh restart NAME   # stop one process (kube-apiserver, etcd...) and start it
#                                           # again as it was started: a fault for the benchmarks
#
# The nodes (kwok, annotation kwok.x-k8s.io/node=fake), each 8 x nvidia.com/gpu, 64 CPUs, 1 TiB:
#   gpu-a1, gpu-a2   rack rack-a (label nimstack.test/rack)
#   gpu-b1, gpu-b2   rack rack-b
#   gpu-c1           rack rack-c, tainted nimstack.test/maintenance=true:NoSchedule
# and ReadWriteMany PersistentVolumes of storage class nimstack-rwx for the model cache claims.
#
# The controllers built from source trees (LWS v0.10.0, the NIM Operator) are there when build.sh was
# given their source (NIMSTACK_LWS_SRC, NIMSTACK_NIM_OPERATOR_SRC; see build.sh).
#
# NIMSTACK_K8S_PORT_BASE (default 16440) moves the ports: etcd +0 (peer +1), API server +2,
# controller-manager +3, scheduler +4, LWS webhook +5, LWS health probe +6, NIM Operator health
# probe +7 and metrics +8 (its webhook server has no flag: controller-runtime's :9443). NIMSTACK_K8S_STATE
# (default build/k8s) moves the state directory, for a second cluster beside the first.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
state=${NIMSTACK_K8S_STATE:-$repo/build/k8s}
base=${NIMSTACK_K8S_PORT_BASE:-16440}
p_etcd=$base p_peer=$((base + 1)) p_api=$((base + 2)) p_cm=$((base + 3)) p_sched=$((base + 4))
p_webhook=$((base + 5)) p_probe=$((base + 6)) p_op_probe=$((base + 7)) p_op_metrics=$((base + 8))
python=${NIMSTACK_PYTHON:-$repo/.venv/bin/python}
# How long a pod on a fake node takes to become Ready (a kwok stage delay), as containers take to start.
ready_ms=${NIMSTACK_K8S_POD_READY_MS:-5000}
procs=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok agent)

log() { echo "cluster.sh: $*" >&2; }

alive() { [[ -f $state/run/$1.pid ]] && kill -0 "$(cat "$state/run/$1.pid")" 2>/dev/null; }

start() { # name command...
  local name=$1
  shift
  setsid "$@" >>"$state/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$state/run/$name.pid"
  # How it was started, for restart.
  printf '%q ' "$@" >"$state/run/$name.cmd"
}

# The bounds below leave room for a 2-core machine that runs the lab streams beside the cluster.
wait_for() { # what seconds command...
  local what=$1 limit=$2 i
  shift 2
  for ((i = 0; i < limit * 2; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  log "$what did not come up within $limit s; the logs are in $state/logs"
  tail -n 20 "$state"/logs/*.log >&2 || true
  return 1
}

pki() {
  local d=$state/pki
  mkdir -p "$d"
  chmod 0700 "$d"
  openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=nimstack-test-ca" \
    -keyout "$d/ca.key" -out "$d/ca.crt" 2>/dev/null
  leaf() { # name subject sans(optional)
    local ext=$d/$1.ext
    printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n' >"$ext"
    if [[ -n ${3:-} ]]; then
      printf 'extendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=%s\n' "$3" >>"$ext"
    else
      printf 'extendedKeyUsage=clientAuth\n' >>"$ext"
    fi
    openssl req -newkey rsa:2048 -nodes -subj "$2" -keyout "$d/$1.key" -out "$d/$1.csr" 2>/dev/null
    openssl x509 -req -in "$d/$1.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial -days 30 \
      -extfile "$ext" -out "$d/$1.crt" 2>/dev/null
    rm -f "$d/$1.csr" "$ext"
  }
  leaf apiserver "/CN=kube-apiserver" \
    "IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
  leaf admin "/O=system:masters/CN=nimstack-admin"
  openssl genrsa -out "$d/sa.key" 2048 2>/dev/null
  openssl rsa -in "$d/sa.key" -pubout -out "$d/sa.pub" 2>/dev/null
  chmod 0600 "$d"/*.key
}

kubeconfig() {
  local d=$state/pki
  cat >"$state/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: nimstack-test
  cluster:
    server: https://127.0.0.1:$p_api
    certificate-authority-data: $(base64 -w0 "$d/ca.crt")
users:
- name: nimstack-admin
  user:
    client-certificate-data: $(base64 -w0 "$d/admin.crt")
    client-key-data: $(base64 -w0 "$d/admin.key")
contexts:
- name: nimstack-test
  context:
    cluster: nimstack-test
    user: nimstack-admin
current-context: nimstack-test
EOF
  chmod 0600 "$state/kubeconfig"
}

kubectl() { "$cache/bin/kubectl" --kubeconfig "$state/kubeconfig" --cache-dir "$state/cache" "$@"; }

nodes() {
  local name rack taint
  for spec in gpu-a1:rack-a: gpu-a2:rack-a: gpu-b1:rack-b: gpu-b2:rack-b: gpu-c1:rack-c:maintenance; do
    IFS=: read -r name rack taint <<<"$spec"
    cat <<EOF
---
apiVersion: v1
kind: Node
metadata:
  name: $name
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    kubernetes.io/hostname: $name
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    type: kwok
    nvidia.com/gpu.present: "true"
    nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
    nvidia.com/gpu.count: "8"
    nimstack.test/rack: $rack
spec:
$( [[ -n $taint ]] && printf '  taints:\n  - key: nimstack.test/maintenance\n    value: "true"\n    effect: NoSchedule\n' || echo "  taints: []")
status:
  allocatable: {cpu: "64", memory: 1Ti, pods: "110", nvidia.com/gpu: "8", ephemeral-storage: 1Ti}
  capacity: {cpu: "64", memory: 1Ti, pods: "110", nvidia.com/gpu: "8", ephemeral-storage: 1Ti}
EOF
  done
  # Retained, so a volume once bound stays Released: enough for every claim the live stage makes.
  for i in $(seq 1 32); do
    cat <<EOF
---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: nimstack-rwx-$i
  labels: {nimstack.test/pv: "true"}
spec:
  capacity: {storage: 2Ti}
  accessModes: [ReadWriteMany]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: nimstack-rwx
  nfs: {server: nfs.nimstack.test, path: /models/$i}
EOF
  done
  cat <<EOF
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: nimstack-rwx
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: Immediate
EOF
}

up() {
  if alive kube-apiserver; then
    log "already running: $state/kubeconfig"
    return 0
  fi
  [[ -x $python ]] || { log "$python is missing: run make deps first"; exit 1; }
  cache=$("$repo/tests/cluster/build.sh")
  # shellcheck disable=SC1091
  source "$cache/versions.env"
  rm -rf "$state"
  mkdir -p "$state/logs" "$state/run" "$state/etcd" "$state/cache"
  chmod 0700 "$state"
  echo "$cache" >"$state/run/cache"
  pki
  kubeconfig
  cat >"$state/egress.yaml" <<EOF
apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport:
      uds:
        udsName: $state/egress.sock
EOF
  local t=$SECONDS
  start etcd "$cache/bin/etcd" --name nimstack-test --data-dir "$state/etcd" \
    --listen-client-urls "http://127.0.0.1:$p_etcd" --advertise-client-urls "http://127.0.0.1:$p_etcd" \
    --listen-peer-urls "http://127.0.0.1:$p_peer" --initial-advertise-peer-urls "http://127.0.0.1:$p_peer" \
    --initial-cluster "nimstack-test=http://127.0.0.1:$p_peer" --unsafe-no-fsync --quota-backend-bytes 2147483648
  wait_for etcd 120 curl -fsS "http://127.0.0.1:$p_etcd/health"
  start kube-apiserver "$cache/bin/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$p_etcd" --bind-address 127.0.0.1 --secure-port "$p_api" \
    --advertise-address 127.0.0.1 --endpoint-reconciler-type none \
    --tls-cert-file "$state/pki/apiserver.crt" --tls-private-key-file "$state/pki/apiserver.key" \
    --client-ca-file "$state/pki/ca.crt" --authorization-mode Node,RBAC \
    --service-account-key-file "$state/pki/sa.pub" --service-account-signing-key-file "$state/pki/sa.key" \
    --service-account-issuer https://kubernetes.default.svc --service-cluster-ip-range 10.96.0.0/16 \
    --egress-selector-config-file "$state/egress.yaml" --allow-privileged=true \
    --profiling=false --event-ttl 30m
  wait_for kube-apiserver 300 kubectl get --raw /readyz
  local controllers=()
  [[ -n $LWS_VERSION ]] && controllers+=(--lws-bin "$cache/bin/lws" --lws-version "$LWS_VERSION")
  [[ -n $NIM_OPERATOR_VERSION ]] && controllers+=(--operator-bin "$cache/bin/nim-operator"
    --operator-image "$NIM_OPERATOR_IMAGE" --operator-manifests "$cache/share/nim-operator/manifests"
    --operator-ports "$p_op_probe,$p_op_metrics")
  start agent "$python" "$repo/tests/cluster/agent.py" --state "$state" --ports "$p_webhook,$p_probe" "${controllers[@]}"
  start kube-controller-manager "$cache/bin/kube-controller-manager" \
    --kubeconfig "$state/kubeconfig" --authentication-kubeconfig "$state/kubeconfig" \
    --authorization-kubeconfig "$state/kubeconfig" --bind-address 127.0.0.1 --secure-port "$p_cm" \
    --service-account-private-key-file "$state/pki/sa.key" --root-ca-file "$state/pki/ca.crt" \
    --leader-elect=false --controllers '*,-nodeipam,-service-lb-controller,-cloud-node-lifecycle' \
    --node-monitor-grace-period 60s --profiling=false
  start kube-scheduler "$cache/bin/kube-scheduler" \
    --kubeconfig "$state/kubeconfig" --authentication-kubeconfig "$state/kubeconfig" \
    --authorization-kubeconfig "$state/kubeconfig" --bind-address 127.0.0.1 --secure-port "$p_sched" \
    --leader-elect=false --profiling=false
  # kwok's own stages, with pods taking a few seconds to become Ready as containers do: a run that
  # returned on the old pods of a rolling group would then be caught with new pods not ready.
  "$python" -c 'import sys, yaml
stages = [s for s in yaml.safe_load_all(open(sys.argv[1])) if s]
for stage in stages:
    if stage["metadata"]["name"] == "pod-ready":
        stage["spec"]["delay"] = {"durationMilliseconds": int(sys.argv[3])}
yaml.safe_dump_all(stages, open(sys.argv[2], "w"))' "$cache/share/kwok/stages.yaml" "$state/kwok-stages.yaml" "$ready_ms"
  start kwok "$cache/bin/kwok" --kubeconfig "$state/kubeconfig" --config "$state/kwok-stages.yaml" \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
    --node-lease-duration-seconds 40 --cidr 10.244.0.1/16 --node-ip 10.0.0.1
  nodes | kubectl apply -f - >/dev/null
  wait_for "the fake nodes" 180 bash -c \
    "[[ \$('$cache/bin/kubectl' --kubeconfig '$state/kubeconfig' --cache-dir '$state/cache' get nodes --no-headers | grep -cw Ready) -ge 5 ]]"
  wait_for "the default ServiceAccount" 180 kubectl -n default get serviceaccount default
  # shellcheck disable=SC2153 # K8S_VERSION and the others come from versions.env
  log "ready in $((SECONDS - t)) s: Kubernetes $K8S_VERSION, kwok $KWOK_VERSION; run by the agent once installed:" \
    "LWS ${LWS_VERSION:-(not built: no source)}, NIM Operator ${NIM_OPERATOR_VERSION:-(not built: no source)}"
  log "KUBECONFIG=$state/kubeconfig"
}

# Stop one process this cluster started (its session): TERM, up to 15 s, then KILL.
stop() {
  local pid i
  [[ -f $state/run/$1.pid ]] || return 0
  pid=$(cat "$state/run/$1.pid")
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 30; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
}

down() {
  local name
  # The agent first: it stops the controllers it runs.
  for name in agent kwok kube-scheduler kube-controller-manager kube-apiserver etcd; do
    stop "$name"
  done
  # Whatever is left of this state directory's processes (a controller the agent started in a
  # session of its own) is found by its command line.
  pkill -KILL -f -- "--kubeconfig=$state/" 2>/dev/null || true
  rm -rf "$state"
  log "stopped; $state removed"
}

# Stop one process and start it again with the command it was started with.
restart() {
  local name=$1
  [[ -f $state/run/$name.cmd ]] || { log "no $name was started here"; exit 1; }
  stop "$name"
  sleep "${NIMSTACK_K8S_DOWN_S:-0}"
  eval "start $name $(cat "$state/run/$name.cmd")"
  log "$name restarted (pid $(cat "$state/run/$name.pid"))"
}

status() {
  local name rc=0
  for name in "${procs[@]}"; do
    if alive "$name"; then echo "$name: running (pid $(cat "$state/run/$name.pid"))"; else echo "$name: stopped"; rc=1; fi
  done
  return $rc
}

case ${1:-} in
  up) up ;;
  down) down ;;
  status) status ;;
  restart) restart "${2:?restart what: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok, agent}" ;;
  *) echo "usage: $0 up|down|status|restart NAME" >&2; exit 2 ;;
esac
