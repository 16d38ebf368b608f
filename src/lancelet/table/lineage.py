"""Row lineage: the dataset version that created each row, and the one that last
updated it (``RowDatasetVersionSequence`` in rowids.proto).

A sequence is a list of runs, each a version and a *span*: a ``U64Segment`` whose
only meaning to a reader is its length, the number of consecutive rows (in the
fragment's physical order) that carry the version.  pylance 14 writes the span's
values as positions, but keeps a source fragment's positions when compaction
carries a run into a new fragment (only the deleted rows dropped); so the values
are never read as positions here, only counted.

The encodings below are the ones pylance 14 writes, so that a dataset written by
either library holds the same bytes:

* rows written at one version: one run, ``Range(0, rows)``;
* rows of mixed versions (an update or upsert moving rows): one run per stretch of
  equal versions, spanning its positions as a ``Range``;
* compaction: the source fragments' runs in order, each with its deleted rows
  dropped from the span (the span re-encoded as pylance chooses: see
  ``row_ids.segment_of_values``), a run left empty dropped, a run with nothing
  deleted kept as it was; a run cut between two new fragments is a range cut into ranges, or
  its values re-encoded;
* a merge (columns added or rewritten): every row of each fragment it gave new
  files last updated at its version (``touched``; see ``transaction/apply.py``).

pylance 14 writes every sequence inline, and so does lancelet; lancelet also reads
external ones (from the file and range a sequence names).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from lancelet._proto import rowids_pb2
from lancelet.errors import CorruptDatasetError
from lancelet.table import row_ids
from lancelet.table.fragment import Fragment, Sequence

if TYPE_CHECKING:
    from lancelet.table.manifest import Manifest

# What a fragment without a sequence answers for either column: pylance's answer for
# every row of a dataset without stable row ids, and for fragments written before
# lineage was recorded.
UNKNOWN_VERSION = 1


@dataclass(frozen=True)
class Run:
    """``version`` for ``len(values)`` rows; ``segment`` is the span as stored when it
    is kept unchanged (None: encode ``values`` anew)."""

    values: np.ndarray
    version: int
    segment: rowids_pb2.U64Segment | None = None


def _parse(data: bytes, where: str) -> rowids_pb2.RowDatasetVersionSequence:
    sequence = rowids_pb2.RowDatasetVersionSequence()
    try:
        sequence.ParseFromString(data)
    except Exception as exc:  # protobuf raises DecodeError or RuntimeError
        raise CorruptDatasetError(f"{where}: the version sequence does not decode: {exc}") from exc
    return sequence


def runs(data: bytes, num_rows: int, where: str) -> list[Run]:
    """The runs of a serialized sequence for a fragment of ``num_rows`` rows; their
    lengths must add up to the rows."""
    out: list[Run] = []
    remaining = num_rows
    for number, run in enumerate(_parse(data, where).runs):
        # A span's values are counted, never used: the same decoder as row ids checks
        # its bounds before it allocates.
        values = row_ids.decode_segment(run.span, remaining, f"{where}: version run {number}")
        out.append(Run(values, int(run.version), run.span))
        remaining -= len(values)
    if remaining:
        raise CorruptDatasetError(
            f"{where}: the version sequence covers {num_rows - remaining} of {num_rows} rows"
        )
    return out


def decode(data: bytes, num_rows: int, where: str) -> np.ndarray:
    """The version of each of the fragment's ``num_rows`` physical rows (uint64)."""
    found = runs(data, num_rows, where)
    if not found:
        return np.zeros(0, np.uint64)
    lengths = [len(run.values) for run in found]
    versions = np.array([run.version for run in found], dtype=np.uint64)
    out: np.ndarray = np.repeat(versions, lengths)
    return out


def uniform(rows: int, version: int) -> bytes:
    """Every one of ``rows`` rows at ``version`` (no run for no rows, as pylance)."""
    sequence = rowids_pb2.RowDatasetVersionSequence()
    if rows:
        run = sequence.runs.add()
        run.span.range.start, run.span.range.end = 0, rows
        run.version = version
    return sequence.SerializeToString()


def from_versions(versions: np.ndarray) -> bytes:
    """Rows of the given versions, in physical order: one run per stretch of equal
    versions, spanning its positions."""
    versions = np.asarray(versions, dtype=np.uint64)
    sequence = rowids_pb2.RowDatasetVersionSequence()
    if len(versions):
        starts = np.concatenate([[0], np.flatnonzero(versions[1:] != versions[:-1]) + 1])
        ends = np.concatenate([starts[1:], [len(versions)]])
        for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
            run = sequence.runs.add()
            run.span.range.start, run.span.range.end = start, end
            run.version = int(versions[start])
    return sequence.SerializeToString()


def masked(found: list[Run], deleted: np.ndarray) -> list[Run]:
    """``found`` (one fragment's runs) without the rows at the physical offsets
    ``deleted`` (sorted): each run loses its deleted rows, an emptied run goes."""
    out: list[Run] = []
    start = 0
    for run in found:
        stop = start + len(run.values)
        inside = deleted[(deleted >= start) & (deleted < stop)]
        if not len(inside):
            out.append(run)
        elif len(inside) < len(run.values):
            keep = np.ones(len(run.values), dtype=bool)
            keep[inside.astype(np.int64) - start] = False
            out.append(Run(run.values[keep], run.version, None))
        start = stop
    return out


