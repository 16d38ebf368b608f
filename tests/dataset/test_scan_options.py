"""Scan options beyond columns and filter: order_by, _rowoffset, deleted rows, system
columns in a take, a dataset's default scan options, the batch size from the
environment, sessions, and the plans a scan explains.

Results are compared with pylance's on the same data.
"""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest
from lance.dataset import ColumnOrdering as TheirOrdering

import lancelet as ll
from lancelet.dataset import ColumnOrdering
from lancelet.errors import ArgumentError, SchemaError
from tests.versions import STORAGE_VERSION

ROWS = 60
RNG = np.random.default_rng(7)
_ints = RNG.integers(0, 6, ROWS)
TABLE = pa.table(
    {
        "id": pa.array(np.arange(ROWS)),
        "k": pa.array(_ints, mask=_ints == 0),
        "s": pa.array([f"s{i % 7}" if i % 5 else None for i in range(ROWS)]),
    }
)


def _twins(root: Path) -> tuple[lance.LanceDataset, ll.LanceDataset]:
    """The same rows and history in pylance and lancelet: three fragments, then the
    rows with id % 9 == 4 and those below 5 deleted."""
    kwargs = {"max_rows_per_file": 20, "data_storage_version": STORAGE_VERSION}
    theirs = lance.write_dataset(TABLE, root / "p", **kwargs)
    ours = ll.write_dataset(TABLE, root / "l", **kwargs)
    for ds in (theirs, ours):
        ds.delete("id % 9 = 4 OR id < 5")
    return lance.dataset(root / "p"), ll.dataset(root / "l")


@pytest.fixture(scope="module")
def twins(tmp_path_factory: pytest.TempPathFactory) -> tuple[lance.LanceDataset, ll.LanceDataset]:
    return _twins(tmp_path_factory.mktemp("scan_options"))


ORDERINGS = [
    [("k", True, False)],
    [("k", False, True)],
    [("k", True, True), ("s", False, False)],
    [("s", False, True), ("k", False, False)],
]


@pytest.mark.parametrize("keys", ORDERINGS, ids=str)
@pytest.mark.parametrize(("offset", "limit"), [(None, None), (3, 7), (0, 1)])
def test_order_by_as_pylance(
    twins: tuple[lance.LanceDataset, ll.LanceDataset],
    keys: list[tuple[str, bool, bool]],
    offset: int | None,
    limit: int | None,
) -> None:
    theirs, ours = twins
    kwargs = {"offset": offset, "limit": limit, "filter": "id > 7"}
    if limit is not None:
        keys = [*keys, ("id", True, False)]  # which of tied rows a limit keeps is open
    their_order = [TheirOrdering(c, ascending=a, nulls_first=n) for c, a, n in keys]
    our_order = [ColumnOrdering(c, ascending=a, nulls_first=n) for c, a, n in keys]
    want = theirs.to_table(order_by=their_order, **kwargs)
    got = ours.to_table(order_by=our_order, **kwargs)
    # Ties may come in any order: the keys must agree row by row, the rows as a set.
    names = [c for c, _, _ in keys]
    assert got.select(names) == want.select(names)
    assert sorted(got["id"].to_pylist()) == sorted(want["id"].to_pylist())
    batches = ours.to_batches(order_by=our_order, batch_size=4, **kwargs)
    assert pa.Table.from_batches(list(batches), got.schema) == got


def test_order_by_names_and_fragments(twins: tuple[lance.LanceDataset, ll.LanceDataset]) -> None:
    theirs, ours = twins
    assert ours.to_table(order_by=["id"]) == theirs.to_table(order_by=["id"])
    fragment = ours.get_fragments()[1]
    want = theirs.get_fragments()[1].to_table(order_by=[TheirOrdering("k", nulls_first=True)])
    got = fragment.to_table(order_by=[ColumnOrdering("k", nulls_first=True)])
    assert got["k"] == want["k"]
    with pytest.raises(SchemaError, match="nope"):
        ours.to_table(order_by=["nope"])
    with pytest.raises(TypeError):
        ours.to_table(order_by="id")


@pytest.mark.parametrize("filter", [None, "id > 30", "k = 3"])
def test_rowoffset_as_pylance(
    twins: tuple[lance.LanceDataset, ll.LanceDataset], filter: str | None
) -> None:
    theirs, ours = twins
    columns = ["id", "_rowoffset", "_rowid"]
    assert ours.to_table(columns=columns, filter=filter) == theirs.to_table(
        columns=columns, filter=filter
    )
    fragment = 2
    want = theirs.get_fragments()[fragment].to_table(columns=["_rowoffset", "id"])
    assert ours.get_fragments()[fragment].to_table(columns=["_rowoffset", "id"]) == want
    # A row's offset is its position for take.
    offsets = ours.to_table(columns=["_rowoffset", "id"], filter=filter)
    taken = ours.take(offsets["_rowoffset"].to_numpy(), columns=["id"])
    assert taken["id"] == offsets["id"]


