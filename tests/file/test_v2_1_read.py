"""Reading Lance 2.1 and 2.2 files: value by value against the table pylance wrote and
against pylance's own reading, whole, by row range, by row list and in batches."""

from __future__ import annotations

import importlib.util
from decimal import Decimal
from pathlib import Path
from typing import Any

import lance.file as ref
import numpy as np
import pyarrow as pa
import pytest

from lancelet.errors import UnsupportedEncodingError
from lancelet.file import LanceFileReader
from lancelet.file.memo import Memo
from lancelet.file.v2_1.read import compression, miniblock_plan
from tests.file import v2_1_fixtures as fixtures

VERSIONS = ["2.1", "2.2"]
N = 1500
# pylance picks run-length encoding on its own for data with runs (levels included);
# its codec arrives with the full-zip work, so files that need it are read once it is in.
HAVE_RLE = importlib.util.find_spec("lancelet.file.codecs.rle") is not None
needs_codecs = pytest.mark.skipif(not HAVE_RLE, reason="the run-length codec is not here yet")


def write(path: Path, table: pa.Table, version: str, **kwargs: Any) -> Path:
    with ref.LanceFileWriter(str(path), table.schema, version=version, **kwargs) as writer:
        for batch in table.to_batches(max_chunksize=700):
            writer.write_batch(batch)
    return path


def primitives(n: int) -> pa.Table:
    def nulls(values: list[Any], every: int = 7) -> list[Any]:
        return [None if i % every == 3 else v for i, v in enumerate(values)]

    rng = np.random.default_rng(5)
    return pa.table(
        {
            "i8": pa.array(nulls([i % 200 - 100 for i in range(n)]), pa.int8()),
            "u16": pa.array(nulls(list(range(n))), pa.uint16()),
            "i32": pa.array(nulls([int(x) for x in rng.integers(-(2**31), 2**31, n)]), pa.int32()),
            "u64": pa.array([int(x) for x in rng.integers(0, 2**63, n)], pa.uint64()),
            "f16": pa.array(nulls([np.float16(i / 8) for i in range(n)]), pa.float16()),
            "f32": pa.array(nulls([i / 3 for i in range(n)]), pa.float32()),
            "f64": pa.array(rng.random(n)),
            "bool": pa.array(nulls([i % 3 == 1 for i in range(n)])),
            "dec": pa.array(
                nulls([Decimal(i * 37 - 900) / 100 for i in range(n)]), pa.decimal128(9, 2)
            ),
            "dec256": pa.array(nulls([Decimal(i) for i in range(n)]), pa.decimal256(40, 0)),
            "date": pa.array(nulls(list(range(n))), pa.date32()),
            "ts": pa.array(nulls([i * 1_000_003 for i in range(n)]), pa.timestamp("us", "UTC")),
            "t32": pa.array(nulls([i * 13 % 86400 for i in range(n)]), pa.time32("s")),
            "dur": pa.array(nulls(list(range(n))), pa.duration("ns")),
            "fsb": pa.array(nulls([bytes([i % 256, 7, i % 13]) for i in range(n)]), pa.binary(3)),
            "fsl": pa.array(
                nulls([[float(i), None if i % 5 == 0 else -float(i)] for i in range(n)], 9),
                pa.list_(pa.float64(), 2),
            ),
            "const": pa.array([7] * n, pa.int64()),
            "nulls": pa.array([None] * n, pa.int32()),
        }
    )


def strings(n: int) -> pa.Table:
    words = ["alpha", "beta", "gamma", "delta", "epsilon"]
    return pa.table(
        {
            "low": pa.array([None if i % 6 == 5 else words[(i * 3) % 5] for i in range(n)]),
            "unique": pa.array([f"unique-{i}-" + "z" * (i % 31) for i in range(n)]),
            "large": pa.array(
                [None if i % 4 == 1 else f"L{i}" for i in range(n)], pa.large_string()
            ),
            "bin": pa.array([bytes(range(i % 17)) for i in range(n)], pa.binary()),
            "dict": pa.array(
                [words[i % 3] if i % 5 else None for i in range(n)]
            ).dictionary_encode(),
            "utf8": pa.array([f"ü{i}—é" for i in range(n)]),
            "empty": pa.array([""] * (n - 1) + ["x"]),
        }
    )


