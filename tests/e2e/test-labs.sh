#!/usr/bin/env bash
# The long steps of `make test`, in four streams at once: most of the lab steps' time is spent
# waiting (containers starting, apt, readiness, bounded waits), not computing, so the streams on a
# 2-core machine take far less than one after the other. Each stream's lines are prefixed with its
# name and printed as they come.
#
#   stream a: lab-test -> docker-path-test -> contracts-test (one 3-host lab, prepared once,
#             handed on)
#   stream b: security-test (a 4-host lab of its own), then the bare-metal monitoring
#             (monitoring-lab-test: Prometheus and Alertmanager on a lab host, every target up, an
#             alert fired by a killed rank and resolved by the supervisor, a hold that outlived its
#             run, a hang, a partition) on hosts 1-3 of the same lab, prepared once, then the
#             render tests (k8s: no containers, pure controller CPU)
#   stream c: the live Kubernetes stage's LWS steps (k8s-live-lws-test: the Kubernetes roles on a
#             live control plane, built from the Go module proxy and the release trees and cached
#             outside the clone; on a machine whose caches are cold, as CI's are, the build takes
#             about 11 minutes of this stream), then the NVIDIA roles' molecule scenarios, then the
#             bad inputs (no containers, pure controller CPU)
#   stream d: the molecule scenarios of every role but the NVIDIA ones, then the live stage's NIM
#             Operator steps on a second cluster (k8s-live-operator-test; its build waits for
#             stream c's, so the molecule scenarios fill that wait on a cold cache)
#
# The streams are balanced by their measured times (docs/testing.md has the latest). Not among
# them, each with a lab of its own (docs/testing.md says what the suite checks of the same
# behaviour): the stand-in's own test (make standin-test; every lab step runs the stand-in), the
# AWX test (make awx-test), the doctor's fault test (make doctor-test; every site.yml runs the
# doctor), the rollouts across groups behind the front door (make rollout-test, or
# make security-rollout-test on one lab with the security test) and the group supervisor test
# (make supervisor-test).
#
# Each step's line gives its wall time and the CPU its processes on this machine used (the
# playbooks and their workers, molecule, pytest; not the module runs inside the lab hosts), and
# the end gives the whole machine's busy CPU over the streams, also as a multiple of the floor
# play timed in the same run (floor_once below): the figures to balance and cut by.
# A stream stops at its first failing step; the others go on. Exits non-zero when any step
# failed, naming it.
#
#   tests/e2e/test-labs.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"

# The security test hands its 4-host lab on (LAB_KEEP; teardown.yml has left no group on it) to the
# monitoring lab test, which takes hosts 1-3 of it as they are (LAB_REUSE) instead of preparing
# three fresh hosts, and takes it down (the Makefile's SHARED_4_HOST_LAB).
stream_a=(lab-test docker-path-test contracts-test)
stream_b=(security-keep-test monitoring-on-security-lab-test k8s)
stream_c=(k8s-live-lws-test molecule-nvidia bad-inputs)
stream_d=(molecule-others k8s-live-operator-test)

# Every lab of the streams is an air-gapped site: its hosts reach nothing outside the lab network
# and take their packages from the lab's offline bundle (tests/lab/bundle.sh, docs/offline.md).
export NIMSTACK_LAB_OFFLINE=${NIMSTACK_LAB_OFFLINE-1}

# What the streams need is made once, before they start: the Docker engine, the lab's host
# image, the stand-in image with its archive (two builds of one archive would race) and the lab's
# offline bundle.
tests/lab/ensure-docker.sh
tests/lab/build-image.sh >/dev/null
tests/lab/build-standin.sh --archive build/standin/nim-standin.tar >/dev/null
[[ -z "$NIMSTACK_LAB_OFFLINE" ]] || tests/lab/bundle.sh make >/dev/null

# The streams' module runs on this machine (the Kubernetes stages', the render tests', the bad
# inputs') keep their compiled module code in build/pyc, as the lab hosts do in their image
# (tests/lab/pyc/lab_pyc.py): the suite's CPU, not what it proves.
export PYTHONPATH=$repo/tests/lab/pyc${PYTHONPATH:+:$PYTHONPATH} LAB_PYC_DIR=$repo/build/pyc

mkdir -p build/test-labs
hz=$(getconf CLK_TCK)
# The clock ticks (user + system) of this shell's finished children so far, into the variable
# named by $1: fields 16 and 17 of /proc/<this shell>/stat (its comm is "bash", without spaces).
children_ticks() {
  local -a stat
  read -r -a stat <"/proc/$BASHPID/stat"
  printf -v "$1" '%d' $((stat[15] + stat[16]))
}

# The machine's busy CPU seconds since boot (/proc/stat: everything but idle and iowait).
machine_cpu() {
  awk -v hz="$hz" '/^cpu /{ printf "%.0f", ($2 + $3 + $4 + $7 + $8 + $9) / hz }' /proc/stat
}

