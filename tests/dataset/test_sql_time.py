"""Timestamps, time zones and timestamp literals in SQL filters, against pylance.

The dataset holds instants around the 2024 DST changes of a few zones (and instants
in zones without DST), as timestamps in each zone, in UTC, without a zone (the UTC and
the New York wall-clock time) and as dates; pylance writes it and builds a BTREE index
on every timestamp column.  Filters compare the columns with literals in every form
pylance reads; lancelet must select the rows pylance selects, by scanning and through
the index, or refuse where pylance's answer is wrong (see lancelet.expr.sql.timestamps).
"""

from __future__ import annotations

import datetime
import itertools
import re
import zoneinfo
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lancelet
from lancelet.errors import FilterError
from tests.storage import copy_tree
from tests.versions import STORAGE_VERSION

ZONES = ["America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Asia/Kolkata"]
ZONED = {f"z{i}": zone for i, zone in enumerate(ZONES)}
UTC = datetime.timezone.utc
# What lancelet refuses where pylance answers with another instant, or truncates.
OFFSET_REFUSAL = "has an offset and is compared with a timestamp in the time zone"
FINER_REFUSAL = "more fractional digits than|is finer than the unit"
MIX_REFUSAL = "mixes a DATE and a TIMESTAMP without a time zone"


def _transitions(zone: str) -> list[datetime.datetime]:
    """The instants of 2024 at which ``zone``'s UTC offset changes."""
    tz = zoneinfo.ZoneInfo(zone)
    start = datetime.datetime(2024, 1, 1, tzinfo=UTC)
    hours = [start + datetime.timedelta(hours=h) for h in range(366 * 24)]
    return [
        later
        for earlier, later in itertools.pairwise(hours)
        if earlier.astimezone(tz).utcoffset() != later.astimezone(tz).utcoffset()
    ]


CHANGES = sorted(
    [t for zone in ZONES for t in _transitions(zone)]
    + [datetime.datetime(2024, 6, 1, 18, 30, tzinfo=UTC)]  # midnight in Kolkata
)
TIMES = sorted(
    {t + datetime.timedelta(minutes=10 * k, seconds=k % 3) for t in CHANGES for k in range(-9, 10)}
)


def _table() -> pa.Table:
    rows = [*TIMES, None]
    utc = pa.array(rows, pa.timestamp("us", tz="UTC"))
    columns: dict[str, pa.Array] = {
        "id": pa.array(range(len(rows)), pa.int64()),
        "utc": utc,
        "naive": utc.cast(pa.timestamp("us")),
        "d": pa.array([None if t is None else t.date() for t in rows], pa.date32()),
    }
    for name, zone in ZONED.items():
        columns[name] = utc.cast(pa.timestamp("us", tz=zone))
    # The New York wall-clock times, without a zone: some repeat, none is skipped.
    wall = [None if t is None else t.astimezone(zoneinfo.ZoneInfo(ZONES[0])) for t in rows]
    columns["ny_wall"] = pa.array(
        [None if w is None else w.replace(tzinfo=None) for w in wall], pa.timestamp("us")
    )
    columns["s_ts"] = utc.cast(pa.timestamp("s", tz="UTC"))
    return pa.table(columns)


