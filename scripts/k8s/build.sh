#!/usr/bin/env bash
# Build the live test cluster's binaries and install artifacts from the Go module proxy alone, at
# the versions pinned by the wrapper modules under scripts/k8s/modules/ (go.mod + go.sum), and
# cache them outside the clone, keyed by that recipe: a second build is a no-op.
#
#   scripts/k8s/build.sh          # prints the cache directory (bin/, share/) on stdout
#
#   bin/   etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok helm lws
#   share/lws/manifests.yaml          the release manifest, `kustomize build config/default` of
#                                     the LWS module with the release image, as upstream makes it
#   share/lws/lws-chart-<ver>.tgz     the LWS chart, `helm package` of the module's charts/lws
#   share/kwok/stages.yaml            kwok's own fast node and pod stages, from the kwok module
#
# NIMSTACK_K8S_CACHE overrides the cache root (default /var/cache/nimstack/k8s). Needs Go 1.26
# (/usr/local/go/bin is added to PATH) and reaches only the Go module proxy.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
modules=$here/modules
export PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || { echo "build.sh: Go 1.26 is needed (go not on PATH)" >&2; exit 1; }
export GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0

# Versions, read from the wrapper modules so that go.mod stays the only place they are written.
modver() { awk -v m="$2" '$1 == m || ($1 == "require" && $2 == m) { v = ($1 == "require") ? $3 : $2 } END { print v }' "$modules/$1/go.mod"; }
k8s_version=$(modver control-plane k8s.io/kubernetes)
etcd_version=$(modver etcd go.etcd.io/etcd/server/v3)
kwok_version=$(modver control-plane sigs.k8s.io/kwok)
helm_version=$(modver helm helm.sh/helm/v3)
lws_version=$(modver control-plane sigs.k8s.io/lws)
for v in k8s_version etcd_version kwok_version helm_version lws_version; do
  [[ -n ${!v} ]] || { echo "build.sh: no $v in $modules" >&2; exit 1; }
done

key=$( (go env GOVERSION GOARCH; cd "$here" && find build.sh modules -type f | LC_ALL=C sort | xargs sha256sum) \
  | sha256sum | cut -c1-16)
root=${NIMSTACK_K8S_CACHE:-/var/cache/nimstack/k8s}
out=$root/$key
if [[ -f $out/.complete ]]; then
  echo "$out"
  exit 0
fi
mkdir -p "$root"
exec 9>"$root/.lock"
flock 9
[[ -f $out/.complete ]] && { echo "$out"; exit 0; }

tmp=$(mktemp -d "$root/.build-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/share/lws" "$tmp/share/kwok"
log() { echo "build.sh: $*" >&2; }
build() { # module-dir ldflags package...
  local dir=$1 ldflags=$2 t=$SECONDS
  shift 2
  (cd "$modules/$dir" && go build -trimpath -ldflags "-s -w $ldflags" -o "$tmp/bin/" "$@")
  log "$dir built in $((SECONDS - t)) s"
}

minor=${k8s_version#v1.}
minor=${minor%%.*}
# One go build for Kubernetes, kwok and LWS: the packages they share are compiled once.
build control-plane "-X k8s.io/component-base/version.gitVersion=$k8s_version \
  -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor \
  -X k8s.io/client-go/pkg/version.gitVersion=$k8s_version -X k8s.io/component-base/version.gitTreeState=clean \
  -X sigs.k8s.io/kwok/pkg/consts.Version=${kwok_version#v} -X sigs.k8s.io/lws/pkg/version.GitVersion=$lws_version" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl \
  sigs.k8s.io/kwok/cmd/kwok sigs.k8s.io/lws/cmd
build etcd "" .   # the wrapper main package: bin/etcd
build helm "-X helm.sh/helm/v3/internal/version.version=$helm_version" helm.sh/helm/v3/cmd/helm
mv "$tmp/bin/cmd" "$tmp/bin/lws"

# The LWS release artifacts, made from the module's own sources the way its `make artifacts` does.
lws_src=$(cd "$modules/control-plane" && go list -m -f '{{.Dir}}' sigs.k8s.io/lws)
cp -r "$lws_src/config" "$lws_src/charts" "$tmp/"
chmod -R u+w "$tmp/config" "$tmp/charts"
# As `kustomize edit set image controller=...` does: the module's own images block (the file's
# last) gives way to the release image.
sed -i '/^images:/,$d' "$tmp/config/manager/kustomization.yaml"
cat >>"$tmp/config/manager/kustomization.yaml" <<EOF
images:
- name: controller
  newName: registry.k8s.io/lws/lws
  newTag: $lws_version
EOF
"$tmp/bin/kubectl" kustomize "$tmp/config/default" 2> >(grep -v "commonLabels. is deprecated" >&2) >"$tmp/share/lws/manifests.yaml"
sed -i -e "s|^\(    repository:\).*|\1 registry.k8s.io/lws/lws|" -e "s|^\(    tag:\).*|\1 $lws_version|" \
  -e "s|^\(    pullPolicy:\).*|\1 IfNotPresent|" "$tmp/charts/lws/values.yaml"
"$tmp/bin/helm" package --version "$lws_version" --app-version "$lws_version" "$tmp/charts/lws" \
  -d "$tmp/share/lws" >/dev/null
mv "$tmp/share/lws/lws-$lws_version.tgz" "$tmp/share/lws/lws-chart-$lws_version.tgz"
rm -rf "$tmp/config" "$tmp/charts"

# kwok's fast stages: nodes become Ready and keep a lease, pods become Running and Ready.
kwok_src=$(cd "$modules/control-plane" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
  pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
  echo "---"
  cat "$kwok_src/kustomize/stage/$f"
done >"$tmp/share/kwok/stages.yaml"

cat >"$tmp/versions.env" <<EOF
K8S_VERSION=$k8s_version
ETCD_VERSION=$etcd_version
KWOK_VERSION=$kwok_version
HELM_VERSION=$helm_version
LWS_VERSION=$lws_version
EOF
touch "$tmp/.complete"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
# Older recipes' builds are of no further use.
find "$root" -mindepth 1 -maxdepth 1 -type d ! -name "$key" -exec rm -rf {} +
log "cached in $out"
echo "$out"