def nested(n: int) -> pa.Table:
    inner = pa.struct([("c", pa.int64()), ("d", pa.string())])
    outer = pa.struct([("a", pa.int32()), ("b", pa.list_(inner))])

    def sls(i: int) -> Any:
        if i % 11 == 0:
            return None
        items = [
            None if (i + j) % 4 == 0 else {"c": j * i, "d": None if j % 3 == 0 else f"s{i}-{j}"}
            for j in range(i % 4)
        ]
        return {"a": None if i % 5 == 0 else i, "b": None if i % 7 == 0 else items}

    lol = [
        None if i % 9 == 0 else [None if (i + j) % 5 == 0 else list(range(j)) for j in range(i % 4)]
        for i in range(n)
    ]
    return pa.table(
        {
            "sls": pa.array([sls(i) for i in range(n)], outer),
            "lol": pa.array(lol, pa.list_(pa.list_(pa.int32()))),
            "large": pa.array(
                [None if i % 13 == 0 else [f"w{i + j}" for j in range(i % 3)] for i in range(n)],
                pa.large_list(pa.string()),
            ),
            "lbool": pa.array(
                [
                    [bool(i * j % 3) if (i + j) % 6 else None for j in range(i % 5)]
                    for i in range(n)
                ],
                pa.list_(pa.bool_()),
            ),
            "full": pa.array([list(range(i % 3 + 1)) for i in range(n)], pa.list_(pa.int16())),
            "slist": pa.array(
                [
                    {"v": [float(j) for j in range(i % 3)] if i % 4 else None, "w": i}
                    for i in range(n)
                ],
                pa.struct([("v", pa.list_(pa.float64())), ("w", pa.int64())]),
            ),
            "lfsl": pa.array(
                [[[i, j] for j in range(i % 3)] for i in range(n)],
                pa.list_(pa.list_(pa.int64(), 2)),
            ),
            "empty": pa.array([{} for _ in range(n)], pa.struct([])),
        }
    )


