"""DataFusion's date and time functions in lancelet, compared with pylance: fields,
truncation (in time zones, across daylight-saving changes), conversions, NULLs and
result types, in projections and filters."""

from __future__ import annotations

import datetime
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lancelet.expr.functions import dates
from tests.expr.pylance_sql import (
    Pair,
    assert_refused,
    assert_same_filter,
    assert_same_projection,
    edge_table,
    kept,
    write_pair,
)

_SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Pair:
    return write_pair(edge_table(), Path(tmp_path_factory.mktemp("dates")))


_PARTS = [
    "year",
    "YRS",
    "month",
    "day",
    "hour",
    "minute",
    "second",
    "millisecond",
    "microsecond",
    "nanosecond",
    "week",
    "quarter",
    "dow",
    "isodow",
    "doy",
    "epoch",
    "isoyear",
]
_UNITS = [
    "microsecond",
    "millisecond",
    "second",
    "minute",
    "hour",
    "day",
    "week",
    "month",
    "quarter",
    "year",
]

EXPRESSIONS = [
    *(f"date_part('{part}', {column})" for part in _PARTS for column in ("d", "ts", "tz")),
    *(f"date_trunc('{unit}', {column})" for unit in _UNITS for column in ("ts", "tz")),
    "datepart('year', d)",
    "datetrunc('month', ts)",
    "date_trunc('MONTH', ts)",
    "coalesce(extract(dow from d))",
    "coalesce(extract(epoch from ts))",
    "date_part('century', d)",
    "date_trunc('decade', ts)",
    "date_trunc('day', d)",
    "to_date(d)",
    "to_date(ts)",
    "to_date(tz)",
    "to_date(id)",
    "to_date(i8)",
    "to_timestamp(ts)",
    "to_timestamp(tz)",
    "to_timestamp(i)",
    "to_timestamp(d)",
    "to_timestamp_seconds(ts)",
    "to_timestamp_millis(ts)",
    "to_timestamp_micros(ts)",
    "to_timestamp_nanos(ts)",
    "to_timestamp_seconds(i)",
    "to_timestamp_millis(i)",
    "to_timestamp_micros(i)",
    "to_timestamp_nanos(i)",
    "from_unixtime(i)",
    "from_unixtime(id, 'UTC')",
    "from_unixtime(id, 'America/New_York')",
    "from_unixtime(id, '+02:00')",
    "to_unixtime(ts)",
    "to_unixtime(d)",
    "to_unixtime(i)",
    "to_unixtime(tz)",
    "coalesce(make_date(2020, u, 1), d)",
    "coalesce(make_date(id + 2020, id + 1, 28), d)",
    "coalesce(make_date(2021, 2, id + 27), d)",
    "coalesce(d, to_date('2020-06-01'))",
    "coalesce(ts, to_timestamp('2020-06-01T01:02:03.5'))",
    "coalesce(ts, to_timestamp_nanos('2020-06-01 01:02:03.123456789'))",
    "coalesce(ts, to_timestamp('2020-06-01T01:02:03+02:00'))",
    "coalesce(ts, to_timestamp('2020-06-01T01:02:03Z'))",
    "coalesce(to_timestamp_seconds(ts), ts)",
    "coalesce(ts, to_timestamp_seconds(ts))",
]


@pytest.mark.parametrize("sql", EXPRESSIONS)
def test_matches_pylance(sql: str, pair: Pair) -> None:
    assert_same_projection(pair, sql)
    assert_same_filter(pair, f"({sql}) IS NULL")


FILTERS = [
    "date_part('year', d) = 2020",
    "date_part('hour', tz) < 12",
    "coalesce(extract(month from ts)) = 12",
    "date_trunc('month', ts) = TIMESTAMP '2024-12-01 00:00:00'",
    "d < to_date('2000-01-01')",
    "ts >= to_timestamp('2000-02-29 00:00:00')",
    "to_unixtime(ts) < 0",
    "to_date(ts) = d",
    "make_date(2020, 1, 1) = d",
]


@pytest.mark.parametrize("sql", FILTERS)
def test_filters_match_pylance(sql: str, pair: Pair) -> None:
    assert_same_filter(pair, sql)


REFUSED = [
    ("date_part(s, d)", "literal"),
    ("date_part('hour', s)", "date or timestamp"),
    ("to_date(s)", "literal"),
    ("to_date('20200101')", "YYYY-MM-DD"),
    ("to_timestamp(f)", "does not convert double"),
    ("to_timestamp_seconds('2020-01-01 00:00:00.5')", "finer than the unit"),
    ("to_char(ts, '%Y')", "lancelet does not implement SQL function 'to_char'"),
    ("date_bin(ts, ts)", "lancelet does not implement SQL function 'date_bin'"),
]


@pytest.mark.parametrize(("sql", "message"), REFUSED)
def test_refused(sql: str, message: str, pair: Pair) -> None:
    assert_refused(pair, sql, message)


def test_local_mean_time_matches_pylance(tmp_path: Path) -> None:
    """Before a zone took standard time its offset had seconds (New York -4:56:02 until
    1883)."""
    stamps = [datetime.datetime(1850, 6, 1, 12, 34, 56), datetime.datetime(1883, 11, 18, 16)]
    table = pa.table({"id": [0, 1], "t": pa.array(stamps, pa.timestamp("us", "America/New_York"))})
    pair = write_pair(table, tmp_path)
    assert kept(pair.theirs, "date_part('second', t) = 54").values == [0]
    for part in ("second", "minute", "hour", "day"):
        assert_same_projection(pair, f"date_part('{part}', t)")
    for unit in ("minute", "hour", "day"):
        assert_same_projection(pair, f"date_trunc('{unit}', t)")
    assert_same_projection(pair, "to_date(t)")


