"""Arrow extension types in datasets: written by either library, read by both.

pylance (``import lance``) is the oracle for what is stored and how it reads back;
expected values are the inputs themselves (or, for JSON text, Python's own JSON
printing of the parsed input).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import lance
import lance.arrow as pylance_arrow
import numpy as np
import pyarrow as pa
import pytest

import lancelet as ll
import lancelet.arrow as la
from lancelet.errors import InvalidJSONError
from lancelet.file import jsonb

VERSIONS = ["2.0", "2.2"]
JSON_DOCS = ['{"b": 1, "a": [true, null, "x"]}', None, "[1, -2, 300, 70000]", '"s"', "{}"]


def _table() -> pa.Table:
    tensors = pa.FixedShapeTensorArray.from_numpy_ndarray(
        np.arange(12, dtype=np.float32).reshape(3, 2, 2)
    )
    uuids = pa.array([bytes(range(i, i + 16)) for i in range(3)], pa.binary(16))
    bf16 = la.bfloat16_array([1.5, None, -2.0])
    return pa.table(
        {
            "uuid": pa.ExtensionArray.from_storage(pa.uuid(), uuids),
            "tensor": tensors,
            "bf16": bf16,
            "bf16_vec": pa.FixedSizeListArray.from_arrays(la.bfloat16_array([1.0] * 6), 2),
            "bf16_list": pa.ListArray.from_arrays([0, 1, 1, 3], la.bfloat16_array([1, 2, 3])),
            "uri": la.ImageURIArray.from_uris(["a.png", "b.png", "c.png"]),
            "encoded": la.ImageArray.from_array(pa.array([b"\x89PNG", b"", b"x"])),
            "json": pa.array(JSON_DOCS[:3], pa.json_()),
            "nested": pa.StructArray.from_arrays([pa.array(JSON_DOCS[2:], pa.json_())], ["j"]),
        }
    )


def _comparable(table: pa.Table) -> dict[str, Any]:
    """Type names and storage values: the two libraries' Python classes differ."""
    out: dict[str, Any] = {}
    for field, column in zip(table.schema, table.columns, strict=True):
        array = column.combine_chunks()
        out[field.name] = (
            str(field.type).replace("lance.bfloat16<BFloat16Type>", "bf16"),
            _storage(array),
        )
    return out


def _storage(array: pa.Array) -> Any:
    if isinstance(array.type, pa.BaseExtensionType):
        return _storage(array.storage)
    if pa.types.is_struct(array.type):
        return [_storage(array.field(i)) for i in range(array.type.num_fields)]
    if pa.types.is_list(array.type) or pa.types.is_fixed_size_list(array.type):
        return (array.is_null().to_pylist(), _storage(array.flatten()))
    return array.to_pylist()


def _compact(doc: str | None) -> str | None:
    if doc is None:
        return None
    return json.dumps(json.loads(doc), sort_keys=True, separators=(",", ":"))


def _expected(table: pa.Table) -> dict[str, Any]:
    out = _comparable(table)
    docs = table["json"].combine_chunks().storage.to_pylist()
    out["json"] = (out["json"][0], [_compact(d) for d in docs])
    nested = table["nested"].combine_chunks().field(0).storage.to_pylist()
    out["nested"] = (out["nested"][0], [[_compact(d) for d in nested]])
    return out


@pytest.mark.parametrize("version", VERSIONS)
def test_lancelet_writes_pylance_reads(tmp_path: Path, version: str) -> None:
    table = _table()
    uri = str(tmp_path / "ds")
    ll.write_dataset(table, uri, data_storage_version=version)
    read = lance.dataset(uri)
    assert _comparable(read.to_table()) == _expected(table)
    assert _comparable(read.take([2, 0])) == _expected(table.take([2, 0]))


@pytest.mark.parametrize("version", VERSIONS)
def test_pylance_writes_lancelet_reads(tmp_path: Path, version: str) -> None:
    table = _table()
    uri = str(tmp_path / "ds")
    lance.write_dataset(table, uri, data_storage_version=version)
    read = ll.dataset(uri)
    assert str(read.schema) == str(lance.dataset(uri).schema)
    assert _comparable(read.to_table()) == _expected(table)
    assert _comparable(read.take([2, 0])) == _expected(table.take([2, 0]))
    # Appending with lancelet to pylance's dataset keeps the types.
    ll.write_dataset(table, uri, mode="append")
    both = lance.dataset(uri).to_table()
    assert _comparable(both) == _expected(pa.concat_tables([table, table]))


