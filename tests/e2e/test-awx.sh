#!/usr/bin/env bash
# The playbooks run the way AWX / Automation Controller runs them: ansible-runner on a private
# data dir that holds what AWX writes for a job (inventory, survey answers as env/extravars, the
# custom credential's env in env/envvars, the project checkout), against a 3-host lab (its own,
# or with LAB_REUSE one that runs):
#   1. the "site" job template's survey answers pass AWX's survey rules (tests/awx/awx_survey.py
#      on playbooks/awx/vars/surveys.yml) and become env/extravars;
#   2. the NGC credential injects NGC_API_KEY as env only (a fake key, new on every run), and the
#      inventory maps it to nim_ngc_api_key with the same env lookup as inventories/example;
#   3. at scale: the "prepare hosts" job template runs as AWX slices it (job_slice_count from
#      nimstack_awx_prepare_slice_count): one job per slice, each on a private data dir of its own
#      (as AWX gives every job) with its share of the hosts, at the same time; then the unsliced
#      "deploy" job template (site.yml without the preparation the slices did) converges to a
#      ready, smoke-tested endpoint, and the key reached the leader's root-only env file for the
#      model downloader, and no serving rank's env;
#   3b. the whole-group guard: the deploy job limited to one worker is refused, naming the missing
#      members, with no container changed on any host;
#   4. the key appears nowhere under the private data dirs (job events, stdout, fact cache, ...)
#      except the two files ansible-runner keeps its own environment in: env/envvars and the
#      "env" object of artifacts/<job>/command;
#   5. the "teardown" job template refuses without its confirmation and tears down with it.
# Every wait is bounded; timings are printed.
#
#   tests/e2e/test-awx.sh               the whole test, on lab nimstack-awx (172.30.81.0/24)
#   LAB_KEEP=1 tests/e2e/test-awx.sh    leave the lab and the private data dir for a look
#   LAB_REUSE=1 NIMSTACK_LAB_PREFIX=... tests/e2e/test-awx.sh
#                                     on a running 3-host lab (prepared, no group deployed), such
#                                     as the one test-lab.sh leaves with LAB_KEEP=1
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
export NIMSTACK_LAB_PREFIX=${NIMSTACK_LAB_PREFIX:-nimstack-awx}
export NIMSTACK_LAB_SUBNET=${NIMSTACK_LAB_SUBNET:-172.30.81.0/24}
export NIMSTACK_LAB_DIR=${NIMSTACK_LAB_DIR:-$repo/build/lab-awx}
work=$repo/build/awx-test
pdd=$work/pdd
archive=$repo/build/standin-awx/nim-standin.tar
# AWX kills a job at its template's timeout; the test sets one so that a hung job fails it, not CI's
# limit. Far above a job's time alone (site.yml about 300 s): under make test the job shares two
# cores with two other lab streams, and 900 s was once not enough.
job_timeout=${AWX_TEST_JOB_TIMEOUT:-1800}
export PATH=$repo/.venv/bin:$PATH
# shellcheck source=tests/e2e/lib-lab-test.sh
source "$repo/tests/e2e/lib-lab-test.sh"
# AWX runs ansible-playbook in the project directory with no ANSIBLE_CONFIG: the project's own
# ansible.cfg applies, as it does here.
unset ANSIBLE_CONFIG ANSIBLE_CACHE_PLUGIN_CONNECTION

trap '[[ -n "${LAB_KEEP:-}" ]] || lab_down >/dev/null 2>&1 || true' EXIT

