#!/usr/bin/env bash
# The main job on the lab: 3 systemd hosts over real SSH, the lab's model source, the stand-in
# NIM image as a `docker save` archive on the shared path, then playbooks/site.yml to a serving
# endpoint (host preparation, the mpi group in Docker, readiness and the smoke test).
# Re-running converges with nothing changed; scripts/lab/lab.sh down removes it all.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
export ANSIBLE_CONFIG=$repo/ansible.cfg
export NIMSTACK_LAB_DIR=${NIMSTACK_LAB_DIR:-$repo/build/lab}
scripts/lab/ensure-docker.sh
scripts/lab/lab.sh up 3 >/dev/null
scripts/lab/model-source.sh up >/dev/null
image=$(scripts/lab/build-standin.sh --archive build/standin/nim-standin.tar)
mkdir -p "$NIMSTACK_LAB_DIR/shared/.images"
cp build/standin/nim-standin.tar "$NIMSTACK_LAB_DIR/shared/.images/nim-standin.tar"
echo "rollout.sh: lab up, model source up, $image shipped as an archive"
ansible-playbook -i "$NIMSTACK_LAB_DIR/inventory.yml" -i inventories/lab -i inventories/lab-docker \
  -e "nim_image_tag=${image##*:}" playbooks/site.yml
