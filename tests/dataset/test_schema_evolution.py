"""Adding, dropping, renaming and casting columns, and merging columns in; pylance
reads every result, and lancelet reads pylance's."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelet as ll
from lancelet.errors import FilterError, RetryableCommitConflictError, SchemaError
from tests.dataset.util import dataset_with_holes, keyed_table, without_every_ninth
from tests.dataset.util import read_by_both as _both
from tests.dataset.util import snapshot as _snapshot
from tests.storage import copy_tree, list_names
from tests.versions import STORAGE_VERSION


@pytest.fixture
def uri(tmp_path: Path) -> str:
    return dataset_with_holes(str(tmp_path / "ds"), 3000)


_live = without_every_ninth


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
    on_disk = set(list_names(Path(uri) / "data"))
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


# -- helpers for comparing with pylance ------------------------------------------------


def _twin(uri: str) -> str:
    """A byte-for-byte copy, for pylance to change the same way lancelet does."""
    twin = uri + "-pylance"
    copy_tree(uri, twin)
    return twin


def _layout(uri: str) -> list[list[list[int]]]:
    """Per fragment, the field ids of each data file, as pylance reports them."""
    return [[list(d.fields) for d in f.metadata.files] for f in lance.dataset(uri).get_fragments()]


def _same_change(
    uri: str, ours: Callable[[ll.LanceDataset], Any], theirs: Callable[[lance.LanceDataset], Any]
) -> pa.Table:
    """Make one change with lancelet and the same on a copy with pylance: both results
    must agree in rows, schema (with field ids) and data file layout."""
    twin = _twin(uri)
    ours(ll.dataset(uri))
    theirs(lance.dataset(twin))
    got = _both(uri)
    assert got.equals(_both(twin))
    assert str(lance.dataset(uri).lance_schema) == str(lance.dataset(twin).lance_schema)
    assert _layout(uri) == _layout(twin)
    return got


def _data_files_are_referenced(uri: str) -> None:
    """Every file under data/ belongs to some version (a failed change left none)."""
    ds = lance.dataset(uri)
    known = {
        d.path
        for v in ds.versions()
        for f in lance.dataset(uri, version=v["version"]).get_fragments()
        for d in f.metadata.files
    }
    assert set(list_names(Path(uri) / "data")) <= known


# -- casts ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("column", "dtype"),
    [
        ("k", pa.int32()),
        ("v", pa.float32()),
        ("s", pa.large_string()),
        ("tags", pa.list_(pa.int64())),
        ("tags", pa.large_list(pa.int16())),
    ],
)
def test_cast_a_column(uri: str, column: str, dtype: pa.DataType) -> None:
    base = _live(keyed_table(0, 3000))

    def cast(ds: Any) -> None:
        ds.alter_columns({"path": column, "data_type": dtype})

    got = _same_change(uri, cast, cast)
    index = base.schema.get_field_index(column)
    want = base.set_column(index, pa.field(column, dtype), base[column].cast(dtype))
    assert got.equals(want)
    # The cast values live in one new data file per fragment, under a new field id.
    ids = [list(d.fields) for d in lance.dataset(uri).get_fragments()[0].metadata.files]
    assert len(ids) == 2 and max(ids[1]) > max(ids[0])
    ll.write_dataset(want.slice(0, 7), uri, mode="append")
    assert _both(uri).slice(want.num_rows).equals(want.slice(0, 7))


def test_cast_rename_and_require(uri: str) -> None:
    both = ({"path": "k", "nullable": False}, {"path": "v", "data_type": pa.float32()})
    before = _snapshot(uri)
    with pytest.raises(SchemaError, match="same call"):
        ll.dataset(uri).alter_columns(*both)
    with pytest.raises(OSError, match="same call"):
        lance.dataset(uri).alter_columns(*both)
    assert _snapshot(uri) == before

    def alter(ds: Any) -> None:
        ds.alter_columns(
            {"path": "k", "data_type": pa.int32(), "name": "key"},
            {"path": "v", "name": "value"},
        )
        ds.alter_columns({"path": "key", "nullable": False})

    got = _same_change(uri, alter, alter)
    assert got.schema.names == ["key", "value", "s", "tags", "pt"]
    assert got.schema.field("key") == pa.field("key", pa.int32(), nullable=False)
    assert got["key"].to_pylist() == _live(keyed_table(0, 3000))["k"].to_pylist()


def test_casting_every_column_drops_the_old_data_files(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    table = pa.table({"a": pa.array([1, 2, 3], pa.int32()), "b": [1.5, None, 2.5]})
    ll.write_dataset(table, uri)

    def cast(ds: Any) -> None:
        ds.alter_columns(
            {"path": "a", "data_type": pa.int64()}, {"path": "b", "data_type": pa.float32()}
        )

    got = _same_change(uri, cast, cast)
    assert got.equals(table.cast(pa.schema([("a", pa.int64()), ("b", pa.float32())])))
    assert _layout(uri) == [[[2, 3]]]


def test_a_deleted_row_does_not_stop_a_narrowing_cast(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    ll.write_dataset(pa.table({"x": pa.array([1, 1000, -5], pa.int64())}), uri)
    ll.dataset(uri).delete("x = 1000")
    ll.dataset(uri).alter_columns({"path": "x", "data_type": pa.int8()})
    assert _both(uri).equals(pa.table({"x": pa.array([1, -5], pa.int8())}))


def test_a_cast_that_loses_values_changes_nothing(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    ll.write_dataset(pa.table({"x": pa.array([1, 1000], pa.int64())}), uri, max_rows_per_file=1)
    before = _snapshot(uri)
    with pytest.raises(SchemaError, match="'x'"):
        ll.dataset(uri).alter_columns({"path": "x", "data_type": pa.int8()})
    assert _snapshot(uri) == before  # the file written for the first fragment is gone too
    with pytest.raises(OSError, match="1000"):
        lance.dataset(uri).alter_columns({"path": "x", "data_type": pa.int8()})


@pytest.mark.parametrize(
    ("column", "dtype"),
    [
        ("k", pa.string()),
        ("k", pa.float64()),
        ("v", pa.int64()),
        ("s", pa.int64()),
        ("s", pa.binary()),
        ("tags", pa.list_(pa.string())),
        ("pt", pa.struct([("x", pa.float32()), ("y", pa.int64())])),
    ],
)
def test_casts_across_type_families_are_refused(uri: str, column: str, dtype: pa.DataType) -> None:
    before = _snapshot(uri)
    with pytest.raises(SchemaError, match=f'Cannot cast column "{column}"'):
        ll.dataset(uri).alter_columns({"path": column, "data_type": dtype})
    assert _snapshot(uri) == before
    with pytest.raises(OSError, match="Cannot cast"):
        lance.dataset(uri).alter_columns({"path": column, "data_type": dtype})


def test_pylance_casts_read_by_lancelet(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    table = keyed_table(0, 500)
    lance.write_dataset(table, uri, data_storage_version=STORAGE_VERSION, max_rows_per_file=200)
    theirs = lance.dataset(uri)
    theirs.delete("k % 7 = 0")
    theirs.alter_columns({"path": "k", "data_type": pa.int16()}, {"path": "s", "name": "label"})
    theirs.alter_columns({"path": "v", "data_type": pa.float32()})
    got = ll.dataset(uri).to_table()
    assert got.equals(lance.dataset(uri).to_table())
    live = table.filter(pa.array(table["k"].to_numpy() % 7 != 0))
    assert got["k"].to_pylist() == live["k"].to_pylist()
    assert got["v"].equals(live["v"].cast(pa.float32()))
    assert ll.dataset(uri).schema == lance.dataset(uri).schema


# -- merge ------------------------------------------------------------------------------


def _extra(keys: list[int | None]) -> pa.Table:
    return pa.table(
        {
            "k": pa.array(keys, pa.int64()),
            "w": pa.array([None if k is None else k * 0.5 for k in keys], pa.float64()),
            "name": pa.array([f"n{k}" for k in keys]),
        }
    )


def _left_join(base: pa.Table, extra: pa.Table, key: str) -> pa.Table:
    """The expected merge, computed with pandas: last duplicate wins, nulls match."""
    right = extra.to_pandas().drop_duplicates(subset=[key], keep="last")
    right = right.set_index(key)
    rows = right.reindex(base[key].to_pandas())
    added = pa.Table.from_pandas(rows.reset_index(drop=True), preserve_index=False)
    for name in added.column_names:
        base = base.append_column(name, added[name].cast(extra.schema.field(name).type))
    return base


def test_merge(uri: str) -> None:
    extra = _extra([5, 1, 2999, 42, 5, 100000, 1500])  # a repeated key, one unknown key

    def merge(ds: Any) -> None:
        ds.merge(extra, "k")

    got = _same_change(uri, merge, merge)
    assert got.equals(_left_join(_live(keyed_table(0, 3000)), extra, "k"))
    assert got.column("w").null_count == got.num_rows - 5
    ll.write_dataset(got.slice(0, 3), uri, mode="append")
    assert _both(uri).slice(got.num_rows).equals(got.slice(0, 3))


def test_merge_on_a_differently_named_key_with_null_keys(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    table = pa.table({"id": pa.array([3, None, 1, 2], pa.int64()), "a": list("wxyz")})
    ll.write_dataset(table, uri, max_rows_per_file=3)
    extra = pa.table({"key": pa.array([1, None, 3], pa.int64()), "b": [10, 20, 30]})

    def merge(ds: Any) -> None:
        ds.merge(extra, "id", right_on="key")

    got = _same_change(uri, merge, merge)
    assert got.column("b").to_pylist() == [30, 20, 10, None]  # null keys match each other
    assert got.column_names == ["id", "a", "b"]


def test_merge_from_other_inputs(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    ll.write_dataset(pa.table({"k": [1, 2, 3], "s": ["a", "b", "c"]}), uri)
    ll.dataset(uri).merge(pa.table({"k": [2], "x": [1.5]}).to_pandas(), "k")
    reader = pa.RecordBatchReader.from_batches(
        pa.schema([("s", pa.string()), ("y", pa.int32())]),
        [pa.record_batch({"s": ["c"], "y": pa.array([7], pa.int32())})],
    )
    ll.dataset(uri).merge(reader, "s")
    got = _both(uri)
    assert got.column("x").to_pylist() == [None, 1.5, None]
    assert got.column("y").to_pylist() == [None, None, 7]


def test_pylance_merge_read_by_lancelet(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    lance.write_dataset(
        keyed_table(0, 600), uri, data_storage_version=STORAGE_VERSION, max_rows_per_file=250
    )
    lance.dataset(uri).delete("k % 5 = 1")
    extra = _extra(list(range(0, 600, 3)))
    lance.dataset(uri).merge(extra, "k")
    got = ll.dataset(uri).to_table()
    assert got.equals(lance.dataset(uri).to_table())
    base = keyed_table(0, 600).filter(pa.array(np.arange(600) % 5 != 1))
    assert got.equals(_left_join(base, extra, "k"))


@pytest.mark.parametrize(
    ("data", "left_on", "right_on", "message"),
    [
        (pa.table({"k": [1], "v": [0.5]}), "k", None, r"\['v'\] already exist"),
        (pa.table({"kk": [1], "k": [2]}), "k", "kk", r"\['k'\] already exist"),
        (pa.table({"x": [1], "w": [2]}), "k", None, "no key column 'k'"),
        (pa.table({"k": [1], "w": [2]}), "nope", "k", "no column 'nope'"),
        (pa.table({"k": pa.array([1], pa.int32()), "w": [2]}), "k", None, "int32"),
        (pa.table({"k": [1]}), "k", None, "no column besides the key"),
    ],
)
def test_bad_merges_change_nothing(
    uri: str, data: pa.Table, left_on: str, right_on: str | None, message: str
) -> None:
    before = _snapshot(uri)
    with pytest.raises(SchemaError, match=message):
        ll.dataset(uri).merge(data, left_on, right_on)
    assert _snapshot(uri) == before


def test_a_merge_that_fails_part_way_leaves_no_files(uri: str) -> None:
    required = pa.schema([("k", pa.int64()), pa.field("w", pa.int64(), nullable=False)])
    extra = pa.table({"k": list(range(0, 1000)), "w": list(range(1000))}, schema=required)
    before = _snapshot(uri)
    # The first fragment (k < 1000) matches; the second has no matches for a required column.
    with pytest.raises(SchemaError, match="'w' is not nullable"):
        ll.dataset(uri).merge(extra, "k")
    assert _snapshot(uri) == before


# -- more bad input ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda ds: ds.add_columns({"s": "k + 1"}), SchemaError, r"\['s'\] already exist"),
        (lambda ds: ds.add_columns(pa.field("v", pa.int8())), SchemaError, "already exist"),
        (lambda ds: ds.add_columns({"a": "nope + 1"}), FilterError, "nope"),
        (lambda ds: ds.alter_columns({"path": "v", "name": "s"}), SchemaError, "collide"),
        (lambda ds: ds.alter_columns({"path": "nope", "name": "x"}), SchemaError, '"nope"'),
        (lambda ds: ds.alter_columns({"path": "k", "nam": "x"}), SchemaError, "nam"),
        (lambda ds: ds.alter_columns({"path": "k"}), SchemaError, "changes nothing"),
        (lambda ds: ds.alter_columns({"path": "k", "data_type": "int8"}), TypeError, "DataType"),
        (lambda ds: ds.alter_columns({"path": "pt.x", "name": "y"}), SchemaError, "y"),
        (lambda ds: ds.alter_columns({"path": "v", "nullable": False}), SchemaError, "nulls"),
        (lambda ds: ds.drop_columns(["k", "nope"]), SchemaError, "'nope'"),
        (lambda ds: ds.drop_columns(["k", "v", "s", "tags", "pt"]), SchemaError, "every"),
        (lambda ds: ds.drop_columns(["k", "v", "s", "tags", "pt.x", "pt.y"]), SchemaError, "every"),
    ],
)
def test_bad_schema_changes_change_nothing(
    uri: str, call: Callable[[ll.LanceDataset], Any], error: type[Exception], message: str
) -> None:
    before = _snapshot(uri)
    with pytest.raises(error, match=message):
        call(ll.dataset(uri))
    assert _snapshot(uri) == before


def test_drop_nested_fields(uri: str) -> None:
    def drop(ds: Any) -> None:
        ds.drop_columns(["pt.x", "tags"])

    got = _same_change(uri, drop, drop)
    base = _live(keyed_table(0, 3000))
    assert got["pt"].to_pylist() == [{"y": y} for y in pc.struct_field(base["pt"], "y").to_pylist()]
    assert got.column_names == ["k", "v", "s", "pt"]
    ll.dataset(uri).drop_columns(["pt.y"])  # the struct's last field: the struct goes too
    assert _both(uri).column_names == ["k", "v", "s"]


def test_new_columns_never_reuse_the_ids_of_dropped_ones(uri: str) -> None:
    def drop_then_add(ds: Any) -> None:
        ds.drop_columns(["pt"])
        ds.add_columns({"z": "k * 3"})
        ds.alter_columns({"path": "z", "data_type": pa.int32()})

    got = _same_change(uri, drop_then_add, drop_then_add)
    base = _live(keyed_table(0, 3000))
    assert got["z"].to_pylist() == [k * 3 for k in base["k"].to_pylist()]
    assert ll.dataset(uri).max_field_id == lance.dataset(uri).max_field_id


@pytest.mark.parametrize(
    "change",
    [
        lambda ds: ds.alter_columns({"path": "k", "data_type": pa.int32()}),
        lambda ds: ds.merge(pa.table({"k": [1, 2], "w": [0.5, 1.5]}), "k"),
    ],
)
def test_stale_rewrites_must_retry_and_leave_no_files(
    uri: str, change: Callable[[ll.LanceDataset], Any]
) -> None:
    stale = ll.dataset(uri)
    ll.write_dataset(keyed_table(5000, 5010), uri, mode="append")
    before = _snapshot(uri)
    with pytest.raises(RetryableCommitConflictError):
        change(stale)
    assert _snapshot(uri) == before
    change(ll.dataset(uri))
    assert _both(uri).num_rows == _live(keyed_table(0, 3000)).num_rows + 10


def test_nested_nullability(uri: str) -> None:
    def require(ds: Any) -> None:
        ds.alter_columns({"path": "pt.x", "nullable": False})

    got = _same_change(uri, require, require)
    assert not got.schema.field("pt").type.field("x").nullable
    # pylance cannot check a list's items for nulls; lancelet can.
    ll.dataset(uri).alter_columns({"path": "tags.item", "nullable": False})
    got = _both(uri)
    assert not got.schema.field("tags").type.value_field.nullable
    assert got.equals(_live(keyed_table(0, 3000)).cast(got.schema))


def _renamed_pt(table: pa.Table, x: str, y: str) -> pa.Table:
    pt = table["pt"].combine_chunks()
    fields = [pa.field(x, pa.float64()), pa.field(y, pa.int64())]
    renamed = pa.StructArray.from_arrays(pt.flatten(), fields=fields, mask=pt.is_null())
    return table.set_column(table.schema.get_field_index("pt"), "pt", renamed)


def test_nested_rename_reads_the_old_values_in_both_libraries(uri: str) -> None:
    copy = uri + "-pylance"
    copy_tree(uri, copy)
    ll.dataset(uri).alter_columns({"path": "pt.x", "name": "xx"})
    lance.dataset(copy).alter_columns({"path": "pt.y", "name": "yy"})
    ll.dataset(uri).drop_columns(["pt.y"])  # a dropped sibling must not shift the values
    live = _live(keyed_table(0, 3000))
    pt = live["pt"].combine_chunks()
    only_x = pa.StructArray.from_arrays([pt.field("x")], names=["xx"], mask=pt.is_null())
    assert _both(uri).equals(live.set_column(4, "pt", only_x))
    assert _both(copy).equals(_renamed_pt(live, "x", "yy"))


def test_fixed_size_lists_read_after_a_rename(tmp_path: Path) -> None:
    uri = str(tmp_path / "vectors")
    k = np.arange(20, dtype=np.int64)
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(np.repeat(k, 4).astype(np.float32)), 4)
    table = pa.table({"k": k, "vec": vectors})
    lance.write_dataset(table, uri, data_storage_version=STORAGE_VERSION)
    assert ll.dataset(uri).to_table().equals(table)
    ll.dataset(uri).alter_columns({"path": "vec", "name": "embedding"})
    assert _both(uri).equals(table.rename_columns(["k", "embedding"]))
