"""Arrow extension types in Lance files: stored as their storage type.

A Lance field of an extension type has its storage type's logical type, the
extension's name in ``extension_name`` and both Arrow keys
(``ARROW:extension:name``/``metadata``) in its metadata.  Readers here see the
*storage* form (storage types with those keys on the fields) and turn it back
into the extension type by name: lancelet's own (:func:`register_extension`), the
canonical Arrow ones, else any pyarrow has registered.

JSON is the exception: an ``arrow.json`` column (text) is stored as ``lance.json``,
JSONB in a ``large_binary`` column (see :mod:`.jsonb`).  As in pylance, a file
reader returns that JSONB and a dataset prints it back to text.
"""

from __future__ import annotations

import ctypes
import json
import struct
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lancelet.errors import UnsupportedTypeError
from lancelet.file import jsonb

if TYPE_CHECKING:
    from lancelet.file.reader import ColumnReader

NAME_KEY = b"ARROW:extension:name"
METADATA_KEY = b"ARROW:extension:metadata"
ARROW_JSON = "arrow.json"
LANCE_JSON = "lance.json"
BFLOAT16 = "lance.bfloat16"


def is_extension(dtype: pa.DataType) -> bool:
    return isinstance(dtype, pa.BaseExtensionType)


def has_extension(dtype: pa.DataType) -> bool:
    """Whether ``dtype`` is or holds an extension type."""
    if is_extension(dtype):
        return True
    count = dtype.num_fields
    return bool(count) and any(has_extension(dtype.field(i).type) for i in range(count))


def extension_of(field: pa.Field) -> str | None:
    """The extension a storage-form field stands for."""
    meta = field.metadata or {}
    name = meta.get(NAME_KEY)
    return None if name is None else name.decode()


# -- schema ------------------------------------------------------------------------


def storage_field(field: pa.Field, json_as_jsonb: bool = True) -> pa.Field:
    """``field`` in storage form (the same field if it holds no extension type);
    ``arrow.json`` becomes ``lance.json`` (JSONB) with ``json_as_jsonb``."""
    dtype = field.type
    if not has_extension(dtype):
        return field
    meta = dict(field.metadata or {})
    if is_extension(dtype):
        name, serialized = _serialized(dtype)
        if name in _OWN_FORM:
            raise UnsupportedTypeError(
                f"column {field.name!r}: Arrow extension type {name!r} (pylance's blob "
                "arrays) is not written by lancelet; give large_binary values with "
                "lance-encoding:blob metadata"
            )
        storage = dtype.storage_type
        if name == ARROW_JSON and json_as_jsonb:
            name, serialized, storage = LANCE_JSON, b"", pa.large_binary()
        meta.update({NAME_KEY: name.encode(), METADATA_KEY: serialized})
        plain = storage_field(pa.field(field.name, storage, field.nullable), json_as_jsonb)
        return plain.with_metadata(meta)
    kids = [storage_field(c, json_as_jsonb) for c in _children(dtype)]
    return field.with_type(_with_children(dtype, kids))


def storage_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([storage_field(f) for f in schema], metadata=schema.metadata)


def logical_field(field: pa.Field, json_text: bool = True) -> pa.Field:
    """A storage-form field back as its extension type (an extension lancelet and
    pyarrow do not know stays in storage form).  ``lance.json`` becomes ``arrow.json``
    only with ``json_text``: a file reader returns the JSONB itself, as pylance's
    does, and datasets print it (:func:`json_as_text`)."""
    if not _mentions_extension(field):
        return field
    kids = _children(field.type)
    dtype = field.type
    if kids:
        dtype = _with_children(dtype, [logical_field(k, json_text) for k in kids])
    name = extension_of(field)
    if name is None or name in _OWN_FORM or (name == LANCE_JSON and not json_text):
        return field.with_type(dtype)
    meta = dict(field.metadata or {})
    serialized = meta.pop(METADATA_KEY, b"")
    meta.pop(NAME_KEY)
    made = _make_extension(name, dtype, serialized)
    if made is None:
        return field.with_type(dtype)
    return pa.field(field.name, made, field.nullable, metadata=meta or None)


# Extensions whose columns lancelet keeps in storage form with their metadata, because
# the dataset layer handles them itself (pylance registers a class of the same name).
_OWN_FORM = frozenset({"lance.blob.v2"})

Factory = Callable[[pa.DataType, bytes], pa.DataType]
_FACTORIES: dict[str, Factory] = {}


def register_extension(name: str, factory: Factory) -> None:
    """Teach the readers an extension type by name, without registering it with
    pyarrow (whose registry is global: pylance registers its own classes there)."""
    _FACTORIES[name] = factory


