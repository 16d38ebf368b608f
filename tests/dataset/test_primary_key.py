"""The unenforced primary key an Arrow schema's field metadata marks, against pylance:
the manifest fields each library writes (flag, field 12; position, field 13), the key
each reads from the other's dataset, the schemas both refuse, and what appends,
overwrites, added and altered columns and field metadata updates do to the key."""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import lance
import lance.debug
import lance.file
import lance.schema
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lancelet as ll
import lancelet.debug
import lancelet.file
import lancelet.schema
from lancelet._proto import file_pb2, table_pb2
from tests.storage import list_names, read_file
from tests.versions import STORAGE_VERSION

K = "lance-schema:unenforced-primary-key"
P = K + ":position"
LIBRARIES = {"pylance": lance, "lancelet": ll}
FieldFacts = tuple[str, bool, int, dict[str, bytes]]


# -- reading what was written -------------------------------------------------------------


def _manifest(uri: Path) -> table_pb2.Manifest:
    """The latest manifest of a dataset, decoded from its file (length-prefixed protobuf
    at the offset its 16-byte footer gives)."""
    latest = None
    for name in list_names(uri / "_versions"):
        if not name.endswith(".manifest"):
            continue
        data = read_file(uri / "_versions" / name)
        (offset,) = struct.unpack("<Q", data[-16:-8])
        (length,) = struct.unpack("<I", data[offset : offset + 4])
        manifest = table_pb2.Manifest.FromString(data[offset + 4 : offset + 4 + length])
        if latest is None or manifest.version > latest.version:
            latest = manifest
    assert latest is not None
    return latest


def _facts(fields: Any) -> list[FieldFacts]:
    return [
        (f.name, f.unenforced_primary_key, f.unenforced_primary_key_position, dict(f.metadata))
        for f in fields
    ]


def _key(module: ModuleType, uri: Path) -> list[tuple[str, int | None]]:
    """The key ``module`` reads: (name, position) in key order."""
    fields = module.dataset(uri).lance_schema.unenforced_primary_key()
    return [(f.name(), f.unenforced_primary_key_position()) for f in fields]


def _outcome(call: Callable[[], Any]) -> Exception | None:
    try:
        call()
    except Exception as exc:
        return exc
    return None


def _agree(ours: Exception | None, theirs: Exception | None) -> None:
    """Both succeeded, or lancelet raised what pylance did: an instance of pylance's
    class, with the words before the field of pylance's message about a key."""
    if theirs is None or ours is None:
        assert ours is None and theirs is None, (ours, theirs)
        return
    assert isinstance(ours, type(theirs)), (ours, theirs)
    phrase = next((p for p in _KEY_ERRORS if p in str(theirs)), None)
    assert phrase is None or phrase in str(ours), (ours, theirs)


_KEY_ERRORS = (
    "Primary key column must be a leaf",
    "Primary key column and all its ancestors must not be nullable",
    "Primary key column must not be in a list type",
    "Primary key column must not be in a map type",
    "reserved key and cannot be changed once set",
    "reserved key and cannot be set to an invalid value",
)


def _write_both(tmp_path: Path, schema: pa.Schema, **kwargs: Any) -> dict[str, Exception | None]:
    kwargs.setdefault("data_storage_version", STORAGE_VERSION)
    table = _rows(schema)
    return {
        name: _outcome(lambda m=module, u=tmp_path / name: m.write_dataset(table, u, **kwargs))
        for name, module in LIBRARIES.items()
    }


def _rows(schema: pa.Schema, n: int = 2) -> pa.Table:
    """``n`` rows of ``schema`` without nulls (so non-nullable fields take them)."""
    columns = [pa.array([_value(f.type, i) for i in range(n)], f.type) for f in schema]
    return pa.Table.from_arrays(columns, schema=schema)


def _value(dtype: pa.DataType, i: int) -> Any:
    if pa.types.is_struct(dtype):
        return {f.name: _value(f.type, i) for f in dtype}
    if pa.types.is_list(dtype):
        return [_value(dtype.value_type, i)]
    if pa.types.is_map(dtype):
        return [(_value(dtype.key_type, i), _value(dtype.item_type, i))]
    if pa.types.is_large_binary(dtype):
        return b"%d" % i
    text = pa.types.is_string(dtype) or isinstance(dtype, pa.BaseExtensionType)  # JSON: "0"
    return str(i) if text else i


def _same_key_both_ways(tmp_path: Path) -> None:
    """Both libraries wrote the same manifest fields, and each reads the other's key."""
    theirs, ours = tmp_path / "pylance", tmp_path / "lancelet"
    want = _key(lance, theirs)
    assert _key(lance, ours) == want
    assert _key(ll, theirs) == want
    assert _key(ll, ours) == want
    assert _facts(_manifest(ours).fields) == _facts(_manifest(theirs).fields)


