"""``LanceDataset.sql`` against pylance: the same queries give the same column names,
types, nullability and rows; what lancelet does not run is refused by name."""

from __future__ import annotations

import struct
from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.errors import SqlQueryError, UnsupportedSqlError
from tests.dataset.sql_compare import assert_same, run
from tests.versions import STORAGE_VERSION

_NEG_NAN = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000000))[0]
TABLE = pa.table(
    {
        "id": pa.array([1, 2, 3, None, 5, 2, 7], pa.int32()),
        "value": ["a", "b", None, "b", "c", "a", "Zed"],
        "f": [1.5, None, float("nan"), -0.0, 0.0, _NEG_NAN, float("inf")],
        "g": pa.array([1, 1, 2, 2, None, 1, 3], pa.int8()),
        "nn": pa.array([1, 2, 3, 4, 5, 6, 7], pa.int64()),
        "u": pa.array([1, 2, 3, 4, 5, 6, 2**32 - 1], pa.uint32()),
        "b": [True, False, None, True, True, False, None],
        "Mixed": pa.array([1.5, 2.5, 3.5, None, 1.5, 2.5, 0.5], pa.float32()),
        "d": pa.array([1, 2, 3, 4, None, 6, 7], pa.decimal128(10, 2)),
    },
    schema=pa.schema(
        [
            ("id", pa.int32()),
            ("value", pa.string()),
            ("f", pa.float64()),
            ("g", pa.int8()),
            pa.field("nn", pa.int64(), nullable=False),
            ("u", pa.uint32()),
            ("b", pa.bool_()),
            ("Mixed", pa.float32()),
            ("d", pa.decimal128(10, 2)),
        ]
    ),
)


@pytest.fixture(scope="module")
def twins(tmp_path_factory: pytest.TempPathFactory) -> tuple[lance.LanceDataset, ll.LanceDataset]:
    """pylance's and lancelet's view of one dataset of three fragments."""
    uri = tmp_path_factory.mktemp("sql") / "ds"
    lance.write_dataset(TABLE, uri, data_storage_version=STORAGE_VERSION, max_rows_per_file=3)
    return lance.dataset(uri), ll.dataset(uri)


ORDERED = [
    "SELECT * FROM dataset",
    "SELECT id FROM dataset WHERE id > 1 ORDER BY id",
    "SELECT id FROM dataset ORDER BY id DESC",
    "SELECT id FROM dataset ORDER BY id NULLS FIRST",
    "SELECT id FROM dataset ORDER BY id DESC NULLS LAST",
    "SELECT f FROM dataset ORDER BY f",
    "SELECT f FROM dataset ORDER BY f DESC",
    "SELECT id FROM dataset ORDER BY id LIMIT 2 OFFSET 1",
    "SELECT id FROM dataset ORDER BY id OFFSET 3",
    "SELECT id AS x FROM dataset ORDER BY x DESC",
    "SELECT id AS x FROM dataset ORDER BY id DESC",
    "SELECT id * 2 AS x FROM dataset ORDER BY id * 2 DESC",
    "SELECT nn FROM dataset ORDER BY value DESC, nn",
    "SELECT DISTINCT g FROM dataset ORDER BY g",
    "SELECT DISTINCT g, value FROM dataset ORDER BY g, value",
    "SELECT DISTINCT f FROM dataset ORDER BY 1",
    "SELECT id FROM dataset ORDER BY 1 DESC",
    "SELECT g, count(*), sum(id) FROM dataset GROUP BY g ORDER BY g",
    "SELECT g, count(*) AS c FROM dataset GROUP BY g HAVING count(*) > 1 ORDER BY g",
    "SELECT g + 1 AS h, count(*) FROM dataset GROUP BY g + 1 ORDER BY h",
    "SELECT g + 1 AS h, count(*) FROM dataset GROUP BY h ORDER BY h",
    "SELECT g, count(*) FROM dataset GROUP BY 1 ORDER BY 1",
    "SELECT id + 1 AS id FROM dataset GROUP BY id ORDER BY id",
    "SELECT count(*) AS c, g FROM dataset WHERE g IS NOT NULL GROUP BY g ORDER BY count(*), g",
    "SELECT f, count(*) FROM dataset GROUP BY f ORDER BY f",
    "SELECT value, count(*), sum(nn) FROM dataset GROUP BY value ORDER BY value DESC",
    "SELECT g, b, count(*) FROM dataset GROUP BY g, b ORDER BY g, b",
    "SELECT * FROM dataset WHERE id IN (1, 2) ORDER BY nn",
    "SELECT id * 2 AS d FROM dataset ORDER BY d + 1",
    "SELECT g, count(*) AS c FROM dataset WHERE g IS NOT NULL GROUP BY g ORDER BY c + 1, g",
]

