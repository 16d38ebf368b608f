"""Checks the metadata fuzz campaigns run on each mutant (see test_fuzz_metadata.py).

Each reads a fixture the way a user would and returns one table holding everything it
saw, so that a mutant changing any of it shows up as a different result.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa

import lancelet as ll

# The rows ``take`` asks for: spread over every fragment of the fixtures.
TAKE = [0, 1, 17, 500, 1234, 2000, 2999]
# The stale delete that has to rebase over the newest version (see ``rebase_delete``).
STALE_DELETE = "k >= 6100 AND k < 6110"


def _everything(ds: ll.LanceDataset) -> pa.Table:
    """The whole table, then the rows ``take`` returns, with ``count_rows`` as a column."""
    table = ds.to_table()
    taken = ds.take([i for i in TAKE if i < table.num_rows])
    both = pa.concat_tables([table, taken])
    count = pa.array(np.full(both.num_rows, ds.count_rows(), dtype=np.int64))
    return both.append_column("_count_rows", count)


def read_latest(root: Path) -> pa.Table:
    return _everything(ll.dataset(root / "ds"))


def rebase_delete(root: Path) -> pa.Table:
    """A delete planned on the version before the latest, committed on a copy: it has to
    rebase over the latest version's transaction (which the campaign mutates)."""
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "ds"
        shutil.copytree(root / "ds", copy)
        stale = ll.dataset(copy, version=ll.dataset(copy).version - 1)
        stale.delete(STALE_DELETE)
        return _everything(ll.dataset(copy))