# -- random key markings --------------------------------------------------------------------

FLAGS = ["true", "True", "TRUE", "1", "yes", "Y", "on", "ON", "tRuE"]
NOT_FLAGS = ["false", "FALSE", "0", "", "no", "No", "off", "t", "2", "01", " true", "yes "]
# Positions of 2**31 and above come first in pylance's key order.
POSITIONS = ["0", "1", "2", "3", "+2", "02", "+0", "2147483648", "4294967295"]
NOT_POSITIONS = ["-1", "-0", "x", "", " 2", "2 ", "1.0", "+", "4294967296", "\u0663"]


@st.composite
def _marks(draw: st.DrawFn) -> dict[str, str] | None:
    meta: dict[str, str] = {}
    if draw(st.booleans()):
        meta[K] = draw(st.sampled_from(FLAGS + NOT_FLAGS) | st.text(max_size=4))
    if draw(st.integers(0, 2)) == 0:
        meta[P] = draw(st.sampled_from(POSITIONS + NOT_POSITIONS))
    return meta or None


def _fields(depth: int) -> st.SearchStrategy[list[pa.Field]]:
    return st.lists(_field(depth), min_size=1, max_size=3).map(
        lambda fields: [f.with_name(f"{f.name}{i}") for i, f in enumerate(fields)]
    )