UNORDERED = [
    "SELECT id FROM dataset",
    "SELECT 1",
    "SELECT 1 + 2, 'a', true, NULL, 1.5, 2.0, 0.1, -3, 1e-7 FROM dataset",
    "SELECT upper(value), lower(value), length(value) FROM dataset",
    "SELECT id + 1, id * 2 AS d, nn + 1, -nn, nn > 1, id IS NULL, NOT (nn > 2) FROM dataset",
    "SELECT dataset.id FROM dataset",
    "SELECT d.id, d.nn + 1 FROM dataset d",
    "SELECT ID FROM dataset",
    'SELECT "Mixed", "Mixed" * 2 FROM dataset',
    'SELECT id AS User_Id, id AS "User_Id" FROM dataset',
    "SELECT id FROM dataset WHERE value LIKE 'a%' OR g BETWEEN 2 AND 3",
    "SELECT id % 2, id / 2, u + 1, u - 5 FROM dataset",
    "SELECT id FROM dataset WHERE id BETWEEN 1 AND 3",
    "SELECT id IN (1, 2), id NOT IN (1, NULL), value NOT LIKE 'a%' FROM dataset",
    "SELECT dataset.*, nn AS again FROM dataset",
    "SELECT count(*) FROM dataset",
    "SELECT count(1), count() FROM dataset",
    "SELECT count(*), count(id), sum(id), avg(id), min(value), max(f), sum(g), sum(f),"
    " count(DISTINCT value) FROM dataset",
    "SELECT count(*), sum(id), min(f), avg(nn) FROM dataset WHERE id > 100",
    "SELECT min(f), max(f), count(DISTINCT f) FROM dataset",
    'SELECT sum(u), sum(nn), avg(u), min(u), max(nn), sum(d), min(d), max("Mixed") FROM dataset',
    "SELECT avg(f), stddev(id), var(id), stddev_pop(nn), var_pop(nn), var_samp(g),"
    " stddev_samp(g), mean(u) FROM dataset",
    "SELECT bool_and(b), bool_or(b), bool_and(id > 1), bool_or(id > 100) FROM dataset",
    "SELECT sum(id) / count(id) AS m, sum(nn) + 1 FROM dataset",
    "SELECT g, sum(id) + 1, max(value) FROM dataset GROUP BY g",
    "SELECT value FROM dataset GROUP BY value",
    "SELECT count(*) FROM dataset HAVING count(*) > 1",
    "SELECT g, count(*) AS c FROM dataset GROUP BY g HAVING c > 1 AND g > 0",
    "SELECT g, count(*) FROM dataset WHERE g IS NOT NULL GROUP BY g HAVING max(id) > 2",
    "SELECT min(g), max(g) FROM dataset GROUP BY b",
    "SELECT count(DISTINCT g), count(DISTINCT b) FROM dataset GROUP BY value",
]


@pytest.mark.parametrize("sql", ORDERED)
def test_ordered_queries_match_pylance(
    twins: tuple[lance.LanceDataset, ll.LanceDataset], sql: str
) -> None:
    theirs, ours = twins
    assert_same(run(ours, sql), run(theirs, sql), ordered="ORDER BY" in sql, sql=sql)


@pytest.mark.parametrize("sql", UNORDERED)
def test_unordered_queries_match_pylance(
    twins: tuple[lance.LanceDataset, ll.LanceDataset], sql: str
) -> None:
    theirs, ours = twins
    assert_same(run(ours, sql), run(theirs, sql), ordered=False, sql=sql)


def test_upstream_example(twins: tuple[lance.LanceDataset, ll.LanceDataset]) -> None:
    """pylance's own test: a table name, a stream reader, aliases and UPPER."""
    theirs, ours = twins
    for dataset in (theirs, ours):
        result = dataset.sql("SELECT * FROM test WHERE id > 5").table_name("test").build()
        assert pa.Table.from_batches(result.to_batch_records()).column("id").to_pylist() == [7]
        reader = dataset.sql("SELECT value FROM test WHERE id = 1").table_name("Test").build()
        assert [b.to_pydict() for b in reader.to_stream_reader()] == [{"value": ["a"]}]


BUILDERS = [
    ("SELECT * FROM dataset", {"with_row_id": True}),
    ("SELECT * FROM dataset", {"with_row_addr": True}),
    (
        "SELECT _rowid, _rowaddr, id FROM dataset WHERE _rowid > 1",
        {"with_row_id": True, "with_row_addr": True},
    ),
    ("SELECT test.id + 1 FROM test", {"table_name": "test"}),
    ("SELECT id + 1 FROM TEST ORDER BY 1", {"table_name": "Test"}),
]


