"""LanceDataset, LanceFragment and LanceScanner are pyarrow's Dataset, Fragment and
Scanner, as pylance's are, so Arrow-dataset consumers (duckdb, polars) take them.

Every query runs on a pylance dataset and a lancelet dataset holding the same rows;
the answers must agree.
"""

from __future__ import annotations

import copy
import pickle
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

import duckdb
import lance
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pa_ds
import pytest

import lancelet as ll
from tests.versions import STORAGE_VERSION

ROWS = 90
_rng = np.random.default_rng(26)
_ints = _rng.integers(-20, 20, ROWS)
TABLE = pa.table(
    {
        "id": pa.array(np.arange(ROWS)),
        "k": pa.array(_ints, mask=_ints % 7 == 0),
        "s": pa.array([f"s{i % 11}" if i % 6 else None for i in range(ROWS)]),
        "f": pa.array(_rng.normal(size=ROWS)),
        "b": pa.array([i % 3 == 0 for i in range(ROWS)]),
        "d": pa.array([date(2024, 1, 1 + i % 28) for i in range(ROWS)]),
        "t": pa.array(
            [datetime(2024, 3, 1, i % 24, tzinfo=timezone.utc) for i in range(ROWS)],
            pa.timestamp("us", "UTC"),
        ),
    }
)


@pytest.fixture(scope="module")
def twins(tmp_path_factory: pytest.TempPathFactory) -> tuple[lance.LanceDataset, ll.LanceDataset]:
    root = tmp_path_factory.mktemp("arrow_dataset")
    kwargs = {"max_rows_per_file": 40, "data_storage_version": STORAGE_VERSION}
    lance.write_dataset(TABLE, root / "p", **kwargs).delete("id % 10 = 3")
    ll.write_dataset(TABLE, root / "l", **kwargs).delete("id % 10 = 3")
    return lance.dataset(root / "p"), ll.dataset(root / "l")


def test_pyarrow_bases_as_pylance(twins: tuple[lance.LanceDataset, ll.LanceDataset]) -> None:
    theirs, ours = twins
    for base in (pa_ds.Dataset, pa_ds.Fragment, pa_ds.Scanner):
        assert isinstance(theirs, base) == isinstance(ours, base)
        assert isinstance(theirs.get_fragments()[0], base) == isinstance(
            ours.get_fragments()[0], base
        )
        assert isinstance(theirs.scanner(), base) == isinstance(ours.scanner(), base)
    assert isinstance(ours, pa_ds.Dataset)
    assert isinstance(ours.get_fragments()[0], pa_ds.Fragment)
    assert isinstance(ours.scanner(), pa_ds.Scanner)


DUCKDB_QUERIES = [
    "select * from ds order by id",
    "select count(*) from ds",
    "select id, s from ds where k > 3 order by id",
    "select id from ds where k > 3 and f < 0.5 and s = 's5' order by id",
    "select id from ds where s in ('s1', 's2') or k is null order by id",
    "select id from ds where s like 's1%' order by id",
    "select id from ds where k between -5 and 5 order by id",
    "select id from ds where b and d >= date '2024-01-10' order by id",
    "select id from ds where t > timestamptz '2024-03-01 12:00:00+00' order by id",
    "select s, count(*), sum(k), max(f) from ds where s is not null group by s order by s",
    "select id, k from ds where k is not null order by id limit 5",
    "select max(id) from ds where f > 0",
]


@pytest.mark.parametrize("query", DUCKDB_QUERIES)
def test_duckdb_replacement_scan(
    twins: tuple[lance.LanceDataset, ll.LanceDataset], query: str
) -> None:
    """duckdb pushes projections and filters into ``scanner(columns=, filter=)``."""
    theirs, ours = twins
    ds = theirs
    expected = duckdb.sql(query).fetchall()
    ds = ours  # noqa: F841  (duckdb finds the local variable by name)
    assert duckdb.sql(query).fetchall() == expected


def test_duckdb_relations_and_registration(
    twins: tuple[lance.LanceDataset, ll.LanceDataset],
) -> None:
    theirs, ours = twins
    results = []
    for ds in (theirs, ours):
        relation = duckdb.from_arrow(ds).filter("k > 7").project("id, s").order("id")
        con = duckdb.connect()
        con.register("t", ds)
        query = "select max(f), count(*) from t where id between 20 and 60"
        scanner = ds.scanner(columns=["id", "k"], filter="id < 30")  # noqa: F841
        from_scanner = duckdb.sql("select sum(k) from scanner where k < 0").fetchall()
        results.append((relation.fetchall(), con.sql(query).fetchall(), from_scanner))
    assert results[1] == results[0]


def _polars_queries() -> list[Any]:
    return [
        lambda lf: lf.select("id", "s"),
        lambda lf: lf.filter(pl.col("k") > 3).select("id", "k"),
        lambda lf: lf.filter(pl.col("s").is_in(["s1", "s2"])).select("id"),
        lambda lf: lf.filter(pl.col("k").is_null() | (pl.col("f") > 1)).select("id", "f"),
        lambda lf: lf.filter(pl.col("d") < date(2024, 1, 5)).select("id", "d"),
        lambda lf: lf.filter(pl.col("t") >= datetime(2024, 3, 1, 20, tzinfo=timezone.utc)),
        lambda lf: lf.filter(pl.col("b")).group_by("s").agg(pl.len()).sort("s"),
        lambda lf: lf.head(4),
    ]