@st.composite
def _field(draw: st.DrawFn, depth: int) -> pa.Field:
    kinds = ["int", "string"] + (["struct", "list", "map"] if depth < 2 else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "struct":
        dtype: pa.DataType = pa.struct(draw(_fields(depth + 1)))
    elif kind == "list":
        item = draw(_field(depth + 1)).with_name("item")
        dtype = pa.list_(item)
    elif kind == "map":
        dtype = pa.map_(pa.field("key", pa.string(), False, draw(_marks())), pa.int64())
    else:
        dtype = pa.int64() if kind == "int" else pa.string()
    nullable = draw(st.integers(0, 4)) == 0
    # Marks on structs, lists and maps are refused; most examples should write.
    marked = kind in ("int", "string") or draw(st.integers(0, 5)) == 0
    return pa.field(kind[0], dtype, nullable, metadata=draw(_marks()) if marked else None)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(fields=_fields(0))
def test_random_markings_agree_with_pylance(tmp_path_factory: Any, fields: list[pa.Field]) -> None:
    tmp_path = tmp_path_factory.mktemp("keys")
    schema = pa.schema(fields)
    outcomes = _write_both(tmp_path, schema)
    _agree(outcomes["lancelet"], outcomes["pylance"])
    if outcomes["pylance"] is None:
        _same_key_both_ways(tmp_path)
    # pylance's LanceSchema.from_pyarrow converts the same way (a ValueError if not).
    views: dict[str, Any] = {}
    for name, module in LIBRARIES.items():
        made = _outcome(lambda m=module: m.schema.LanceSchema.from_pyarrow(schema))
        views[name] = made
        if made is None:
            keys = module.schema.LanceSchema.from_pyarrow(schema).unenforced_primary_key()
            views[name] = [(f.name(), f.unenforced_primary_key_position()) for f in keys]
    if isinstance(views["pylance"], list):
        assert views["lancelet"] == views["pylance"]
    else:
        _agree(views["lancelet"], views["pylance"])


# -- chosen schemas ---------------------------------------------------------------------------


def _int(name: str, meta: dict[str, str] | None = None, nullable: bool = False) -> pa.Field:
    return pa.field(name, pa.int64(), nullable, metadata=meta)


def _struct(name: str, children: list[pa.Field], nullable: bool = False) -> pa.Field:
    return pa.field(name, pa.struct(children), nullable)


KEY = {K: "true"}


def _at(position: int | str) -> dict[str, str]:
    return {P: str(position)}


SCHEMAS = {
    "positions first, ties in schema order": pa.schema(
        [_int("a", _at(2)), _int("b", _at(2)), _int("c", KEY), _int("d", _at(1)), _int("e", _at(0))]
    ),
    "big positions": pa.schema(
        [_int("a", _at(2**32 - 1)), _int("b", _at(2**31)), _int("c", _at(1)), _int("d", KEY)]
    ),
    "bad position, flag set": pa.schema([_int("a", {K: "true", P: "x"}), _int("b", _at("+3"))]),
    "position wins over a false flag": pa.schema([_int("a", {K: "false", P: "1"})]),
    "nested key": pa.schema([_struct("s", [_int("x", KEY), _int("y", _at(1))]), _int("z", _at(2))]),
    "json key": pa.schema([pa.field("j", pa.json_(), False, metadata=KEY)]),
    "nullable key": pa.schema([_int("a"), _int("b", KEY, nullable=True)]),
    "nullable struct above": pa.schema([_struct("s", [_int("x", KEY)], nullable=True)]),
    "key is a struct": pa.schema([pa.field("s", pa.struct([_int("x")]), False, metadata=KEY)]),
    "key is a list": pa.schema([pa.field("l", pa.list_(pa.int64()), False, metadata=KEY)]),
    "key in a list": pa.schema(
        [pa.field("l", pa.list_(pa.field("item", pa.int64(), False, metadata=KEY)), False)]
    ),
    "key in a map": pa.schema(
        [pa.field("m", pa.map_(pa.field("key", pa.string(), False, KEY), pa.int64()), False)]
    ),
    # The first bad field in key order is the one named.
    "two bad keys": pa.schema([_int("b", KEY, nullable=True), _int("a", _at(1), nullable=True)]),
}


@pytest.mark.parametrize("schema", SCHEMAS.values(), ids=SCHEMAS.keys())
def test_chosen_schemas_agree_with_pylance(tmp_path: Path, schema: pa.Schema) -> None:
    outcomes = _write_both(tmp_path, schema)
    _agree(outcomes["lancelet"], outcomes["pylance"])
    if outcomes["pylance"] is None:
        _same_key_both_ways(tmp_path)


def test_errors_name_the_field(tmp_path: Path) -> None:
    schema = SCHEMAS["two bad keys"]
    with pytest.raises(ll.errors.PrimaryKeyError, match="must not be nullable: 'a'"):
        ll.write_dataset(_rows(schema), tmp_path / "l")
    with pytest.raises(OSError, match="name=a"):
        lance.write_dataset(_rows(schema), tmp_path / "p")
    nested = SCHEMAS["nullable struct above"]
    with pytest.raises(ll.errors.PrimaryKeyError, match=r"'s' \(above key column 's.x'\)"):
        ll.write_dataset(_rows(nested), tmp_path / "l")


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_blob_key(tmp_path: Path, version: str) -> None:
    # A blob column is a leaf up to 2.1; from 2.2 it is a struct, which no key may be.
    meta = {**KEY, "lance-encoding:blob": "true"}
    schema = pa.schema([pa.field("b", pa.large_binary(), False, metadata=meta)])
    outcomes = _write_both(tmp_path, schema, data_storage_version=version)
    if version == "2.0":  # lancelet writes blob columns from 2.1 on
        assert isinstance(outcomes["lancelet"], ll.errors.UnsupportedFeatureError)
        return
    _agree(outcomes["lancelet"], outcomes["pylance"])
    if outcomes["pylance"] is None:
        _same_key_both_ways(tmp_path)


def test_data_files_carry_the_key(tmp_path: Path) -> None:
    schema = SCHEMAS["positions first, ties in schema order"]
    for name, module in LIBRARIES.items():
        module.write_dataset(_rows(schema), tmp_path / name, data_storage_version=STORAGE_VERSION)
    files = {
        name: _file_fields(tmp_path / name / "data" / list_names(tmp_path / name / "data")[0])
        for name in LIBRARIES
    }
    assert _facts(files["lancelet"]) == _facts(files["pylance"])
    assert any(f.unenforced_primary_key_position for f in files["pylance"])


def _file_fields(path: Path) -> list[file_pb2.Field]:
    """The schema fields of a Lance 2.x file: global buffer 0 holds its descriptor."""
    data = read_file(path)
    _, _, gbo_start, num_global, *_ = struct.unpack("<QQQIIHH4s", data[-40:])
    (offset, size) = struct.unpack("<QQ", data[gbo_start : gbo_start + 16])
    assert num_global >= 1
    descriptor = file_pb2.FileDescriptor.FromString(data[offset : offset + size])
    return list(descriptor.schema.fields)


def test_file_writer_refuses_a_bad_key_as_pylance(tmp_path: Path) -> None:
    schema = SCHEMAS["nullable key"]
    for module in (lance, ll):
        with pytest.raises(RuntimeError, match="must not be nullable"):
            writer = module.file.LanceFileWriter(str(tmp_path / f"{module.__name__}.lance"), schema)
            writer.write_batch(_rows(schema))
            writer.close()


_POSITION_TEXT = re.compile(r"unenforced_primary_key_position: (None|Some\(\s*\d+,\s*\))")


def test_debug_text_shows_key_positions(tmp_path: Path) -> None:
    schema = SCHEMAS["positions first, ties in schema order"]
    shown = {}
    for name, module in LIBRARIES.items():
        module.write_dataset(_rows(schema), tmp_path / name)
        text = module.debug.format_schema(module.dataset(tmp_path / name))
        shown[name] = _POSITION_TEXT.findall(text)
    assert shown["lancelet"] == shown["pylance"]
    assert len(shown["pylance"]) == len(schema)
