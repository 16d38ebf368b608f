"""Arrow schema <-> Lance schema fields (``lance.file.Field``).

Lance flattens a schema into a pre-order list of fields, each with an id and its
parent's id (-1 at the top level).  Struct and list fields get children; a
fixed-size list is a single field whose item type lives in its logical type
string.
"""

from __future__ import annotations

import functools
import re
import zoneinfo
from collections.abc import Iterable, Iterator, Mapping, Sequence

import pyarrow as pa

from lancelet._proto import file_pb2
from lancelet.errors import SchemaError, UnsupportedTypeError
from lancelet.file import extensions, primary_key

_SIMPLE: dict[pa.DataType, str] = {
    pa.null(): "null",
    pa.bool_(): "bool",
    pa.int8(): "int8",
    pa.uint8(): "uint8",
    pa.int16(): "int16",
    pa.uint16(): "uint16",
    pa.int32(): "int32",
    pa.uint32(): "uint32",
    pa.int64(): "int64",
    pa.uint64(): "uint64",
    pa.float16(): "halffloat",
    pa.float32(): "float",
    pa.float64(): "double",
    pa.string(): "string",
    pa.binary(): "binary",
    pa.large_string(): "large_string",
    pa.large_binary(): "large_binary",
    pa.date32(): "date32:day",
    pa.date64(): "date64:ms",
}
_SIMPLE_BY_NAME = {name: dtype for dtype, name in _SIMPLE.items()}
_SIMPLE_BY_NAME["json"] = pa.large_binary()

_VARIABLE_WIDTH = (pa.string(), pa.binary(), pa.large_string(), pa.large_binary())


def logical_type(dtype: pa.DataType, column: str) -> str:
    """The Lance logical type string of an Arrow type."""
    if isinstance(dtype, pa.BaseExtensionType):
        # pylance's own (lance.blob.v2 from blob_array / blob_field) included: a blob
        # column is written from large_binary values marked lance-encoding:blob.
        raise UnsupportedTypeError(
            f"column {column!r}: Arrow extension type {dtype.extension_name!r} is not supported"
        )
    if dtype in _SIMPLE:
        return _SIMPLE[dtype]
    if pa.types.is_decimal(dtype):
        return f"decimal:{dtype.bit_width}:{dtype.precision}:{dtype.scale}"
    if pa.types.is_timestamp(dtype):
        return f"timestamp:{dtype.unit}:{dtype.tz or '-'}"
    if pa.types.is_time32(dtype):
        return f"time32:{dtype.unit}"
    if pa.types.is_time64(dtype):
        return f"time64:{dtype.unit}"
    if pa.types.is_duration(dtype):
        return f"duration:{dtype.unit}"
    if pa.types.is_fixed_size_binary(dtype):
        return f"fixed_size_binary:{dtype.byte_width}"
    if pa.types.is_struct(dtype):
        return "struct"
    if pa.types.is_map(dtype):
        if dtype.keys_sorted:
            raise UnsupportedTypeError(
                f"column {column!r}: maps with sorted keys (keys_sorted=True) are not "
                "supported (pylance refuses them too)"
            )
        return "map"
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        base = "list" if pa.types.is_list(dtype) else "large_list"
        return base + (".struct" if pa.types.is_struct(dtype.value_type) else "")
    if pa.types.is_dictionary(dtype):
        value = logical_type(dtype.value_type, column)
        return f"dict:{value}:{logical_type(dtype.index_type, column)}:false"
    if pa.types.is_fixed_size_list(dtype):
        item = extensions.extension_of(dtype.value_field)
        if item is not None and item != extensions.BFLOAT16:
            raise UnsupportedTypeError(
                f"column {column!r}: fixed-size lists of {item} have no Lance logical type"
            )
        if pa.types.is_map(dtype.value_type):
            raise UnsupportedTypeError(
                f"column {column!r}: fixed-size lists of maps are not supported"
            )
        inner = item or logical_type(dtype.value_type, column)
        return f"fixed_size_list:{inner}:{dtype.list_size}"
    raise UnsupportedTypeError(f"column {column!r}: Arrow type {dtype} has no Lance logical type")


