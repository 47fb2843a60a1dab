"""Make this checkout importable as ansible_collections.nimstack.multinode.

Modules import their shared code by its collection path, so the unit tests need the tree to sit
under ansible_collections/nimstack/multinode. A symlink in a temporary root gives that path to the
checkout as it is, without copying it.
"""

import os
import sys
import tempfile

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _collection_root():
    parts = _REPO.split(os.sep)
    if parts[-3:-1] == ['ansible_collections', 'nimstack'] and parts[-1] == 'multinode':
        return os.sep.join(parts[:-3])
    root = tempfile.mkdtemp(prefix='nimstack-units-')
    ns = os.path.join(root, 'ansible_collections', 'nimstack')
    os.makedirs(ns)
    os.symlink(_REPO, os.path.join(ns, 'multinode'))
    return root


sys.path.insert(0, _collection_root())
