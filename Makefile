# `make test` runs the whole test suite on a fresh Debian 12 machine (it installs the pinned
# toolchain into .venv and the Docker engine it needs); `make lab` is the main job. The other
# targets are their steps.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
VENV ?= .venv
PY := $(VENV)/bin/python
COLLECTION_LINK := build/collections/ansible_collections/nimstack/multinode
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg

.PHONY: test static labs deps link lint units k8s build-check sanity bad-inputs monitoring-test monitoring-lab-test molecule molecule-nvidia molecule-others lab-test standin-test docker-path-test contracts-test docs-check awx-test doctor-test security-test supervisor-test rollout-test security-keep-test security-rollout-test monitoring-on-security-lab-test k8s-cluster k8s-cluster-down k8s-live-test k8s-live-lws-test k8s-live-operator-test lab lab-down clean

test: deps static labs

# lint, units, build-check, sanity and docs-check, two at a time where that fills the two cores
# (tests/e2e/test-static.sh says which run together); make test runs k8s and bad-inputs beside the
# labs.
static: deps
	tests/e2e/test-static.sh

deps: $(VENV)/.deps-stamp link

$(VENV)/.deps-stamp: requirements-dev.txt scripts/setup-venv.sh scripts/setup-system.sh
	scripts/setup-system.sh
	scripts/setup-venv.sh $(VENV) requirements-dev.txt
	touch $@

# Playbooks and molecule resolve nimstack.multinode to this working tree through the link.
link:
	mkdir -p $(dir $(COLLECTION_LINK))
	ln -sfn ../../../.. $(COLLECTION_LINK)

lint: deps
	ansible-lint --profile production

units: deps
	$(PY) -m pytest -q tests/unit

# Render-only Kubernetes output, validated against the Kubernetes schemas and the upstream CRDs in tests/k8s/crds.
k8s: deps
	$(PY) -m pytest -q tests/k8s

build-check: deps
	tests/build/build-check.sh

sanity: deps
	scripts/sanity.sh

# Mistaken inventories (tests/bad_inputs/cases.yml) through playbooks/preflight.yml and the
# render-only Kubernetes deploy, with ssh/scp/sftp shims that record any attempt to reach a node:
# each case is refused naming its variable, or accepted; no host contacted, no traceback, no key
# in the output, a user's own file in the render directory kept. Two cases at a time.
bad-inputs: deps
	$(PY) tests/e2e/test-bad-inputs.py

# The alert rules through promtool (Debian's, fetched once without installing the package): check,
# a firing and a quiet case per alert, every case, each threshold nudged failing the cases; the
# committed dashboards equal to scripts/dashboards.py's output; every metric the dashboards and the
# rules name served by some target (tests/monitoring/test-monitoring.sh). No lab.
monitoring-test: deps
	tests/monitoring/test-monitoring.sh

# Roles on real systemd hosts (Docker, built locally): molecule per role, then the lab end to end.
molecule: deps
	tests/e2e/test-molecule.sh

# The molecule scenarios in two halves, so that make test runs them in two streams. make test
# leaves out the scenarios whose every check another step of it makes (make molecule runs them):
# the NVIDIA roles' families (the per-family plans, asserted exactly by tests/unit's driver and
# toolkit plan tests from the roles' own vars), docker's default (the engine installed,
# configured and converged on the lab's hosts by every lab test, a site's engine kept on the lab
# test's brownfield host, the swap in docker/engines) and ssh_mesh's default (the mesh the Docker
# path test's mpi group runs over across three hosts; the security test checks that the key
# reaches members only) and rdma's default (a host without RDMA reported, its userspace, memlock
# and no module list, and rdma_required refusing it: the lab test, on its three hosts).
MOLECULE_NVIDIA := nvidia_driver nvidia_container_toolkit
MOLECULE_NOT_IN_TEST := nvidia_driver/families nvidia_container_toolkit/families docker/default ssh_mesh/default rdma/default
molecule-nvidia: deps
	MOLECULE_SKIP="$(MOLECULE_NOT_IN_TEST)" tests/e2e/test-molecule.sh $(MOLECULE_NVIDIA)

molecule-others: deps
	MOLECULE_SKIP="$(MOLECULE_NOT_IN_TEST)" tests/e2e/test-molecule.sh --except $(MOLECULE_NVIDIA)

# Every lab-based step below, the molecule scenarios, the render tests and the bad inputs, in four
# streams at once (tests/e2e/test-labs.sh says which).
labs: deps
	tests/e2e/test-labs.sh

# The lab-based tests hand one lab on: test-lab.sh prepares it and keeps it (LAB_KEEP), the
# Docker path and contract tests take it as it is (LAB_REUSE) instead of preparing fresh hosts
# again, and the contract test takes it down at the end, checking that nothing is left.
lab-test: deps
	LAB_KEEP=1 tests/e2e/test-lab.sh

# The lab's stand-in NIM image speaking each launch contract for real across three containers;
# not in make test (every lab step runs the stand-in): run it when the stand-in changes.
standin-test: deps
	tests/lab/ensure-docker.sh
	tests/lab/test-standin.sh

# site.yml on the prepared 3-host lab with the stand-in image: ready, smoke test, idempotence, bad
# input, a worker down before and killed after the rollout, teardown.
docker-path-test: deps
	LAB_REUSE=1 LAB_KEEP=1 tests/e2e/test-docker-path.sh

# The same inventory under ray and leader_address (and switched to mpi and back), beside a render-only
# Kubernetes group (one site.yml, two modes, one plan): serving, re-run idempotent, a killed worker recovered by the next run, nothing of the old contract left.
contracts-test: deps
	LAB_REUSE=1 tests/e2e/test-contracts.sh

