"""The lineage of compacted rows: they keep the versions that created and last
updated them, written as pylance 14 writes them (see ``lancelet.table.lineage``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from lancelet.table import lineage
from lancelet.table.fragment import Fragment
from lancelet.table.fragment import Sequence as StoredSequence
from lancelet.transaction.store import DatasetStore

_ATTRIBUTES = ("created_at_version_meta", "last_updated_at_version_meta")


def carried(
    store: DatasetStore, sources: Sequence[Fragment], written: Sequence[Fragment]
) -> list[Fragment]:
    """``written`` (the live rows of ``sources``, in order) with their rows' versions.
    Sources that record no lineage leave it unrecorded; a source without a sequence
    gives its rows the version readers answer for it (1)."""
    if all(getattr(f, a) is None for f in sources for a in _ATTRIBUTES):
        return list(written)  # written before lineage was recorded: nothing to carry
    sizes = [f.physical_rows for f in written]
    created, updated = (_rechunked(store, sources, a, sizes) for a in _ATTRIBUTES)
    return [
        replace(f, created_at_version_meta=c, last_updated_at_version_meta=u)
        for f, c, u in zip(written, created, updated, strict=True)
    ]


def _rechunked(
    store: DatasetStore, sources: Sequence[Fragment], attribute: str, sizes: list[int]
) -> list[StoredSequence]:
    runs: list[lineage.Run] = []
    for fragment in sources:
        own = store.version_runs(fragment, attribute)
        if own is None:
            rows = fragment.physical_rows
            unknown = lineage.uniform(rows, lineage.UNKNOWN_VERSION)
            own = lineage.runs(unknown, rows, f"{store.root}: fragment {fragment.id}")
        runs += lineage.masked(own, store.read_deletions(fragment).astype(np.int64))
    return [StoredSequence(inline=data) for data in lineage.rechunk(runs, sizes)]
