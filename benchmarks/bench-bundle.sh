#!/usr/bin/env bash
# Benchmark (not a test): make the lab's offline bundle (tests/lab/bundle.sh make, docs/offline.md) from
# nothing into an empty cache of its own, then again with nothing changed, and print, as JSON, both wall
# times, what the second made ("fetched", "saved", "filled", "packed", "files": nothing, or the run
# fails) and what the bundle holds, part by part (items and bytes, from its manifest). Touches no lab;
# needs what the make needs (Docker, the lab's host image, the stand-in image). Not part of `make test`.
#
#   benchmarks/bench-bundle.sh            (NIMSTACK_BENCH_BUNDLE_DIR: the empty cache, default a temporary one)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
export ANSIBLE_CONFIG=$repo/ansible.cfg ANSIBLE_NOCOLOR=1
export PATH=$repo/.venv/bin:$PATH
work=${NIMSTACK_BENCH_BUNDLE_DIR:-$(mktemp -d /var/tmp/nimstack-bench-bundle.XXXXXX)}
[[ -z $(ls -A "$work" 2>/dev/null) ]] || { echo "bench-bundle.sh: $work is not empty" >&2; exit 2; }
trap 'rm -rf "$work"' EXIT
logs=build/bench-bundle
mkdir -p "$logs"
tests/lab/ensure-docker.sh
# The images the make runs from are built first (and cached), so that neither round times them.
tests/lab/build-image.sh >/dev/null
tests/lab/build-standin.sh >/dev/null

for round in nothing again; do
  start=$(date +%s%N)
  NIMSTACK_BUNDLE_CACHE=$work tests/lab/bundle.sh make >/dev/null 2>"$logs/$round.txt" \
    || { cat "$logs/$round.txt" >&2; echo "bench-bundle.sh: the make failed (round $round)" >&2; exit 1; }
  echo $((($(date +%s%N) - start) / 1000000)) >"$logs/$round.ms"
done
python3 - "$work/lab" "$logs" <<'PY'
import json, os, re, sys
bundle, logs = sys.argv[1:]
manifest = json.load(open(os.path.join(bundle, 'manifest.json')))
said = open(os.path.join(logs, 'again.txt')).read()
unchanged = {'fetched': 'fetched nothing (unchanged)', 'saved': 'saved no image', 'filled': 'filled none (unchanged)',
             'packed': 'packed none (unchanged)', 'files': 'files none fetched'}
again = dict((k, v in ' '.join(said.split())) for k, v in unchanged.items())
held = {}
for name, record in sorted(manifest.get('platforms', {}).items()):
    debs = [f for f in record['files'] if f['path'].endswith('.deb')]
    held['apt/' + name] = {'items': len(debs), 'bytes': sum(f['size'] for f in debs),
                           'index_files': len(record['files']) - len(debs)}
for part in ('images', 'models', 'files', 'collections'):
    items = manifest.get(part) or []
    held[part] = {'items': len(items), 'bytes': sum(i['size'] for i in items)}
    if part == 'collections':
        held[part]['names'] = ['%s %s' % (i['name'], i['version']) for i in items]
total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(bundle) for f in fs)
report = {'from_nothing_s': int(open(os.path.join(logs, 'nothing.ms')).read()) / 1000.0,
          'again_s': int(open(os.path.join(logs, 'again.ms')).read()) / 1000.0,
          'again_made_nothing': again, 'holds': held, 'bundle_bytes': total}
print(json.dumps(report, indent=1))
json.dump(report, open(os.path.join(logs, 'bundle.json'), 'w'), indent=1)
sys.exit(0 if all(again.values()) else 1)
PY
