"""merge_insert's scalar-index join: the target rows a merge may match, found through an
index on its key instead of a scan of the whole key column.

pylance (``MergeInsertBuilder.use_index``, on by default) joins through a scalar
index when the merge has one key column, an index on it that answers equality
exactly (BTREE, BITMAP, and LABEL_LIST by pylance's reckoning), and keeps the target
rows no source row matches (deleting them needs every target row anyway).  That path
has no printable plan in pylance, so ``explain_plan`` and ``analyze_plan`` refuse it;
``use_index(False)`` forces the hash join over a full scan.

lancelet follows the same rule for when the index path applies.  On that path the
source's distinct keys are looked up as ``key IN (...)`` in every index of the key
column: the candidate rows of the fragments an index covers are read by position,
the other fragments are scanned.  Candidates are a superset of the matches (an index
may bound loosely), and the join that follows keeps only equal keys, so the path can
only make the merge cheaper, never change its result.  (pylance's index path drops
source rows whose key is null, where its hash join inserts them: an index changes its
result.  lancelet inserts them on both paths, as pylance does without the index.)
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet.dataset.read.fragment_reader import FragmentReader
from lancelet.dataset.read.index_plan import field_paths, index_candidates
from lancelet.dataset.read.row_columns import with_row_columns
from lancelet.dataset.read.scanner import ROW_ADDRESS, LanceScanner
from lancelet.errors import MergeInsertError
from lancelet.expr import IsIn
from lancelet.index import registry
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.transaction.store import DatasetStore

# The index types pylance 14 takes the indexed join for (probed: a ZONEMAP, a
# BLOOMFILTER or an NGRAM index on the key leaves the merge on the hash join).
EXACT_EQUALITY = frozenset({"BTREE", "BITMAP", "LABEL_LIST"})

# Above this share of a covered fragment's rows, reading the candidates by position
# costs more than scanning the key column (as the scanner judges it).
_SPARSE = 0.25


def takes_index_path(
    manifest: Manifest, keys: tuple[str, ...], use_index: bool, delete_unmatched: bool
) -> bool:
    """Whether pylance would join through a scalar index for this merge."""
    if not use_index or delete_unmatched or len(keys) != 1:
        return False
    paths = field_paths(manifest)
    for index in manifest.indices:
        details = index.index_details
        kind = registry.BY_TYPE_URL.get(details.type_url) if details else None
        if kind is None or kind.name not in EXACT_EQUALITY or len(index.fields) != 1:
            continue
        if paths.get(index.fields[0]) == keys[0]:
            return True
    return False


def refuse_plan(root: str, what: str) -> MergeInsertError:
    """pylance's refusal (an OSError) to print the plan of an index-path merge."""
    return MergeInsertError(
        f"Not supported: This merge insert configuration does not support {what}: the join "
        f"takes the scalar-index execution path ({root}: call use_index(False) to plan the "
        "hash join over a full scan instead)"
    )


def indexed_targets(
    store: DatasetStore, manifest: Manifest, source_keys: pa.ChunkedArray, key: str
) -> pa.Table | None:
    """``key`` and ``_rowaddr`` of the live target rows whose key may be one of
    ``source_keys`` (every row of fragments no index covers); None when no index on
    ``key`` answers the lookup, so the caller scans instead."""
    schema = manifest.schema.to_arrow()
    dtype = schema.field(key).type
    try:
        wanted = pc.unique(source_keys.drop_null().combine_chunks()).cast(dtype)
    except pa.ArrowException:
        return None  # keys no lookup takes: the scan and join handle (or report) them
    candidates = index_candidates(
        store, manifest, "", schema, manifest.fragments, predicate=IsIn(key, wanted)
    )
    if candidates is None:
        return None
    parts: list[pa.Table] = []
    scanned: list[Fragment] = []
    for fragment in manifest.fragments:
        rows = candidates.get(fragment.id)
        if rows is None or len(rows) > fragment.physical_rows * _SPARSE:
            scanned.append(fragment)
        elif len(rows):
            parts.append(_rows_at(store, manifest, fragment, rows, key))
    if scanned:
        scan = LanceScanner(store, manifest, columns=[key, ROW_ADDRESS], fragments=scanned)
        parts.append(scan.to_table())
    if not parts:
        return pa.table({key: pa.array([], dtype), ROW_ADDRESS: pa.array([], pa.uint64())})
    return pa.concat_tables(parts)


def _rows_at(
    store: DatasetStore, manifest: Manifest, fragment: Fragment, rows: np.ndarray, key: str
) -> pa.Table:
    reader = FragmentReader(store, manifest.schema, fragment)
    live = np.setdiff1d(rows.astype(np.uint32), reader.deleted.astype(np.uint32))
    table = reader.take([key], live.astype(np.int64))
    return with_row_columns(reader, table, live).select([key, ROW_ADDRESS])
