"""Projection, row ranges, take and streaming, checked against pyarrow's own slicing."""

from __future__ import annotations

from pathlib import Path

import lance.file as ref
import numpy as np
import pyarrow as pa
import pytest

from lancelet.errors import SchemaError
from lancelet.file import LanceFileReader, LanceFileWriter
from tests.file.gen import ALL_TYPES, random_table

# Dictionary columns are left to the interop tests: the reference adds a null
# dictionary item, so whole-table equality would compare dictionaries, not values.
TYPES = [t for t in ALL_TYPES if not pa.types.is_dictionary(t)]
NESTED_STRUCT = pa.struct(
    [("a", pa.struct([("x", pa.float64()), ("y", pa.list_(pa.bool_()))])), ("z", pa.date32())]
)


def col(dtype: pa.DataType) -> str:
    """The generated name of the column holding ``dtype``."""
    return f"c{TYPES.index(dtype)}"


N = 6000


@pytest.fixture(scope="module", params=["lancelet", "pylance"])
def written(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, pa.Table]:
    table = random_table(TYPES, N, seed=11)
    path = tmp_path_factory.mktemp("read") / "t.lance"
    if request.param == "lancelet":
        with LanceFileWriter(path, table.schema, data_cache_bytes=8192, version="2.0") as writer:
            writer.write_batch(table)
    else:
        with ref.LanceFileWriter(
            str(path), table.schema, version="2.0", data_cache_bytes=8192
        ) as w:
            w.write_batch(table)
    return path, table


@pytest.mark.parametrize(
    ("start", "count"), [(0, N), (0, 1), (1234, 2000), (N - 1, 1), (N, 0), (17, 0)]
)
def test_read_range(written: tuple[Path, pa.Table], start: int, count: int) -> None:
    path, table = written
    got = LanceFileReader(path).read_range(start, count).to_table()
    assert got.equals(table.slice(start, count))


def test_projection(written: tuple[Path, pa.Table]) -> None:
    path, table = written
    names = [col(pa.list_(pa.int16(), 3)), col(pa.int16()), col(pa.list_(pa.list_(pa.int64())))]
    got = LanceFileReader(path).read_all(columns=names).to_table()
    assert got.equals(table.select(names))
    assert (
        LanceFileReader(path, columns=[col(pa.string())])
        .read_all()
        .to_table()
        .equals(table.select([col(pa.string())]))
    )


def test_struct_sub_field_projection(written: tuple[Path, pa.Table]) -> None:
    path, table = written
    name = col(NESTED_STRUCT)
    struct_col = table[name].combine_chunks()
    got = LanceFileReader(path).read_all(columns=[f"{name}.a.y", f"{name}.z"]).to_table()
    assert got.column_names == [f"{name}.a.y", f"{name}.z"]
    assert got[f"{name}.a.y"].combine_chunks().equals(struct_col.field("a").field("y"))
    assert got[f"{name}.z"].combine_chunks().equals(struct_col.field("z"))


def test_unknown_column(written: tuple[Path, pa.Table]) -> None:
    path, _ = written
    with pytest.raises(SchemaError, match="'nope'"):
        LanceFileReader(path).read_all(columns=["nope"])


@pytest.mark.parametrize("seed", range(3))
def test_take_rows(written: tuple[Path, pa.Table], seed: int) -> None:
    path, table = written
    rows = np.random.default_rng(seed).choice(N, 300, replace=seed == 2)
    if seed == 0:
        rows.sort()
    got = LanceFileReader(path).take_rows(rows).to_table()
    assert got.equals(table.take(rows))


def test_take_rows_out_of_range(written: tuple[Path, pa.Table]) -> None:
    path, _ = written
    with pytest.raises(IndexError, match=str(N)):
        LanceFileReader(path).take_rows([0, N])