TABLES = {"primitives": primitives, "strings": strings, "nested": nested}
RANGES = [(0, 1), (1, 1), (17, 700), (N - 10, 10), (N // 2, 1)]
TAKES = [[0, 1, 2], [N - 1], list(range(0, N, 7)), [3, 5, 1000, 1001], [900, 4, 4, 1200]]


def rows(table: pa.Table, indices: list[int]) -> list[dict[str, Any]]:
    return table.take(pa.array(indices, pa.int64())).to_pylist()


@needs_codecs
@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("kind", sorted(TABLES))
@pytest.mark.parametrize("page_bytes", [None, 4096])
def test_reads_what_pylance_wrote(
    tmp_path: Path, version: str, kind: str, page_bytes: int | None
) -> None:
    table = TABLES[kind](N)
    extra = {} if page_bytes is None else {"max_page_bytes": page_bytes}
    path = write(tmp_path / "t.lance", table, version, **extra)
    reader = LanceFileReader(path)
    assert reader.schema == table.schema
    assert reader.read_all().to_table().to_pylist() == table.to_pylist()
    batches = pa.Table.from_batches(list(reader.read_all(batch_size=97).to_batches()))
    assert batches.to_pylist() == table.to_pylist()
    for start, count in RANGES:
        got = reader.read_range(start, count).to_table()
        assert got.to_pylist() == table.slice(start, count).to_pylist(), (start, count)
    for indices in TAKES:
        assert reader.take_rows(indices).to_table().to_pylist() == rows(table, indices), indices


@needs_codecs
@pytest.mark.parametrize("version", VERSIONS)
def test_agrees_with_pylance_reading(tmp_path: Path, version: str) -> None:
    table = nested(N)
    path = write(tmp_path / "t.lance", table, version, max_page_bytes=4096)
    mine = LanceFileReader(path)
    for name in table.column_names:
        theirs = ref.LanceFileReader(str(path), columns=[name])
        want = theirs.read_all().to_table().column(name).to_pylist()
        assert mine.read_all(columns=[name]).to_table().column(name).to_pylist() == want
        indices = list(range(3, N, 11))
        want = theirs.take_rows(indices).to_table().column(name).to_pylist()
        assert mine.take_rows(indices, columns=[name]).to_table().column(name).to_pylist() == want


@needs_codecs
@pytest.mark.parametrize("version", VERSIONS)
def test_struct_sub_fields(tmp_path: Path, version: str) -> None:
    table = nested(300)
    path = write(tmp_path / "t.lance", table, version)
    got = LanceFileReader(path).read_all(columns=["sls.a", "sls.b", "slist.w"]).to_table()
    parents = table.column("sls").to_pylist()
    assert got.column("sls.a").to_pylist() == [None if p is None else p["a"] for p in parents]
    assert got.column("sls.b").to_pylist() == [None if p is None else p["b"] for p in parents]
    assert got.column("slist.w").to_pylist() == list(range(300))


@needs_codecs
def test_dictionary_columns_keep_their_type(tmp_path: Path) -> None:
    table = strings(400).select(["dict"])
    path = write(tmp_path / "t.lance", table, "2.2")
    got = LanceFileReader(path).read_all().to_table().column("dict")
    assert got.type == table.column("dict").type
    assert got.to_pylist() == table.column("dict").to_pylist()


@needs_codecs
def test_dataset_written_with_defaults(tmp_path: Path) -> None:
    import lance

    import lancelet

    table = nested(600).drop_columns(["empty"])
    uri = str(tmp_path / "ds")
    lance.write_dataset(table, uri)
    lance.write_dataset(table, uri, mode="append")
    ds = lancelet.dataset(uri)
    assert ds.to_table().to_pylist() == table.to_pylist() * 2
    indices = [0, 5, 599, 600, 1199, 17]
    doubled = pa.concat_tables([table, table])
    assert ds.take(indices).to_pylist() == rows(doubled, indices)
    assert ds.count_rows() == 1200


# -- checked-in files ---------------------------------------------------------------------


def expected(column: str, indices: list[int]) -> list[Any]:
    """The values of a fixture column, computed from row numbers alone."""
    return [fixtures.row(i)[column] for i in indices]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("column", fixtures.SCHEMA.names)
def test_checked_in_files(version: str, column: str) -> None:
    if version == "2.1" and column == "c" and not HAVE_RLE:
        pytest.skip("pylance stores this 2.1 constant column run-length encoded")
    reader = LanceFileReader(fixtures.path(version))
    n = fixtures.ROWS
    assert reader.num_rows() == n
    assert reader.schema.field(column) == fixtures.SCHEMA.field(column)
    every = list(range(n))
    assert reader.read_all(columns=[column]).to_table().column(column).to_pylist() == expected(
        column, every
    )
    got = reader.read_range(37, 100, columns=[column]).to_table().column(column).to_pylist()
    assert got == expected(column, list(range(37, 137)))
    picks = [199, 0, 64, 65, 128, 3, 3]
    got = reader.take_rows(picks, columns=[column]).to_table().column(column).to_pylist()
    assert got == expected(column, picks)


def test_checked_in_layouts() -> None:
    """The fixtures hold the layouts they are meant to cover."""
    meta = LanceFileReader(fixtures.path("2.2")).metadata()
    text = " ".join(page.encoding for column in meta.columns for page in column.pages)
    for part in (  # as pylance describes pages: the Rust (prost) names
        "MiniBlockLayout",
        "ConstantLayout",
        "inline_value: Some(",
        "dictionary: Some(",
        "repetition_index_depth",
        "has_large_chunk: true",
        "FixedSizeList",
        "InlineBitpacking",
        "Variable",
    ):
        assert part in text, part


def test_unimplemented_compression_names_file_column_and_page(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(compression, "MINIBLOCK", {})
    # Layouts read before were worked out with the real registry: forget them.
    monkeypatch.setattr(miniblock_plan, "_plans", Memo(16))
    path = fixtures.path("2.2")
    reader = LanceFileReader(path)
    with pytest.raises(UnsupportedEncodingError) as info:
        reader.read_all(columns=["n"]).to_table()
    message = str(info.value)
    assert str(path) in message and "column 'n'" in message and "page 0" in message
    assert "compression is not supported" in message


def test_fixed_size_lists_of_structs_are_unsupported_not_corrupt(tmp_path: Path) -> None:
    item = pa.struct([("x", pa.int32())])
    table = pa.table({"v": pa.array([[{"x": i}, {"x": -i}] for i in range(50)], pa.list_(item, 2))})
    path = write(tmp_path / "t.lance", table, "2.2")
    with pytest.raises(UnsupportedEncodingError, match=r"t\.lance.*fixed_size_list:struct"):
        LanceFileReader(path)


@pytest.mark.parametrize("version", VERSIONS)
def test_dataset_with_packed_structs_before_other_columns(tmp_path: Path, version: str) -> None:
    """A packed struct's children are fields of the file's schema without a column of
    their own: the leaves' field ids after them must still match the manifest's."""
    import lance

    import lancelet

    packed = {"lance-encoding:packed": "true"}
    schema = pa.schema(
        [
            pa.field("p", pa.struct([("a", pa.int16()), ("b", pa.uint8())]), metadata=packed),
            pa.field("l", pa.list_(pa.int32())),
            pa.field("s", pa.struct([("x", pa.int32()), ("y", pa.string())])),
        ]
    )
    n = 50
    table = pa.Table.from_pylist(
        [
            {"p": {"a": i, "b": i % 7}, "l": [i] * (i % 3), "s": {"x": -i, "y": str(i)}}
            for i in range(n)
        ],
        schema=schema,
    )
    uri = str(tmp_path / "ds")
    lance.write_dataset(table, uri, data_storage_version=version)
    ds = lancelet.dataset(uri)
    assert ds.to_table().to_pylist() == table.to_pylist()
    assert ds.take([3, 40]).to_pylist() == rows(table, [3, 40])
