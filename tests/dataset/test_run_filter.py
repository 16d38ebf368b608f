"""A filter tested once per run of a run-length encoded column (dataset/read/run_filter.py):
the rows it keeps are those pyarrow's filter keeps on the source table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lancelet as ll
from lancelet.dataset.engine import FragmentRows, Location
from lancelet.dataset.read.fragment_reader import FragmentReader
from lancelet.dataset.read.projection import ROW_ADDRESS
from lancelet.expr.filter import parse_filter
from lancelet.expr.from_sql import predicate_tree

COLUMNS = ["k", "s", "v"]


def _table(lengths: list[int], gaps: list[int], null_at: int | None) -> pa.Table:
    """``k``: sorted runs (run ``i`` of ``lengths[i]`` rows, ``gaps[i]`` above the one
    before); ``s``: a few strings in long runs; ``v``: each row's number."""
    keys = np.repeat(np.cumsum(gaps), lengths).astype(np.int64)
    rows = len(keys)
    labels = np.array(["apple", "kiwi", "plum"])[(np.arange(rows) // 97) % 3]
    k = pa.array(keys, mask=None if null_at is None else np.arange(rows) == null_at % rows)
    return pa.table({"k": k, "s": pa.array(labels), "v": pa.array(np.arange(rows))})


def _write(tmp: Path, table: pa.Table, version: str, deleted: str | None) -> FragmentReader:
    uri = str(tmp / f"ds-{version}")
    ds = ll.write_dataset(table, uri, data_storage_version=version)
    if deleted is not None:
        ds.delete(deleted)
        ds = ll.dataset(uri)
    return FragmentReader(ds._store, ds._manifest.schema, ds._manifest.fragments[0])


def _expected(table: pa.Table, sql: str, start: int, stop: int, deleted: str | None) -> pa.Table:
    """Independently: the rows of ``[start, stop)`` not deleted that ``sql`` keeps."""
    window = table.slice(start, stop - start).append_column(
        "offset", pa.array(np.arange(start, stop, dtype=np.int64))
    )
    if deleted is not None:
        window = window.filter(~_arrow(deleted, table))  # v is never null
    return window.filter(_arrow(sql, table))


def _arrow(sql: str, table: pa.Table) -> pc.Expression:
    return parse_filter(sql, table.schema)


def _matching(
    reader: FragmentReader, table: pa.Table, sql: str, column: str, start: int, stop: int
) -> pa.Table:
    rows = FragmentRows(Location(reader.store.root), reader.schema, reader.fragment)
    tree = predicate_tree(sql, table.schema)
    return rows.live_matching(COLUMNS, start, stop, ([column], _arrow(sql, table)), tree)


def _check(found: pa.Table, want: pa.Table) -> None:
    assert found.num_rows == want.num_rows
    if not want.num_rows:
        return  # (the other columns are not read for no rows)
    offsets = pc.bit_wise_and(found.column(ROW_ADDRESS), 0xFFFFFFFF).cast(pa.int64())
    assert offsets.to_pylist() == want.column("offset").to_pylist()
    for name in COLUMNS:
        assert found.column(name).to_pylist() == want.column(name).to_pylist(), name


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_filters_on_stored_runs(tmp_path: Path, version: str) -> None:
    lengths = [3 + i % 5 for i in range(3000)]
    table = _table(lengths, [1 + i % 3 for i in range(3000)], None)
    deleted = "v % 7 = 3"
    reader = _write(tmp_path, table, version, deleted)
    rows = table.num_rows
    start, stop = 100, rows - 50
    # Stored as runs (of dictionary indices): the strings in both formats, the keys
    # in 2.2 (2.1 bit-packs them); the runs expand to the column's values.
    stored = ["s", "k"] if version == "2.2" else ["s"]
    for column in stored:
        found = reader.read_runs(column, start, stop)
        assert found is not None, column
        values, counts = found
        assert len(values) < (stop - start) / 2
        expanded = np.repeat(np.asarray(values.column(column).to_pylist(), dtype=object), counts)
        assert expanded.tolist() == table.column(column).to_pylist()[start:stop]
    queries = [
        ("k", "k >= 2000 AND k < 2600"),
        ("k", "k = 4001"),
        ("k", "k IN (5, 6, 7000)"),
        ("k", "k > 100000"),
        ("s", "s = 'kiwi'"),
        ("s", "s >= 'b'"),
    ]
    for column, sql in queries:
        want = _expected(table, sql, start, stop, deleted)
        _check(_matching(reader, table, sql, column, start, stop), want)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lengths=st.lists(st.integers(1, 40), min_size=1, max_size=400),
    gap=st.integers(0, 3),
    bounds=st.tuples(st.integers(-5, 3000), st.integers(0, 400)),
    window=st.tuples(st.floats(0, 1), st.floats(0, 1)),
    null_at=st.none() | st.integers(0, 10_000),
    version=st.sampled_from(["2.0", "2.1", "2.2"]),
    deleted=st.none() | st.integers(2, 9),
    on_strings=st.booleans(),
)
def test_random_runs_keep_the_rows_pyarrow_keeps(
    tmp_path_factory: pytest.TempPathFactory,
    lengths: list[int],
    gap: int,
    bounds: tuple[int, int],
    window: tuple[float, float],
    null_at: int | None,
    version: str,
    deleted: int | None,
    on_strings: bool,
) -> None:
    gaps = [gap + (i % 2) for i in range(len(lengths))]
    table = _table(lengths, gaps, null_at)
    where = None if deleted is None else f"v % {deleted} = 1"
    reader = _write(tmp_path_factory.mktemp("runs"), table, version, where)
    rows = table.num_rows
    start = int(min(window) * rows)
    stop = max(int(max(window) * rows), start + 1) if rows else 0
    stop = min(stop, rows)
    if on_strings:
        column, sql = "s", "s = 'kiwi'"
    else:
        column, sql = "k", f"k >= {bounds[0]} AND k < {bounds[0] + bounds[1]}"
    found = reader.read_runs(column, start, stop)
    if found is not None:
        values, counts = found
        assert int(counts.sum()) == stop - start
        expanded = np.repeat(np.asarray(values.column(column).to_pylist(), dtype=object), counts)
        assert expanded.tolist() == table.column(column).to_pylist()[start:stop]
    _check(
        _matching(reader, table, sql, column, start, stop),
        _expected(table, sql, start, stop, where),
    )


def _answers(monkeypatch: pytest.MonkeyPatch, module: object, name: str) -> list[bool]:
    """Whether each call of ``module.name`` (a runs path) answered, as they come."""
    answered: list[bool] = []
    original = getattr(module, name)

    def counted(*args: object, **kwargs: object) -> object:
        found = original(*args, **kwargs)
        answered.append(found is not None)
        return found

    monkeypatch.setattr(module, name, counted)
    return answered


def _runs_dataset(tmp_path: Path) -> tuple[pa.Table, str]:
    """A dataset of one fragment whose ``k`` and ``s`` are stored as runs, some rows
    deleted (``v % 11 = 4``), and its source table."""
    table = _table([2 + i % 6 for i in range(20_000)], [1 + i % 4 for i in range(20_000)], None)
    uri = str(tmp_path / "ds")
    ll.write_dataset(table, uri, data_storage_version="2.2", max_rows_per_file=30_000)
    ll.dataset(uri).delete("v % 11 = 4")
    return table, uri


def test_scans_filter_on_runs_as_pylance_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dataset scan whose filter tests one column stored as runs: the rows pylance
    finds in the same dataset, found from the runs."""
    import lance

    from lancelet.dataset.read import scanner

    answered = _answers(monkeypatch, scanner, "probed_by_runs")
    table, uri = _runs_dataset(tmp_path)
    for sql in ("k >= 9000 AND k < 9400", "s = 'plum'", "k IN (7, 8, 40000)"):
        ours = ll.dataset(uri).to_table(columns=COLUMNS, filter=sql)
        theirs = lance.dataset(uri).to_table(columns=COLUMNS, filter=sql)
        assert ours.sort_by("v").equals(theirs.sort_by("v")), sql
        assert ours.num_rows == _expected(table, sql, 0, table.num_rows, "v % 11 = 4").num_rows
    assert any(answered)


def test_staged_filters_test_their_first_stage_on_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A filter of several conjuncts whose cheapest stage tests one column stored as
    runs: that stage is answered from the runs, the later ones on the rows it keeps,
    and the rows are pylance's and pyarrow's."""
    import lance

    from lancelet.dataset.read import staged_filter

    answered = _answers(monkeypatch, staged_filter, "probed_by_runs")
    table, uri = _runs_dataset(tmp_path)
    filters = (
        "k >= 9000 AND k < 9400 AND s LIKE 'p%'",  # selective, then a pattern
        "k IN (7, 8, 40000) AND s LIKE '%i%' AND v < 30000",
        "k >= 0 AND s LIKE 'k%'",  # the first stage keeps every row
        "k > 60000 AND s LIKE 'a%'",  # the first stage keeps none
    )
    for sql in filters:
        answered.clear()
        ours = ll.dataset(uri).to_table(columns=COLUMNS, filter=sql)
        theirs = lance.dataset(uri).to_table(columns=COLUMNS, filter=sql)
        assert ours.sort_by("v").equals(theirs.sort_by("v")), sql
        want = _expected(table, sql, 0, table.num_rows, "v % 11 = 4")
        assert ours.sort_by("v").column("v").to_pylist() == want.column("v").to_pylist(), sql
        assert answered and all(answered), sql
