"""Building scalar indices: ``create_scalar_index`` and ``optimize_indices``.

An index is built from one version: its column's live values, with their row
addresses, are streamed from a scan into the index type's writer (which sorts in
bounded memory where it has to), under ``_indices/<uuid>/`` in the dataset's data
file format.  Nothing is visible until one ``CreateIndex`` commit lists the new
index with the fragments it holds; if building or committing fails, the new
directory is removed and the dataset is as it was.

Every argument is checked before any file is written.  Options that pylance takes
but lancelet does not implement are refused by name rather than ignored.
"""

from __future__ import annotations

import uuid as uuid_lib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet.dataset.core import arguments
from lancelet.dataset.core.snapshot import Snapshot
from lancelet.dataset.core.terminal_progress import progress_bar
from lancelet.dataset.indices import catalog as indices
from lancelet.dataset.indices import config as index_config
from lancelet.dataset.indices import distributed
from lancelet.dataset.read.scanner import ROW_ADDRESS, ROW_ID, LanceScanner
from lancelet.errors import (
    ArgumentError,
    IndexColumnNotFoundError,
    IndexTypeError,
    UnknownIndexTypeError,
    UnsupportedIndexError,
    UnsupportedOptionError,
    UnsupportedTypeError,
)
from lancelet.file import version as file_version
from lancelet.file.extensions import ARROW_JSON, is_extension
from lancelet.index import json_kind, registry
from lancelet.index.fts.queries import DocumentGranularity
from lancelet.table import naming
from lancelet.table.index import IndexDetails, IndexMetadata
from lancelet.table.manifest import Manifest
from lancelet.table.schema import LanceSchema
from lancelet.transaction.store import DatasetStore

# Index types pylance builds that lancelet does not (yet): refused by name.
PYLANCE_ONLY = frozenset({"RTREE", "MINHASHLSH", "JSON"})

# The index types whose refusal of a column's type is a TypeError in pylance (a Bloom
# filter's is a ValueError; pylance builds zone maps on any type).
_TYPE_ERROR_KINDS = frozenset({"BTREE", "BITMAP", "LABEL_LIST", "NGRAM", "INVERTED"})

# Rows per batch handed to an index writer.
_BATCH_ROWS = 1 << 17


@dataclass(frozen=True)
class IndexedField:
    """The column an index covers: its field id, its path, and its Arrow type."""

    id: int
    path: str
    type: pa.DataType


def check_granularity(granularity: DocumentGranularity) -> None:
    """pylance takes the enum only; it shapes full-text indices, which lancelet does
    not build, so anything but its default is refused."""
    if not isinstance(granularity, DocumentGranularity):
        raise TypeError("document_granularity must be a lancelet.query.DocumentGranularity")
    if granularity is not DocumentGranularity.ROW:
        raise UnsupportedOptionError(
            f"create_scalar_index: document_granularity={granularity!r} is not supported"
        )


def create_scalar_index(
    snapshot: Snapshot,
    column: str,
    index_type: str | index_config.IndexConfig,
    name: str | None = None,
    *,
    replace: bool = True,
    train: bool = True,
    fragment_ids: Sequence[int] | None = None,
    index_uuid: str | None = None,
    progress_callback: Any = None,
    format_version: int | str | None = None,
    **kwargs: Any,
) -> Manifest | None:
    """Build the index and commit it; the version that lists it.  With
    ``fragment_ids``, an INVERTED build over those fragments is staged and nothing is
    committed (None: see :mod:`lancelet.dataset.indices.distributed`)."""
    manifest = snapshot.manifest
    where = f"{snapshot.uri} version {manifest.version}"
    train = arguments.flag(train, "train", f"{where}: create_scalar_index", True)
    type_name, given = index_config.unpack(index_type, kwargs, where)
    kind = _json_kind(index_type, manifest, where) or index_kind(type_name, where)
    if kind.name == "INVERTED" and format_version is not None:
        # The FTS on-disk version: the INVERTED writer checks it.
        given = {**given, "format_version": format_version}
        format_version = None
    _refuse_options(where, progress_callback, format_version)
    if fragment_ids is not None and kind.name == "INVERTED":
        distributed.stage_inverted(
            snapshot, column, fragment_ids, index_uuid, train, _parameters(kind, given, where)
        )
        return None
    if fragment_ids is not None:
        # pylance builds these types fragment by fragment only through
        # create_index_uncommitted (which lancelet lacks), and refuses this as a ValueError.
        raise ArgumentError(
            f"{where}: {kind.name} distributed indexing uses create_index_uncommitted"
            f'(..., index_type="{kind.name}", fragment_ids=...), which lancelet does not have'
        )
    params = _parameters(kind, given, where)
    field = resolve_field(manifest.schema, column, where)
    name = name or _default_name(manifest, field, kind)
    indices.check_new_index(manifest, name, [field.id], replace, where)
    uid = _new_uuid(index_uuid, where)
    # train=False: an empty index, as pylance writes it (its files hold no rows, it
    # covers no fragment); optimize_indices then indexes the fragments.
    covered = [f.id for f in manifest.fragments] if train else []
    details = build_index(snapshot, manifest, kind, field, uid, params, covered)
    try:
        return indices.commit_index(
            snapshot,
            name,
            [field.id],
            uid,
            details,
            covered,
            replace=replace,
            index_version=kind.version_for(manifest.stable_row_ids),
        )
    except BaseException:
        snapshot.store.io.remove_tree(snapshot.store.path(naming.INDICES_DIR, str(uid)))
        raise


