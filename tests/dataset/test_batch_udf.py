"""``batch_udf`` and the ways of adding columns (functions in batches, SQL or data
given to ``LanceFragment.merge_columns``), checked against pylance."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import lance
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelet as ll
from lancelet.errors import RowCountMismatchError, SchemaError


def _table() -> pa.Table:
    return pa.table({"a": range(100), "b": range(100)})


def _via_fragments(lib: Any, uri: str, *args: Any, **kwargs: Any) -> pa.Table:
    ds = lib.dataset(uri)
    merged, schema = [], None
    for fragment in ds.get_fragments():
        new, schema = fragment.merge_columns(*args, **kwargs)
        merged.append(new)
    op = lib.LanceOperation.Merge(merged, schema)
    return lib.LanceDataset.commit(uri, op, read_version=ds.version).to_table()


@pytest.mark.parametrize("use_fragments", [False, True])
def test_batch_udf_as_pylance(tmp_path: Path, use_fragments: bool) -> None:
    tables = []
    for lib in (ll, lance):
        uri = str(tmp_path / lib.__name__)
        lib.write_dataset(_table(), uri, max_rows_per_file=25)

        @lib.batch_udf()
        def triple_a(batch: pa.RecordBatch) -> pd.DataFrame:
            return pd.DataFrame({"triple_a": [3 * x.as_py() for x in batch["a"]]})

        if use_fragments:
            tables.append(_via_fragments(lib, uri, triple_a, columns=["a"]))
        else:
            ds = lib.dataset(uri)
            ds.add_columns(triple_a, read_columns=["a"])
            tables.append(ds.to_table())
    assert tables[0] == tables[1]


def test_batch_udf_output_schema_must_hold(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    ds = ll.write_dataset(_table(), uri, max_rows_per_file=25)
    calls = iter(range(1000))

    @ll.batch_udf()
    def renamed(batch: pa.RecordBatch) -> pa.RecordBatch:
        return pa.record_batch([batch["a"]], [f"c{next(calls)}"])

    with pytest.raises(SchemaError, match="Output schema of function does not match"):
        ds.add_columns(renamed, read_columns=["a"])
    with pytest.raises(SchemaError, match="Output schema of function does not match"):
        ds.get_fragments()[0].merge_columns(renamed, columns=["a"])
    assert ll.dataset(uri).version == 1


def test_add_columns_batch_size(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    ds = ll.write_dataset(pa.table({"a": range(100)}), uri, max_rows_per_file=30)
    sizes: list[int] = []

    def copy(batch: pa.RecordBatch) -> pa.RecordBatch:
        sizes.append(batch.num_rows)
        return pa.record_batch([pc.multiply(batch["a"], 2)], ["b"])

    ds.add_columns(copy, batch_size=7)
    assert max(sizes) == 7
    assert ds.to_table()["b"].to_pylist() == [2 * i for i in range(100)]


def test_merge_columns_sql_and_data_as_pylance(tmp_path: Path) -> None:
    tables = []
    for lib in (ll, lance):
        uri = str(tmp_path / lib.__name__)
        lib.write_dataset(_table(), uri)
        _via_fragments(lib, uri, {"c": "a + b"})
        data = pa.table({"d": range(100, 200)})
        reader = pa.RecordBatchReader.from_batches(data.schema, data.to_batches(max_chunksize=9))
        tables.append(_via_fragments(lib, uri, reader, reader_schema=data.schema))
    assert tables[0] == tables[1]


def test_add_columns_from_short_or_long_data_is_an_os_error(tmp_path: Path) -> None:
    ds = ll.write_dataset(_table(), str(tmp_path / "ds"), max_rows_per_file=25)
    for rows, message in ((50, "Stream ended"), (101, "more values than expected")):
        data = pa.table({"f": range(rows)})
        with pytest.raises(RowCountMismatchError, match=message):
            ds.add_columns(data)
        with pytest.raises(OSError):
            ds.add_columns(data)


def test_null_sql_columns_write_no_data_as_pylance(tmp_path: Path) -> None:
    results = []
    for lib in (ll, lance):
        uri = str(tmp_path / lib.__name__)
        ds = lib.write_dataset(pa.table({"a": range(100)}), uri, max_rows_per_file=50)
        ds.add_columns({"b": "CAST(NULL AS INT)"})
        files = [len(f.data_files()) for f in ds.get_fragments()]
        results.append((files, ds.schema, ds.to_table()))
    assert results[0] == results[1]
    assert results[0][0] == [1, 1]


@pytest.mark.parametrize(
    ("alteration", "message"),
    [
        ({"path": "x", "data_type": pa.int8()}, "Can't cast value 1024 to type Int8"),
        ({"path": "x", "data_type": pa.uint8()}, "Can't cast value 1024 to type UInt8"),
        ({"path": "x", "data_type": pa.string()}, 'Cannot cast column "x" from Int32 to Utf8'),
        ({"path": "q", "name": "z"}, 'Column "q" does not exist'),
        ({"path": "x", "type": "string"}, "Unknown key: type"),
        ({"path": "x"}, "At least one of name, nullable, or data_type must be specified"),
    ],
)
def test_alter_columns_errors_name_what_pylance_names(
    tmp_path: Path, alteration: dict[str, Any], message: str
) -> None:
    data = pa.table({"x": pa.array([1, 2, 1024], pa.int32())})
    for lib in (ll, lance):
        ds = lib.write_dataset(data, str(tmp_path / lib.__name__))
        with pytest.raises(Exception, match=message):
            ds.alter_columns(alteration)


def test_checkpoint_resumes_a_failed_add_columns(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    ds = ll.write_dataset(_table(), uri, max_rows_per_file=20)
    seen: list[int] = []
    # The checkpoint is the caller's own local file, not part of the dataset.
    with tempfile.TemporaryDirectory() as scratch:
        checkpoint = Path(scratch) / "cache.sqlite"

        @ll.batch_udf(checkpoint_file=checkpoint)
        def failing(batch: pa.RecordBatch) -> pa.RecordBatch:
            if batch["a"][0].as_py() >= 50:
                raise RuntimeError("I failed")
            return pa.record_batch([pc.multiply(batch["a"], 2)], ["a2"])

        with pytest.raises(RuntimeError):
            ds.add_columns(failing, read_columns=["a"])
        assert ds.version == 1 and checkpoint.exists()

        @ll.batch_udf(checkpoint_file=checkpoint)
        def resumed(batch: pa.RecordBatch) -> pa.RecordBatch:
            seen.append(batch["a"][0].as_py())
            return pa.record_batch([pc.multiply(batch["a"], 2)], ["a2"])

        ds.add_columns(resumed, read_columns=["a"])
        assert not checkpoint.exists()
    assert min(seen) >= 60  # fragments 0-2 came from the checkpoint
    assert ds.to_table()["a2"].to_pylist() == [2 * i for i in range(100)]


def test_fragment_merge_columns_refuses_a_checkpoint(tmp_path: Path) -> None:
    ds = ll.write_dataset(_table(), str(tmp_path / "ds"))

    @ll.batch_udf(checkpoint_file=tmp_path / "never.sqlite")
    def same(batch: pa.RecordBatch) -> pa.RecordBatch:
        return batch

    with pytest.raises(ValueError, match="A checkpoint file cannot be used"):
        ds.get_fragments()[0].merge_columns(same, columns=["a"])


def test_functions_may_read_row_ids_as_pylance(tmp_path: Path) -> None:
    tables = []
    for lib in (ll, lance):
        uri = str(tmp_path / lib.__name__)
        ds = lib.write_dataset(_table(), uri, max_rows_per_file=30)
        ds.delete("a % 7 = 0")

        def copy_ids(batch: pa.RecordBatch) -> pa.RecordBatch:
            return pa.record_batch({"id_copy": batch["_rowid"], "addr": batch["_rowaddr"]})

        tables.append(_via_fragments(lib, uri, copy_ids, columns=["_rowid", "_rowaddr"]))
    assert tables[0] == tables[1]
