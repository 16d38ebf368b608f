"""``schema_to_json`` / ``json_to_schema`` against pylance's, on the same schemas."""

from __future__ import annotations

import json
from typing import Any

import lance
import lance.schema
import pyarrow as pa
import pytest

import lancelet as ll
import lancelet.schema

ITEM = pa.struct([("x", pa.int8()), ("y", pa.string())])

TYPES = [
    pa.null(),
    pa.bool_(),
    *(pa.int8(), pa.uint8(), pa.int16(), pa.uint16()),
    *(pa.int32(), pa.uint32(), pa.int64(), pa.uint64()),
    *(pa.float16(), pa.float32(), pa.float64()),
    *(pa.string(), pa.large_string(), pa.binary(), pa.large_binary(), pa.binary(5)),
    *(pa.date32(), pa.date64(), pa.time32("s"), pa.time32("ms")),
    *(pa.time64("us"), pa.time64("ns"), pa.duration("s"), pa.duration("ns")),
    *(pa.timestamp("s"), pa.timestamp("ns"), pa.timestamp("us", "UTC")),
    pa.timestamp("ms", "America/New_York"),
    *(pa.decimal128(10, 2), pa.decimal256(40, 3)),
    *(pa.list_(pa.int32()), pa.large_list(pa.string()), pa.list_(pa.float32(), 4)),
    pa.list_(pa.field("x", pa.int8(), nullable=False, metadata={"m": "1"})),
    *(pa.list_(ITEM), pa.large_list(ITEM), pa.list_(ITEM, 2)),
    pa.list_(pa.list_(pa.int8()), 3),
    *(ITEM, pa.struct([]), pa.struct([("inner", ITEM), ("l", pa.list_(ITEM))])),
    *(pa.dictionary(pa.int32(), pa.string()), pa.dictionary(pa.int8(), pa.int64())),
]


def _schema(dtype: pa.DataType) -> pa.Schema:
    return pa.schema(
        [
            pa.field("f", dtype),
            pa.field("required", pa.int64(), nullable=False, metadata={"k": "v", "é": "ü"}),
        ],
        metadata={"schema": "meta"},
    )


def test_exported_where_pylance_has_them() -> None:
    assert ll.schema_to_json is lancelet.schema.schema_to_json
    assert ll.json_to_schema is lancelet.schema.json_to_schema
    assert lance.schema_to_json is lance.schema.schema_to_json


@pytest.mark.parametrize("dtype", TYPES, ids=str)
def test_schema_to_json_matches_pylance(dtype: pa.DataType) -> None:
    schema = _schema(dtype)
    assert ll.schema_to_json(schema) == lance.schema_to_json(schema)
    # Without field metadata (whose order pylance leaves to a hash map), the same
    # document down to its key order once serialised.
    bare = pa.schema([pa.field("f", dtype), pa.field("g", pa.int8(), nullable=False)])
    assert json.dumps(ll.schema_to_json(bare)) == json.dumps(lance.schema_to_json(bare))


@pytest.mark.parametrize("dtype", TYPES, ids=str)
def test_json_to_schema_matches_pylance(dtype: pa.DataType) -> None:
    doc = lance.schema_to_json(_schema(dtype))
    ours = ll.json_to_schema(doc)
    theirs = lance.json_to_schema(doc)
    assert ours.equals(theirs, check_metadata=True)


def test_without_metadata() -> None:
    schema = pa.schema([pa.field("a", pa.int8())])
    assert ll.schema_to_json(schema) == lance.schema_to_json(schema)
    assert ll.schema_to_json(pa.schema([])) == lance.schema_to_json(pa.schema([])) == {"fields": []}
    doc = lance.schema_to_json(schema)
    assert ll.json_to_schema(doc).equals(lance.json_to_schema(doc), check_metadata=True)


def test_ordered_dictionary_loses_its_order_as_in_pylance() -> None:
    schema = pa.schema([pa.field("d", pa.dictionary(pa.int8(), pa.string(), ordered=True))])
    doc = ll.schema_to_json(schema)
    assert doc == lance.schema_to_json(schema)
    assert ll.json_to_schema(doc).equals(lance.json_to_schema(doc))


@pytest.mark.parametrize(
    "dtype",
    [pa.map_(pa.string(), pa.int32()), pa.string_view(), pa.month_day_nano_interval()],
    ids=str,
)
def test_types_pylance_cannot_describe_are_refused(dtype: pa.DataType) -> None:
    schema = pa.schema([pa.field("f", dtype)])
    with pytest.raises(ValueError):
        lance.schema_to_json(schema)
    with pytest.raises(ValueError):
        ll.schema_to_json(schema)


def _field(dtype: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"schema": {"fields": [{"name": "a", "type": dtype, "nullable": True, **extra}]}}


BAD_DOCUMENTS = [
    {"schema": {}},
    {"schema": {"fields": [{"name": "a", "type": {"type": "int8"}}]}},
    _field({"type": "bogus"}),
    _field({"type": "json"}),
    _field({"type": "fixed_size_binary"}),
    _field({"type": "fixed_size_binary:3"}),
    _field({"type": "fixed_size_list:int8:3"}),
    _field({"type": "large_list.struct", "fields": []}),
    _field({"type": "list"}),
    _field({"type": "struct"}),
    _field(
        {
            "type": "fixed_size_list",
            "fields": [{"name": "i", "type": {"type": "int8"}, "nullable": True}],
        }
    ),
    _field({"type": "decimal:64:5:2"}),
]


@pytest.mark.parametrize("doc", BAD_DOCUMENTS, ids=lambda d: json.dumps(d)[:60])
def test_documents_pylance_refuses_are_refused(doc: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        lance.json_to_schema(doc["schema"])
    with pytest.raises(ValueError):
        ll.json_to_schema(doc["schema"])


def test_unknown_keys_are_ignored_as_in_pylance() -> None:
    doc = _field({"type": "int8", "length": 4}, comment="x")["schema"]
    assert ll.json_to_schema(doc).equals(lance.json_to_schema(doc))


def test_not_a_schema() -> None:
    with pytest.raises(TypeError):
        ll.schema_to_json({"fields": []})  # type: ignore[arg-type]