# A job as AWX launches it from a job template of playbooks/awx/vars/objects.yml: ansible-runner
# on the private data dir ($JOB_PDD, else $pdd), one ident per job, the template's playbook and
# skip_tags. Jobs that run at the same time need private data dirs of their own: two
# ansible-runner processes starting together in one dir race on its artifact write lock.
job() {
  local ident=$1 template=$2 start=$SECONDS rc=0 playbook skip cmdline=() dir=${JOB_PDD:-$pdd}
  shift 2
  read -r playbook skip < <(python3 -c 'import sys, yaml
yaml.SafeLoader.add_constructor("!unsafe", yaml.SafeLoader.construct_scalar)
t = [t for t in yaml.safe_load(open("playbooks/awx/vars/objects.yml"))["nimstack_awx_job_templates"]
     if t["name"] == sys.argv[1]][0]
print(t["playbook"], t.get("skip_tags", ""))' "$template")
  [[ -n "$playbook" ]] || fail "no job template '$template' in playbooks/awx/vars/objects.yml"
  [[ -z "$skip" ]] || cmdline=(--cmdline "--skip-tags $skip")
  ansible-runner run "$dir" --ident "$ident" -p "$playbook" "${cmdline[@]}" "$@" >"$work/$ident.log" 2>&1 || rc=$?
  echo "   job $ident ($playbook${skip:+ --skip-tags $skip}${*:+ $*}): rc=$rc, status=$(cat "$dir/artifacts/$ident/status" 2>/dev/null)," \
    "$((SECONDS - start)) s, $(find "$dir/artifacts/$ident/job_events" -name '*.json' 2>/dev/null | wc -l) job events"
  return "$rc"
}

# env/extravars from the survey's answers, checked by AWX's rules, plus the variables AWX adds.
survey_answers() {
  local template=$1 survey=$2; shift 2
  python3 tests/awx/awx_survey.py playbooks/awx/vars/surveys.yml "$survey" "$@" >"$work/answers.json" \
    || fail "the survey $survey refused the answers $*"
  python3 - "$work/answers.json" "$pdd/env/extravars" "$template" <<'EOF'
import json, sys
answers = json.load(open(sys.argv[1]))
answers.update({'awx_job_id': 1, 'awx_job_template_name': sys.argv[3], 'awx_user_name': 'admin'})
json.dump(answers, open(sys.argv[2], 'w'), indent=2, sort_keys=True)
EOF
}

step "fresh lab $NIMSTACK_LAB_PREFIX ($NIMSTACK_LAB_SUBNET), model source and stand-in image archive"
lab_fresh "$archive"

step "private data dir as AWX writes it"
rm -rf "$work"
mkdir -p "$pdd/env" "$pdd/inventory/group_vars/nim_nodes"
cp "$NIMSTACK_LAB_DIR/inventory.yml" "$pdd/inventory/hosts.yml"
cp inventories/lab/group_vars/nim_nodes.yml "$pdd/inventory/group_vars/nim_nodes/10-lab.yml"
cp inventories/lab-docker/group_vars/nim_nodes.yml "$pdd/inventory/group_vars/nim_nodes/20-lab-docker.yml"
cp inventories/lab-tests/group_vars/nim_nodes.yml "$pdd/inventory/group_vars/nim_nodes/25-lab-tests.yml"
# The same mapping from the credential's env to nim_ngc_api_key that inventories/example ships.
mapping=$(grep '^nim_ngc_api_key:' inventories/example/group_vars/nim_nodes.yml) \
  || fail "inventories/example no longer maps NGC_API_KEY to nim_ngc_api_key"
grep -q "lookup('ansible.builtin.env', 'NGC_API_KEY')" <<<"$mapping" || fail "unexpected mapping: $mapping"
printf -- '---\n%s\n' "$mapping" >"$pdd/inventory/group_vars/nim_nodes/30-credential.yml"
ln -s "$repo" "$pdd/project"
key="nvapi-awxtest-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
( umask 077; printf '{"NGC_API_KEY": "%s"}\n' "$key" >"$pdd/env/envvars" )
printf '{"job_timeout": %d, "idle_timeout": 600}\n' "$job_timeout" >"$pdd/env/settings"
survey_answers "nimstack site" nimstack_awx_survey_deployment "nim_image_tag=${image##*:}" nim_launch_contract=mpi \
  nim_network_profile=tcp nim_log_level=INFO
echo "   extravars: $(python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))))' "$pdd/env/extravars")"
echo "   envvars: NGC_API_KEY=nvapi-awxtest-<$((${#key} - 14)) hex characters, new on every run>"

# AWX gives slice k of n the hosts k, k+n, k+2n, ... of the inventory, in one inventory of their own.
slices=$(python3 -c 'import sys, yaml
yaml.SafeLoader.add_constructor("!unsafe", yaml.SafeLoader.construct_scalar)
print(yaml.safe_load(open(sys.argv[1]))["nimstack_awx_prepare_slice_count"])' playbooks/awx/vars/objects.yml)
step "the prepare hosts job template in $slices slices, as AWX runs a sliced job: at the same time"
# Slice k's private data dir: the job's env and project, and an inventory of its hosts only.
python3 - "$pdd" "$slices" "$work" <<'EOF'
import os, shutil, sys, yaml
pdd, count, work = sys.argv[1], int(sys.argv[2]), sys.argv[3]
inventory = yaml.safe_load(open(os.path.join(pdd, 'inventory', 'hosts.yml')))
nodes = inventory['all']['children']['nim_nodes']
names = list(nodes['hosts'])
for k in range(count):
    slice_pdd = os.path.join(work, 'pdd-slice-%d' % (k + 1))
    shutil.copytree(os.path.join(pdd, 'env'), os.path.join(slice_pdd, 'env'))
    os.symlink(os.readlink(os.path.join(pdd, 'project')), os.path.join(slice_pdd, 'project'))
    directory = os.path.join(slice_pdd, 'inventory')
    shutil.copytree(os.path.join(pdd, 'inventory', 'group_vars'), os.path.join(directory, 'group_vars'))
    part = dict(nodes, hosts={name: nodes['hosts'][name] for name in names[k::count]})
    yaml.safe_dump({'all': {'children': {'nim_nodes': part}}}, open(os.path.join(directory, 'hosts.yml'), 'w'))
    print('   slice %d of %d: %s' % (k + 1, count, ', '.join(names[k::count])))
EOF
pids=()
for k in $(seq 1 "$slices"); do
  JOB_PDD=$work/pdd-slice-$k job "prepare-slice-$k" "nimstack prepare hosts" &
  pids+=($!)
done
for k in $(seq 1 "$slices"); do
  wait "${pids[k - 1]}" || { tail -40 "$work/prepare-slice-$k.log"; fail "prepare slice $k through ansible-runner"; }
done
# Each slice prepared only its own hosts: the other hosts are in no event of its job.
for k in $(seq 1 "$slices"); do
  python3 - "$work/pdd-slice-$k/artifacts/prepare-slice-$k/job_events" "$work/pdd-slice-$k/inventory/hosts.yml" <<'EOF' \
    || fail "slice $k touched a host outside its slice"
import glob, json, sys, yaml
mine = set(yaml.safe_load(open(sys.argv[2]))['all']['children']['nim_nodes']['hosts'])
seen = {json.load(open(f)).get('event_data', {}).get('host') for f in glob.glob(sys.argv[1] + '/*.json')} - {None, ''}
assert seen and seen <= mine | {'localhost'}, (seen, mine)
EOF
done

step "the deploy job template, unsliced: site.yml without the preparation the slices did"
job site "nimstack deploy" || { tail -60 "$work/site.log"; fail "site.yml through ansible-runner (see $work/site.log)"; }
[[ "$(cat "$pdd/artifacts/site/status")" == successful ]] || fail "ansible-runner status is not successful"
# The smoke test's report, read from the job events as AWX reads a job's results.
python3 - "$pdd/artifacts/site/job_events" <<'EOF' || fail "no smoke test report with all 3 ranks in the job events"
import glob, json, sys
events = [json.load(open(f)) for f in glob.glob(sys.argv[1] + '/*.json')]
reports = [e['event_data']['res']['msg'] for e in events if e.get('event') == 'runner_on_ok'
           and e['event_data'].get('task', '').startswith('Report the smoke test')]
assert reports and all('3 ranks answered' in r['reply'] for r in reports), reports
for r in reports:
    print('   %s: %s (time to first byte %s s)' % (r['endpoint'], r['reply'][:90], r['time_to_first_byte_s']))
EOF
on "$leader" python3 -c 'import urllib.request
assert urllib.request.urlopen("http://127.0.0.1:8000/v1/health/ready", timeout=5).status == 200' \
  || fail "the endpoint on $leader is not ready"
echo "   $leader: /v1/health/ready answers 200"

step "the whole-group guard: the deploy job limited to one worker changes nothing"
# Every rank's container id and start time: a restart would change one of them.
ranks() { local h; for h in "$leader" "${workers[@]}"; do on "$h" docker inspect -f "$h {{.Id}} {{.State.StartedAt}}" "$container"; done; }
before=$(ranks)
if job guard "nimstack deploy" --limit "${workers[0]}"; then fail "the deploy job ran on one worker of the group"; fi
log_says "$work/guard.log" "members $leader, ${workers[1]} are not in this play" \
  || { tail -30 "$work/guard.log"; fail "the refusal does not name the missing members $leader, ${workers[1]}"; }
[[ "$(recap changed "$work/guard.log")" == 0 ]] || fail "the refused deploy job changed something"
[[ "$(ranks)" == "$before" ]] || fail "a rank's container changed under the refused deploy job"
probe_ready || fail "the endpoint is not ready after the refused deploy job"
echo "   refused, naming $leader and ${workers[1]}; no container restarted, the endpoint still ready"

step "the credential's key reached the nodes, and only where it belongs"
# The leader keeps it in its root-only env file for the model downloader; no serving rank's env
# holds it once the cache is filled, and no worker keeps a copy.
for h in "$leader" "$NIMSTACK_LAB_PREFIX-2" "$NIMSTACK_LAB_PREFIX-3"; do
  envfile=$(on "$h" find /etc/nimstack -name ngc.env) || true
  if [[ "$h" == "$leader" ]]; then
    [[ -n "$envfile" ]] || fail "$h: no NGC env file: the credential's key did not reach the leader"
    [[ "$(on "$h" stat -c '%a %U' "$envfile")" == "600 root" ]] || fail "$h: $envfile is not root-only 0600"
    on "$h" grep -qxF "NGC_API_KEY=$key" "$envfile" || fail "$h: $envfile does not hold the credential's key"
  else
    [[ -z "$envfile" ]] || fail "$h: a worker keeps an NGC env file ($envfile)"
  fi
  # The container's env as the engine keeps it (the lab's nested engine cannot exec into it).
  container_env=$(on "$h" docker inspect -f '{{range .Config.Env}}{{println .}}{{end}}' "$container")
  ! grep -qF "$key" <<<"$container_env" || fail "$h: the serving rank $container has the credential's key in its env"
  ! on "$h" docker inspect -f '{{.Config.Cmd}} {{.Args}}' "$container" | grep -qF "$key" \
    || fail "$h: the key is on the container's command line"
done
echo "   the leader's root-only env file holds the key for the downloader; no rank's env or command line does"

step "the key appears nowhere in the jobs' private data dirs but runner's own env records"
events=$(find "$pdd/artifacts/site/job_events" -name '*.json' | wc -l)
((events > 100)) || fail "only $events job events: the grep below would prove nothing"
[[ -s "$pdd/artifacts/site/stdout" && -d "$pdd/artifacts/site/fact_cache" ]] || fail "no stdout or fact cache to search"
# grep -r does not follow the project symlink: the search covers what the job wrote.
mapfile -t holders < <(grep -rlF -- "$key" "$pdd" "$NIMSTACK_LAB_DIR" "$work" | sed "s|^$repo/||" | sort -u)
# ansible-runner records its env in artifacts/<job>/command for every job run so far (the
# preparation slices in theirs, site, guard) and keeps env/envvars in every private data dir.
mapfile -t expected < <(for d in "$pdd" "$work"/pdd-slice-*; do
                          for a in "$d"/artifacts/*/; do echo "${a#"$repo/"}command"; done
                          echo "${d#"$repo/"}/env/envvars"
                        done | sort -u)
[[ "${holders[*]}" == "${expected[*]}" ]] || fail "the key is in: ${holders[*]} (expected only ${expected[*]})"
for f in "${expected[@]}"; do
  [[ "$f" == */command ]] || continue
  python3 - "$repo/$f" "$key" <<'EOF' || fail "$f holds the key outside its env record"
import json, sys
record = json.load(open(sys.argv[1]))
assert record['env'].get('NGC_API_KEY') == sys.argv[2]
del record['env']
assert sys.argv[2] not in json.dumps(record)
EOF
done
for f in "${expected[@]}"; do
  [[ "$(stat -c '%a' "$repo/$f")" == 600 ]] || fail "$f is not 0600"
done
echo "   searched $(find "$work" "$NIMSTACK_LAB_DIR" -type f | wc -l) files ($events job events, stdout, fact cache," \
  "lab state): the key is only in ${expected[*]#build/awx-test/} (all 0600; each command holds it in its env record only)"

step "the teardown job template: refused without confirmation, then done with it"
if python3 tests/awx/awx_survey.py playbooks/awx/vars/surveys.yml nimstack_awx_survey_teardown \
    nimstack_awx_teardown_confirm=yes >/dev/null 2>&1; then
  fail "the teardown survey accepted a confirmation of the wrong length"
fi
python3 -c 'import json, sys; json.dump({"nimstack_awx_teardown_confirm": "teardonw"}, open(sys.argv[1], "w"))' \
  "$pdd/env/extravars"
if job teardown-refused "nimstack teardown"; then fail "teardown ran with a wrong confirmation"; fi
grep -q 'type teardown in the survey' "$work/teardown-refused.log" || fail "the refusal does not say what to type"
(($(on "$leader" docker ps -q --filter "name=^$container\$" | wc -l) == 1)) || fail "a refused teardown stopped the leader"
survey_answers "nimstack teardown" nimstack_awx_survey_teardown nimstack_awx_teardown_confirm=teardown
job teardown "nimstack teardown" || { tail -40 "$work/teardown.log"; fail "teardown through ansible-runner"; }
for h in "$leader" "$NIMSTACK_LAB_PREFIX-2" "$NIMSTACK_LAB_PREFIX-3"; do
  (($(on "$h" docker ps -aq --filter label=nimstack.managed=true | wc -l) == 0)) || fail "$h: NIM containers left"
  ! on "$h" find /etc/nimstack -name ngc.env | grep -q . || fail "$h: the NGC env file is left"
done
echo "   no NIM container and no NGC env file left on any host"

trap - EXIT
if [[ -z "${LAB_KEEP:-}" ]]; then
  lab_down >/dev/null
fi
echo "test-awx.sh: passed in $((SECONDS - t_start)) s"