def test_schema_and_types_match_pylance(tmp_path: Path) -> None:
    table = _table()
    ll.write_dataset(table, str(tmp_path / "a"))
    lance.write_dataset(table, str(tmp_path / "b"))
    ours = ll.dataset(str(tmp_path / "a")).schema
    assert ours == table.schema
    assert str(ours) == str(lance.dataset(str(tmp_path / "b")).schema)


def test_json_text_matches_pylance(tmp_path: Path) -> None:
    docs = [
        '{"z": 1, "B": 2, "a": {"y": [1.5, -0.0, 1e-5, 1e-7, 2.5e16, 1e15]}}',
        '"tab\\t nl\\n quote\\" slash\\/ \\u0001 é 😀"',
        "[0, -1, 255, 256, -129, 4294967296, 18446744073709551615, -9223372036854775808]",
        "123456789012345678901234567890",
        "[null, true, false, {}, []]",
        "[NaN, Infinity, -Infinity, 1e400]",
    ]
    table = pa.table({"j": pa.array(docs, pa.json_())})
    lance.write_dataset(table, str(tmp_path / "p"))
    ll.write_dataset(table, str(tmp_path / "l"))
    expected = lance.dataset(str(tmp_path / "p")).to_table()["j"].to_pylist()
    assert ll.dataset(str(tmp_path / "p")).to_table()["j"].to_pylist() == expected
    assert lance.dataset(str(tmp_path / "l")).to_table()["j"].to_pylist() == expected
    assert ll.dataset(str(tmp_path / "l")).to_table()["j"].to_pylist() == expected


@pytest.mark.parametrize("doc", ["{", '{"a": 1, "a": 2}', "tru", '{"a": 1,}'])
def test_invalid_json_is_refused_like_pylance(tmp_path: Path, doc: str) -> None:
    table = pa.table({"j": pa.array([doc], pa.json_())})
    with pytest.raises(OSError):
        lance.write_dataset(table, str(tmp_path / "p"))
    with pytest.raises(InvalidJSONError):
        ll.write_dataset(table, str(tmp_path / "l"))


def test_bfloat16_rounding_and_printing_match_pylance() -> None:
    rng = np.random.default_rng(7)
    values = rng.standard_normal(5000) * 10.0 ** rng.integers(-40, 39, 5000)
    values = np.concatenate([values, [0.0, -0.0, np.inf, -np.inf, 3.4e38, 1e-45, 1.00390625]])
    ours = la.bfloat16_array(list(values))
    theirs = pylance_arrow.bfloat16_array(list(values))
    assert ours.storage.to_pylist() == theirs.storage.to_pylist()
    assert [str(v) for v in ours.to_pylist()[:500]] == [str(v) for v in theirs.to_pylist()[:500]]
    assert str(la.BFloat16(1.124565)) == "1.125"


def test_cast_between_floats_and_bfloat16() -> None:
    floats = pa.array([1.0, 2.5, None, -3.0], pa.float32())
    bf16 = la.cast(floats, "bf16")
    assert isinstance(bf16, la.BFloat16Array)
    assert (
        bf16.storage.to_pylist()
        == pylance_arrow.bfloat16_array([1.0, 2.5, None, -3.0]).storage.to_pylist()
    )
    assert la.cast(bf16, pa.float64()) == floats.cast(pa.float64())
    vectors = pa.FixedSizeListArray.from_arrays(pa.array([1.0, 2.0, 3.0, 4.0]), 2)
    as_bf16 = la.cast(vectors, pa.list_(la.BFloat16Type(), 2))
    assert la.cast(as_bf16, vectors.type) == vectors
    with pytest.raises(ValueError, match="floating"):
        la.cast(pa.array([1, 2]), "bfloat16")


