#!/usr/bin/env bash
# The lab's registry: Debian's docker-registry in a container at .3 of the lab subnet (reserved
# for lab services), with TLS from a CA of the lab's own and basic auth for the user `$oauthtoken`
# whose password is the lab's NGC key: nvcr.io's scheme, so the lab's rollout pulls through the
# same tasks a site uses with nvcr.io. For the lab and the tests only.
#
#   tests/lab/registry.sh up          start (or reconcile); prints the registry's host:port
#   tests/lab/registry.sh push IMAGE  push a local image as <registry>/nim/<IMAGE's path>:<tag>; prints it
#   tests/lab/registry.sh trust HOST  make lab host HOST (a container) trust the lab CA for the registry
#   tests/lab/registry.sh key         print the path of the lab's NGC key file (0600)
#   tests/lab/registry.sh down        remove the container, its state and this machine's trust
#
# State (CA, certificate, key file) lives in $NIMSTACK_LAB_DIR/registry. This machine's dockerd
# trusts the lab CA through /etc/docker/certs.d/<registry>/ca.crt (removed by down). The key
# reaches docker login and htpasswd on standard input only, never a command line.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=tests/lab/lab-network.sh
source "$here/lab-network.sh"
state=${NIMSTACK_LAB_DIR:-$repo/build/lab}/registry
name=$prefix-registry
addr=$net_base.3
registry=$addr:5000
timeout=${NIMSTACK_REGISTRY_TIMEOUT:-60}

die() { echo "registry.sh: $*" >&2; exit 1; }

image_of_recipe() {
  local base tag
  base=$("$here/build-image.sh")
  tag=nimstack-lab/registry:$( (echo "$base"; cat "$here/registry.Dockerfile") | sha256sum | cut -c1-12)
  if ! docker image inspect "$tag" >/dev/null 2>&1; then
    docker build -q -t "$tag" --build-arg "BASE=$base" -f "$here/registry.Dockerfile" "$here" >/dev/null 2>&1 \
      || die "building $tag failed"
  fi
  echo "$tag"
}

make_secrets() {
  mkdir -p "$state"
  chmod 0700 "$state"
  if [[ ! -s "$state/ca.crt" ]]; then
    openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=nimstack lab CA" \
      -keyout "$state/ca.key" -out "$state/ca.crt" 2>/dev/null
  fi
  if [[ ! -s "$state/registry.crt" ]] || ! openssl x509 -in "$state/registry.crt" -noout -ext subjectAltName 2>/dev/null \
      | grep -q "IP Address:$addr"; then
    openssl req -newkey rsa:2048 -nodes -subj "/CN=$addr" -keyout "$state/registry.key" \
      -out "$state/registry.csr" 2>/dev/null
    openssl x509 -req -in "$state/registry.csr" -CA "$state/ca.crt" -CAkey "$state/ca.key" -CAcreateserial \
      -days 30 -extfile <(printf 'subjectAltName=IP:%s\nextendedKeyUsage=serverAuth\n' "$addr") \
      -out "$state/registry.crt" 2>/dev/null
  fi
  if [[ ! -s "$state/ngc-api-key" ]]; then
    (umask 077; printf 'nvapi-lab-%s' "$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$state/ngc-api-key")
  fi
  cat >"$state/config.yml" <<CONFIG
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: /var/lib/docker-registry
http:
  addr: :5000
  tls:
    certificate: /srv/registry/registry.crt
    key: /srv/registry/registry.key
auth:
  htpasswd:
    realm: nimstack-lab
    path: /srv/registry/htpasswd
CONFIG
}

trust_here() {
  install -d -m 0755 "/etc/docker/certs.d/$registry"
  install -m 0644 "$state/ca.crt" "/etc/docker/certs.d/$registry/ca.crt"
}

cmd_up() {
  local image recipe deadline
  image=$(image_of_recipe)
  make_secrets
  ensure_network
  recipe=$( (echo "$image $network $addr"; cat "$state/config.yml" "$state/registry.crt" "$state/ngc-api-key") \
    | sha256sum | cut -c1-12)
  if service_current "$name" "$recipe"; then
    trust_here
    echo "$registry"
    return
  fi
  # The password file is made inside the container from the key on standard input (bcrypt).
  docker run -d --name "$name" --hostname "$name" --restart unless-stopped \
    --label "nimstack.lab.service=registry" --label "nimstack.lab.recipe=$recipe" \
    --network "$network" --ip "$addr" \
    -v "$state/config.yml:/srv/registry/config.yml:ro" -v "$state/registry.crt:/srv/registry/registry.crt:ro" \
    -v "$state/registry.key:/srv/registry/registry.key:ro" \
    "$image" /bin/sh -c 'until [ -s /srv/registry/htpasswd ]; do sleep 0.2; done; exec /usr/bin/docker-registry serve /srv/registry/config.yml' \
    >/dev/null
  docker exec -i "$name" /bin/sh -c 'umask 077; htpasswd -niB "\$oauthtoken" > /srv/registry/htpasswd.new && mv /srv/registry/htpasswd.new /srv/registry/htpasswd' \
    <"$state/ngc-api-key"
  trust_here
  deadline=$((SECONDS + timeout))
  until curl -s -o /dev/null --max-time 3 --cacert "$state/ca.crt" "https://$registry/v2/"; do
    ((SECONDS < deadline)) || die "$name did not answer on https://$registry/v2/ within ${timeout}s (docker logs $name)"
    sleep 0.5
  done
  echo "$registry"
}

cmd_push() {
  local source=${1:?usage: registry.sh push IMAGE} path tag target
  path=${source%:*}
  tag=${source##*:}
  [[ "$path" != "$source" ]] || tag=latest
  target=$registry/nim/$path:$tag
  trust_here
  docker login --username '$oauthtoken' --password-stdin "$registry" <"$state/ngc-api-key" >/dev/null 2>&1 \
    || die "docker login to $registry failed"
  docker tag "$source" "$target"
  docker push -q "$target" >/dev/null
  docker logout "$registry" >/dev/null
  echo "$target"
}

cmd_trust() {
  local host=${1:?usage: registry.sh trust HOST}
  docker exec -i "$host" /bin/sh -c "install -d -m 0755 /etc/docker/certs.d/$registry && cat > /etc/docker/certs.d/$registry/ca.crt" \
    <"$state/ca.crt"
}

cmd_down() {
  docker rm -f "$name" >/dev/null 2>&1 || true
  rm -rf "/etc/docker/certs.d/$registry" "$state"
}

case "${1:-}" in
  up) cmd_up ;;
  push) shift; cmd_push "$@" ;;
  trust) shift; cmd_trust "$@" ;;
  key) echo "$state/ngc-api-key" ;;
  down) cmd_down ;;
  *) echo "usage: registry.sh up|push IMAGE|trust HOST|key|down" >&2; exit 2 ;;
esac