def parse_logical_type(name: str, column: str) -> pa.DataType:
    """The Arrow type of a leaf or fixed-size-list logical type string."""
    if name in _SIMPLE_BY_NAME:
        return _SIMPLE_BY_NAME[name]
    head, _, rest = name.partition(":")
    try:
        if head == "decimal":
            bits, precision, scale = rest.split(":")
            make = pa.decimal128 if bits == "128" else pa.decimal256 if bits == "256" else None
            if make is not None:
                return make(
                    _number(precision, 1, 76, name), _number(scale, -(2**31), 2**31 - 1, name)
                )
        elif head == "timestamp":
            unit, _, tz = rest.partition(":")
            if tz in ("-", ""):
                return pa.timestamp(unit)
            if not known_timezone(tz):
                raise SchemaError(f"column {column!r}: unknown time zone {tz!r} in {name!r}")
            return pa.timestamp(unit, tz)
        elif head == "time32":
            return pa.time32(rest)
        elif head == "time64":
            return pa.time64(rest)
        elif head == "duration":
            return pa.duration(rest)
        elif head == "fixed_size_binary":
            return pa.binary(_number(rest, 0, 2**31 - 1, name))
        elif head == "dict":
            value, index, _ordered = rest.split(":")
            return pa.dictionary(
                parse_logical_type(index, column), parse_logical_type(value, column)
            )
        elif head == "fixed_size_list":
            inner, _, size = rest.rpartition(":")
            length = _number(size, 0, 2**31 - 1, name)
            if inner == extensions.BFLOAT16:
                return pa.list_(_bfloat16_item(), length)
            if inner.split(":")[0] in ("struct", "list", "large_list", "map"):
                # Items with child fields of their own (2.2 files): not read yet.
                raise UnsupportedTypeError(f"column {column!r}: unsupported logical type {name!r}")
            return pa.list_(parse_logical_type(inner, column), length)
    except SchemaError:
        raise  # said precisely already (an unsupported type, an unknown time zone)
    except (ValueError, TypeError, OverflowError, pa.ArrowInvalid) as exc:
        raise SchemaError(f"column {column!r}: malformed logical type {name!r}") from exc
    if not name:
        raise SchemaError(f"column {column!r}: the logical type is empty")
    raise UnsupportedTypeError(f"column {column!r}: unsupported logical type {name!r}")


_INTEGER = re.compile(r"-?[0-9]{1,20}")


def _number(text: str, low: int, high: int, name: str) -> int:
    """A width, size, precision or scale of a logical type: decimal digits (a minus
    sign allowed when ``low`` is negative) naming a number Arrow can hold.  Python
    would take ``+5``, `` 5`` or ``5_0``, and pyarrow turns a negative width into
    another type (``binary(-1)`` is variable-width), so both are checked here."""
    if not _INTEGER.fullmatch(text) or not low <= int(text) <= high:
        raise ValueError(f"{text!r} in {name!r} is not a number from {low} to {high}")
    return int(text)


def _map_type(entries: pa.DataType, column: str) -> pa.MapType:
    """The map whose entries are ``entries`` (a struct of a key and a value), its
    fields named ``key`` and ``value`` whatever the file calls them, as pylance's
    readers give them."""
    if not pa.types.is_struct(entries) or entries.num_fields != 2:
        raise SchemaError(f"map field {column!r}: its entries are {entries}, not a key and a value")
    key, value = entries.field(0), entries.field(1)
    if key.nullable:
        raise SchemaError(f"map field {column!r}: its key field is nullable")
    return pa.map_(key.with_name("key"), value.with_name("value"))


def _bfloat16_item() -> pa.Field:
    meta = {extensions.NAME_KEY: extensions.BFLOAT16.encode(), extensions.METADATA_KEY: b""}
    return pa.field("item", pa.binary(2), metadata=meta)


_OFFSET = re.compile(r"[+-](?:[01][0-9]|2[0-3]):?[0-5][0-9]")


def known_timezone(tz: str) -> bool:
    """Whether Arrow can use ``tz``: a fixed offset (``+05:30``) or a time zone name.

    pyarrow accepts any string as a zone, and nothing else in a file guards it, so a
    damaged name would silently change the column's type.  Names are looked up in
    the system's zone database (or the ``tzdata`` package); without any database,
    every name is taken.
    """
    if _OFFSET.fullmatch(tz):
        return True
    zones = _zone_names()
    return tz in zones or not zones


@functools.lru_cache(maxsize=1)
def _zone_names() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def _legacy_encoding(dtype: pa.DataType) -> file_pb2.Encoding.ValueType:
    # Pre-2.0 readers look at this per-field hint; 2.0 files still carry it.
    if dtype in _VARIABLE_WIDTH:
        return file_pb2.VAR_BINARY
    if pa.types.is_dictionary(dtype):
        return file_pb2.DICTIONARY
    if pa.types.is_struct(dtype) or pa.types.is_null(dtype):
        return file_pb2.NONE
    return file_pb2.PLAIN