@pytest.mark.parametrize("batch_size", [1, 777, N])
def test_streaming_batches(written: tuple[Path, pa.Table], batch_size: int) -> None:
    path, table = written
    if batch_size == 1:
        table = table.slice(0, 50)
        batches = list(LanceFileReader(path).read_range(0, 50, batch_size=1).to_batches())
    else:
        batches = list(LanceFileReader(path).read_all(batch_size=batch_size).to_batches())
    assert all(b.num_rows <= batch_size for b in batches)
    assert pa.Table.from_batches(batches).equals(table)


def test_metadata(written: tuple[Path, pa.Table]) -> None:
    path, table = written
    mine = LanceFileReader(path).metadata()
    theirs = ref.LanceFileReader(str(path)).metadata()
    assert mine.num_rows == theirs.num_rows == N
    assert mine.schema.equals(table.schema)
    assert len(mine.columns) == len(theirs.columns)
    for a, b in zip(mine.columns, theirs.columns, strict=True):
        assert [[(x.position, x.size) for x in p.buffers] for p in a.pages] == [
            [(x.position, x.size) for x in p.buffers] for p in b.pages
        ]
    assert [(g.position, g.size) for g in mine.global_buffers] == [
        (g.position, g.size) for g in theirs.global_buffers
    ]


def test_global_buffers(tmp_path: Path) -> None:
    path = tmp_path / "g.lance"
    with LanceFileWriter(path, pa.schema([("a", pa.int32())]), version="2.0") as writer:
        assert writer.add_global_buffer(b"hello") == 1
        writer.write_batch(pa.table({"a": pa.array([1], pa.int32())}))
    assert ref.LanceFileReader(str(path)).read_global_buffer(1) == b"hello"
    assert LanceFileReader(path).read_global_buffer(1) == b"hello"


def test_page_buffer_in_a_global_buffer(tmp_path: Path) -> None:
    """An encoding may point at a file-level buffer instead of a page buffer."""
    from lancelet._proto import encodings_v2_0_pb2 as enc
    from lancelet._proto import file2_pb2
    from tests.file.test_bad_input import edit_page_encoding, rewrite

    values = np.arange(100, dtype="<i8")
    path = tmp_path / "g.lance"
    with LanceFileWriter(path, pa.schema([("a", pa.int64())]), version="2.0") as writer:
        writer.write_batch(pa.table({"a": pa.array(np.zeros(100, dtype=np.int64))}))
        index = writer.add_global_buffer(values.tobytes())

    def point_at_global(msg: enc.ArrayEncoding) -> None:
        msg.nullable.no_nulls.values.flat.buffer.buffer_type = enc.Buffer.file
        msg.nullable.no_nulls.values.flat.buffer.buffer_index = index

    def forge(metas: list[file2_pb2.ColumnMetadata]) -> None:
        edit_page_encoding(metas[0].pages[0], point_at_global)
        # The page's own buffer is no longer referenced, so it goes too.
        del metas[0].pages[0].buffer_offsets[:]
        del metas[0].pages[0].buffer_sizes[:]

    forged = rewrite(path, columns=forge)
    assert LanceFileReader(forged).read_all().to_table()["a"].to_pylist() == values.tolist()


def test_reader_arguments_in_pylances_order(tmp_path: Path) -> None:
    """``LanceFileReader(path, storage_options, columns)``: a positional second argument
    is never taken for a projection."""
    table = pa.table({"a": [1, 2], "b": ["x", "y"]})
    path = tmp_path / "t.lance"
    with ref.LanceFileWriter(str(path), table.schema, version="2.0") as writer:
        writer.write_batch(table)
    ours = LanceFileReader(path, None, ["b"]).read_all().to_table()
    theirs = ref.LanceFileReader(str(path), None, ["b"]).read_all().to_table()
    assert ours.equals(theirs) and ours.column_names == ["b"]
    # A dict in second place is storage options (meaningless for a local path, as in
    # pylance), never a projection.
    whole = LanceFileReader(path, {"region": "x"}).read_all().to_table()
    assert whole.column_names == ["a", "b"]