@pytest.mark.parametrize(("sql", "builder"), BUILDERS)
def test_builder_options_match_pylance(
    twins: tuple[lance.LanceDataset, ll.LanceDataset], sql: str, builder: dict[str, object]
) -> None:
    theirs, ours = twins
    ordered = "ORDER BY" in sql or "*" in sql
    assert_same(run(ours, sql, **builder), run(theirs, sql, **builder), ordered, sql)


def test_no_rows_is_no_batches(twins: tuple[lance.LanceDataset, ll.LanceDataset]) -> None:
    theirs, ours = twins
    sql = "SELECT id, count(*) FROM dataset WHERE id > 100 GROUP BY id"
    assert ours.sql(sql).build().to_batch_records() == []
    assert theirs.sql(sql).build().to_batch_records() == []
    assert_same(run(ours, sql), run(theirs, sql), ordered=True, sql=sql)


def test_batch_size(twins: tuple[lance.LanceDataset, ll.LanceDataset]) -> None:
    theirs, ours = twins
    for dataset in (theirs, ours):
        batches = dataset.sql("SELECT id FROM dataset").batch_size(2).build().to_batch_records()
        assert [b.num_rows for b in batches] == [2, 1, 2, 1, 1] or max(
            b.num_rows for b in batches
        ) <= 2


PYLANCE_REJECTS = [
    "SELECT id",
    "SELECT * FROM x",
    "SELECT * FROM test",
    'SELECT "ID" FROM dataset',
    "SELECT mixed FROM dataset",
    "SELECT Mixed FROM dataset",
    'SELECT value FROM dataset WHERE value = "b"',
    "SELECT _rowid FROM dataset",
    "SELECT id, count(*) FROM dataset",
    "SELECT id FROM dataset HAVING id > 1",
    "SELECT id FROM dataset ORDER BY 2",
    "SELECT id FROM dataset GROUP BY 2",
    "SELECT DISTINCT id FROM dataset ORDER BY nn",
    "SELECT id, id FROM dataset",
    "SELECT id AS a, nn AS a FROM dataset",
    "SELECT id AS x FROM dataset WHERE x > 1",
    "SELECT id FROM dataset LIMIT -1",
    "SELECT dataset.id FROM dataset d",
    "SELECT id FROM dataset; SELECT id FROM dataset",
    "",
]


@pytest.mark.parametrize("sql", PYLANCE_REJECTS)
def test_mistakes_are_value_errors_in_both(
    twins: tuple[lance.LanceDataset, ll.LanceDataset], sql: str
) -> None:
    theirs, ours = twins
    with pytest.raises(ValueError):
        theirs.sql(sql).build().to_batch_records()
    with pytest.raises(ValueError):
        ours.sql(sql).build().to_batch_records()


LANCELET_REFUSES = [
    ("SELECT * FROM dataset a JOIN dataset b ON a.id = b.id", "JOIN"),
    ("SELECT a.id FROM dataset a, dataset b", "JOIN"),
    ("SELECT * FROM (SELECT id FROM dataset)", "subqueries"),
    ("SELECT id FROM dataset WHERE id IN (SELECT id FROM dataset)", "subqueries"),
    ("SELECT id FROM dataset WHERE EXISTS (SELECT 1)", "subqueries"),
    ("WITH t AS (SELECT 1) SELECT * FROM t", "WITH"),
    ("SELECT id, row_number() OVER (ORDER BY id) FROM dataset", "window"),
    ("SELECT id FROM dataset UNION SELECT id FROM dataset", "UNION"),
    ("SELECT id FROM dataset EXCEPT SELECT id FROM dataset", "EXCEPT"),
    ("SELECT median(id) FROM dataset", "median"),
    ("SELECT array_agg(id) FROM dataset", "array_agg"),
    ("SELECT sum(DISTINCT id) FROM dataset", "DISTINCT"),
    ("SELECT avg(d) FROM dataset", "avg of decimals"),
    ("SELECT CASE WHEN id > 1 THEN 1 ELSE 0 END FROM dataset", "AS"),
    ("SELECT upper(CAST(nn AS VARCHAR)) AS s FROM dataset", "Utf8View"),
    ("SELECT DISTINCT ON (g) g FROM dataset", "DISTINCT ON"),
    ("SELECT g, count(*) FROM dataset GROUP BY ROLLUP (g)", "ROLLUP"),
    ("SELECT id FROM dataset LIMIT 1 + 1", "LIMIT"),
]


@pytest.mark.parametrize(("sql", "named"), LANCELET_REFUSES)
def test_what_lancelet_does_not_run_is_refused_by_name(
    twins: tuple[lance.LanceDataset, ll.LanceDataset], sql: str, named: str
) -> None:
    theirs, ours = twins
    theirs.sql(sql).build().to_batch_records()  # pylance runs it
    with pytest.raises(UnsupportedSqlError, match=named):
        ours.sql(sql).build().to_batch_records()


