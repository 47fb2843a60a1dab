#!/usr/bin/env bash
# The main job on the lab: 3 systemd hosts over real SSH, the lab's model source, the lab's
# registry (TLS, basic auth with `$oauthtoken` and the lab's NGC key) holding the stand-in NIM
# image, then playbooks/site.yml to a serving endpoint (host preparation, the image pulled with the
# key through the same tasks as from nvcr.io, the mpi group in Docker, readiness, the smoke test).
# Re-running converges with nothing changed; tests/lab/lab.sh down removes it all.
#
#   tests/lab/rollout.sh                 pull from the lab's registry (the default)
#   NIMSTACK_LAB_IMAGE_FROM=archive tests/lab/rollout.sh
#                                          ship the image as a `docker save` archive instead
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
export ANSIBLE_CONFIG=$repo/ansible.cfg
export NIMSTACK_LAB_DIR=${NIMSTACK_LAB_DIR:-$repo/build/lab}
from=${NIMSTACK_LAB_IMAGE_FROM:-registry}
tests/lab/ensure-docker.sh
tests/lab/lab.sh up 3 >/dev/null
tests/lab/model-source.sh up >/dev/null
inventories=(-i "$NIMSTACK_LAB_DIR/inventory.yml" -i inventories/lab -i inventories/lab-docker)
case "$from" in
  registry)
    image=$(tests/lab/build-standin.sh)
    registry=$(tests/lab/registry.sh up)
    pushed=$(tests/lab/registry.sh push "$image")
    for host in $(docker ps --filter "label=nimstack.lab=${NIMSTACK_LAB_PREFIX:-nimstack-lab}" --format '{{.Names}}'); do
      tests/lab/registry.sh trust "$host"
    done
    inventories+=(-i inventories/lab-registry)
    # The key travels in the environment, as an AWX credential gives it: never on a command line.
    NGC_API_KEY=$(cat "$(tests/lab/registry.sh key)")
    export NGC_API_KEY
    echo "rollout.sh: lab up, model source up, $pushed in the lab registry $registry"
    ;;
  archive)
    image=$(tests/lab/build-standin.sh --archive build/standin/nim-standin.tar)
    mkdir -p "$NIMSTACK_LAB_DIR/shared/.images"
    cp build/standin/nim-standin.tar "$NIMSTACK_LAB_DIR/shared/.images/nim-standin.tar"
    echo "rollout.sh: lab up, model source up, $image shipped as an archive"
    ;;
  *) echo "rollout.sh: NIMSTACK_LAB_IMAGE_FROM must be registry or archive, not '$from'" >&2; exit 2 ;;
esac
ansible-playbook "${inventories[@]}" -e "nim_image_tag=${image##*:}" playbooks/site.yml