def _make_extension(name: str, storage: pa.DataType, serialized: bytes) -> pa.DataType | None:
    if name == LANCE_JSON:
        return pa.json_()  # its text, which json_as_text prints
    if name in _FACTORIES:
        return _FACTORIES[name](storage, serialized)
    if name == "arrow.fixed_shape_tensor" and pa.types.is_fixed_size_list(storage):
        params = json.loads(serialized or b"{}")
        return pa.fixed_shape_tensor(
            storage.value_type,
            params["shape"],
            dim_names=params.get("dim_names"),
            permutation=params.get("permutation"),
        )
    # Anything else pyarrow knows (canonical types, types registered with it):
    # pyarrow rebuilds it from the same two metadata keys on an IPC schema.
    keys = {NAME_KEY: name.encode(), METADATA_KEY: serialized}
    probe = pa.schema([pa.field("x", storage, metadata=keys)])
    try:
        back = pa.ipc.read_schema(pa.py_buffer(probe.serialize())).field(0).type
    except (TypeError, ValueError, pa.ArrowException):
        # A class another library registered under this name refuses this storage:
        # the column keeps its storage form (same values), as an unknown name does.
        return None
    return back if is_extension(back) else None


def logical_schema(schema: pa.Schema, json_text: bool = True) -> pa.Schema:
    return pa.schema([logical_field(f, json_text) for f in schema], metadata=schema.metadata)


def _mentions_extension(field: pa.Field) -> bool:
    if extension_of(field) is not None:
        return True
    return bool(field.type.num_fields) and any(
        _mentions_extension(c) for c in _children(field.type)
    )


def _children(dtype: pa.DataType) -> list[pa.Field]:
    if is_extension(dtype):
        return []
    return [dtype.field(i) for i in range(dtype.num_fields)]


def _with_children(dtype: pa.DataType, kids: list[pa.Field]) -> pa.DataType:
    if pa.types.is_struct(dtype):
        return pa.struct(kids)
    if pa.types.is_list(dtype):
        return pa.list_(kids[0])
    if pa.types.is_large_list(dtype):
        return pa.large_list(kids[0])
    if pa.types.is_fixed_size_list(dtype):
        return pa.list_(kids[0], dtype.list_size)
    raise UnsupportedTypeError(f"extension types inside {dtype} are not supported")


# -- arrays ------------------------------------------------------------------------


def storage_array(array: pa.Array | pa.ChunkedArray, field: pa.Field) -> pa.Array:
    """``array`` (of ``field``'s type) as the storage form's type."""
    target = storage_field(field).type
    if target == array.type:
        return array
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if _is_json(array.type):
        return jsonb.encode_column(array.storage)
    if pa.types.is_struct(array.type) and _holds_json(array.type):
        kids = [array.type.field(i) for i in range(array.type.num_fields)]
        converted = [storage_array(array.field(i), k) for i, k in enumerate(kids)]
        return _struct(converted, array, target)
    if _is_variable_list(array.type) and _holds_json(array.type):
        items = storage_array(array.values, array.type.value_field)
        return _list(array, items, target)
    if _holds_json(array.type):
        raise UnsupportedTypeError(
            f"column {field.name!r}: JSON nested inside {array.type} is not supported"
        )
    return array.cast(target)


def json_as_text(column: pa.ChunkedArray, wanted: pa.DataType) -> pa.ChunkedArray:
    """A column read from a file with its JSONB (``lance.json``) printed as the
    ``arrow.json`` text ``wanted`` holds (at the top level, in structs or lists)."""
    if not _holds_json(wanted):
        return column
    chunks = [_printed(chunk, wanted) for chunk in column.chunks]
    return pa.chunked_array(chunks, type=chunks[0].type if chunks else None)


def _printed(array: pa.Array, wanted: pa.DataType) -> pa.Array:
    if _is_json(wanted):
        if array.type != pa.large_binary():
            return array  # not JSONB: left to the caller's cast to say it does not fit
        return pa.ExtensionArray.from_storage(wanted, jsonb.decode_column(array))
    if pa.types.is_struct(wanted) and pa.types.is_struct(array.type):
        if array.type.num_fields != wanted.num_fields:
            return array
        kids = [_printed(array.field(i), wanted.field(i).type) for i in range(wanted.num_fields)]
        return _struct(kids, array, wanted)
    if _is_variable_list(wanted) and _is_variable_list(array.type):
        return _list(array, _printed(array.values, wanted.value_type), wanted)
    return array