@pytest.mark.parametrize("index", range(len(_polars_queries())))
def test_polars_scan_pyarrow_dataset(
    twins: tuple[lance.LanceDataset, ll.LanceDataset], index: int
) -> None:
    theirs, ours = twins
    query = _polars_queries()[index]
    expected = query(pl.scan_pyarrow_dataset(theirs)).collect()
    got = query(pl.scan_pyarrow_dataset(ours)).collect()
    assert got.equals(expected)


def test_arrow_consumer_calls(twins: tuple[lance.LanceDataset, ll.LanceDataset]) -> None:
    """The calls duckdb and polars make, with pyarrow compute expressions."""
    theirs, ours = twins
    expression = (pc.field("k") > 2) & pc.field("s").is_valid()
    for columns in (["id", "k"], None):
        kwargs = {"columns": columns, "filter": expression, "batch_size": 7}
        want = pa.Table.from_batches(list(theirs.to_batches(**kwargs)))
        batches = list(ours.to_batches(**kwargs))
        assert max(b.num_rows for b in batches) <= 7
        assert pa.Table.from_batches(batches, want.schema).equals(want)
        assert ours.scanner(**kwargs).to_reader().read_all().equals(want)
    assert ours.schema == theirs.schema


def test_pickle_and_copy(twins: tuple[lance.LanceDataset, ll.LanceDataset]) -> None:
    _, ours = twins
    expected = ours.to_table()
    for again in (pickle.loads(pickle.dumps(ours)), copy.copy(ours), copy.deepcopy(ours)):
        assert isinstance(again, ll.LanceDataset)
        assert again.version == ours.version
        assert again.to_table().equals(expected)
    fragment = ours.get_fragments()[1]
    assert pickle.loads(pickle.dumps(fragment)).to_table().equals(fragment.to_table())
    scanner = ours.scanner(columns=["id"], filter="k > 0")
    assert pickle.loads(pickle.dumps(scanner)).to_table().equals(scanner.to_table())


def _failure(call: Any) -> BaseException:
    try:
        call()
    except Exception as exc:
        return exc
    raise AssertionError("the call did not fail")


REFUSED_AS_PYLANCE = {
    "partition_expression": lambda ds: ds.partition_expression,
    "replace_schema": lambda ds: ds.replace_schema(ds.schema),
    "join": lambda ds: ds.join(ds, "id"),
    "fragment partition_expression": lambda ds: ds.get_fragments()[0].partition_expression,
    "fragment physical_schema": lambda ds: ds.get_fragments()[0].physical_schema,
    "scanner take": lambda ds: ds.scanner().take([1]),
}


@pytest.mark.parametrize("case", list(REFUSED_AS_PYLANCE))
def test_unsupported_pyarrow_methods_as_pylance(
    twins: tuple[lance.LanceDataset, ll.LanceDataset], case: str
) -> None:
    theirs, ours = twins
    assert isinstance(_failure(lambda: REFUSED_AS_PYLANCE[case](theirs)), NotImplementedError)
    assert isinstance(_failure(lambda: REFUSED_AS_PYLANCE[case](ours)), NotImplementedError)


# pylance crashes the interpreter on these (its C++ dataset is never set) or fails
# with an AttributeError; lancelet refuses them by name.
CRASH_IN_PYLANCE = {
    "filter": lambda ds: ds.filter(pc.field("k") > 1),
    "sort_by": lambda ds: ds.sort_by("k"),
    "join_asof": lambda ds: ds.join_asof(ds, "id", "id", 1),
    "from_dataset": lambda ds: ds.scanner().from_dataset(ds),
    "from_fragment": lambda ds: ds.scanner().from_fragment(ds.get_fragments()[0]),
}


@pytest.mark.parametrize("case", list(CRASH_IN_PYLANCE))
def test_pyarrow_methods_that_crash_pylance_are_refused(
    twins: tuple[lance.LanceDataset, ll.LanceDataset], case: str
) -> None:
    _, ours = twins
    with pytest.raises(ll.errors.UnsupportedFunctionError, match=case):
        CRASH_IN_PYLANCE[case](ours)


def test_scanner_methods_as_pylance(twins: tuple[lance.LanceDataset, ll.LanceDataset]) -> None:
    theirs, ours = twins
    kwargs = {"columns": ["id", "s"], "filter": "k < 0"}
    assert ours.scanner(**kwargs).head(5).equals(theirs.scanner(**kwargs).head(5))
    assert ours.scanner(**kwargs).dataset_schema == theirs.scanner(**kwargs).dataset_schema
    # pylance's scan_batches ends in a StopIteration (it reads past the last batch);
    # lancelet's returns the batches, as a list like pylance's means to.
    batches = ours.scanner(**kwargs).scan_batches()
    assert isinstance(batches, list)
    assert pa.Table.from_batches(batches).equals(theirs.scanner(**kwargs).to_table())


