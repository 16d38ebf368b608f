"""Random access: by row position (deleted rows do not count) and by row id."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa

from lancelet._arrow import dictionaries
from lancelet.dataset.read.fragment_reader import FragmentReader
from lancelet.dataset.read.projection import ROW_OFFSET, SPECIAL
from lancelet.dataset.read.row_columns import live_rows_before, with_row_columns
from lancelet.errors import ArgumentError, CorruptDatasetError, RowOutOfRangeError
from lancelet.table import row_address
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
    *,
    system: bool = False,
) -> pa.Table:
    """Rows at the given positions of the scan order, in the order asked for; with
    ``system``, each row's ``_rowid``, ``_rowaddr`` and ``_rowoffset`` follow."""
    frags = list(manifest.fragments if fragments is None else fragments)
    before = live_rows_before(manifest)
    wanted = np.asarray(indices, dtype=np.int64).reshape(-1)
    ends = np.cumsum([f.num_rows for f in frags], dtype=np.int64)
    total = int(ends[-1]) if len(ends) else 0
    bad = wanted[(wanted < 0) | (wanted >= total)]
    if len(bad):
        raise RowOutOfRangeError(f"{store.root}: row {int(bad[0])} is out of range (0..{total})")
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
        part = reader.take(columns, physical)
        if system:
            part = with_row_columns(reader, part, physical.astype(np.uint32), lineage=True)
            position = wanted[selected] - first + before[fragment.id]
            part = part.append_column(ROW_OFFSET, pa.array(position.astype(np.uint64)))
        parts.append(part)
        order.append(selected)
    table = _in_asked_order(store, manifest, columns, parts, order)
    if system and not parts:
        for name in SPECIAL:
            table = table.append_column(name, pa.array([], pa.uint64()))
    return table


# Per manifest (kept alive by the entry, so its id is not reused): the ids of its live
# rows, sorted, with their addresses.  An updated row keeps its id in its new place
# while its old place, deleted, still lists it: only the live one counts.
_ID_MAPS: dict[int, tuple[Manifest, np.ndarray, np.ndarray]] = {}
_ID_MAPS_MAX = 8
MISSING = row_address.NO_ADDRESS


def _id_map(store: DatasetStore, manifest: Manifest) -> tuple[np.ndarray, np.ndarray]:
    known = _ID_MAPS.get(id(manifest))
    if known is not None and known[0] is manifest:
        return known[1], known[2]
    ids: list[np.ndarray] = [np.zeros(0, np.uint64)]
    addresses: list[np.ndarray] = [np.zeros(0, np.uint64)]
    for fragment in manifest.fragments:
        sequence = store.read_row_ids(fragment)
        if sequence is None:
            raise CorruptDatasetError(
                f"{store.root}: fragment {fragment.id} lists no row ids, but the dataset "
                "has stable row ids"
            )
        dead = store.read_deletions(fragment).astype(np.int64)
        ids.append(np.delete(sequence, dead))
        addresses.append(np.delete(row_address.of_range(fragment.id, 0, len(sequence)), dead))
    all_ids, all_addresses = np.concatenate(ids), np.concatenate(addresses)
    order = np.argsort(all_ids, kind="stable")
    sorted_ids, sorted_addresses = all_ids[order], all_addresses[order]
    if len(_ID_MAPS) >= _ID_MAPS_MAX:
        _ID_MAPS.clear()
    _ID_MAPS[id(manifest)] = (manifest, sorted_ids, sorted_addresses)
    return sorted_ids, sorted_addresses


def addresses_of_ids(store: DatasetStore, manifest: Manifest, ids: np.ndarray) -> np.ndarray:
    """The address of the live row with each id; ``MISSING`` where no live row has it."""
    sorted_ids, sorted_addresses = _id_map(store, manifest)
    if not len(sorted_ids):
        return np.full(len(ids), MISSING, dtype=np.uint64)
    at = np.minimum(np.searchsorted(sorted_ids, ids), len(sorted_ids) - 1)
    out: np.ndarray = np.where(sorted_ids[at] == ids, sorted_addresses[at], MISSING)
    return out