def _metadata(meta: Mapping[bytes, bytes] | None) -> dict[str, bytes]:
    return {k.decode(): v for k, v in (meta or {}).items()}


def to_lance_fields(
    schema: pa.Schema, first_id: int = 0, *, check_key: bool = True
) -> list[file_pb2.Field]:
    """Flatten an Arrow schema into Lance fields, assigning ids in pre-order.
    Extension types are stored as their storage type (see :mod:`.extensions`).
    Fields whose metadata marks them get the unenforced primary key, checked as
    pylance checks it unless ``check_key`` is false (see :mod:`.primary_key`)."""
    schema = extensions.storage_schema(schema)
    out: list[file_pb2.Field] = []
    for top in schema:
        _add_lance_fields(top, -1, first_id, out)
    if check_key:
        primary_key.check(out)
    return out


def _add_lance_fields(
    field: pa.Field, parent: int, first_id: int, out: list[file_pb2.Field]
) -> None:
    """``field`` and the fields below it appended to ``out``, numbered in pre-order from
    ``first_id``.  (Recursive functions are module functions here: a recursive closure
    holds itself, a cycle only the garbage collector frees.)"""
    fid = first_id + len(out)
    extension = extensions.extension_of(field)
    is_json = extension == extensions.LANCE_JSON
    lance_field = file_pb2.Field(
        name=field.name,
        id=fid,
        parent_id=parent,
        logical_type="json" if is_json else logical_type(field.type, field.name),
        nullable=field.nullable,
        encoding=_legacy_encoding(field.type),
        extension_name=extension or "",
    )
    if field.metadata:
        # Only metadata marks a key field; filling a map field goes through Python.
        lance_field.metadata.update(_metadata(field.metadata))
        primary_key.mark(lance_field)
    out.append(lance_field)
    if field.type.num_fields:
        for child in _child_fields(field.type):
            _add_lance_fields(child, fid, first_id, out)


def renumbered(fields: list[file_pb2.Field], ids: Sequence[int], path: str) -> list[file_pb2.Field]:
    """``fields`` (numbered by position, as :func:`to_lance_fields` numbers them) with
    the ids ``ids`` in their place, parents renumbered alike."""
    numbered = [i for i in ids if i != -1]
    if len(ids) != len(fields) or len(set(numbered)) != len(numbered) or min(ids, default=0) < -1:
        raise SchemaError(
            f"{path}: {len(ids)} distinct non-negative field ids are needed for "
            f"{len(fields)} fields, got {list(ids)}"
        )
    out = []
    for field in fields:
        copy = file_pb2.Field()
        copy.CopyFrom(field)
        copy.id = ids[field.id]
        # An unnumbered field (-1: a blob v2 descriptor's child) has no parent id
        # either, as pylance writes it.
        unparented = field.parent_id == -1 or copy.id == -1
        copy.parent_id = -1 if unparented else ids[field.parent_id]
        out.append(copy)
    return out


def stored_type(dtype: pa.DataType) -> pa.DataType:
    """``dtype`` as a Lance schema keeps it: a fixed-size list's items live in its
    logical type string, so their name (``item``) and nullability (nullable) are not
    the data's own."""
    if pa.types.is_fixed_size_list(dtype):
        item = dtype.value_field
        return pa.list_(
            item.with_type(stored_type(item.type)).with_name("item").with_nullable(True),
            dtype.list_size,
        )
    children = list(_child_fields(dtype))
    if not children:
        return dtype
    kept = [child.with_type(stored_type(child.type)) for child in children]
    if pa.types.is_map(dtype):
        return _map_type(kept[0].type, dtype.field(0).name)
    if pa.types.is_struct(dtype):
        return pa.struct(kept)
    return pa.large_list(kept[0]) if pa.types.is_large_list(dtype) else pa.list_(kept[0])


def _child_fields(dtype: pa.DataType) -> Iterator[pa.Field]:
    if pa.types.is_struct(dtype):
        yield from (dtype.field(i) for i in range(dtype.num_fields))
    elif pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        yield dtype.value_field
    elif pa.types.is_map(dtype):
        yield dtype.field(0)  # its entries: a non-null struct of the key and the value


