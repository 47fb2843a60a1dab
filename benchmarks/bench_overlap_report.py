# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""Turn the runs of benchmarks/bench-rollout-overlap.sh into its JSON report.

Each run is deploy_docker.yml under the ansible.posix.json stdout callback (task start and end
times) plus the lab hosts' own Docker events (when each image load finished, when the download
container started and died). Per run:

- time_to_ready_s: from the start of the first transfer task (the image load, or the model
  download when it goes first) to the end of the readiness wait;
- pull_s: the slowest node's image load, from the start of its load task to its engine's load
  event;
- download_s: from the start of the download (the downloader image included) to the download
  container's death;
- container_start_s: from the end of the last transfer (the later of the two) to ready.

    python3 bench_overlap_report.py RUN_DIR [RUN_DIR ...]   (each holds play.json, events-<host>.jsonl, meta.json)
"""

import datetime
import glob
import json
import os
import sys

TRANSFER_TASKS = (
    "Ensure the image is loaded from the archive",
    "Start the group's model download",
)
DOWNLOAD_START_TASKS = (
    "Start the group's model download",
    "Find out whether the downloader image is already on the leader",
    "Download the group's model into the shared cache",
)
LOAD_TASK = "Ensure the image is loaded from the archive"
READY_TASK = "Wait for /v1/health/ready on the leader"


def parse_time(text):
    """ansible.posix.json times: ISO 8601 in UTC with a Z."""
    return datetime.datetime.strptime(text.rstrip('Z'), '%Y-%m-%dT%H:%M:%S.%f').replace(
        tzinfo=datetime.timezone.utc).timestamp()


def tasks_of(play_json):
    """(bare task name, start, end) of every task of every play, in order."""
    out = []
    for play in play_json.get('plays', []):
        for task in play.get('tasks', []):
            name = task['task']['name'].split(' : ', 1)[-1]
            duration = task['task'].get('duration', {})
            if 'start' in duration and 'end' in duration:
                out.append((name, parse_time(duration['start']), parse_time(duration['end']),
                            task.get('hosts', {})))
    return out


def first(tasks, prefixes, ran_only=True):
    for name, start, end, hosts in tasks:
        if name.startswith(prefixes) and (not ran_only or any(
                not result.get('skipped') for result in hosts.values())):
            return start, end
    return None


def last(tasks, prefixes):
    found = None
    for name, start, end, hosts in tasks:
        if name.startswith(prefixes) and any(not result.get('skipped') for result in hosts.values()):
            found = (start, end)
    return found


def analyse(play_json, events, meta):
    """Return the measures of one run. events: {host: [docker event dicts]}; meta: {mode, ...}."""
    tasks = tasks_of(play_json)
    load = first(tasks, (LOAD_TASK,))
    transfer = first(tasks, TRANSFER_TASKS)
    ready = last(tasks, (READY_TASK,))
    download_from = first(tasks, DOWNLOAD_START_TASKS)
    if not (load and transfer and ready and download_from):
        raise ValueError('the run has no image load, transfer, download or readiness task: %s'
                         % [t[0] for t in tasks])
    loads, download_end, download_started = [], None, None
    for host, host_events in events.items():
        for event in host_events:
            when = event['timeNano'] / 1e9
            if event.get('Type') == 'image' and event.get('Action') == 'load':
                loads.append((host, when))
            name = event.get('Actor', {}).get('Attributes', {}).get('name', '')
            if event.get('Type') == 'container' and name.endswith('-download'):
                if event.get('Action') == 'start' and download_started is None:
                    download_started = when
                if event.get('Action') == 'die':
                    download_end = when
    if not loads or download_end is None:
        raise ValueError('the Docker events hold no image load or no end of the download')
    # A node loads the NIM image (and, on the leader, the small downloader image): its last load.
    load_end = {}
    for host, when in loads:
        load_end[host] = max(when, load_end.get(host, when))
    pull_s = max(load_end.values()) - load[0]
    download_s = download_end - download_from[0]
    transfers_end = max(list(load_end.values()) + [download_end])
    result = {
        'mode': meta['mode'],
        'time_to_ready_s': round(ready[1] - transfer[0], 1),
        'pull_s': round(pull_s, 1),
        'download_s': round(download_s, 1),
        'download_container_s': round(download_end - download_started, 1) if download_started else None,
        'container_start_s': round(ready[1] - transfers_end, 1),
        'playbook_s': meta.get('playbook_s'),
    }
    return result


def verdict(runs, tolerance=0.15):
    """Compare the overlapped run with max(pull, download) + container start of the same run."""
    report = {'runs': runs}
    for run in runs:
        if run['mode'].startswith('overlap'):
            bound = max(run['pull_s'], run['download_s']) + run['container_start_s']
            run['max_transfer_plus_start_s'] = round(bound, 1)
            run['within_15_percent'] = run['time_to_ready_s'] <= bound * (1 + tolerance)
    seq = [r for r in runs if r['mode'] == 'sequential']
    over = [r for r in runs if r['mode'] == 'overlap']
    if seq and over:
        report['saved_s'] = round(seq[0]['time_to_ready_s'] - over[0]['time_to_ready_s'], 1)
    report['passed'] = all(r.get('within_15_percent', True) for r in runs)
    return report


def callback_document(text):
    """The ansible.posix.json document in a playbook's stdout: warnings may precede it, and the
    lab's task profile (profile_tasks) follows it."""
    document, _end = json.JSONDecoder().raw_decode(text, text.index('{'))
    return document


def load_run(directory):
    with open(os.path.join(directory, 'play.json')) as handle:
        play_json = callback_document(handle.read())
    events = {}
    for path in glob.glob(os.path.join(directory, 'events-*.jsonl')):
        host = os.path.basename(path)[len('events-'):-len('.jsonl')]
        with open(path) as handle:
            events[host] = [json.loads(line) for line in handle if line.strip()]
    with open(os.path.join(directory, 'meta.json')) as handle:
        meta = json.load(handle)
    return analyse(play_json, events, meta)


def main(argv):
    if not argv:
        sys.stderr.write(__doc__)
        return 2
    report = verdict([load_run(d) for d in argv])
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write('\n')
    return 0 if report['passed'] else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
