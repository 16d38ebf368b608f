"""The scalar indices a scan may use, and the rows they bound its filter to.

An index is usable for a version when lancelet knows its type (by the details'
``type_url``, at an index version it reads), it covers one field of the current
schema, and its fragment bitmap is recorded.  It is used only for the fragments
its bitmap holds that the version still has: a fragment rewritten since (by
compaction, or an update of the indexed column) has a new id or has left the
bitmap, so its rows are scanned.  A compaction that deferred remapping is the
exception: the Fragment Reuse Index carries the segments it left behind, their
coverage and the addresses they return, onto the new fragments.  Every other
index is ignored, never guessed at.

Open indices are kept per dataset store, by uuid: index files never change once
committed.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator, Sequence
from contextvars import ContextVar

import pyarrow as pa

from lancelet.dataset.read import frag_reuse
from lancelet.dataset.read.take import MISSING, addresses_of_ids
from lancelet.errors import ArgumentError
from lancelet.expr import INDEX_QUERIES, And, IndexQuery, Not, Or, Predicate
from lancelet.expr.from_sql import predicate_tree
from lancelet.expr.json_leaves import GETTERS, getter_column
from lancelet.index import json_index, json_kind
from lancelet.index.base import ScalarIndex, SearchResult
from lancelet.index.frag_reuse import ReuseMap
from lancelet.index.planner import Candidates, IndexedColumn, plan
from lancelet.io import accounting
from lancelet.table import naming, sorted_sets
from lancelet.table.fragment import Fragment
from lancelet.table.index import IndexMetadata, index_type
from lancelet.table.manifest import Manifest
from lancelet.transaction.store import DatasetStore

# (index name and type, query, answered) for each index search while a scan plans, so
# that the scan's plan can say which indices it used (see :func:`searches_logged`).
_SEARCHES: ContextVar[list[tuple[str, IndexQuery, bool]] | None] = ContextVar(
    "index_searches", default=None
)


@contextlib.contextmanager
def searches_logged() -> Iterator[list[tuple[str, IndexQuery, bool]]]:
    """The index searches made inside the block: (index name and type, as in
    ``x_idx(BTree)``, query, whether the index answered it)."""
    log: list[tuple[str, IndexQuery, bool]] = []
    token = _SEARCHES.set(log)
    try:
        yield log
    finally:
        _SEARCHES.reset(token)


def index_candidates(
    store: DatasetStore,
    manifest: Manifest,
    filter: str,
    schema: pa.Schema,
    fragments: Sequence[Fragment],
    *,
    predicate: Predicate | None = None,
) -> Candidates | None:
    """Candidate rows per fragment that an index covers; None to scan everything.
    ``predicate``: the filter's predicate tree, if the caller has it already."""
    if not manifest.indices:
        return None
    if predicate is None:
        predicate = predicate_tree(filter, schema)
    wanted = set(_leaf_columns(predicate))
    present = frozenset(f.id for f in fragments)
    columns = {
        column: parts
        for column, parts in usable_indices(store, manifest, present).items()
        if column in wanted
    }
    return plan(predicate, columns) if columns else None


def _leaf_columns(predicate: Predicate) -> Iterator[str]:
    if isinstance(predicate, INDEX_QUERIES):
        yield predicate.column
    elif isinstance(predicate, And | Or):
        for child in predicate.children:
            yield from _leaf_columns(child)
    elif isinstance(predicate, Not):
        yield from _leaf_columns(predicate.child)


def usable_indices(
    store: DatasetStore, manifest: Manifest, present: frozenset[int]
) -> dict[str, list[IndexedColumn]]:
    """Each column's usable indices (a delta index: one entry with several parts),
    covering only fragments in ``present``; indices are opened when first asked.

    Kept by the store for the manifest object (held by the entry, so its id names it
    while the entry lives): a version's indices never change, and working them out
    costs as much as the lookup that uses them."""
    cache: dict[tuple[int, frozenset[int]], tuple[Manifest, dict[str, list[IndexedColumn]]]]
    # The store's own: the entries' parts point back to it (see _LazyPart).
    cache = store.own_cache("usable_indices", limit=8)  # each entry holds a manifest
    key = (id(manifest), present)
    found = cache.get(key)
    if found is not None and found[0] is manifest:
        return found[1]
    usable = _usable_indices(store, manifest, present)
    cache[key] = (manifest, usable)
    return usable


def _usable_indices(
    store: DatasetStore, manifest: Manifest, present: frozenset[int]
) -> dict[str, list[IndexedColumn]]:
    paths = field_paths(manifest)
    arrow = manifest.schema.to_arrow()
    reuse = frag_reuse.reuse_map(store, manifest)
    by_name: dict[str, list[IndexMetadata]] = {}
    for index in manifest.indices:
        if _readable(index) and len(index.fields) == 1 and index.fields[0] in paths:
            by_name.setdefault(index.name, []).append(index)
    out: dict[str, list[IndexedColumn]] = {}
    for segments in by_name.values():
        column = paths[segments[0].fields[0]]
        if any(paths.get(s.fields[0]) != column for s in segments):
            continue  # segments of one name disagree on the field: trust none
        for leaf_column, dtype in _leaf_columns_of(segments, column, arrow, manifest):
            parts = tuple(
                _LazyPart(store, manifest, s, _covered(reuse, s, manifest, present), dtype, reuse)
                for s in segments
            )
            entry = IndexedColumn(tuple((p, p.fragments) for p in parts))
            out.setdefault(leaf_column, []).append(entry)
    return out