def test_null_group_keys_sort_last_where_pylance_puts_them_first(
    twins: tuple[lance.LanceDataset, ll.LanceDataset],
) -> None:
    """pylance 14 (DataFusion) sorts a NULL group key first when the sort's first key
    is an aggregate and ties, even with an explicit NULLS LAST; lancelet keeps SQL's
    order."""
    theirs, ours = twins
    sql = "SELECT count(*) AS c, g FROM dataset GROUP BY g ORDER BY c, g NULLS LAST"
    assert run(theirs, sql).column("g").to_pylist() == [None, 3, 2, 1]
    assert run(ours, sql).column("g").to_pylist() == [3, None, 2, 1]


def test_float_min_max_by_group_keep_the_total_order(tmp_path: Path) -> None:
    """pylance's min and max of floats over all rows use IEEE 754's total order (NaN
    above inf), but by group they skip NaN and start from the largest finite float, so
    that min of [inf] is 1.8e308; lancelet uses the total order in both."""
    values = [float("inf"), float("nan"), -0.0, 0.0, 1.0]
    table = pa.table({"k": [1, 2, 2, 3, 3, 1][:5], "f": values})
    lance.write_dataset(table, tmp_path / "ds", data_storage_version=STORAGE_VERSION)
    sql = "SELECT k, min(f) AS lo, max(f) AS hi FROM dataset GROUP BY k ORDER BY k"
    theirs = run(lance.dataset(tmp_path / "ds"), sql).to_pydict()
    assert theirs["lo"][0] == 1.7976931348623157e308  # the group of [inf]
    ours = run(ll.dataset(tmp_path / "ds"), sql).to_pydict()
    assert ours["lo"][0] == float("inf") and ours["hi"][0] == float("inf")
    assert ours["lo"][1] == -0.0 and str(ours["hi"][1]) == "nan"  # [nan, -0.0]
    assert str(ours["lo"][2]) == "0.0" and ours["hi"][2] == 1.0  # [0.0, 1.0]
    overall = "SELECT min(f), max(f) FROM dataset"
    assert_same(
        run(ll.dataset(tmp_path / "ds"), overall),
        run(lance.dataset(tmp_path / "ds"), overall),
        True,
        overall,
    )


def test_negative_nan_sorts_and_groups_apart(
    twins: tuple[lance.LanceDataset, ll.LanceDataset],
) -> None:
    """-NaN sorts before everything, NaN after every number; they are two groups."""
    theirs, ours = twins
    for sql in (
        "SELECT f FROM dataset ORDER BY f",
        "SELECT f, count(*) AS n FROM dataset GROUP BY f ORDER BY f",
        "SELECT min(f) AS lo, max(f) AS hi FROM dataset",
    ):
        expected = [
            [struct.pack("<d", v).hex() if isinstance(v, float) else v for v in c]
            for c in run(theirs, sql).to_pydict().values()
        ]
        got = [
            [struct.pack("<d", v).hex() if isinstance(v, float) else v for v in c]
            for c in run(ours, sql).to_pydict().values()
        ]
        assert got == expected, sql


def test_sum_overflow_is_an_error_where_pylance_wraps(tmp_path: Path) -> None:
    table = pa.table({"x": pa.array([2**62, 2**62, 2**62], pa.int64())})
    lance.write_dataset(table, tmp_path / "ds", data_storage_version=STORAGE_VERSION)
    wrapped = run(lance.dataset(tmp_path / "ds"), "SELECT sum(x) FROM dataset")
    assert wrapped.column(0).to_pylist() != [3 * 2**62]  # pylance wraps around
    with pytest.raises(SqlQueryError, match="overflows"):
        run(ll.dataset(tmp_path / "ds"), "SELECT sum(x) FROM dataset")


def test_the_where_clause_uses_scalar_indices(tmp_path: Path) -> None:
    uri = tmp_path / "ds"
    lance.write_dataset(TABLE, uri, data_storage_version=STORAGE_VERSION)
    ours = ll.dataset(uri)
    ours.create_scalar_index("nn", "BTREE")
    sql = "SELECT nn, value FROM dataset WHERE nn > 3 ORDER BY nn"
    assert_same(run(ours, sql), run(lance.dataset(uri), sql), ordered=True, sql=sql)


def test_query_runs_on_the_dataset_version(tmp_path: Path) -> None:
    uri = tmp_path / "ds"
    ours = ll.write_dataset(TABLE, uri)
    query = ours.sql("SELECT count(*) AS n FROM dataset").build()
    ll.write_dataset(TABLE, uri, mode="append")
    assert query.to_batch_records()[0].to_pydict() == {"n": [TABLE.num_rows]}