@pytest.mark.parametrize("filter", [None, "id < 30", "k = 2"])
def test_include_deleted_rows_as_pylance(
    twins: tuple[lance.LanceDataset, ll.LanceDataset], filter: str | None
) -> None:
    theirs, ours = twins
    kwargs = {"with_row_id": True, "include_deleted_rows": True, "filter": filter}
    columns = ["id", "k", "_rowoffset"]
    want = theirs.to_table(columns=columns, **kwargs)
    assert ours.to_table(columns=columns, **kwargs) == want
    assert ours.scanner(**kwargs).count_rows() == want.num_rows
    assert ours.to_table(columns=["id"], limit=4, offset=2, **kwargs) == theirs.to_table(
        columns=["id"], limit=4, offset=2, **kwargs
    )
    with pytest.raises(ValueError, match="with_row_id is false"):
        ours.to_table(include_deleted_rows=True)


def test_include_deleted_rows_through_an_index(tmp_path: Path) -> None:
    theirs, ours = _twins(tmp_path)
    for ds in (theirs, ours):
        ds.create_scalar_index("id", "BTREE")
    kwargs = {"with_row_id": True, "include_deleted_rows": True, "filter": "id < 12"}
    assert ours.to_table(**kwargs) == theirs.to_table(**kwargs)


@pytest.mark.parametrize(
    "columns",
    [["_rowid"], ["_rowaddr", "_rowid"], ["id", "_rowid", "_rowaddr"], ["_rowid", "_rowid"]],
    ids=str,
)
def test_take_system_columns_as_pylance(
    twins: tuple[lance.LanceDataset, ll.LanceDataset], columns: list[str]
) -> None:
    theirs, ours = twins
    indices = [0, 17, 3, 40, 41]
    want = theirs.take(indices, columns=columns)
    got = ours.take(indices, columns=columns)
    assert got.column_names == want.column_names
    assert got.columns == want.columns
    offsets = ours.take(indices, columns=["_rowoffset"])["_rowoffset"].to_pylist()
    assert offsets == indices
    assert ours.take([], columns=["_rowid", "id"]).num_rows == 0


def test_default_scan_options_as_pylance(tmp_path: Path) -> None:
    ll.write_dataset(TABLE, tmp_path / "ds", data_storage_version=STORAGE_VERSION)
    for options in ({"with_row_id": True}, {"with_row_address": True}, {"limit": 3}):
        theirs = lance.dataset(tmp_path / "ds", default_scan_options=options)
        ours = ll.dataset(tmp_path / "ds", default_scan_options=options)
        assert ours.schema == theirs.schema
        assert ours.to_table() == theirs.to_table()
        assert ours.to_table(columns=["id"]) == theirs.to_table(columns=["id"])
    with pytest.raises(ValueError, match="Unknown option"):
        ll.dataset(tmp_path / "ds", default_scan_options={"bogus": 1})


def test_batch_size_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = pa.table({"a": np.arange(1000)})
    ll.write_dataset(table, tmp_path / "ds", max_rows_per_file=300)
    monkeypatch.setenv("LANCE_DEFAULT_BATCH_SIZE", "64")
    theirs = [b.num_rows for b in lance.dataset(tmp_path / "ds").to_batches()]
    ours = [b.num_rows for b in ll.dataset(tmp_path / "ds").to_batches()]
    assert ours == theirs
    assert [b.num_rows for b in ll.dataset(tmp_path / "ds").to_batches(batch_size=7)][:3] == [7] * 3
    monkeypatch.setenv("LANCE_DEFAULT_BATCH_SIZE", "zero")
    with pytest.raises(ArgumentError, match="LANCE_DEFAULT_BATCH_SIZE"):
        ll.dataset(tmp_path / "ds").scanner()


def test_scanner_schemas(twins: tuple[lance.LanceDataset, ll.LanceDataset]) -> None:
    theirs, ours = twins
    for kwargs in ({"columns": ["s"]}, {"columns": ["_rowoffset", "id"], "with_row_id": True}):
        scanner = ours.scanner(**kwargs)
        assert scanner.dataset_schema == theirs.scanner(**kwargs).dataset_schema
        assert scanner.projected_schema == theirs.scanner(**kwargs).projected_schema


def _read_line(plan: str) -> str:
    return next(line for line in plan.splitlines() if "LanceRead:" in line)