TO_PANDAS_CALLS = [
    {},
    {"columns": ["s", "id"], "filter": "k > 0"},
    {"columns": {"twice": "id * 2", "s": "s"}, "limit": 5, "offset": 3},
    {"with_row_id": True, "filter": "id > 80"},
    {"columns": ["t", "d"], "date_as_object": False},
    {"columns": ["k"], "integer_object_nulls": True},
]


@pytest.mark.parametrize("kwargs", TO_PANDAS_CALLS, ids=str)
def test_to_pandas_as_pylance(
    twins: tuple[lance.LanceDataset, ll.LanceDataset], kwargs: dict[str, Any]
) -> None:
    theirs, ours = twins
    want = theirs.to_pandas(**kwargs)
    got = ours.to_pandas(**kwargs)
    assert got.equals(want) and list(got.dtypes) == list(want.dtypes)
    scan = {k: v for k, v in kwargs.items() if k in ("columns", "filter", "limit", "offset")}
    for theirs_fragment, ours_fragment in zip(
        theirs.get_fragments(), ours.get_fragments(), strict=True
    ):
        assert ours_fragment.to_pandas(**scan).equals(theirs_fragment.to_pandas(**scan))


def test_slice_has_index_and_checkout_latest(tmp_path: Path) -> None:
    table = pa.table({"a": range(50)})
    results = []
    for lib, name in ((lance, "p"), (ll, "l")):
        ds = lib.write_dataset(table, tmp_path / name, max_rows_per_file=20)
        stale = lib.dataset(tmp_path / name)
        slices = (ds.slice(15, 25), ds.slice(45, 60, columns=["a"]))
        had_index = stale.has_index
        ds.create_scalar_index("a", "BTREE")
        lib.write_dataset(table, tmp_path / name, mode="append")
        assert stale.checkout_latest() is None
        after = (had_index, stale.version, stale.has_index, stale.count_rows())
        errors = [_failure(lambda d=ds, a=a: d.slice(*a)) for a in ((-1, 2), (5, 2))]
        results.append((slices, after, errors))
    (their_slices, their_after, their_errors), (our_slices, our_after, our_errors) = results
    assert our_slices == their_slices
    assert our_after == their_after
    for theirs, ours in zip(their_errors, our_errors, strict=True):
        assert isinstance(ours, ValueError) and isinstance(theirs, ValueError)


BLOB_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64()),
        pa.field("blob", pa.large_binary(), metadata={"lance-encoding:blob": "true"}),
        pa.field("n", pa.int32()),
    ]
)
BLOB_CALLS = [
    {},
    {"blob_mode": "bytes"},
    {"blob_mode": "descriptions"},
    {"columns": ["blob"], "filter": "id > 1"},
    {"columns": {"b2": "blob", "i": "id"}, "blob_mode": "bytes"},
    {"columns": ["n", "blob"], "with_row_address": True},
    {"columns": ["blob"], "with_row_id": True, "blob_mode": "bytes"},
]


def _plain(frame: Any) -> dict[str, list[Any]]:
    """The frame's columns, each BlobFile as its contents."""
    return {
        name: [v.read() if hasattr(v, "readall") else v for v in frame[name]]
        for name in frame.columns
    }


@pytest.mark.skipif(STORAGE_VERSION == "2.0", reason="2.0 files hold no blob columns here")
@pytest.mark.parametrize("kwargs", BLOB_CALLS, ids=str)
def test_to_pandas_blob_modes_as_pylance(tmp_path: Path, kwargs: dict[str, Any]) -> None:
    values = [b"abc", None, b"", b"xyz" * 100, None]
    table = pa.table({"id": range(5), "blob": values, "n": [7, 8, 9, 10, 11]}, schema=BLOB_SCHEMA)
    frames = []
    for lib, name in ((lance, "p"), (ll, "l")):
        ds = lib.write_dataset(table, tmp_path / name, max_rows_per_file=3)
        ds.delete("id = 3")
        frames.append(ds.to_pandas(**kwargs))
    theirs, ours = frames
    assert list(ours.columns) == list(theirs.columns)
    assert list(ours.dtypes) == list(theirs.dtypes)
    if kwargs.get("blob_mode", "lazy") == "lazy":
        kinds = [type(v) is type(None) for v in ours["blob"]]
        assert kinds == [type(v) is type(None) for v in theirs["blob"]]
        assert all(isinstance(v, ll.BlobFile) for v in ours["blob"] if v is not None)
    assert _plain(ours) == _plain(theirs)


def test_to_pandas_refusals(twins: tuple[lance.LanceDataset, ll.LanceDataset]) -> None:
    theirs, ours = twins
    their_error = _failure(lambda: theirs.to_pandas(blob_mode="nope"))
    our_error = _failure(lambda: ours.to_pandas(blob_mode="nope"))
    assert type(their_error) is ValueError and isinstance(our_error, ValueError)
    assert str(our_error) == str(their_error)
