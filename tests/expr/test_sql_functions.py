"""DataFusion's filter functions (regexp_match, regexp_like, arrow_cast, current_date,
binary literals, the array functions), checked against pylance's own filtering."""

from __future__ import annotations

import datetime
import warnings
from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lancelet
from lancelet.errors import FilterError
from lancelet.expr.functions import arguments
from tests.versions import STORAGE_VERSION


def _table() -> pa.Table:
    stamps = [
        datetime.datetime(2020, 1, 1),
        None,
        datetime.datetime(2021, 1, 1, 23, 59, 59, 999_999),
        datetime.datetime(1969, 12, 31, 12),
        datetime.datetime(2020, 1, 1, 0, 0, 1),
        datetime.datetime(1960, 5, 5, 0, 0, 0, 500_000),
        datetime.datetime(2020, 1, 1, 0, 0, 1, 900_000),
        datetime.datetime(1999, 12, 31, 23, 59, 59),
    ]
    today = datetime.datetime.now(datetime.timezone.utc).date()
    days = [
        datetime.date(2020, 1, 1),
        None,
        datetime.date(2999, 1, 1),
        datetime.date(1960, 1, 1),
        today,
        today - datetime.timedelta(days=1),
        today + datetime.timedelta(days=1),
        datetime.date(2000, 2, 29),
    ]
    return pa.table(
        {
            "id": pa.array(range(8), pa.int64()),
            "s": pa.array(["apple", "Banana", None, "a.b", "xyz", "", "line\nbreak", "ÄPFEL"]),
            "ls": pa.array(["ab", None, "AB", "b]", "a-b", "x", "", "abc"], pa.large_string()),
            "l": pa.array(
                [[1, 2], [3], None, [], [1, None], [2, 2], [None], [4, 1, 3]],
                pa.list_(pa.int64()),
            ),
            "ts": pa.array(stamps, pa.timestamp("us")),
            "d": pa.array(days, pa.date32()),
            "b": pa.array(
                [b"\x0a\x0b", b"", None, b"\x0a", b"zz", b"\xff", b"\x0a\x0b\x0c", b"\x00"]
            ),
            "i32": pa.array([1, None, 3, 4, 5, -7, 0, 2**31 - 1], pa.int32()),
            "f": pa.array([1.5, None, -2.5, 0.0, 3.25, 2.0, float("nan"), -0.0]),
        }
    )