def _is_variable_list(dtype: pa.DataType) -> bool:
    return bool(pa.types.is_list(dtype) or pa.types.is_large_list(dtype))


def _list(like: pa.Array, items: pa.Array, dtype: pa.DataType) -> pa.Array:
    """``like``'s lists over other ``items`` (its ``values``, converted)."""
    make = pa.LargeListArray if pa.types.is_large_list(like.type) else pa.ListArray
    mask = like.is_null() if like.null_count else None
    # Rebased on the slice's first item: Arrow takes no nulls with sliced offsets.
    offsets = like.offsets.to_numpy()
    base = int(offsets[0]) if len(offsets) else 0
    used = items.slice(base, int(offsets[-1]) - base) if len(offsets) else items
    return make.from_arrays(offsets - base, used, type=dtype, mask=mask)


def _struct(children: list[pa.Array], like: pa.StructArray, dtype: pa.DataType) -> pa.Array:
    """``like``'s structs over other ``children``, as type ``dtype``."""
    fields = [dtype.field(i) for i in range(dtype.num_fields)]
    mask = like.is_null() if like.null_count else None
    return pa.StructArray.from_arrays(children, fields=fields, mask=mask)


def _is_json(dtype: pa.DataType) -> bool:
    return is_extension(dtype) and dtype.extension_name == ARROW_JSON


def _holds_json(dtype: pa.DataType) -> bool:
    if is_extension(dtype):
        return _is_json(dtype) or _holds_json(dtype.storage_type)
    return any(_holds_json(c.type) for c in _children(dtype))


# -- an extension type's serialized form -------------------------------------------


class _ArrowSchema(ctypes.Structure):
    pass


_ArrowSchema._fields_ = [
    ("format", ctypes.c_char_p),
    ("name", ctypes.c_char_p),
    ("metadata", ctypes.c_void_p),
    ("flags", ctypes.c_int64),
    ("n_children", ctypes.c_int64),
    ("children", ctypes.c_void_p),
    ("dictionary", ctypes.c_void_p),
    ("release", ctypes.CFUNCTYPE(None, ctypes.POINTER(_ArrowSchema))),
    ("private_data", ctypes.c_void_p),
]


def _serialized(dtype: pa.DataType) -> tuple[str, bytes]:
    """An extension type's name and serialized parameters, as Arrow writes them to
    ``ARROW:extension:metadata`` (read off its C data interface export, which works
    for Python and C++ extension types alike)."""
    schema = _ArrowSchema()
    dtype._export_to_c(ctypes.addressof(schema))
    try:
        meta = _c_metadata(schema.metadata)
    finally:
        schema.release(ctypes.byref(schema))
    return meta[NAME_KEY].decode(), meta.get(METADATA_KEY, b"")


def _c_metadata(address: int | None) -> Mapping[bytes, bytes]:
    if not address:
        return {}
    out = {}
    (count,) = struct.unpack("=i", ctypes.string_at(address, 4))
    pos = address + 4
    for _ in range(count):
        pair = []
        for _part in range(2):
            (size,) = struct.unpack("=i", ctypes.string_at(pos, 4))
            pair.append(ctypes.string_at(pos + 4, size))
            pos += 4 + size
        out[pair[0]] = pair[1]
    return out


class _LogicalColumn:
    """A column reader whose storage-form arrays come back as the extension type."""

    def __init__(self, inner: ColumnReader, field: pa.Field) -> None:
        self._inner = inner
        # JSON stays the JSONB stored (see logical_field).
        self._dtype = logical_field(field, json_text=False).type

    @property
    def dtype(self) -> pa.DataType:
        return self._dtype

    def _logical(self, array: pa.Array) -> pa.Array:
        return array if array.type == self._dtype else array.cast(self._dtype)

    def chunks(self, start: int, end: int) -> list[pa.Array]:
        return [self._logical(c) for c in self._inner.chunks(start, end)]

    def read(self, start: int, end: int) -> pa.Array:
        return self._logical(self._inner.read(start, end))

    def take(self, rows: np.ndarray) -> pa.Array:
        return self._logical(self._inner.take(rows))


def logical_reader(reader: ColumnReader, field: pa.Field) -> ColumnReader:
    """``reader`` of the storage-form ``field``, yielding its logical type."""
    if not _mentions_extension(field):
        return reader
    return _LogicalColumn(reader, field)


def storage_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with its extension columns in storage form."""
    if not any(has_extension(f.type) for f in batch.schema):
        return batch
    arrays = [storage_array(c, f) for c, f in zip(batch.columns, batch.schema, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=storage_schema(batch.schema))