def _checked_addresses(store: DatasetStore, manifest: Manifest, addresses: np.ndarray) -> None:
    fragments = {f.id: f.physical_rows for f in manifest.fragments}
    for fragment_id, offsets in row_address.by_fragment(np.sort(addresses)).items():
        rows = fragments.get(fragment_id)
        if rows is None:
            raise ArgumentError(
                f"{store.root}: row address of fragment {fragment_id}, which "
                f"version {manifest.version} does not have"
            )
        if int(offsets[-1]) >= rows:
            last = row_address.of_row(fragment_id, int(offsets[-1]))
            raise ArgumentError(
                f"{store.root}: row address ({row_address.describe(last)}) is past the "
                f"fragment's {rows} rows"
            )


def take_by_row_ids(
    store: DatasetStore,
    manifest: Manifest,
    ids: np.ndarray,
    columns: Sequence[str],
    *,
    ignore_deletions: bool = False,
) -> pa.Table:
    """The rows with the given ids, in the order asked for, as pylance takes them:
    with stable row ids, an id no live row has is left out; without them an id is an
    address, one of a deleted row is left out unless ``ignore_deletions``, and one
    of no row at all is an error."""
    ids = ids.astype(np.uint64)
    if manifest.stable_row_ids:
        addresses = addresses_of_ids(store, manifest, ids)
        ignore_deletions = True  # only live rows were found
    else:
        _checked_addresses(store, manifest, ids)
        addresses = ids
    present = addresses != MISSING
    fragment_ids = row_address.fragment_ids(addresses)
    offsets = row_address.offsets(addresses)
    parts: list[pa.Table] = []
    order: list[np.ndarray] = []
    for fragment in manifest.fragments:
        selected = np.flatnonzero(present & (fragment_ids == fragment.id))
        if not len(selected):
            continue
        local = offsets[selected]
        reader = FragmentReader(store, manifest.schema, fragment)
        if not ignore_deletions:
            keep = ~np.isin(local, reader.deleted)
            selected, local = selected[keep], local[keep]
        if len(selected):
            parts.append(reader.take(columns, local.astype(np.int64)))
            order.append(selected)
    return _in_asked_order(store, manifest, columns, parts, order)


def row_ids_at(store: DatasetStore, manifest: Manifest, addresses: np.ndarray) -> np.ndarray:
    """The id of the row at each address (the address itself without stable row ids)."""
    addresses = np.asarray(addresses, dtype=np.uint64)
    out: np.ndarray = addresses.copy()
    for fragment, selected, offsets in _per_fragment(store, manifest, addresses):
        ids = store.read_row_ids(fragment)
        if ids is not None:
            out[selected] = ids[offsets]
    return out


def created_at(store: DatasetStore, manifest: Manifest, addresses: np.ndarray) -> np.ndarray:
    """The version that created the row at each address (what a moved row keeps)."""
    addresses = np.asarray(addresses, dtype=np.uint64)
    out = np.empty(len(addresses), dtype=np.uint64)
    for fragment, selected, offsets in _per_fragment(store, manifest, addresses):
        out[selected] = store.read_lineage(fragment)[0][offsets]
    return out


def _per_fragment(
    store: DatasetStore, manifest: Manifest, addresses: np.ndarray
) -> Iterator[tuple[Fragment, np.ndarray, np.ndarray]]:
    """Each fragment the addresses fall in, which of them do, and their offsets."""
    fragment_ids = row_address.fragment_ids(addresses)
    offsets = row_address.offsets(addresses)
    for fragment_id in np.unique(fragment_ids):
        fragment = manifest.fragment(int(fragment_id))
        if fragment is None:
            raise CorruptDatasetError(f"{store.root}: no fragment {fragment_id} in this version")
        selected = fragment_ids == fragment_id
        yield fragment, selected, offsets[selected]


def _in_asked_order(
    store: DatasetStore,
    manifest: Manifest,
    columns: Sequence[str],
    parts: list[pa.Table],
    order: list[np.ndarray],
) -> pa.Table:
    """Rows taken fragment by fragment (``parts``, with the request positions each
    answers in ``order``), put back in the order they were asked for."""
    if not parts:
        return FragmentReader(store, manifest.schema, Fragment(0, (), 0)).read(columns, 0, 0)
    table = pa.concat_tables(parts)
    return dictionaries.take(table, pa.array(np.argsort(np.concatenate(order), kind="stable")))