def test_image_arrays_pick_their_type() -> None:
    uris = la.ImageArray.from_array(["a.png", "b.png"])
    assert isinstance(uris, la.ImageURIArray)
    assert isinstance(la.ImageArray.from_array(pa.array([b"x"])), la.EncodedImageArray)
    pixels = pa.FixedShapeTensorArray.from_numpy_ndarray(np.zeros((2, 1, 1, 3), np.uint8))
    tensor = la.ImageArray.from_array(pixels)
    assert isinstance(tensor, la.FixedShapeImageTensorArray)
    assert tensor.to_numpy().shape == (2, 1, 1, 3)
    with pytest.raises(TypeError):
        la.ImageArray.from_array(3)


@pytest.mark.parametrize("doc", ["", "[1,]", "'a'", "01"])
def test_json_pylance_takes_but_lancelet_refuses(tmp_path: Path, doc: str) -> None:
    """Lance's parser is laxer than JSON; lancelet refuses rather than guess what it
    would store."""
    table = pa.table({"j": pa.array([doc], pa.json_())})
    lance.write_dataset(table, str(tmp_path / "p"))
    with pytest.raises(InvalidJSONError):
        ll.write_dataset(table, str(tmp_path / "l"))


def test_schema_json_matches_pylance() -> None:
    schema = pa.schema(
        [
            pa.field("u", pa.uuid()),
            pa.field("j", pa.json_()),
            pa.field("b", la.BFloat16Type()),
            pa.field("t", pa.fixed_shape_tensor(pa.float32(), [2, 2], dim_names=["x", "y"])),
            pa.field("v", pa.list_(la.BFloat16Type(), 2)),
        ]
    )
    described = ll.schema_to_json(schema)
    assert described == lance.schema_to_json(schema)
    assert ll.json_to_schema(described) == schema


@pytest.mark.local_files("pylance's file reader opens the data file by path")
def test_file_reader_returns_jsonb_like_pylance(tmp_path: Path) -> None:
    table = pa.table({"j": pa.array(['{"b": 1, "a": [2]}', None], pa.json_())})
    path = str(tmp_path / "f.lance")
    writer = ll.file.LanceFileWriter(path)
    writer.write_batch(table)
    writer.close()
    theirs = lance.file.LanceFileReader(path).read_all().to_table()
    ours = ll.file.LanceFileReader(path).read_all().to_table()
    assert ours.schema.equals(theirs.schema, check_metadata=True)
    assert ours.column("j").to_pylist() == theirs.column("j").to_pylist()


def _json_batch(count: int) -> list[str | None]:
    """Documents of every kind: records, integers of each width and beyond 64 bits,
    decimals hard to round, escapes and non-ASCII text, keys to sort, odd spacing."""
    rng = random.Random(31)
    widths = [
        s * (1 << b) + d
        for b in (7, 8, 15, 16, 31, 32, 63, 64, 80)
        for s in (1, -1)
        for d in (-1, 0, 1)
    ]
    # Key text as it stands between the quotes: escapes unescaped by the parser.
    words = ["", "a", "é", r"\u00e8", "😀", r"\ud83d\ude01", r"\n\t\"\\\/\b\f\r", r"\u0000", "Z"]
    docs: list[str | None] = [None]
    for i in range(count):
        record = {
            "id": i,
            "name": f"user{i}",
            "score": rng.random() * 100,
            "tags": ["a", "b", str(i % 7)],
            "active": i % 2 == 0,
            "nested": {"x": i * 3, "y": None, "z": [1.5, -2, 3e20]},
            "n": rng.choice(widths),
            "é": rng.choice(
                [float("nan"), float("inf"), -0.0, 1e-320, 2.0 ** rng.randint(-1074, 1023)]
            ),
        }
        indent = rng.choice([None, 1, "\t"])
        docs.append(json.dumps(record, indent=indent, ensure_ascii=rng.random() < 0.5))
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 40)))
        fraction = "".join(rng.choice("0123456789") for _ in range(rng.randint(0, 20)))
        number = (digits.lstrip("0") or "0") + (f".{fraction}" if fraction else "")
        number += rng.choice(["", f"e{rng.randint(-340, 320)}", f"E+{rng.randint(0, 30)}"])
        keys = rng.sample(words, rng.randint(0, 5))
        pairs = ", ".join(f'"{k}" :{rng.choice(["", " ", chr(10)])}{number}' for k in keys)
        docs.append(f" [ {number}, -{number}, {{{pairs}}}, NaN, -Infinity, 1e400 ] ")
    return docs


