"""Adding, dropping and renaming columns; pylance reads every result."""

from __future__ import annotations

import os
from pathlib import Path

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelet as ll
from lancelet.errors import RetryableCommitConflictError, SchemaError
from tests.dataset.util import keyed_table


@pytest.fixture
def uri(tmp_path: Path) -> str:
    path = str(tmp_path / "ds")
    ll.write_dataset(keyed_table(0, 3000), path, max_rows_per_file=1000)
    ll.dataset(path).delete("k % 9 = 0")
    return path


def _live(table: pa.Table) -> pa.Table:
    return table.filter(pa.array(table["k"].to_numpy() % 9 != 0))


def _both(uri: str) -> pa.Table:
    theirs = lance.dataset(uri)
    theirs.validate()
    table = theirs.to_table()
    assert ll.dataset(uri).to_table().equals(table)
    return table


def test_drop_columns(uri: str) -> None:
    ll.dataset(uri).drop_columns(["v", "pt"])
    assert _both(uri).equals(_live(keyed_table(0, 3000)).drop_columns(["v", "pt"]))
    with pytest.raises(SchemaError, match="nope"):
        ll.dataset(uri).drop_columns(["nope"])
    with pytest.raises(SchemaError, match="every column"):
        ll.dataset(uri).drop_columns(["k", "s", "tags"])


def test_rename_and_nullability(uri: str) -> None:
    ds = ll.dataset(uri)
    ds.alter_columns({"path": "s", "name": "label"}, {"path": "k", "nullable": False})
    want = _live(keyed_table(0, 3000)).rename_columns(["k", "v", "label", "tags", "pt"])
    got = _both(uri)
    assert not got.schema.field("k").nullable
    want = want.cast(got.schema)
    assert got.equals(want)
    version = ll.dataset(uri).version
    with pytest.raises(SchemaError, match="holds nulls"):
        ll.dataset(uri).alter_columns({"path": "v", "nullable": False})
    with pytest.raises(SchemaError, match="collide"):
        ll.dataset(uri).alter_columns({"path": "v", "name": "k"})
    assert ll.dataset(uri).version == version
    ll.write_dataset(want.slice(0, 5), uri, mode="append")
    assert lance.dataset(uri).count_rows() == want.num_rows + 5


def test_add_columns_from_sql(uri: str) -> None:
    ll.dataset(uri).add_columns({"double_k": "k * 2", "loud": "upper(s)"})
    base = _live(keyed_table(0, 3000))
    want = base.append_column("double_k", pc.multiply(base["k"], 2)).append_column(
        "loud", pc.utf8_upper(base["s"])
    )
    assert _both(uri).equals(want)
    fragment = lance.dataset(uri).get_fragments()[0]
    assert len(fragment.metadata.files) == 2
    appended = ll.write_dataset(want.slice(0, 10), uri, mode="append")
    assert appended.to_table().slice(want.num_rows).equals(want.slice(0, 10))
    assert lance.dataset(uri).to_table().slice(want.num_rows).equals(want.slice(0, 10))


def test_add_columns_from_a_batch_function(uri: str) -> None:
    def square(batch: pa.RecordBatch) -> pa.RecordBatch:
        k = batch.column("k").to_numpy()
        return pa.record_batch({"k2": k * k})

    ll.dataset(uri).add_columns(square, read_columns=["k"])
    base = _live(keyed_table(0, 3000))
    k = base["k"].to_numpy()
    assert _both(uri).equals(base.append_column("k2", pa.array(k * k)))


def test_add_null_columns(uri: str) -> None:
    ll.dataset(uri).add_columns([pa.field("note", pa.string()), pa.field("w", pa.float32())])
    base = _live(keyed_table(0, 3000))
    n = base.num_rows
    want = base.append_column("note", pa.nulls(n, pa.string())).append_column(
        "w", pa.nulls(n, pa.float32())
    )
    assert _both(uri).equals(want)


def test_add_columns_after_a_concurrent_append_must_retry(uri: str) -> None:
    stale = ll.dataset(uri)
    ll.write_dataset(keyed_table(5000, 5010), uri, mode="append")
    with pytest.raises(RetryableCommitConflictError):
        stale.add_columns({"x": "k + 1"})
    files = {d.path for f in ll.dataset(uri).get_fragments() for d in f.data_files()}
    on_disk = set(os.listdir(Path(uri) / "data"))
    assert on_disk == files  # the failed add left no data files behind


def test_schema_changes_race(uri: str) -> None:
    first, second = ll.dataset(uri), ll.dataset(uri)
    first.drop_columns(["v"])
    with pytest.raises(RetryableCommitConflictError):
        second.alter_columns({"path": "s", "name": "label"})
    ll.dataset(uri).alter_columns({"path": "s", "name": "label"})
    stale_append = ll.fragment.write_fragments(
        keyed_table(9000, 9003).drop_columns(["v"]).rename_columns(["k", "label", "tags", "pt"]),
        uri,
    )
    ll.LanceDataset.commit(uri, ll.LanceOperation.Append(stale_append), read_version=3)
    assert lance.dataset(uri).schema.names == ["k", "label", "tags", "pt"]
    assert lance.dataset(uri).count_rows() == _live(keyed_table(0, 3000)).num_rows + 3