def rechunk(found: list[Run], sizes: list[int]) -> list[bytes]:
    """The runs ``found`` (of ``sum(sizes)`` rows, in order) cut into sequences of
    ``sizes`` rows: a run cut in two keeps a part in each."""
    total = sum(len(run.values) for run in found)
    if total != sum(sizes):
        raise ValueError(f"version runs of {total} rows for {sum(sizes)} rows written")
    out: list[bytes] = []
    pending = list(found)
    for size in sizes:
        sequence = rowids_pb2.RowDatasetVersionSequence()
        wanted = size
        while wanted:
            run = pending.pop(0)
            if len(run.values) > wanted:
                pending.insert(0, _sliced(run, wanted, len(run.values) - wanted))
                run = _sliced(run, 0, wanted)
            _append(sequence, run)
            wanted -= len(run.values)
        out.append(sequence.SerializeToString())
    return out


def _sliced(run: Run, offset: int, length: int) -> Run:
    if run.segment is not None and run.segment.WhichOneof("segment") == "range":
        # A range is cut into ranges, as pylance cuts it.
        start = run.segment.range.start + offset
        segment = rowids_pb2.U64Segment()
        segment.range.start, segment.range.end = start, start + length
        return Run(run.values[offset : offset + length], run.version, segment)
    return Run(run.values[offset : offset + length], run.version, None)


def _append(sequence: rowids_pb2.RowDatasetVersionSequence, run: Run) -> None:
    added = sequence.runs.add()
    added.version = run.version
    span = run.segment if run.segment is not None else row_ids.segment_of_values(run.values)
    added.span.CopyFrom(span)


# -- what commits record ----------------------------------------------------------------


def with_row_ids(
    manifest: Manifest, floor: int, version: int, moved: frozenset[int] = frozenset()
) -> Manifest:
    """``manifest`` as committed at ``version`` with stable row ids: the rows of
    fragments that list no ids (the new ones) get ids, handed out in fragment order
    from ``next_row_id`` (never below ``floor``: a restored version must not hand
    out ids again), and are recorded as created and last updated at ``version``;
    rows moved by this commit (ids and created versions carried, no last update
    recorded yet, see ``carried``) are recorded as last updated at ``version``, and
    new rows written after them in one fragment get their ids here too."""
    next_id = max(manifest.next_row_id, floor)
    fragments = []
    for fragment in manifest.fragments:
        if fragment.row_id_meta is None:
            ids = np.arange(next_id, next_id + fragment.physical_rows, dtype=np.uint64)
            created = Sequence(inline=uniform(fragment.physical_rows, version))
            fragment = replace(
                fragment,
                row_id_meta=Sequence(inline=row_ids.encode(ids)),
                created_at_version_meta=created,
                last_updated_at_version_meta=created,
            )
            next_id += fragment.physical_rows
        elif fragment.id in moved and fragment.last_updated_at_version_meta is None:
            fragment, next_id = _completed(fragment, next_id, version)
            fragment = touched(fragment, version)
        fragments.append(fragment)
    return replace(manifest, fragments=tuple(fragments), next_row_id=next_id)


def _completed(fragment: Fragment, next_id: int, version: int) -> tuple[Fragment, int]:
    """A moved fragment whose carried ids cover only its first rows (an upsert writes
    updated rows, then inserted ones): the rest get ids from ``next_id`` and are
    created at ``version``; the ids are then one segment, as pylance re-encodes them.
    Returns the fragment and the next free id."""
    meta = fragment.row_id_meta
    if meta is None or meta.inline is None:
        return fragment, next_id
    where = f"new fragment {fragment.id}"
    rows = fragment.physical_rows
    carried = row_ids.decode(meta.inline, rows, where, partial=True)
    missing = rows - len(carried)
    if not missing:
        return fragment, next_id
    created = fragment.created_at_version_meta
    known = np.full(len(carried), UNKNOWN_VERSION, np.uint64)
    if created is not None and created.inline is not None:
        known = decode(created.inline, len(carried), where)
    ids = np.concatenate([carried, np.arange(next_id, next_id + missing, dtype=np.uint64)])
    sequence = rowids_pb2.RowIdSequence()
    sequence.segments.append(row_ids.segment_of_values(ids))
    versions = np.concatenate([known, np.full(missing, version, np.uint64)])
    completed = replace(
        fragment,
        row_id_meta=Sequence(inline=sequence.SerializeToString()),
        created_at_version_meta=Sequence(inline=from_versions(versions)),
    )
    return completed, next_id + missing


def touched(fragment: Fragment, version: int) -> Fragment:
    """``fragment`` with every row last updated at ``version`` (its data changed)."""
    updated = Sequence(inline=uniform(fragment.physical_rows, version))
    return replace(fragment, last_updated_at_version_meta=updated)


def carried(
    fragments: Iterable[Fragment], ids: np.ndarray, created: np.ndarray, *, then_new: bool = False
) -> list[Fragment]:
    """New fragments holding rows that keep their ids and creation versions (moved by
    an update or upsert): ``ids`` and ``created`` list them in the fragments'
    physical order.  The commit records them as last updated at its version.  With
    ``then_new``, new rows follow the moved ones: a fragment holding both lists the
    carried ids only (as pylance's uncommitted upserts do) and later fragments none,
    and the commit hands out the rest (``with_row_ids``)."""
    fragments = list(fragments)
    total = sum(f.physical_rows for f in fragments)
    if len(ids) > total or (len(ids) < total and not then_new):
        raise ValueError(f"{len(ids)} carried row ids for {total} rows written")
    out = []
    start = 0
    for fragment in fragments:
        stop = min(start + fragment.physical_rows, len(ids))
        if stop > start:
            fragment = replace(
                fragment,
                row_id_meta=Sequence(inline=row_ids.encode(ids[start:stop])),
                created_at_version_meta=Sequence(inline=from_versions(created[start:stop])),
                last_updated_at_version_meta=None,
            )
        out.append(fragment)
        start = stop
    return out