@pytest.mark.local_files("pylance's file writer writes the data file by path")
def test_compiled_jsonb_matches_pylance_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch of documents: the compiled encoder's JSONB is the bytes pylance stores
    (read raw off pylance's file), and the reference's too."""
    monkeypatch.setenv("LANCELET_JIT", "1")
    texts = pa.array(_json_batch(400), pa.string())
    path = str(tmp_path / "p.lance")
    writer = lance.file.LanceFileWriter(path)
    writer.write_batch(pa.table({"j": pa.ExtensionArray.from_storage(pa.json_(), texts)}))
    writer.close()
    theirs = ll.file.LanceFileReader(path).read_all().to_table().column("j").to_pylist()
    compiled = jsonb._encode_compiled(texts)
    assert compiled is not None
    assert compiled.to_pylist() == theirs
    assert jsonb.encode_column(texts).to_pylist() == theirs
    assert [None if t is None else jsonb.encode(t) for t in texts.to_pylist()] == theirs


def test_rewrites_keep_extension_columns(tmp_path: Path) -> None:
    table = _table().append_column("id", pa.array([0, 1, 2]))
    uri = str(tmp_path / "ds")
    ds = ll.write_dataset(table, uri)
    ds.delete("id = 1")
    ds.update({"id": "id + 10"}, where="id = 2")
    ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(
        table.slice(0, 1)
    )
    ds.optimize.compact_files()
    expected = pa.concat_tables([table.slice(0, 1), table.slice(2, 1)])
    expected = expected.set_column(9, "id", pa.array([0, 12]))
    read = lance.dataset(uri).to_table().sort_by("id")
    assert _comparable(read) == _expected(expected)
    assert _comparable(ll.dataset(uri).to_table().sort_by("id")) == _expected(expected)


@pytest.mark.parametrize("builder", ["lancelet", "pylance"])
def test_index_on_uuid_holds_its_storage(tmp_path: Path, builder: str) -> None:
    keys = [bytes([i]) * 16 for i in range(40)]
    table = pa.table({"u": pa.array(keys, pa.uuid()), "id": range(40)})
    uri = str(tmp_path / "ds")
    ll.write_dataset(table, uri)
    (ll if builder == "lancelet" else lance).dataset(uri).create_scalar_index("u", "BTREE")
    where = f"u = arrow_cast(X'{(bytes([7]) * 16).hex()}', 'FixedSizeBinary(16)')"
    for library in (ll, lance):
        ds = library.dataset(uri)
        assert ds.to_table(filter=where)["id"].to_pylist() == [7]
        assert ds.to_table(filter="u IS NOT NULL").num_rows == 40


@pytest.mark.parametrize(
    "where",
    ["uri = 'b.png'", "uri LIKE 'a%'", "encoded = X'78'", "bf16 IS NULL", "tensor IS NOT NULL"],
)
def test_filters_see_extension_storage_like_pylance(tmp_path: Path, where: str) -> None:
    table = _table().append_column("id", pa.array([0, 1, 2]))
    uri = str(tmp_path / "ds")
    ll.write_dataset(table, uri)
    expected = lance.dataset(uri).to_table(filter=where)["id"].to_pylist()
    assert ll.dataset(uri).to_table(filter=where)["id"].to_pylist() == expected


@pytest.mark.parametrize("version", VERSIONS)
def test_lists_of_json_both_ways(tmp_path: Path, version: str) -> None:
    items = pa.ExtensionArray.from_storage(
        pa.json_(), pa.array(['{"b":1,"a":2}', None, "[2]", "3"])
    )
    lists = pa.ListArray.from_arrays(
        [0, 2, 2, 3, 4], items, mask=pa.array([False, False, True, False])
    )
    table = pa.table({"l": lists.slice(0, 3), "m": lists.slice(1)})
    expected = [
        {"l": ['{"a":2,"b":1}', None], "m": []},
        {"l": [], "m": None},
        {"l": None, "m": ["3"]},
    ]
    for writer, reader in ((ll, lance), (lance, ll)):
        uri = str(tmp_path / writer.__name__)
        writer.write_dataset(table, uri, data_storage_version=version)
        assert reader.dataset(uri).to_table().to_pylist() == expected
        assert str(reader.dataset(uri).schema) == str(table.schema)