def test_daylight_saving_past_the_time_zone_data_is_refused(tmp_path: Path) -> None:
    """pyarrow's time zone data ends its daylight-saving changes in 2037 where pylance
    goes on applying the zone's rule; lancelet refuses the later local times."""
    stamps = [datetime.datetime(2038, 7, 1, 12)]
    table = pa.table({"id": [0], "t": pa.array(stamps, pa.timestamp("us", "America/New_York"))})
    pair = write_pair(table, tmp_path)
    assert kept(pair.theirs, "date_part('hour', t) = 8").values == [0]  # EDT, UTC-4
    for sql in ("date_part('hour', t)", "date_trunc('day', t)", "to_date(t)"):
        assert_refused(pair, sql, "where pyarrow's time zone data reads them as pylance's")


@pytest.mark.parametrize("name", ["now()", "current_timestamp", "current_timestamp()", "today()"])
def test_the_clock_is_read_at_each_scan(
    name: str, pair: Pair, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A filter reading the clock is translated anew for each scan (not cached)."""
    sql = f"to_date({name}) > d"
    for moment in (datetime.datetime(1999, 1, 1), datetime.datetime(2200, 1, 1)):
        zoned = moment.replace(tzinfo=datetime.timezone.utc)
        monkeypatch.setattr(dates, "clock", lambda zoned=zoned: zoned)
        ids = kept(pair.ours, sql).values
        table = edge_table()
        expected = [
            i for i, d in enumerate(table["d"].to_pylist()) if d is not None and d < moment.date()
        ]
        assert ids == expected


@pytest.mark.parametrize(
    "sql",
    [
        "ts < now()",
        "ts < current_timestamp",
        "d <= today()",
        "date_part('year', now()) > 2000 AND id > 2",
        "coalesce(current_time) IS NOT NULL AND id < 3",
    ],
)
def test_the_clock_matches_pylance(sql: str, pair: Pair) -> None:
    assert_same_filter(pair, sql)


# --- random timestamps -------------------------------------------------------------------

_ZONES = [
    "UTC",
    "America/New_York",
    "Europe/Berlin",
    "Asia/Kathmandu",
    "America/Sao_Paulo",
    "+05:30",
]
_MOMENTS = st.one_of(
    # Up to 2037, the last daylight-saving change pyarrow's time zone data lists.
    st.datetimes(datetime.datetime(1800, 1, 1), datetime.datetime(2037, 12, 31)),
    # Around daylight-saving changes.
    st.sampled_from(
        [
            datetime.datetime(2024, 11, 3, 5, 30),
            datetime.datetime(2024, 11, 3, 6, 30),
            datetime.datetime(2024, 3, 10, 6, 59, 59),
            datetime.datetime(2024, 3, 31, 1, 30),
            datetime.datetime(2024, 10, 27, 0, 30),
            datetime.datetime(2018, 11, 4, 3, 30),
            datetime.datetime(2018, 2, 18, 2, 30),
            datetime.datetime(1969, 12, 31, 23, 59, 59, 999999),
        ]
    ),
)


@_SETTINGS
@given(
    moments=st.lists(st.none() | _MOMENTS, min_size=1, max_size=10),
    zone=st.sampled_from(_ZONES),
    unit=st.sampled_from(["s", "ms", "us", "ns"]),
    part=st.sampled_from(_PARTS),
    trunc=st.sampled_from(_UNITS),
)
def test_random_timestamps_match_pylance(
    moments: list[datetime.datetime | None],
    zone: str,
    unit: str,
    part: str,
    trunc: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    table = pa.table(
        {
            "id": pa.array(range(len(moments)), pa.int64()),
            "t": pa.array(moments, pa.timestamp("us")).cast(pa.timestamp(unit), safe=False),
            "z": pa.array(moments, pa.timestamp("us")).cast(pa.timestamp(unit, zone), safe=False),
            "d": pa.array([m.date() if m else None for m in moments], pa.date32()),
        }
    )
    pair = write_pair(table, Path(tmp_path_factory.mktemp("random_timestamps")))
    for column in ("t", "z", "d"):
        assert_same_projection(pair, f"date_part('{part}', {column})")
        assert_same_projection(pair, f"date_trunc('{trunc}', {column})")
        assert_same_projection(pair, f"to_date({column})")
        assert_same_projection(pair, f"to_unixtime({column})")
    for name in (
        "to_timestamp",
        "to_timestamp_seconds",
        "to_timestamp_millis",
        "to_timestamp_micros",
    ):
        assert_same_projection(pair, f"{name}(t)")


@_SETTINGS
@given(
    parts=st.lists(
        # Years Python's dates hold (the results are compared as Python dates).
        st.tuples(st.integers(1, 9999), st.integers(0, 13), st.integers(0, 32)),
        min_size=1,
        max_size=8,
    )
)
def test_random_make_date_matches_pylance(
    parts: list[tuple[int, int, int]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    years, months, days = zip(*parts, strict=True)
    table = pa.table(
        {
            "id": pa.array(range(len(parts)), pa.int64()),
            "y": pa.array(years, pa.int32()),
            "m": pa.array(months, pa.int32()),
            "dd": pa.array(days, pa.int32()),
        }
    )
    pair = write_pair(table, Path(tmp_path_factory.mktemp("random_make_date")))
    assert_same_projection(pair, "make_date(y, m, dd)")