def _refuse_options(
    where: str,
    progress_callback: Any,
    format_version: int | str | None,
) -> None:
    given = {
        "progress_callback": progress_callback is not None,
        "format_version": format_version is not None,
    }
    for option, set_ in given.items():
        if set_:
            raise UnsupportedOptionError(
                f"{where}: create_scalar_index does not support {option} in lancelet"
            )


def _json_kind(index_type: object, manifest: Manifest, where: str) -> registry.IndexType | None:
    """The JSON index type, asked for as pylance asks for it: in an IndexConfig."""
    if not isinstance(index_type, index_config.IndexConfig):
        return None
    if not isinstance(index_type.index_type, str) or index_type.index_type.upper() != "JSON":
        return None
    if manifest.stable_row_ids:
        # pylance refuses a JSON BTREE there; what its other targets key rows by is unknown.
        raise UnsupportedOptionError(
            f"{where}: lancelet does not build JSON indices on datasets with stable row ids"
        )
    return json_kind.JSON


def index_kind(index_type: object, where: str) -> registry.IndexType:
    if not isinstance(index_type, str):
        raise UnsupportedOptionError(
            f"{where}: index_type must be an index type's name; "
            f"lancelet does not take {type(index_type).__name__}"
        )
    wanted = index_type.upper()
    if wanted in PYLANCE_ONLY:
        raise UnsupportedIndexError(f"{where}: lancelet does not build {wanted} indices")
    kind = registry.BY_NAME.get(wanted)
    if kind is None:
        raise UnknownIndexTypeError(
            f"{where}: unknown index type {index_type!r}; "
            f"lancelet builds {sorted(registry.BY_NAME)}"
        )
    return kind


def _parameters(kind: registry.IndexType, kwargs: Mapping[str, Any], where: str) -> dict[str, Any]:
    unknown = sorted(set(kwargs) - kind.parameters)
    if unknown:
        accepted = sorted(kind.parameters) or "none"
        raise UnsupportedOptionError(
            f"{where}: {kind.name} index does not take {unknown}; its parameters: {accepted}"
        )
    return dict(kwargs)


def resolve_field(schema: LanceSchema, column: str, where: str) -> IndexedField:
    """The field ``column`` names: a top-level column or a dotted path into structs,
    matched exactly or else case-insensitively (as pylance matches)."""
    if not isinstance(column, str):
        raise UnsupportedOptionError(f"{where}: lancelet indexes one column, named by a string")
    parent, dtype = -1, None
    arrow = schema.to_arrow()
    fields: Sequence[pa.Field] = list(arrow)
    found = None
    for part in column.split("."):
        found = _child(schema, parent, part)
        arrow_field = next((f for f in fields if f.name == found.name), None) if found else None
        if found is None or arrow_field is None:
            raise IndexColumnNotFoundError(f"{where}: no column {column!r} to index")
        parent, dtype = found.id, arrow_field.type
        fields = list(dtype) if pa.types.is_struct(dtype) else []
    assert found is not None and dtype is not None
    return IndexedField(found.id, schema.field_path(found.id), index_value_type(dtype))


def index_value_type(dtype: pa.DataType) -> pa.DataType:
    """What an index holds of a column: an extension type's storage (pylance indexes
    a uuid as FixedSizeBinary(16)), JSON excepted."""
    if is_extension(dtype) and dtype.extension_name != ARROW_JSON:
        return dtype.storage_type
    return dtype