@pytest.fixture(scope="module")
def paths(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The dataset pylance wrote (with BTREE indices), and a copy without indices."""
    root = Path(tmp_path_factory.mktemp("sql_time"))
    plain = root / "plain"
    lance.write_dataset(_table(), plain, data_storage_version=STORAGE_VERSION)
    indexed = root / "indexed"
    copy_tree(plain, indexed)
    dataset = lance.dataset(indexed)
    for column in COLUMNS:
        dataset.create_scalar_index(column, "BTREE")
    return plain, indexed


@pytest.fixture(scope="module")
def oracle(paths: tuple[Path, Path]) -> lance.LanceDataset:
    return lance.dataset(paths[0])


@pytest.fixture(scope="module")
def datasets(paths: tuple[Path, Path]) -> tuple[lancelet.LanceDataset, lancelet.LanceDataset]:
    return lancelet.dataset(paths[0]), lancelet.dataset(paths[1])


def _pylance_ids(oracle: lance.LanceDataset, sql: str) -> list[int] | Exception:
    try:
        return sorted(oracle.to_table(filter=sql, columns=["id"])["id"].to_pylist())
    except (ValueError, OSError) as e:
        return e


def _lancelet_ids(
    dataset: lancelet.LanceDataset, sql: str, use_scalar_index: bool = True
) -> list[int] | Exception:
    try:
        table = dataset.to_table(filter=sql, columns=["id"], use_scalar_index=use_scalar_index)
    except (ValueError, OSError) as e:
        return e
    return sorted(table["id"].to_pylist())


# --- literal forms ----------------------------------------------------------------------

_OFFSETS = ["Z", "z", "+02:00", "-05:00", "+0530", "-03", " +01:00", "+00:00", " UTC"]


@st.composite
def wall_text(draw: st.DrawFn, zone: str, digits: int) -> str:
    """A wall-clock time in ``zone`` near one of the DST changes, as text, with
    ``digits`` fractional digits, and sometimes an offset."""
    change = draw(st.sampled_from(CHANGES)).astimezone(zoneinfo.ZoneInfo(zone))
    wall = change.replace(tzinfo=None) + datetime.timedelta(
        minutes=draw(st.integers(-100, 100)), seconds=draw(st.sampled_from([0, 0, 1, 59]))
    )
    text = wall.isoformat(sep=draw(st.sampled_from(["T", " "])))
    if digits:
        text += "." + "".join(draw(st.sampled_from("0123456789")) for _ in range(digits - 1))
        text += draw(st.sampled_from("05"))
    if draw(st.integers(0, 2)) == 0:
        text += draw(st.sampled_from(_OFFSETS))
    return text


@st.composite
def literal(draw: st.DrawFn, zone: str) -> str:
    digits = draw(st.sampled_from([0, 0, 0, 3, 6, 6, 9]))
    text = draw(wall_text(zone, digits))
    form = draw(st.sampled_from(["TIMESTAMP", "CAST", "TIMESTAMP(p)", "DATE"]))
    if form == "TIMESTAMP":
        return f"TIMESTAMP '{text}'"
    if form == "CAST":
        return f"CAST('{text}' AS TIMESTAMP)"
    if form == "TIMESTAMP(p)":
        # Mostly a precision that holds the digits, sometimes one that does not.
        fitting = [p for p in (0, 3, 6, 9) if p >= digits]
        return f"TIMESTAMP({draw(st.sampled_from(fitting * 3 + [0, 3, 6, 9]))}) '{text}'"
    return f"DATE '{text[:10]}'"


# Each column, and the zone whose wall-clock times its values are near.
COLUMNS = {"utc": "UTC", "naive": "UTC", "d": "UTC", "ny_wall": ZONES[0], **ZONED}
OPERATORS = ["=", "<>", "<", "<=", ">", ">="]


@st.composite
def comparison(draw: st.DrawFn) -> str:
    column = draw(st.sampled_from(sorted(COLUMNS)))
    # Mostly times near the column's values, sometimes in another zone's.
    zone = draw(st.sampled_from([COLUMNS[column]] * 3 + ZONES))
    shape = draw(st.sampled_from(["op", "op", "flipped", "between", "in"]))
    first = draw(literal(zone))
    if shape == "op":
        return f"{column} {draw(st.sampled_from(OPERATORS))} {first}"
    if shape == "flipped":
        return f"{first} {draw(st.sampled_from(OPERATORS))} {column}"
    second = draw(literal(zone))
    if shape == "between":
        return f"{column} BETWEEN {first} AND {second}"
    return f"{column} IN ({first}, {second})"


def _finer_than_micros(sql: str) -> bool:
    """Whether a literal of ``sql`` has a fractional digit other than 0 beyond its
    precision or beyond microseconds (the unit of the columns)."""
    for precision, fraction in re.findall(r"TIMESTAMP(?:\((\d)\))? '[^'.]*\.(\d+)", sql):
        if fraction[min(int(precision or 6), 6) :].strip("0"):
            return True
    return any(f[6:].strip("0") for f in re.findall(r"CAST\('[^'.]*\.(\d+)", sql))


def _truncated_in_list(sql: str) -> bool:
    """Whether an IN list holds timestamp literals of different precisions, one with
    a fractional digit other than 0 beyond the coarsest (pylance types the list in it)."""
    if " IN (" not in sql:
        return False
    stamps = [
        (int(p or 6), text) for p, text in re.findall(r"TIMESTAMP(?:\((\d)\))? '([^']*)'", sql)
    ]
    stamps += [(6, text) for text in re.findall(r"CAST\('([^']*)' AS TIMESTAMP\)", sql)]
    if len({precision for precision, _ in stamps}) < 2:
        return False
    coarsest = min(precision for precision, _ in stamps)
    fractions = [re.search(r":\d\d\.(\d+)", text) for _, text in stamps]
    return any(f is not None and f.group(1)[coarsest:].strip("0") for f in fractions)


def _deliberate_refusal(sql: str, error: Exception) -> bool:
    """Whether ``error`` is one of lancelet's documented refusals, for a filter it
    applies to (see lancelet.expr.sql.timestamps)."""
    message = str(error)
    zoned = any(re.search(rf"\b{name}\b", sql) for name in ZONED)
    if MIX_REFUSAL in message:
        mixed = re.search(r" IN \(| BETWEEN ", sql) and "DATE '" in sql and "TIMESTAMP" in sql
        return zoned and bool(mixed)
    if OFFSET_REFUSAL in message:
        offset = r":\d\d(\.\d+)?(Z|z| ?[+-]\d\d(:?\d\d)?| UTC)'"
        return zoned and bool(re.search(offset, sql))
    if re.search(FINER_REFUSAL, message):
        return _finer_than_micros(sql) or _truncated_in_list(sql)
    return False


def _agree(expected: list[int] | Exception, got: list[int] | Exception, sql: str) -> None:
    if isinstance(expected, Exception):
        assert isinstance(got, Exception), f"{sql}: pylance refuses ({expected}), lancelet {got}"
        return
    if isinstance(got, Exception):
        assert isinstance(got, FilterError) and _deliberate_refusal(sql, got), (sql, got)
        return
    assert got == expected, sql


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sql=comparison())
def test_literals_match_pylance(
    sql: str,
    oracle: lance.LanceDataset,
    datasets: tuple[lancelet.LanceDataset, lancelet.LanceDataset],
) -> None:
    expected = _pylance_ids(oracle, sql)
    plain, indexed = datasets
    scanned = _lancelet_ids(plain, sql)
    _agree(expected, scanned, sql)
    # Through the BTREE indices, and with them ignored: the same rows.
    for got in (_lancelet_ids(indexed, sql), _lancelet_ids(indexed, sql, use_scalar_index=False)):
        if isinstance(scanned, Exception):
            assert isinstance(got, Exception) and str(got) == str(scanned), sql
        else:
            assert got == scanned, sql


@st.composite
def string_comparison(draw: st.DrawFn) -> tuple[str, str]:
    """``col op 'text'`` for lancelet, and what pylance accepts for it: ``coalesce(col,
    col) op 'text'`` (pylance refuses a string compared with a column itself)."""
    column = draw(st.sampled_from(sorted(set(COLUMNS) - {"d"})))
    zone = draw(st.sampled_from([COLUMNS[column]] * 3 + ZONES))
    text = draw(wall_text(zone, draw(st.sampled_from([0, 0, 3, 6]))))
    op = draw(st.sampled_from(OPERATORS))
    return f"{column} {op} '{text}'", f"coalesce({column}, {column}) {op} '{text}'"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sqls=string_comparison())
def test_strings_read_as_pylance_casts_them(
    sqls: tuple[str, str],
    oracle: lance.LanceDataset,
    datasets: tuple[lancelet.LanceDataset, lancelet.LanceDataset],
) -> None:
    """A string compared with a timestamp: its instant when it has an offset, otherwise
    wall-clock time in the column's zone (an error where that is not one instant)."""
    sql, pylance_sql = sqls
    expected = _pylance_ids(oracle, pylance_sql)
    got = _lancelet_ids(datasets[0], sql)
    _agree(expected, got, sql)
    assert _lancelet_ids(datasets[1], sql) == got or isinstance(got, Exception)


def test_column_comparisons_match_pylance(
    oracle: lance.LanceDataset, datasets: tuple[lancelet.LanceDataset, lancelet.LanceDataset]
) -> None:
    """Zoned columns compare as instants; a column without a zone is read as wall-clock
    time in the other's zone (an error, in both, where that time is not one instant)."""
    columns = sorted(COLUMNS)
    for left, right in itertools.combinations(columns, 2):
        for op in ("=", "<", ">="):
            sql = f"{left} {op} {right}"
            _agree(_pylance_ids(oracle, sql), _lancelet_ids(datasets[0], sql), sql)


# Wall-clock literals (no offset) against zoned columns, around DST changes: pylance
# reads them in the column's zone.
WALL_CLOCK_FILTERS = [
    "z0 >= TIMESTAMP '2024-03-10 01:00:00'",
    "z0 < TIMESTAMP '2024-03-10 03:10:00' AND z0 > TIMESTAMP '2024-03-10 00:30:00'",
    "z0 BETWEEN TIMESTAMP '2024-11-03 00:20:00' AND TIMESTAMP '2024-11-03 02:30:00'",
    "z1 IN (TIMESTAMP '2024-03-31 01:50:02', TIMESTAMP '2024-03-31 03:00:00')",
    "z2 <= CAST('2024-04-07 01:20:00' AS TIMESTAMP)",
    "z2 = TIMESTAMP(3) '2024-10-06 02:40:01.000'",
    "z3 > TIMESTAMP '2024-06-02 00:00:00' OR z3 < DATE '2024-03-10'",
    "utc > TIMESTAMP '2024-03-10 07:00:00'",
]


@pytest.mark.parametrize("sql", WALL_CLOCK_FILTERS)
def test_wall_clock_literals_in_every_operation(
    sql: str, paths: tuple[Path, Path], tmp_path: Path
) -> None:
    plain, indexed = paths
    expected = _pylance_ids(lance.dataset(plain), sql)
    assert isinstance(expected, list) and expected, sql  # rows, not an error
    for path in (plain, indexed):
        dataset = lancelet.dataset(path)
        assert _lancelet_ids(dataset, sql) == expected
        assert _lancelet_ids(dataset, sql, use_scalar_index=False) == expected
        assert dataset.count_rows(filter=sql) == len(expected)
    # delete and update(where=) change the rows pylance's filter selects.
    for name, path in (("plain", plain), ("indexed", indexed)):
        deleted = tmp_path / f"deleted-{name}"
        copy_tree(path, deleted)
        lancelet.dataset(deleted).delete(sql)
        remaining = lance.dataset(deleted).to_table(columns=["id"])["id"].to_pylist()
        assert sorted(set(range(len(TIMES) + 1)) - set(remaining)) == expected
        updated = tmp_path / f"updated-{name}"
        copy_tree(path, updated)
        lancelet.dataset(updated).update({"id": "id + 1000"}, where=sql)
        ids = lance.dataset(updated).to_table(columns=["id"])["id"].to_pylist()
        assert sorted(i - 1000 for i in ids if i >= 1000) == expected


def _units_table() -> pa.Table:
    base = 1_710_054_000 * 10**9  # 2024-03-10 07:00:00 UTC, in nanoseconds
    nanos = [base - 1, base, base + 1, base + 500_000_000, base + 1_000_000_000]
    ns = pa.array(nanos, pa.int64())
    return pa.table(
        {
            "id": pa.array(range(len(nanos)), pa.int64()),
            "ns": ns.cast(pa.timestamp("ns")),
            "us": pc_floor(ns, 1_000).cast(pa.timestamp("us")),
            "s": pc_floor(ns, 10**9).cast(pa.timestamp("s")),
            "ny": pc_floor(ns, 1_000).cast(pa.timestamp("us", tz=ZONES[0])),
            "hnl": pc_floor(ns, 1_000).cast(pa.timestamp("us", tz="Pacific/Honolulu")),
            "d": pa.array([datetime.date(2024, 3, 10)] * len(nanos), pa.date32()),
        }
    )


def pc_floor(values: pa.Array, step: int) -> pa.Array:
    """``values`` divided by ``step``, rounded down."""
    return pa.array([v // step for v in values.to_pylist()], pa.int64())


def _instant_ids(table: pa.Table, keep: object) -> list[int]:
    """The ids of the rows whose ``ny`` instant satisfies ``keep`` (computed in Python)."""
    return [
        row["id"]
        for row in table.select(["id", "ny"]).to_pylist()
        if keep(row["ny"])  # type: ignore[operator]
    ]


SEVEN_UTC = datetime.datetime(2024, 3, 10, 7, tzinfo=UTC)

# pylance's answer to each, and the one the SQL asks for (both computed from the data),
# differ; lancelet refuses with the message given.
REFUSED = [
    # The literal's UTC wall-clock time (07:00) read in New York: 11:00 UTC.
    (
        "ny >= TIMESTAMP '2024-03-10T07:00:00Z'",
        lambda t: _instant_ids(t, lambda v: v >= SEVEN_UTC),
        OFFSET_REFUSAL,
    ),
    (
        "ny < CAST('2024-03-10 09:00:00+02:00' AS TIMESTAMP)",
        lambda t: _instant_ids(t, lambda v: v < SEVEN_UTC),
        OFFSET_REFUSAL,
    ),
    # TIMESTAMP is microseconds in pylance: it drops the last three digits.
    ("ns = TIMESTAMP '2024-03-10 07:00:00.000000001'", lambda t: [2], FINER_REFUSAL),
    # The literal truncated to the column's seconds: 07:00:00 >= 07:00:00.5.
    ("s >= TIMESTAMP '2024-03-10 07:00:00.5'", lambda t: [4], FINER_REFUSAL),
    ("us > TIMESTAMP(9) '2024-03-10 06:59:59.999999999'", lambda t: [0, 1, 2, 3, 4], FINER_REFUSAL),
    # An IN list typed in its coarsest unit: pylance truncates 07:00:00.5 to seconds.
    (
        "us IN (TIMESTAMP(0) '2024-03-10 07:00:01', TIMESTAMP '2024-03-10 07:00:00.5')",
        lambda t: [3, 4],
        FINER_REFUSAL,
    ),
    # Columns of different units compared in the coarser one, both truncated.
    ("ns = us", lambda t: [1, 3, 4], "different units"),
    ("s < ns", lambda t: [0, 2, 3], "different units"),
    # In an IN list with a date, pylance reads the timestamps as UTC.
    (
        "ny IN (DATE '2024-01-01', TIMESTAMP '2024-03-10 03:00:00')",
        lambda t: _instant_ids(t, lambda v: v == SEVEN_UTC),
        MIX_REFUSAL,
    ),
    # In BETWEEN with a timestamp, pylance reads the date as midnight in Honolulu
    # (10:00 UTC), where alone it is midnight UTC.
    (
        "hnl BETWEEN DATE '2024-03-10' AND TIMESTAMP '2024-03-11 00:00:00'",
        lambda t: [0, 1, 2, 3, 4],
        MIX_REFUSAL,
    ),
]


@pytest.mark.parametrize(("sql", "meant", "refusal"), REFUSED)
def test_refused_where_pylance_answers_otherwise(
    sql: str, meant: object, refusal: str, tmp_path: Path
) -> None:
    table = _units_table()
    lance.write_dataset(table, tmp_path / "d", data_storage_version=STORAGE_VERSION)
    pylance = _pylance_ids(lance.dataset(tmp_path / "d"), sql)
    assert isinstance(pylance, list)
    assert pylance != meant(table)  # type: ignore[operator]
    with pytest.raises(FilterError, match=refusal):
        lancelet.dataset(tmp_path / "d").to_table(filter=sql)


TEXTS = [
    "2024-11-03 06:00",
    "2024-11-03T060000",
    "2024-11-03T06:00:00.",
    "2024-11-03T06:00:00 Z",
    "2024-11-03T06:00:00+2",
    "2024-11-03T06:00:00+0200",
    "2024-11-03T06:00:00-02",
    "2024-11-03T06:00:00+02:00:00",
    "2024-1-03T06:00:00",
    "2024-11-03T24:00:00",
    "2024-02-30T00:00:00",
    "2024-11-03t06:00:00z",
    "2024-11-03T06:00:00Europe/Berlin",
    "2024-11-03T06:00:00 Europe/Berlin",
    "2024-11-03T06:00:00 europe/berlin",
    "2024-11-03",
    "2024-11-03 ",
    "\u0662\u0660\u0662\u0664-11-03",
    "2024-11-03T06:00:00.1234567891",
]


@pytest.mark.parametrize("text", TEXTS)
def test_timestamp_texts_read_as_pylance_reads_them(
    text: str, oracle: lance.LanceDataset, datasets: tuple[lancelet.LanceDataset, Any]
) -> None:
    """The forms arrow-rs reads (and refuses), with and without the TIMESTAMP keyword."""
    for sql, pylance_sql in (
        (f"naive >= TIMESTAMP '{text}'", f"naive >= TIMESTAMP '{text}'"),
        (f"utc >= '{text}'", f"coalesce(utc, utc) >= '{text}'"),
    ):
        expected, got = _pylance_ids(oracle, pylance_sql), _lancelet_ids(datasets[0], sql)
        if isinstance(got, FilterError) and "more than nine fractional digits" in str(got):
            continue  # pylance drops the tenth digit; lancelet refuses
        _agree(expected, got, sql)
