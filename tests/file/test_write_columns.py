"""``LanceFileWriter.write_columns``: rows given column by column (a compaction's, each
column decoded and encoded as one job) make the pages that the same rows given in
batches make.  Checked against the writer's own batch path byte for byte where no
column buffer fills early, page by page where they do, and read back by pylance."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import lance.file as ref
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from lancelet.errors import LanceFileError, SchemaError
from lancelet.file import LanceFileReader, LanceFileWriter
from tests.file import nested_data as nd
from tests.file.test_nested_roundtrip_property import assert_same, read_by_pylance


def _has_map(dtype: pa.DataType) -> bool:
    if pa.types.is_map(dtype):
        return True
    return any(_has_map(dtype.field(i).type) for i in range(dtype.num_fields))


def _makers(table: pa.Table) -> list[Callable[[], pa.Array]]:
    return [lambda column=column: column.combine_chunks() for column in table.columns]


def _by_batch(path: Path, table: pa.Table, version: str, batch_rows: int, cache: int) -> None:
    with LanceFileWriter(path, table.schema, version=version, data_cache_bytes=cache) as writer:
        for batch in table.to_batches(max_chunksize=batch_rows):
            writer.write_batch(batch)


def _by_column(path: Path, table: pa.Table, version: str, batch_rows: int, cache: int) -> None:
    with LanceFileWriter(path, table.schema, version=version, data_cache_bytes=cache) as writer:
        writer.write_columns(_makers(table), table.num_rows, batch_rows)


def _page_rows(path: Path) -> list[list[int]]:
    """Each column's pages' row counts, as the file's metadata lists them."""
    reader = LanceFileReader(path)
    return [[p.num_rows for p in column.pages] for column in reader._columns]


@settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    schema=nd.schemas(nd.Options()),
    rows=st.sampled_from([1, 5, 300, 2000]),
    seed=st.integers(0, 2**32 - 1),
    batch_rows=st.sampled_from([1, 7, 100, 10_000]),
    small_cache=st.booleans(),
)
@example(  # bytes under null items gathered around a null struct's items (see below)
    schema=pa.schema([pa.field("c0", pa.struct([
        pa.field("a", pa.bool_(), False),
        pa.field("b", pa.list_(pa.field("item", pa.list_(pa.field("item", pa.bool_()), 1),
                                        False)), False),
    ]))]),
    rows=2000, seed=82, batch_rows=1, small_cache=False,
)  # fmt: skip
def test_columns_make_the_pages_batches_make(
    tmp_path_factory: pytest.TempPathFactory,
    schema: pa.Schema,
    rows: int,
    seed: int,
    batch_rows: int,
    small_cache: bool,
) -> None:
    table = nd.table(schema, rows, seed, nd.Shape(struct_nulls=True, junk_under_nulls=False))
    version = "2.2" if any(_has_map(f.type) for f in schema) else "2.1"
    cache = 2048 if small_cache else 8 << 20
    folder = tmp_path_factory.mktemp("columns")
    batches, columns = folder / "batches.lance", folder / "columns.lance"
    _by_batch(batches, table, version, batch_rows, cache)
    _by_column(columns, table, version, batch_rows, cache)
    assert _page_rows(columns) == _page_rows(batches)
    if not small_cache:
        # Nothing flushed before close: the pages reach the file in the same order.
        assert columns.read_bytes() == batches.read_bytes()
    ours = LanceFileReader(columns)
    assert_same(table, ours.read_all().to_table(), "read by lancelet")
    theirs = read_by_pylance(
        lambda: ref.LanceFileReader(str(columns)).read_all().to_table(),
        lambda: ours.read_all().to_table(),
        table.schema,
    )
    assert_same(table, theirs, "read by pylance")


_DICTIONARY = pa.dictionary(pa.int32(), pa.string())


@pytest.mark.parametrize(
    "dtype", [_DICTIONARY, pa.struct([pa.field("a", _DICTIONARY, nullable=False)])]
)
@pytest.mark.parametrize(("rows", "batch_rows", "cache"), [(5, 1, 8 << 20), (300, 7, 2048)])
def test_dictionary_columns_make_the_pages_batches_make(
    tmp_path: Path, dtype: pa.DataType, rows: int, batch_rows: int, cache: int
) -> None:
    """Each batch of a dictionary column counts (and carries) its whole dictionary
    toward the buffer that cuts pages; given whole, the column counted it once and
    made one page where the batches made seven (found by the property above)."""
    schema = pa.schema([pa.field("c", dtype, nullable=False)])
    table = nd.table(schema, rows, 0, nd.Shape(struct_nulls=True, junk_under_nulls=False))
    batches, columns = tmp_path / "batches.lance", tmp_path / "columns.lance"
    _by_batch(batches, table, "2.1", batch_rows, cache)
    _by_column(columns, table, "2.1", batch_rows, cache)
    assert _page_rows(columns) == _page_rows(batches)
    assert columns.read_bytes() == batches.read_bytes()
    assert_same(table, LanceFileReader(columns).read_all().to_table(), "read by lancelet")