def _child(schema: LanceSchema, parent: int, name: str) -> Any:
    children = [f for f in schema.fields if f.parent_id == parent]
    exact = [f for f in children if f.name == name]
    folded = [f for f in children if f.name.lower() == name.lower()]
    if exact:
        return exact[0]
    return folded[0] if len(folded) == 1 else None


def _default_name(manifest: Manifest, field: IndexedField, kind: registry.IndexType) -> str:
    """``<column>_idx``, or ``<column>_idx_2``, ... when an index of another type or
    on another field has the name: pylance replaces an index of the same kind."""
    base = f"{field.path}_idx"
    for n in range(1, len(manifest.indices) + 2):
        name = base if n == 1 else f"{base}_{n}"
        same = [i for i in manifest.indices if i.name == name]
        if not same or all(_same_kind(i, field, kind) for i in same):
            return name
    raise AssertionError("unreachable: some suffix is free")


def _same_kind(index: IndexMetadata, field: IndexedField, kind: registry.IndexType) -> bool:
    url = index.index_details.type_url if index.index_details else ""
    return index.fields == (field.id,) and url == kind.details.type_url


def _new_uuid(index_uuid: str | None, where: str) -> uuid_lib.UUID:
    if index_uuid is None:
        return uuid_lib.uuid4()
    try:
        return uuid_lib.UUID(str(index_uuid))
    except ValueError as exc:
        raise ArgumentError(f"{where}: index_uuid {index_uuid!r} is not a UUID") from exc


def build_index(
    snapshot: Snapshot,
    manifest: Manifest,
    kind: registry.IndexType,
    field: IndexedField,
    uid: uuid_lib.UUID,
    params: Mapping[str, Any],
    fragment_ids: Sequence[int] | None = None,
) -> IndexDetails:
    """Write the index files of ``field`` over the live rows of ``manifest``'s
    fragments (or of ``fragment_ids``) under ``_indices/<uid>/``; its details."""
    store = snapshot.store
    directory = store.place(naming.INDICES_DIR, str(uid))
    version = file_version.index_file_version(manifest.data_storage_version)
    stable = manifest.stable_row_ids
    by_id = kind.keyed_by_row_id(kind.version_for(stable), stable)
    rows = _values(store, manifest, field, fragment_ids, by_id)
    chosen = None if fragment_ids is None else set(fragment_ids)
    total = sum(f.num_rows for f in manifest.fragments if chosen is None or f.id in chosen)
    try:
        with progress_bar(f"Indexing {field.path}", total=total, unit="rows") as bar:
            counted = bar.tracked(rows, lambda pair: len(pair[1]))
            written = kind.build(counted, directory, field.type, version, params)
    except UnsupportedTypeError as exc:
        store.io.remove_tree(directory.path)
        where = f"{snapshot.uri} version {manifest.version}"
        refusal = IndexTypeError if kind.name in _TYPE_ERROR_KINDS else UnsupportedTypeError
        raise refusal(
            f"{where}: cannot build a {kind.name} index on column {field.path!r}: {exc}"
        ) from exc
    except BaseException:
        store.io.remove_tree(directory.path)
        raise
    return IndexDetails(written.type_url, written.value)


def _values(
    store: DatasetStore,
    manifest: Manifest,
    field: IndexedField,
    fragment_ids: Sequence[int] | None,
    by_row_id: bool,
) -> Iterator[tuple[pa.Array, np.ndarray]]:
    """(values, row addresses or stable row ids) of the live rows, in address order."""
    top, *nested = field.path.split(".")
    fragments = None
    if fragment_ids is not None:
        wanted = set(fragment_ids)
        fragments = [f for f in manifest.fragments if f.id in wanted]
    scanner = LanceScanner(
        store,
        manifest,
        columns=[top],
        with_row_id=by_row_id,
        with_row_address=not by_row_id,
        batch_size=_BATCH_ROWS,
        fragments=fragments,
    )
    for batch in scanner.to_batches():
        values = batch.column(0)
        if nested:
            values = pc.struct_field(values, nested)
        if index_value_type(values.type) != values.type:
            values = values.storage
        rows = batch.column(ROW_ID if by_row_id else ROW_ADDRESS).to_numpy(zero_copy_only=False)
        yield values, rows.astype(np.uint64, copy=False)