def test_plans_describe_the_scan(tmp_path: Path) -> None:
    ds = ll.write_dataset(TABLE, tmp_path / "ds", max_rows_per_file=25)
    plan = ds.scanner(columns=["s"], filter="id < 30", with_row_id=True).explain_plan()
    read = _read_line(plan)
    assert "projection=[id, (s)]" in read and "num_fragments=3" in read
    assert "row_id=true" in read and "filter=id < 30" in read
    assert "ScalarIndexQuery" not in plan

    analyzed = ds.scanner(columns=["id"], filter="id < 30").analyze_plan()
    metrics = dict(re.findall(r"(\w+)=(\d+)", _read_line(analyzed).split("metrics=")[1]))
    assert metrics["output_rows"] == "30" and metrics["rows_scanned"] == str(ROWS)
    assert int(metrics["bytes_read"]) > 0 and int(metrics["iops"]) > 0

    ds.create_scalar_index("id", "BTREE")
    scanner = ds.scanner(columns=["id"], filter="id = 26")
    assert "ScalarIndexQuery: query=[id = 26]@id_idx" in scanner.explain_plan(True)
    metrics = dict(re.findall(r"(\w+)=(\d+)", _read_line(scanner.analyze_plan())))
    assert metrics["output_rows"] == "1" and metrics["rows_scanned"] == "1"
    unindexed = ds.scanner(filter="id = 26", use_scalar_index=False).explain_plan()
    assert "ScalarIndexQuery" not in unindexed
    sorted_plan = ds.scanner(order_by=["k"], limit=2).explain_plan()
    assert sorted_plan.index("Slice") < sorted_plan.index("Sort") < sorted_plan.index("LanceRead")


def test_merge_insert_plans_commit_nothing(tmp_path: Path) -> None:
    ds = ll.write_dataset(TABLE, tmp_path / "ds")
    builder = ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
    assert "MergeInsert" in builder.explain_plan()
    source = TABLE.slice(50).set_column(2, "s", pa.array(["new"] * 10))
    with pytest.raises(SchemaError):
        builder.explain_plan(pa.schema([("id", pa.string())]))
    files = sorted(f.path for frag in ds.get_fragments() for f in frag.data_files())
    analysis = builder.analyze_plan(source)
    assert "num_updated_rows=10" in analysis and "num_inserted_rows=0" in analysis
    assert "num_files_written=1" in analysis
    assert ll.dataset(tmp_path / "ds").version == ds.version
    assert ll.dataset(tmp_path / "ds").to_table() == TABLE
    assert sorted(f.path for frag in ds.get_fragments() for f in frag.data_files()) == files
    assert builder.execute(source)["num_updated_rows"] == 10


def test_sessions(tmp_path: Path) -> None:
    ll.write_dataset(TABLE, tmp_path / "ds", max_rows_per_file=25)
    first = ll.dataset(tmp_path / "ds")
    first.to_table()
    assert first.session().size_bytes() > 0
    shared = ll.dataset(tmp_path / "ds", session=first.session())
    assert shared.session().is_same_as(first.session())
    assert shared.to_table() == first.to_table()
    uncached = ll.dataset(tmp_path / "ds", metadata_cache_size_bytes=0)
    assert uncached.to_table() == first.to_table()
    assert uncached.session().size_bytes() == 0
    assert not uncached.session().is_same_as(first.session())
    with pytest.raises(TypeError):
        ll.dataset(tmp_path / "ds", session=object())


def test_read_params(tmp_path: Path) -> None:
    ll.write_dataset(TABLE, tmp_path / "ds")
    params = {"cache_repetition_index": True, "validate_on_decode": True}
    assert ll.dataset(tmp_path / "ds", read_params=params).to_table() == TABLE
    with pytest.raises(ll.errors.UnsupportedOptionError):
        ll.dataset(tmp_path / "ds", read_params={"other": True})
    before = ll.iops_counter()
    ll.dataset(tmp_path / "ds").to_table()
    assert ll.iops_counter() > before


def test_column_ordering_pickles() -> None:
    ordering = ColumnOrdering("k", ascending=False)
    assert pickle.loads(pickle.dumps(ordering)) == ordering


@pytest.mark.parametrize("late", [None, False, True, ["s"], ["id"]], ids=str)
def test_late_materialization_is_honoured(
    twins: tuple[lance.LanceDataset, ll.LanceDataset], late: bool | list[str] | None
) -> None:
    theirs, ours = twins
    kwargs = {"filter": "k = 3", "columns": ["id", "s", "k"], "late_materialization": late}
    assert ours.to_table(**kwargs) == theirs.to_table(**kwargs)
    read = _read_line(ours.scanner(**kwargs).explain_plan())
    delayed = late is None or late is True or late == ["s"]
    assert ("(s)" in read) == delayed and "(k)" not in read
