#!/usr/bin/env bash
# The alert rules of plugins/module_utils/nim_alerts.py through Prometheus' own promtool (Debian's,
# tests/monitoring/promtool.sh):
#   1. the default rule file, written from rule_groups(), passes `promtool check rules`;
#   2. every alert has at least one promtool case where it fires and one where it stays quiet
#      (tests/monitoring/rules/test-*.yml), so a new alert without tests fails here;
#   3. `promtool test rules` passes every case: alerts fire when they should with their labels and
#      annotations, and stay quiet just under a threshold and for blips shorter than `for`;
#   4. each alert's threshold nudged (tests/monitoring/rules/nudges.json) makes the cases fail: the
#      cases do test the thresholds;
# and the dashboards:
#   5. the committed dashboards/*.json are what scripts/dashboards.py writes (grafana-foundation-sdk);
#   6. every metric their panels and variables, and the rules, name is served by a target: the
#      catalogues of tests/monitoring/served/ (the NIM 1.x series the stand-in serves, the group
#      supervisor's, HAProxy's, dcgm-exporter's defaults at a pinned release, Prometheus' own). The
#      lab test checks the same against its live Prometheus (check_dashboards.py --prometheus URL).
# No lab, no Prometheus or Grafana server. Fails if promtool cannot be had.
#
#   tests/monitoring/test-monitoring.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
py=${PY:-.venv/bin/python}
promtool=$(tests/monitoring/promtool.sh)
work=$(mktemp -d "${TMPDIR:-/tmp}/nimstack-rules-XXXXXX")
trap 'rm -rf "$work"' EXIT
cp tests/monitoring/rules/test-*.yml "$work/"
tests=("$work"/test-*.yml)

echo "== promtool: $("$promtool" --version 2>&1 | head -1)"
"$py" tests/monitoring/rules_tool.py write "$work/nimstack-rules.yml"
"$promtool" check rules "$work/nimstack-rules.yml"

echo "== every alert fires in a case and stays quiet in another"
"$py" tests/monitoring/rules_tool.py coverage "${tests[@]}"

echo "== promtool test rules"
"$promtool" test rules "${tests[@]}"

echo "== each threshold nudged must fail the cases"
while IFS= read -r nudge; do
  "$py" tests/monitoring/rules_tool.py write "$work/nimstack-rules.yml" "$nudge"
  if "$promtool" test rules "${tests[@]}" >"$work/nudged.log" 2>&1; then
    echo "test-monitoring.sh: the cases still pass with $nudge: they do not test that threshold" >&2
    exit 1
  fi
  echo "   $nudge: $(grep -c 'alertname:' "$work/nudged.log") failed expectations"
done < <("$py" -c 'import json, sys; [print(json.dumps(n)) for n in json.load(open(sys.argv[1]))]' tests/monitoring/rules/nudges.json)
echo "== the committed dashboards are the generator's"
"$py" scripts/dashboards.py --check

echo "== every metric of the dashboards and the rules is served"
"$py" tests/monitoring/rules_tool.py write "$work/nimstack-rules.yml"
served=()
for f in tests/monitoring/served/*.txt; do served+=(--served "$f"); done
"$py" tests/monitoring/check_dashboards.py "${served[@]}" --rules "$work/nimstack-rules.yml" dashboards/*.json
echo "test-monitoring.sh: passed"
