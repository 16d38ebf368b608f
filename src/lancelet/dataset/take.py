"""Random access by row position (deleted rows do not count)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from lancelet.dataset.fragment_reader import FragmentReader
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.transaction.store import DatasetStore


def live_to_physical(positions: np.ndarray, deleted: np.ndarray, physical_rows: int) -> np.ndarray:
    """Physical offsets of the ``positions``-th live rows of a fragment."""
    if not len(deleted):
        return positions
    live: np.ndarray = np.setdiff1d(np.arange(physical_rows, dtype=np.int64), deleted)
    out: np.ndarray = live[positions]
    return out


def take_rows(
    store: DatasetStore,
    manifest: Manifest,
    indices: Sequence[int] | np.ndarray | pa.Array,
    columns: Sequence[str],
    fragments: Sequence[Fragment] | None = None,
) -> pa.Table:
    """Rows at the given positions of the scan order, in the order asked for."""
    frags = list(manifest.fragments if fragments is None else fragments)
    wanted = np.asarray(indices, dtype=np.int64).reshape(-1)
    ends = np.cumsum([f.num_rows for f in frags], dtype=np.int64)
    total = int(ends[-1]) if len(ends) else 0
    bad = wanted[(wanted < 0) | (wanted >= total)]
    if len(bad):
        raise IndexError(f"{store.root}: row {int(bad[0])} is out of range (0..{total})")
    which = np.searchsorted(ends, wanted, side="right")
    parts: list[pa.Table] = []
    order: list[np.ndarray] = []
    for index in np.unique(which):
        fragment = frags[int(index)]
        selected = np.flatnonzero(which == index)
        first = int(ends[index]) - fragment.num_rows
        reader = FragmentReader(store, manifest.schema, fragment)
        physical = live_to_physical(
            wanted[selected] - first, reader.deleted, fragment.physical_rows
        )
        parts.append(reader.take(columns, physical))
        order.append(selected)
    if not parts:
        return FragmentReader(store, manifest.schema, Fragment(0, (), 0)).read(columns, 0, 0)
    table = pa.concat_tables(parts)
    return table.take(pa.array(np.argsort(np.concatenate(order), kind="stable")))