def _with_junk_under_nulls(dtype: pa.DataType, n: int) -> pa.Array:
    """``n`` values of ``dtype``, every third null, with bytes under the nulls."""
    valid = pa.py_buffer(np.packbits(np.arange(n) % 3 != 0, bitorder="little"))
    if pa.types.is_fixed_size_list(dtype):
        items = _with_junk_under_nulls(dtype.value_type, n * dtype.list_size)
        return pa.FixedSizeListArray.from_buffers(dtype, n, [valid], children=[items])
    if pa.types.is_boolean(dtype):
        return pa.Array.from_buffers(dtype, n, [valid, pa.py_buffer(b"\xff" * n)])
    if pa.types.is_string(dtype):
        offsets = pa.py_buffer(np.arange(0, 2 * n + 1, 2, dtype=np.int32))
        return pa.Array.from_buffers(dtype, n, [valid, offsets, pa.py_buffer(b"ab" * n)])
    data = np.arange(1, n + 1, dtype=dtype.to_pandas_dtype())
    return pa.Array.from_buffers(dtype, n, [valid, pa.py_buffer(data)])


@pytest.mark.parametrize(
    "item",
    [pa.int32(), pa.bool_(), pa.string(), pa.list_(pa.field("item", pa.int16(), True), 2)],
    ids=["int32", "bool", "string", "fixed_size_list"],
)
@pytest.mark.parametrize("batch_rows", [1, 3])
def test_values_under_nulls_beside_hidden_items(
    tmp_path: Path, item: pa.DataType, batch_rows: int
) -> None:
    """A null struct over a list that still holds items hides them, so the whole
    column's leaf values are gathered around them, and Arrow's gather zeroes the bytes
    under nulls where the batches' slices keep them.  Such columns are fed batch by
    batch (a random example of the property above found it: a fixed-size list of
    booleans)."""
    rows = 6
    values = _with_junk_under_nulls(item, 4 * rows)
    lists = pa.ListArray.from_arrays(pa.array(range(0, 4 * rows + 1, 4), pa.int32()), values)
    hidden = pa.py_buffer(np.packbits([1, 0, 1, 1, 0, 1], bitorder="little"))
    column = pa.StructArray.from_buffers(
        pa.struct([pa.field("l", lists.type)]), rows, [hidden], children=[lists]
    )
    table = pa.table({"s": column})
    batches, columns = tmp_path / "batches.lance", tmp_path / "columns.lance"
    _by_batch(batches, table, "2.1", batch_rows, 8 << 20)
    _by_column(columns, table, "2.1", batch_rows, 8 << 20)
    assert columns.read_bytes() == batches.read_bytes()
    assert_same(table, LanceFileReader(columns).read_all().to_table(), "read by lancelet")


@pytest.mark.parametrize("version", ["2.0", "2.1"])
def test_each_column_is_made_once_on_a_worker(tmp_path: Path, version: str) -> None:
    table = pa.table({"a": list(range(50)), "b": [f"v{i}" for i in range(50)]})
    made: list[tuple[str, bool]] = []

    def maker(name: str) -> Callable[[], pa.Array]:
        def make() -> pa.Array:
            made.append((name, threading.current_thread() is threading.main_thread()))
            return table.column(name).combine_chunks()

        return make

    path = tmp_path / "f.lance"
    with LanceFileWriter(path, table.schema, version=version) as writer:
        writer.write_columns([maker("a"), maker("b")], 50, 8, costs=[1, 5])
    assert sorted(made) == [("a", False), ("b", False)]
    assert LanceFileReader(path).read_all().to_table().equals(table)


def test_a_column_of_the_wrong_length_or_type_is_refused(tmp_path: Path) -> None:
    table = pa.table({"a": pa.array([1, 2, 3], pa.int64()), "b": ["x", "y", "z"]})
    cases = {
        "short": [lambda: pa.array([1, 2], pa.int64()), lambda: pa.array(["x", "y", "z"])],
        "retyped": [lambda: pa.array([1, 2, 3], pa.int32()), lambda: pa.array(["x", "y", "z"])],
    }
    for name, makers in cases.items():
        path = tmp_path / f"{name}.lance"
        writer = LanceFileWriter(path, table.schema, version="2.1")
        with pytest.raises(SchemaError, match="'a'"):
            writer.write_columns(makers, 3, 2)
        assert not path.exists()  # the writer was aborted


def test_a_failing_column_leaves_no_file(tmp_path: Path) -> None:
    table = pa.table({"a": list(range(10)), "b": list(range(10))})

    def broken() -> pa.Array:
        raise OSError("disk gone")

    path = tmp_path / "f.lance"
    writer = LanceFileWriter(path, table.schema, version="2.1")
    with pytest.raises(OSError, match="disk gone"):
        writer.write_columns([lambda: table.column("a").combine_chunks(), broken], 10, 4)
    assert not path.exists()
    with pytest.raises(LanceFileError):
        writer.write_batch(table)


def test_columns_go_only_to_a_writer_holding_no_rows(tmp_path: Path) -> None:
    table = pa.table({"a": list(range(4))})
    writer = LanceFileWriter(tmp_path / "f.lance", table.schema, version="2.1")
    writer.write_batch(table)
    with pytest.raises(LanceFileError, match="no rows"):
        writer.write_columns(_makers(table), 4, 2)
    with pytest.raises(SchemaError, match="2 columns"):
        LanceFileWriter(tmp_path / "g.lance", table.schema, version="2.1").write_columns(
            _makers(table) * 2, 4, 2
        )