def _leaf_columns_of(
    segments: Sequence[IndexMetadata], column: str, arrow: pa.Schema, manifest: Manifest
) -> list[tuple[str, pa.DataType]]:
    """The leaf columns an index answers, with their types: its column, or for a JSON
    index the getter calls of its path (:mod:`lancelet.index.json_index`)."""
    details = segments[0].index_details
    assert details is not None
    found = json_index.unwrap(details.type_url, details.value)
    if found is None:
        return [(column, column_type(arrow, column))]
    if manifest.stable_row_ids or not json_index.answers_key(found.path):
        return []  # what the rows are keyed by, or what the path reads, is not known
    if any(
        json_index.unwrap(s.index_details.type_url, s.index_details.value) != found
        for s in segments
        if s.index_details is not None
    ):
        return []
    return [
        (getter_column(function, column, found.path), dtype)
        for function, dtype in GETTERS.items()
        if arrow.get_field_index(getter_column(function, column, found.path)) < 0
    ]


def column_type(schema: pa.Schema, path: str) -> pa.DataType:
    """The Arrow type of a top-level column or a dotted path into structs."""
    top, *nested = path.split(".")
    dtype = schema.field(top).type
    for name in nested:
        dtype = dtype.field(name).type
    return dtype


def _readable(index: IndexMetadata) -> bool:
    kind = json_kind.target_kind(index.index_details)
    if kind is None or index.fragment_bitmap is None:
        return False
    return kind.reads(index.index_version or 0)


def _covered(
    reuse: ReuseMap | None, index: IndexMetadata, manifest: Manifest, present: frozenset[int]
) -> frozenset[int]:
    held = frag_reuse.coverage(reuse, index, manifest)
    assert held is not None
    return frozenset(held) & present


def field_paths(manifest: Manifest) -> dict[int, str]:
    """Field id -> the dotted path the predicate tree names it by (fields under a
    list, or with a dot in a name on the path, are left out: no leaf names them)."""
    fields = {f.id: f for f in manifest.schema.fields}
    out: dict[int, str] = {}
    for f in manifest.schema.fields:
        parts, ok = [f.name], "." not in f.name
        parent = fields.get(f.parent_id)
        while parent is not None:
            parts.append(parent.name)
            ok = ok and "." not in parent.name and parent.logical_type == "struct"
            parent = fields.get(parent.parent_id)
        if ok:
            out[f.id] = ".".join(reversed(parts))
    return out


class _LazyPart:
    """One index segment, opened (and kept open by the store) on first search."""

    def __init__(
        self,
        store: DatasetStore,
        manifest: Manifest,
        index: IndexMetadata,
        fragments: frozenset[int],
        dtype: pa.DataType,
        reuse: ReuseMap | None,
    ) -> None:
        # The store keeps this part (in its own cache of usable indices, see
        # usable_indices): a strong reference back would make a cycle of the store and
        # all it caches, which only the garbage collector frees once the dataset goes.
        self._store_ref = weakref.ref(store)
        self._manifest = manifest
        self._index = index
        self.fragments = fragments
        self._type = dtype
        self._reuse = reuse if index.mapped_by_reuse(manifest.stable_row_ids) else None

    @property
    def _store(self) -> DatasetStore:
        store = self._store_ref()
        # Searched only through the store's cache or by a scan holding the store.
        assert store is not None, "an index part outlived its dataset's store"
        return store

    def _answers(self, index: ScalarIndex) -> bool:
        """A JSON index holds values of the type inferred when it was built: it answers
        only the getter of that type."""
        details = self._index.index_details
        if details is None or details.type_url != json_index.TYPE_URL:
            return True
        return bool(getattr(index, "value_type", None) == self._type)

    def search(self, query: IndexQuery) -> SearchResult | None:
        try:
            with accounting.index_work():
                index = opened(self._store, self._index, self._type)
                found = index.search(query) if self._answers(index) else None
        except ArgumentError:
            found = None  # the index holds values of another type than the column's
        log = _SEARCHES.get()
        if log is not None:
            # Named as pylance's plans name it: ``x_idx(BTree)``.
            label = f"{self._index.name}({index_type(self._index.index_details)})"
            log.append((label, query, found is not None))
        if found is None:
            return None
        if self._reuse is not None:
            moved, alive = self._reuse.remap(found.addresses)
            return SearchResult(sorted_sets.unique(moved[alive]), found.exact)
        if not _keyed_by_row_id(self._index, self._manifest):
            return found
        # Rows listed by stable row id: found where those ids live now.
        addresses = addresses_of_ids(self._store, self._manifest, found.addresses)
        addresses = sorted_sets.unique(addresses[addresses != MISSING])
        return SearchResult(addresses, found.exact)


def _keyed_by_row_id(index: IndexMetadata, manifest: Manifest) -> bool:
    kind = json_kind.target_kind(index.index_details)
    assert kind is not None
    return kind.keyed_by_row_id(index.index_version or 0, manifest.stable_row_ids)


def opened(store: DatasetStore, index: IndexMetadata, dtype: pa.DataType) -> ScalarIndex:
    """The open reader of an index segment on a column of type ``dtype``, cached by
    the store."""
    cache = store.index_cache("scalar_indices")
    key = str(index.uuid)
    found = cache.get(key)
    if found is None:
        kind = json_kind.target_kind(index.index_details)
        assert kind is not None
        found = cache[key] = kind.open(store.place(naming.INDICES_DIR, key), dtype)
        accounting.add(indices_loaded=1)
    return found