def is_list_like(dtype: pa.DataType) -> bool:
    """Lists, large lists and maps: a map is stored as a list of its entries."""
    # By type id: schema walks ask it of every field several times.
    return dtype.id in _LIST_LIKE_IDS


_LIST_LIKE_IDS = frozenset(
    t.id for t in (pa.list_(pa.int8()), pa.large_list(pa.int8()), pa.map_(pa.int8(), pa.int8()))
)


def item_field(dtype: pa.DataType) -> pa.Field:
    """A list's item field; a map's entries (a non-null struct of key and value)."""
    field: pa.Field = dtype.field(0) if pa.types.is_map(dtype) else dtype.value_field
    return field


def map_column(schema: pa.Schema) -> str | None:
    """The dotted path of a map field in ``schema`` (None: it holds none)."""
    for field in schema:
        found = _map_path(field.type, field.name)
        if found is not None:
            return found
    return None


def _map_path(dtype: pa.DataType, name: str) -> str | None:
    """The dotted path of a map at or below ``name`` (of type ``dtype``)."""
    if pa.types.is_map(dtype):
        return name
    for child in _child_fields(dtype):
        found = _map_path(child.type, f"{name}.{child.name}")
        if found is not None:
            return found
    if pa.types.is_fixed_size_list(dtype):
        return _map_path(dtype.value_type, f"{name}.{dtype.value_field.name}")
    return None


def from_lance_fields(
    fields: Iterable[file_pb2.Field],
    metadata: Mapping[str, bytes] | None = None,
    json_text: bool = True,
) -> pa.Schema:
    """Rebuild the Arrow schema from a pre-order list of Lance fields (JSON columns
    as ``arrow.json`` text with ``json_text``, else as the JSONB stored)."""
    fields = list(fields)
    children: dict[int, list[file_pb2.Field]] = {}
    ids = {f.id for f in fields}
    owner: file_pb2.Field | None = None
    for f in fields:
        if f.parent_id != -1 and f.parent_id not in ids:
            raise SchemaError(
                f"field {f.name!r} names a parent id {f.parent_id} that does not exist"
            )
        if f.id == -1 and owner is not None:
            # pylance 14 writes a blob v2 column's descriptor struct with unnumbered
            # children right after it, in pre-order.
            children.setdefault(owner.id, []).append(f)
            continue
        owner = f if f.id >= 0 and _is_blob_v2_descriptor(f) else None
        if f.id == -1:
            raise SchemaError(f"field {f.name!r} has no field id")
        children.setdefault(f.parent_id, []).append(f)
    top = [_to_arrow_field(f, children, depth=0) for f in children.get(-1, [])]
    schema_meta = {k.encode(): v for k, v in (metadata or {}).items()}
    return extensions.logical_schema(pa.schema(top, metadata=schema_meta or None), json_text)


def _is_blob_v2_descriptor(field: file_pb2.Field) -> bool:
    return field.logical_type == "struct" and "lance-encoding:blob" in field.metadata


def _to_arrow_field(
    field: file_pb2.Field, children: dict[int, list[file_pb2.Field]], depth: int
) -> pa.Field:
    if depth > 64:
        raise SchemaError(f"field {field.name!r}: schema nesting is deeper than 64 levels")
    below = children.get(field.id, []) if field.id >= 0 else []
    kids = [_to_arrow_field(c, children, depth + 1) for c in below]
    name = field.logical_type
    if name == "struct":
        dtype: pa.DataType = pa.struct(kids)
    elif name == "map":
        if len(kids) != 1:
            raise SchemaError(f"map field {field.name!r} has {len(kids)} children, expected 1")
        dtype = _map_type(kids[0].type, field.name)
    elif name.split(".")[0] in ("list", "large_list"):
        if len(kids) != 1:
            raise SchemaError(f"list field {field.name!r} has {len(kids)} children, expected 1")
        dtype = pa.list_(kids[0]) if name.startswith("list") else pa.large_list(kids[0])
    else:
        dtype = parse_logical_type(name, field.name)
    meta = {k.encode(): v for k, v in field.metadata.items()} if field.metadata else {}
    if field.extension_name and extensions.NAME_KEY not in meta:
        meta[extensions.NAME_KEY] = field.extension_name.encode()
        meta[extensions.METADATA_KEY] = b""
    if pa.types.is_null(dtype) and not field.nullable:
        raise SchemaError(f"field {field.name!r}: a null-typed field must be nullable")
    return pa.field(field.name, dtype, nullable=field.nullable, metadata=meta or None)
