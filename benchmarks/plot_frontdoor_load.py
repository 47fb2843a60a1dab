# Copyright: (c) 2026, nimstack maintainers
# SPDX-License-Identifier: Apache-2.0
"""The picture of bench-frontdoor-load.sh's series: per mode, each group's queue and weight over time.

    python3 benchmarks/plot_frontdoor_load.py build/bench/frontdoor-load/series.json docs/images/frontdoor-load.png

Needs matplotlib (requirements-dev.txt).
"""

import json
import sys

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402  pylint: disable=wrong-import-position


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[2].strip())
    with open(sys.argv[1]) as handle:
        rows = json.load(handle)
    modes = []
    for row in rows:
        if row['mode'] not in modes:
            modes.append(row['mode'])
    groups = sorted(set(row['group'] for row in rows))
    fig, axes = plt.subplots(2, len(modes), figsize=(6 * len(modes), 6), sharex='col', squeeze=False)
    for col, mode in enumerate(modes):
        mine = [r for r in rows if r['mode'] == mode]
        for group in groups:
            series = [r for r in mine if r['group'] == group]
            times = [r['t'] for r in series]
            axes[0][col].plot(times, [r['waiting'] for r in series], label=group)
            axes[1][col].plot(times, [r['weight'] for r in series], label=group)
        axes[0][col].set_title(mode)
        axes[0][col].set_ylabel('num_requests_waiting')
        axes[1][col].set_ylabel('weight in the front door')
        axes[1][col].set_xlabel('seconds')
        axes[1][col].set_ylim(0, 105)
        axes[0][col].legend(loc='upper right')
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=100)


if __name__ == '__main__':
    main()
