"""Fixtures of the render-only suite: one scratch root, and every independent run done once."""

import concurrent.futures
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from k8s_render import ALL_RUNS, GROUPED, INVENTORY, grouped_inventory, run_render  # noqa: E402
from k8s_schema import REPO  # noqa: E402


@pytest.fixture(scope='session')
def workdir(tmp_path_factory):
    """A scratch root with the checkout linked in as ansible_collections/nimstack/multinode."""
    root = str(tmp_path_factory.mktemp('nimstack-k8s'))
    namespace = os.path.join(root, 'collections', 'ansible_collections', 'nimstack')
    os.makedirs(namespace)
    os.symlink(REPO, os.path.join(namespace, 'multinode'))
    return root


@pytest.fixture(scope='session')
def renders(workdir):
    """Every independent run, in parallel: name -> Render; a scenario of GROUPED -> its group's view
    of the run it shares."""
    workers = max(2, os.cpu_count() or 2)
    groups = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {}
        for name, (backend, extra, *grouped) in ALL_RUNS.items():
            inventory = INVENTORY
            if grouped:
                inventory, groups[name] = grouped_inventory(workdir, name, grouped[0])
            futures[name] = pool.submit(run_render, workdir, name, backend, extra, inventory=inventory)
        found = dict((name, future.result()) for name, future in futures.items())
    for name in GROUPED:
        found.update((scenario, found[name].of_group(group)) for scenario, group in groups[name].items())
    return found
