"""The text columns a full-text query searches: their INVERTED index (if any) and
the rows outside it, ready for :class:`~lancelet.index.fts.query.QueryEvaluator`."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet.dataset.read import frag_reuse
from lancelet.dataset.read.take import MISSING, addresses_of_ids
from lancelet.errors import FullTextQueryError, UnsupportedOptionError
from lancelet.index.fts import queries as q
from lancelet.index.fts.analyzer import analyze
from lancelet.index.fts.corpus import AddressMap, ColumnSearch, FlatCorpus, IndexCorpus
from lancelet.index.fts.params import InvertedParams
from lancelet.index.fts.reader import InvertedIndex
from lancelet.table import naming
from lancelet.table.fragment import Fragment
from lancelet.table.index import IndexMetadata, index_type
from lancelet.table.manifest import Manifest
from lancelet.transaction.store import DatasetStore

INVERTED = "Inverted"
_TEXT_TYPES = (pa.string(), pa.large_string(), pa.string_view())

# How a column without an INVERTED index is tokenized (measured on pylance 14: the
# simple tokenizer's words as they are, neither lower-cased, stemmed, folded nor
# stop-word filtered).
FLAT_PARAMS = InvertedParams(
    lower_case=False, stem=False, remove_stop_words=False, ascii_folding=False
)

# Reads the text column and the row address of the live rows of some fragments
# (passing a prefilter): (column, fragments) -> table of the column and _rowaddr.
RowReader = Callable[[str, list[Fragment]], pa.Table]


def inverted_segments(manifest: Manifest) -> dict[str, list[IndexMetadata]]:
    """The INVERTED index segments of each column (or nested field, by its dotted
    path) that has some, in schema order.  A column with several INVERTED indices is
    searched with the one listed first in the manifest, as pylance does (measured: the
    segments of other indices on the column are not added to its statistics)."""
    by_field: dict[int, list[IndexMetadata]] = {}
    for index in manifest.indices:
        if index.is_system or index_type(index.index_details) != INVERTED:
            continue
        for field_id in index.fields:
            segments = by_field.setdefault(field_id, [])
            if not segments or segments[0].name == index.name:
                segments.append(index)
    found: dict[str, list[IndexMetadata]] = {}
    for field in manifest.schema.fields:  # pre-order: nested fields by their dotted path
        if field.id in by_field:
            found[manifest.schema.field_path(field.id)] = by_field[field.id]
    return found


def query_columns(query: q.FullTextQuery) -> list[str]:
    """The columns ``query`` names, each once, in the order first named."""
    if isinstance(query, (q.MatchQuery, q.PhraseQuery)):
        return [query.column]
    if isinstance(query, (q.MultiMatchQuery, q.CombinedFieldsQuery)):
        return list(dict.fromkeys(query.columns))
    if isinstance(query, q.BoostQuery):
        return list(dict.fromkeys(query_columns(query.positive) + query_columns(query.negative)))
    if isinstance(query, q.BooleanQuery):
        names: list[str] = []
        for _, sub in query.queries:
            names.extend(query_columns(sub))
        return list(dict.fromkeys(names))
    return []


def column_search(
    store: DatasetStore,
    manifest: Manifest,
    name: str,
    fragments: list[Fragment],
    read_rows: RowReader | None,
    where: str,
) -> ColumnSearch:
    """How to search column ``name`` over ``fragments``: through its INVERTED index
    where it covers them, flat elsewhere (``read_rows`` None: nowhere else)."""
    _text_field(manifest, name)  # checked: it exists and holds text
    segments = inverted_segments(manifest).get(name, [])
    indexed = None
    params = FLAT_PARAMS
    covered: set[int] = set()
    if segments:
        opened = [_opened(store, segment) for segment in segments]
        params = opened[0].params
        if any(index.params != params for index in opened):
            raise UnsupportedOptionError(
                f"{where}: column {name!r} has INVERTED index segments built with "
                "different parameters"
            )
        indexed = _corpus(store, manifest, segments, opened)
        reuse = frag_reuse.reuse_map(store, manifest)
        for segment in segments:
            held = frag_reuse.coverage(reuse, segment, manifest)
            if held is None:
                raise UnsupportedOptionError(
                    f"{where}: index segment {segment.uuid} records no fragments"
                )
            covered.update(held)
    flat = None
    outside = [f for f in fragments if f.id not in covered]
    if read_rows is not None and (outside or not segments):
        table = read_rows(name, outside)
        texts = table.column(0).combine_chunks()
        if _is_list(texts.type):
            texts = _joined(texts)
        rows = np.asarray(table.column(1).to_numpy(), np.uint64)
        flat = FlatCorpus(analyze(texts, params), rows)
    return ColumnSearch(name, params, indexed, flat)


def _text_field(manifest: Manifest, name: str) -> pa.Field:
    field = _field_at(manifest.schema.to_arrow(), name)
    if field is None:
        raise FullTextQueryError(
            f"full_text_query: FTS field path {name!r} does not exist in the dataset schema"
        )
    if isinstance(field.type, pa.ExtensionType) or "json" in str(field.type).lower():
        raise UnsupportedOptionError(
            f"full_text_query: column {name!r} of type {field.type}: lancelet searches "
            "string columns only"
        )
    element = field.type.value_type if _is_list(field.type) else field.type
    if element not in _TEXT_TYPES:
        raise FullTextQueryError(
            f"full_text_query: FTS field {name!r} must resolve to Utf8, LargeUtf8 or "
            f"Utf8View, got {field.type}"
        )
    return field


def _corpus(
    store: DatasetStore,
    manifest: Manifest,
    segments: list[IndexMetadata],
    opened: list[InvertedIndex],
) -> IndexCorpus:
    """The index's documents as this version addresses them, kept by the store for
    the next query of the same version."""
    cache: dict[object, IndexCorpus] = store.cache("inverted_corpora", limit=16)
    key = (store.root, manifest.version, tuple(str(s.uuid) for s in segments))
    found = cache.get(key)
    if found is None:
        maps = [_address_map(store, manifest, segment) for segment in segments]
        found = cache[key] = IndexCorpus(opened, maps)
    return found


def _address_map(
    store: DatasetStore, manifest: Manifest, segment: IndexMetadata
) -> AddressMap | None:
    """How the row ids ``segment`` lists become current row addresses: stable row
    ids looked up, addresses carried through a fragment reuse index (rows dropped
    since map to ``MISSING``); None when they are current addresses."""
    if manifest.stable_row_ids and segment.keyed_by_row_id(True):

        def by_id(ids: np.ndarray) -> np.ndarray:
            return addresses_of_ids(store, manifest, ids)

        return by_id
    reuse = frag_reuse.reuse_map(store, manifest)
    if reuse is None or not frag_reuse.applies_to(segment, manifest):
        return None

    def moved(addresses: np.ndarray) -> np.ndarray:
        mapped, alive = reuse.remap(np.asarray(addresses, np.uint64))
        return np.where(alive, mapped, MISSING).astype(np.uint64)

    return moved


def _field_at(schema: pa.Schema, path: str) -> pa.Field | None:
    """The field a column name or a dotted path into structs names (None: none)."""
    index = schema.get_field_index(path)
    if index >= 0:
        return schema.field(index)
    head, _, rest = path.partition(".")
    index = schema.get_field_index(head)
    if not rest or index < 0:
        return None
    field = schema.field(index)
    if not pa.types.is_struct(field.type):
        return None
    return _field_at(pa.schema(list(field.type)), rest)


def _joined(lists: pa.Array) -> pa.Array:
    """Each list row as one text, its strings joined by a space: pylance searches a
    list row as one document whose positions run on from element to element, and
    without an index it matched this (``tests/dataset/test_fts_gaps.py``)."""
    lists = lists.cast(pa.large_list(pa.large_string()))
    filled = pa.LargeListArray.from_arrays(
        lists.offsets, pc.fill_null(lists.values, ""), mask=lists.is_null()
    )
    return pc.binary_join(filled, pa.scalar(" ", pa.large_string()))


def _is_list(data_type: pa.DataType) -> bool:
    return bool(pa.types.is_list(data_type) or pa.types.is_large_list(data_type))


def _opened(store: DatasetStore, segment: IndexMetadata) -> InvertedIndex:
    """The open index, kept by the store (index files never change)."""
    cache = store.index_cache("inverted_indices")
    key = str(segment.uuid)
    found = cache.get(key)
    if found is None:
        found = cache[key] = InvertedIndex.open(store.place(naming.INDICES_DIR, key))
    assert isinstance(found, InvertedIndex)
    return found