# The preflight doctor on a 3-host lab of its own: a healthy lab passes within a minute; a worker
# with other GPUs, a port blocked by nftables, a missing deployment key and an unshared cache are
# each named (check + host) in the JSON report.
doctor-test: deps
	tests/e2e/test-doctor.sh

# The group security rules on a 4-host lab: two 2-node groups (mpi, ray) in one inventory; each group's ports
# closed to the other's hosts, the API to non-allowed sources, the Ray head to clients without the
# token, the deployment key to non-members; nothing left after teardown, no secret in the output.
security-test: deps
	tests/e2e/test-security.sh

# The bare-metal monitoring on a 3-host lab of its own (a group of two, the monitoring host and front
# door on the third): every written target up, the group and model labels, the dashboards and rules
# against the live Prometheus, a killed rank's NIMGroupNotServing fired, received by Alertmanager and
# resolved by the supervisor's heal, the role's teardown.
monitoring-lab-test: deps
	tests/e2e/test-monitoring-lab.sh

# The group supervisor on a lab with a group of two per launch contract: a rank killed with SIGKILL serves
# again without Ansible in under 2 x a cold start; a rank that dies at every start spends the restart
# budget and leaves the group failed, reported by playbooks/status.yml and cleared by deploy_docker.yml.
supervisor-test: deps
	tests/e2e/test-supervisor.sh

# Rollouts across groups behind the front door on a 4-host lab: two groups start in one wave, a
# client streaming through the front door during a rank's kill and the supervisor's re-forming sees
# no failure, an image change goes one group per wave with the front door probed every second, a
# failing canary stops the run with the other group untouched.
rollout-test: deps
	tests/e2e/test-rollout.sh

# One 4-host lab for two tests: the security test hands it on (security-keep-test: prepared, no
# group left after its teardown), the next takes it as it is and takes it down at the end, so the
# hosts are prepared once for both: the rollout test (security-rollout-test), or in make test the
# monitoring lab test on hosts 1-3 of it (monitoring-on-security-lab-test, tests/e2e/test-labs.sh).
SHARED_4_HOST_LAB := NIMSTACK_LAB_PREFIX=nimstack-sec NIMSTACK_LAB_SUBNET=172.30.83.0/24 NIMSTACK_LAB_DIR=$(CURDIR)/build/lab-sec
security-keep-test: deps
	$(SHARED_4_HOST_LAB) LAB_KEEP=1 tests/e2e/test-security.sh

security-rollout-test: security-keep-test
	$(SHARED_4_HOST_LAB) LAB_REUSE=1 tests/e2e/test-rollout.sh

monitoring-on-security-lab-test: deps
	$(SHARED_4_HOST_LAB) LAB_REUSE=1 tests/e2e/test-monitoring-lab.sh

# docs/variables.md is generated from the roles' argument_specs: fail when it is stale (regenerate
# with `scripts/docs-reference.py -o docs/variables.md`), and when ansible-doc cannot read a role.
docs-check: deps
	tmp=$$(mktemp); trap 'rm -f "$$tmp"' EXIT; \
	$(PY) scripts/docs-reference.py -o "$$tmp"; \
	diff -u docs/variables.md "$$tmp" || { echo "docs/variables.md is stale: run scripts/docs-reference.py -o docs/variables.md" >&2; exit 1; }
	$(PY) scripts/settings-table.py | diff -u plugins/module_utils/settings.py - || { echo "plugins/module_utils/settings.py is stale: run scripts/settings-table.py --write" >&2; exit 1; }
	for role in roles/*/; do \
	  ansible-doc -t role "nimstack.multinode.$$(basename "$$role")" >/dev/null || exit 1; \
	done

# site.yml the way AWX runs it: ansible-runner on a private data dir with survey answers as extra
# vars and the NGC credential as env, on a lab of its own; the key must not leak into the job.
awx-test: deps
	tests/e2e/test-awx.sh

# A real Kubernetes control plane for the live tests (tests/cluster/cluster.sh): etcd, the API
# server, controller-manager, scheduler and kwok's fake GPU nodes, built from the Go module proxy
# at pinned versions and cached outside the clone. Leaves it running: build/k8s/kubeconfig.
k8s-cluster: deps
	tests/cluster/cluster.sh up

# Stops every process k8s-cluster started and removes build/k8s.
k8s-cluster-down:
	tests/cluster/cluster.sh down

# The Kubernetes roles against that cluster (or against KUBECONFIG=... of one's own, see
# docs/testing.md): install, deploy, re-run, change, refuse, tear down.
k8s-live-test: deps
	tests/e2e/test-k8s-live.sh

# make test runs the live stage as two, each on a cluster of its own, in two streams: the LWS
# stages, and the NIM Operator's (a second state directory and port range; its webhook keeps :9443).
k8s-live-lws-test: deps
	LIVE_ONLY=stage_refusals,stage_lws,stage_helm,stage_finalizer tests/e2e/test-k8s-live.sh

k8s-live-operator-test: deps
	LIVE_ONLY=stage_operator NIMSTACK_K8S_STATE=$(CURDIR)/build/k8s-operator NIMSTACK_K8S_PORT_BASE=16460 \
	  NIMSTACK_LIVE_LOGS=$(CURDIR)/build/k8s-live-operator tests/e2e/test-k8s-live.sh

# The main job: site.yml on a 3-host lab to a serving endpoint (tests/lab/rollout.sh).
lab: deps
	tests/lab/rollout.sh

lab-down:
	tests/lab/lab.sh down

clean:
	rm -rf build tests/output .pytest_cache