# How fast this machine does Ansible's kind of work: the floor play (benchmarks/floor.yml: facts and
# one module, the least any playbook costs) on the machine itself, its CPU-s (user + system, the
# playbook and its workers) written to build/test-labs/floor.ticks, once per call. The same run
# ranged 2.5-4.0 CPU-s on an idle machine within an hour, so it runs three times
# before the streams and then every 5 minutes beside them (under the load the streams see), and
# the median of them all is the unit: work that took 1.6x longer on the same code from one day to
# the next (docs/testing.md) reads the same as a multiple of it, so a run's figures say whether
# the suite or the machine moved.
floor_once() {
  local c0 c1
  children_ticks c0
  # A failed play costs less than the floor: it counts for nothing, and says so.
  if ! env -u PYTHONPATH -u LAB_PYC_DIR ANSIBLE_CACHE_PLUGIN=memory "${VENV:-.venv}/bin/ansible-playbook" \
      -i build/test-labs/floor-inventory.yml benchmarks/floor.yml >build/test-labs/floor.log 2>&1; then
    echo "test-labs.sh: the floor play failed (build/test-labs/floor.log); it counts for nothing" >&2
    return 0
  fi
  children_ticks c1
  echo $((c1 - c0)) >>build/test-labs/floor.ticks
}

# Beside the streams until TERM, which ends the wait at once (a run under way finishes first).
floor_sampler() {
  local pause
  trap 'kill "$pause" 2>/dev/null; exit 0' TERM
  while :; do
    sleep "${NIMSTACK_FLOOR_INTERVAL:-300}" &
    pause=$!
    wait "$pause"
    floor_once
  done
}

# The median of the runs so far, in CPU-s, and how many; given the busy CPU-s of the streams, also
# what they come to in floor plays.
floor_summary() {
  touch build/test-labs/floor.ticks
  sort -n build/test-labs/floor.ticks | awk -v hz="$hz" -v busy="${1:-}" '{ t[NR] = $1 }
    END { floor = NR ? (t[int((NR + 1) / 2)] + t[int(NR / 2) + 1]) / 2 / hz : 0
          printf "the floor play took %.2f CPU-s (the median of %d runs)", floor, NR
          if (busy != "") { if (floor > 0) printf ": %.0f floor plays", busy / floor; else printf ": no floor plays" } }'
}

stream() {
  local name=$1 target t c0 c1; shift
  for target in "$@"; do
    t=$SECONDS
    children_ticks c0
    if make --no-print-directory "$target"; then
      children_ticks c1
      echo "== $target passed in $((SECONDS - t)) s, $(((c1 - c0 + hz / 2) / hz)) CPU-s here"
    else
      echo "== $target FAILED after $((SECONDS - t)) s"
      echo "$target" >"build/test-labs/$name.failed"
      return 1
    fi
  done
}

rm -f build/test-labs/*.failed build/test-labs/*.log build/test-labs/floor.ticks
# The controller's own Python runs the module: what interpreter discovery finds first on a
# machine (a version manager's shim, say) may not run at all.
printf 'nim_nodes:\n  hosts:\n    localhost:\n      ansible_connection: local\n      ansible_python_interpreter: "{{ ansible_playbook_python }}"\n' >build/test-labs/floor-inventory.yml
for _ in 1 2 3; do floor_once; done
echo "test-labs.sh: $(floor_summary) on this machine before the streams"
floor_sampler &
sampler=$!
start=$SECONDS busy=$(machine_cpu)
(stream a "${stream_a[@]}" 2>&1 | sed -u 's/^/[a] /' | tee build/test-labs/a.log) &
a=$!
(stream b "${stream_b[@]}" 2>&1 | sed -u 's/^/[b] /' | tee build/test-labs/b.log) &
b=$!
(stream c "${stream_c[@]}" 2>&1 | sed -u 's/^/[c] /' | tee build/test-labs/c.log) &
c=$!
(stream d "${stream_d[@]}" 2>&1 | sed -u 's/^/[d] /' | tee build/test-labs/d.log) &
d=$!
wait "$a" || true
wait "$b" || true
wait "$c" || true
wait "$d" || true
busy=$(($(machine_cpu) - busy))
kill "$sampler" 2>/dev/null || true
wait "$sampler" || true
echo "test-labs.sh: the machine was busy $busy CPU-s in $((SECONDS - start)) s on $(nproc) cores; $(floor_summary "$busy")"

failed=$(cat build/test-labs/*.failed 2>/dev/null || true)
if [[ -n "$failed" ]]; then
  # The streams' lines interleave; a CI log that keeps only the end shows every failure here.
  for f in build/test-labs/*.failed; do
    name=$(basename "$f" .failed)
    echo "---- the end of stream $name, which failed at $(cat "$f"):"
    grep -v '^\[.\] *$' "build/test-labs/$name.log" | tail -25
  done
  echo "test-labs.sh: FAILED: $(tr '\n' ' ' <<<"$failed")after $((SECONDS - start)) s" >&2
  exit 1
fi
echo "test-labs.sh: every lab step passed in $((SECONDS - start)) s"