@pytest.fixture(scope="module")
def datasets(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[lance.LanceDataset, lancelet.LanceDataset]:
    root = Path(tmp_path_factory.mktemp("sql_functions"))
    table = _table()
    theirs = lance.write_dataset(table, root / "lance", data_storage_version=STORAGE_VERSION)
    ours = lancelet.write_dataset(table, root / "lancelet", data_storage_version=STORAGE_VERSION)
    return theirs, ours


def _ids(dataset: lance.LanceDataset | lancelet.LanceDataset, sql: str) -> list[int]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = dataset.to_table(filter=sql, columns=["id"])
    return sorted(result["id"].to_pylist())


MATCHING = [
    # regexp_match as a condition: never NULL (NOT keeps the rows where s is NULL).
    "regexp_match(s, '^a')",
    "NOT regexp_match(s, '^a')",
    "NOT (regexp_match(s, 'p') AND id >= 0)",
    "regexp_match(s, 'p') OR id = 2",
    "regexp_match(s, 'A', 'i')",
    "NOT regexp_match(s, 'a', 'i')",
    "regexp_match(s, NULL)",
    "NOT regexp_match(s, NULL)",
    "regexp_match(s, '')",
    "regexp_match(s, '^$')",
    "regexp_match(s, 'k$')",
    "regexp_match(s, '^break', 'm')",
    "regexp_match(s, 'e.b')",
    "regexp_match(s, 'e.b', 's')",
    "regexp_match(s, 'a\\.b')",
    "regexp_match(s, '[.]')",
    "regexp_match(s, '[^a-z]')",
    "regexp_match(s, '[[:upper:]]')",
    "regexp_match(s, '(ap|ba)+')",
    "regexp_match(s, 'p{2}')",
    "regexp_match(s, '(?i)A')",
    "regexp_match(s, '\\x61')",
    "regexp_match(s, '\\x{61}')",
    "regexp_match(s, '(?P<n>a)')",
    "regexp_match(s, 'äpfel', 'i')",
    "regexp_match(ls, '^a')",
    "regexp_match(ls, '[]]')",
    # regexp_like: NULL where s is NULL, so NOT drops those rows.
    "regexp_like(s, '^a')",
    "NOT regexp_like(s, '^a')",
    "regexp_like(s, 'A', 'i')",
    "regexp_like(s, NULL)",
    "NOT regexp_like(s, NULL)",
    "regexp_like(s, 'an') = false",
    "regexp_like(ls, '-')",
    # The array functions.
    "array_has_any(l, [1, 3])",
    "array_has_any(l, make_array(1, 3))",
    "NOT array_has_any(l, [1, 3])",
    "array_has_all(l, [1, 2])",
    "array_has_all(l, make_array(2))",
    "NOT array_has_all(l, [1, 2])",
    "array_contains(l, 1)",
    "NOT array_contains(l, 1)",
    "array_has(l, 3)",
    "array_has(l, NULL)",
    # arrow_cast.
    "arrow_cast(i32, 'Int64') = 3",
    "arrow_cast(i32, 'Int64') > 2147483646",
    "arrow_cast(i32, 'Int64') IS NULL",
    "arrow_cast(arrow_cast(i32, 'Int64'), 'Int64') = 4",
    "arrow_cast(arrow_cast(i32, 'Utf8'), 'Int32') = 4",
    "arrow_cast(id, 'Utf8') = '3'",
    "arrow_cast(id, 'LargeUtf8') = '3'",
    "arrow_cast(id, 'Float64') > 2.5",
    "arrow_cast(i32, 'Float32') < 0",
    "arrow_cast(d, 'Utf8') = '2020-01-01'",
    "arrow_cast(ts, 'Date32') = DATE '2020-01-01'",
    "arrow_cast(ts, 'Date32') = DATE '1969-12-31'",
    "arrow_cast(ts, 'Date32') < DATE '1970-01-01'",
    "arrow_cast(ts, 'Timestamp(Microsecond, None)') = TIMESTAMP '2020-01-01 00:00:01'",
    "arrow_cast(ts, 'Timestamp(us)') < TIMESTAMP '1960-05-05 00:00:01'",
    "arrow_cast(ts, 'Timestamp(Nanosecond, None)') > TIMESTAMP '2020-01-01 00:00:00'",
    "arrow_cast('5', 'Int32') = i32",
    # current_date, and date and timestamp literals.
    "d < current_date",
    "d = current_date",
    "d >= current_date()",
    "NOT (d > current_date)",
    "ts = TIMESTAMP '2020-01-01 00:00:00'",
    "ts > TIMESTAMP '2020-01-01 00:00:00'",
    "ts < TIMESTAMP '1970-01-01 00:00:00'",
    "ts BETWEEN TIMESTAMP '1960-01-01 00:00:00' AND TIMESTAMP '2000-01-01 00:00:00'",
    "d = DATE '2020-01-01'",
    "d IN (DATE '2020-01-01', DATE '2000-02-29')",
    # Binary literals.
    "b = X'0A0B'",
    "b <> X'0A0B'",
    "b = x'0a'",
    "b > X'0A'",
    "b < X'0A0B0C'",
    "b IN (X'FF', X'00', X'')",
    "b = X''",
]


@pytest.mark.parametrize("sql", MATCHING)
def test_matches_pylance(
    sql: str, datasets: tuple[lance.LanceDataset, lancelet.LanceDataset]
) -> None:
    theirs, ours = datasets
    assert _ids(ours, sql) == _ids(theirs, sql)


REFUSED = [
    # Classes Rust reads as Unicode and RE2 as ASCII.
    ("regexp_match(s, '\\d')", "\\d"),
    ("regexp_like(s, '\\w+')", "\\w"),
    ("regexp_match(s, '\\s')", "\\s"),
    ("regexp_match(s, '\\bx')", "\\b"),
    ("regexp_match(s, '\\B')", "\\B"),
    ("regexp_match(s, '\\pL')", "\\p"),
    # Rust-only class syntax, and escapes one engine lacks.
    ("regexp_match(s, '[a-z&&[^aeiou]]')", "'&&'"),
    ("regexp_match(s, '[a-z[0-9]]')", "nested character class"),
    ("regexp_match(s, '[a-z--b]')", "'--'"),
    ("regexp_match(s, '[a~~b]')", "'~~'"),
    ("regexp_match(s, '\\Qa.b\\E')", "\\Q"),
    ("regexp_match(s, '\\<a')", "\\<"),
    ("regexp_match(s, 'a{,2}')", "{,n}"),
    ("regexp_match(s, 'a', 'x')", "flags"),
    ("regexp_match(s, 'a', 'g')", "flags"),
    # Syntax only Rust's regex takes.
    ("regexp_like(s, '(?x) a')", "RE2"),
    ("regexp_like(s, '(?R)a$')", "RE2"),
    ("regexp_match(s, '(?-u)a')", "RE2"),
    ("regexp_match(s, 'a++')", "RE2"),
    ("regexp_match(s, '\\u0061')", "\\u"),
    # Arguments lancelet does not take.
    ("regexp_match(s, s)", "string literal"),
    ("regexp_match(id, '1')", "matches strings"),
    ("regexp_match(s, '^a') IS NULL", "only as a condition"),
    ("regexp_match(s, '^a') = true", "only as a condition"),
    ("arrow_cast(id, 'Decimal128(10, 2)') = 1", "arrow_cast"),
    ("arrow_cast(ts, 'Timestamp(Second, Some(\"UTC\"))') IS NULL", "arrow_cast"),
    ("arrow_cast(id, s) = 1", "arrow_cast"),
    ("arrow_cast(i32, 'Int8') IS NULL", "holds all"),
    ("arrow_cast(i32, 'UInt32') IS NULL", "holds all"),
    ("arrow_cast(i32, 'UInt64') IS NULL", "holds all"),
    ("arrow_cast(f, 'Int32') = 1", "holds all"),
    ("arrow_cast(ts, 'Timestamp(Second, None)') = TIMESTAMP '2020-01-01 00:00:01'", "unit"),
    ("arrow_cast(ts, 'Timestamp(ms)') IS NULL", "unit"),
    ("arrow_cast(id) = 1", "arrow_cast"),
    ("b = X'0A0'", "binary literal"),
    ("_rowoffset > 1", "_rowoffset"),
]


@pytest.mark.parametrize(("sql", "message"), REFUSED)
def test_refused(
    sql: str, message: str, datasets: tuple[lance.LanceDataset, lancelet.LanceDataset]
) -> None:
    _, ours = datasets
    with pytest.raises(FilterError) as raised:
        ours.to_table(filter=sql)
    assert message in str(raised.value)


def test_rowoffset_is_no_column_in_pylance(
    datasets: tuple[lance.LanceDataset, lancelet.LanceDataset],
) -> None:
    theirs, _ = datasets
    with pytest.raises(Exception, match="_rowoffset"):
        theirs.to_table(filter="_rowoffset > 1")


def test_pylance_reads_the_same_regexp_classes_as_rust(
    datasets: tuple[lance.LanceDataset, lancelet.LanceDataset],
) -> None:
    """Why \\d is refused: pylance's \\d matches a non-ASCII digit, RE2's does not."""
    theirs, _ = datasets
    table = pa.table({"id": [0, 1], "s": ["٣", "3"]})
    path = Path(theirs.uri).parent / "digits"
    digits = lance.write_dataset(table, path)
    assert _ids(digits, "regexp_like(s, '\\d')") == [0, 1]


INDEXED = [
    "arrow_cast(i32, 'Int64') = 3",
    "arrow_cast(i32, 'Int64') IS NULL",
    "regexp_match(s, '^a') OR i32 = 5",
    "NOT regexp_match(s, 'p')",
    "regexp_like(s, '^a') AND i32 > 0",
    "b = X'0A0B' OR s = 'xyz'",
    "d < current_date OR i32 = 4",
]


@pytest.mark.parametrize("sql", INDEXED)
def test_scalar_indices_leave_the_functions_alone(
    sql: str, tmp_path: Path, datasets: tuple[lance.LanceDataset, lancelet.LanceDataset]
) -> None:
    theirs, _ = datasets
    ours = lancelet.write_dataset(_table(), tmp_path / "indexed")
    for column in ("i32", "s", "d"):
        ours.create_scalar_index(column, "BTREE")
    assert _ids(ours, sql) == _ids(theirs, sql)


@pytest.mark.parametrize("indexed", [False, True])
def test_current_date_is_read_at_each_scan(
    indexed: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A filter's translation is cached; one reading the clock must not be."""
    table = _table()
    ours = lancelet.write_dataset(table, tmp_path / "dated")
    if indexed:
        ours.create_scalar_index("d", "BTREE")
    sql = "d < current_date"
    for day in (datetime.date(2000, 1, 1), datetime.date(2500, 1, 1)):
        monkeypatch.setattr(arguments, "current_date", lambda day=day: pa.scalar(day, pa.date32()))
        expected = [i for i, d in enumerate(table["d"].to_pylist()) if d is not None and d < day]
        assert _ids(ours, sql) == expected


@pytest.mark.parametrize(
    "sql",
    [
        "array_has_any(v, [CAST(-0.0 AS FLOAT)]) AND array_has_any(v, [0])",
        "array_has_any(v, [0]) AND array_has_any(v, [CAST(-0.0 AS FLOAT)])",
        "array_has_all(v, [CAST(-0.0 AS FLOAT)]) OR array_has_all(v, [0])",
    ],
)
def test_array_has_of_both_zeros_in_one_filter_as_pylance(tmp_path: Path, sql: str) -> None:
    """-0.0 and 0.0 needles in one filter are two searches: Arrow took the two list
    literals as one expression (they compare equal) and answered both with the first."""
    table = pa.table({"v": pa.array([[-0.0], [0.0], [-0.0, 0.0]], pa.list_(pa.float32()))})
    uri = str(tmp_path / "d")
    lance.write_dataset(table, uri, data_storage_version=STORAGE_VERSION)
    theirs = lance.dataset(uri).to_table(filter=sql)
    assert lancelet.dataset(uri).to_table(filter=sql).equals(theirs)
