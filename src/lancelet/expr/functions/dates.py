"""DataFusion's date and time functions, as pylance evaluates them.

* ``date_part(part, t)`` (``datepart``, ``EXTRACT(part FROM t)``) reads a field of a
  date or timestamp, in the timestamp's own time zone when it has one.  Parts and
  their spellings are DataFusion's; ``second`` is the whole seconds, ``millisecond``
  and ``microsecond`` count the seconds too (``45.123`` s is 45123 ms), ``epoch`` is
  the (fractional) seconds since 1970 as float64.
* ``date_trunc(unit, t)`` (``datetrunc``) truncates in the timestamp's time zone;
  weeks start on Monday.  A date is truncated as a nanosecond timestamp.
* ``to_date``, ``to_timestamp`` (and ``_seconds``, ``_millis``, ``_micros``,
  ``_nanos``), ``from_unixtime``, ``to_unixtime`` and ``make_date`` convert;
  string arguments must be literals in ISO 8601 form.
* ``now()`` / ``current_timestamp``, ``current_time``, ``today()`` read the clock
  (UTC) once per scan, as ``current_date`` does.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet.errors import FilterEvaluationError
from lancelet.expr.functions import zones
from lancelet.expr.functions.base import (
    Call,
    Value,
    apply,
    cast,
    const,
    is_integer,
    is_null,
    is_string,
    null,
    vectorized,
)

__all__ = ["FUNCTIONS", "clock"]

_PARTS = {
    **dict.fromkeys(("year", "years", "y", "yr", "yrs"), "year"),
    **dict.fromkeys(("month", "months", "mon", "mons"), "month"),
    **dict.fromkeys(("day", "days", "d"), "day"),
    **dict.fromkeys(("hour", "hours", "h", "hr", "hrs"), "hour"),
    **dict.fromkeys(("minute", "minutes", "m", "min", "mins"), "minute"),
    **dict.fromkeys(("second", "seconds", "s", "sec", "secs"), "second"),
    **dict.fromkeys(("millisecond", "milliseconds", "ms", "msec", "msecs"), "millisecond"),
    **dict.fromkeys(("microsecond", "microseconds", "us", "usec", "usecs"), "microsecond"),
    **dict.fromkeys(("nanosecond", "nanoseconds"), "nanosecond"),
    **dict.fromkeys(("week", "weeks", "w"), "week"),
    **dict.fromkeys(("quarter", "qtr"), "quarter"),
    "dow": "dow",
    "isodow": "isodow",
    "doy": "doy",
    "epoch": "epoch",
    "isoyear": "isoyear",
}
_FIELDS: dict[str, Callable[..., pc.Expression]] = {
    "year": pc.year,
    "month": pc.month,
    "day": pc.day,
    "hour": pc.hour,
    "minute": pc.minute,
    "second": pc.second,
    "week": pc.iso_week,
    "quarter": pc.quarter,
    "doy": pc.day_of_year,
    "isoyear": pc.iso_year,
}
_TRUNC_UNITS = (
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
)
_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def temporal(call: Call, index: int) -> Value:
    """Argument ``index``, a date32 or timestamp (or NULL)."""
    value = call.value(index)
    if not (
        pa.types.is_date32(value.type) or pa.types.is_timestamp(value.type) or is_null(value.type)
    ):
        raise call.error(f"lancelet takes a date or timestamp here, not {value.type}")
    return value


def _unit(call: Call, what: str) -> str:
    unit = call.str_literal(0, what)
    if unit is None or unit == "":
        raise call.error(f"the {what} must be a non-empty string literal")
    return unit.lower()


# --- date_part ---------------------------------------------------------------------


def date_part(call: Call) -> Value:
    call.arity(2)
    spelled = _unit(call, "part")
    part = _PARTS.get(spelled)
    if part is None:
        raise call.error(f"Date part '{spelled}' not supported")
    value = temporal(call, 1)
    output = {"nanosecond": pa.int64(), "epoch": pa.float64()}.get(part, pa.int32())
    if is_null(value.type):
        return null(output)
    if part == "epoch":
        return _epoch(call, value)
    stamps = cast(value, pa.timestamp("s"), call.node) if pa.types.is_date32(value.type) else value
    # pyarrow's fields of a zoned timestamp take the seconds from UTC; local time's are
    # right (local mean time offsets have seconds).
    stamps = _local(call, stamps)
    if part in _FIELDS:
        result = apply(_FIELDS[part], [stamps], call.node)
    elif part in ("dow", "isodow"):
        result = apply(
            pc.day_of_week,
            [stamps],
            call.node,
            count_from_zero=part == "dow",
            week_start=7 if part == "dow" else 1,
        )
    else:
        result = _sub_second(call, stamps, part)
    return cast(result, output, call.node)


def _sub_second(call: Call, stamps: Value, part: str) -> Value:
    """Seconds and their fraction in milli-, micro- or nanoseconds."""
    digits = {"millisecond": 3, "microsecond": 6, "nanosecond": 9}[part]
    total = cast(apply(pc.second, [stamps], call.node), pa.int64(), call.node)
    for field, width in ((pc.millisecond, 3), (pc.microsecond, 6), (pc.nanosecond, 9)):
        if width > digits:
            break
        scale = const(pa.scalar(1000, pa.int64()))
        total = apply(
            pc.add,
            [
                apply(pc.multiply, [total, scale], call.node),
                cast(apply(field, [stamps], call.node), pa.int64(), call.node),
            ],
            call.node,
        )
    return total


def _epoch(call: Call, value: Value) -> Value:
    if pa.types.is_date32(value.type):
        days = cast(cast(value, pa.int32(), call.node), pa.float64(), call.node)
        return apply(pc.multiply, [days, const(pa.scalar(86400.0))], call.node)
    ticks = cast(cast(value, pa.int64(), call.node), pa.float64(), call.node, safe=False)
    per_second = const(pa.scalar(float(_PER_SECOND[value.type.unit])))
    return apply(pc.divide, [ticks, per_second], call.node)


# --- date_trunc ---------------------------------------------------------------------


def date_trunc(call: Call) -> Value:
    call.arity(2)
    unit = _unit(call, "granularity")
    if unit not in _TRUNC_UNITS:
        raise call.error(
            f"Unsupported date_trunc granularity: '{unit}'. "
            f"Supported values are: {', '.join(_TRUNC_UNITS)}"
        )
    value = temporal(call, 1)
    if is_null(value.type):
        return null(pa.timestamp("ns"))
    if pa.types.is_date32(value.type):
        value = cast(value, pa.timestamp("ns"), call.node)
    if value.type.tz is None:
        return apply(pc.floor_temporal, [value], call.node, unit=unit, week_starts_monday=True)
    if unit in ("microsecond", "millisecond", "second", "minute"):
        # DataFusion truncates these in UTC, whatever the zone's offset.
        naive = cast(value, pa.timestamp(value.type.unit), call.node)
        floored = apply(pc.floor_temporal, [naive], call.node, unit=unit)
        return cast(floored, value.type, call.node)
    return vectorized(call, _local_floor, [value], [pa.scalar(unit)], value.type)


def _local_floor(values: pa.Array, unit: str) -> pa.Array:
    """date_trunc in a timestamp's time zone."""
    return zones.local_floor(values, unit)


def _local(call: Call, value: Value) -> Value:
    """A timestamp with a time zone as its local time (without zone), checked while
    scanning to fall where pyarrow reads the zone as pylance does."""
    if not pa.types.is_timestamp(value.type) or value.type.tz is None:
        return value
    checked = vectorized(call, _trusted, [value], [], value.type)
    return apply(pc.local_timestamp, [checked], call.node)


def _trusted(values: pa.Array) -> pa.Array:
    """The timestamps, after checking that pyarrow reads their zone as pylance does."""
    zones.check_trusted(values)
    return values


# --- conversions --------------------------------------------------------------------

_ISO_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_ISO_TIMESTAMP = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:\d{2})?"
)
_EPOCH = datetime.datetime(1970, 1, 1)


def _parse_date(call: Call, text: str) -> pa.Scalar:
    match = _ISO_DATE.fullmatch(text)
    if match is None:
        raise call.error(f"lancelet reads dates written YYYY-MM-DD only, not {text!r}")
    try:
        return pa.scalar(datetime.date(*map(int, match.groups())), pa.date32())
    except ValueError as e:
        raise call.error(f"{text!r} is not a date: {e}") from None


def _parse_nanoseconds(call: Call, text: str) -> int:
    """An ISO 8601 timestamp literal as nanoseconds since 1970 (UTC)."""
    match = _ISO_TIMESTAMP.fullmatch(text)
    if match is None:
        raise call.error(
            "lancelet reads timestamps written YYYY-MM-DD[(T| )HH:MM:SS[.fraction]][Z|+HH:MM] "
            f"only, not {text!r}"
        )
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    try:
        moment = datetime.datetime(
            int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0)
        )
    except ValueError as e:
        raise call.error(f"{text!r} is not a timestamp: {e}") from None
    nanos = (moment - _EPOCH) // datetime.timedelta(microseconds=1) * 1000
    nanos += int((fraction or "").ljust(9, "0"))
    if zone and zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        nanos -= sign * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60) * 1_000_000_000
    return nanos


def to_date(call: Call) -> Value:
    """``to_date(x)``: a date from a date, a timestamp (its UTC day), days since 1970, or
    a date literal."""
    call.arity(1)
    value = call.value(0)
    if is_null(value.type):
        return null(pa.date32())
    if is_string(value.type):
        text = call.str_literal(0, "date text")
        return null(pa.date32()) if text is None else const(_parse_date(call, text))
    if pa.types.is_date32(value.type):
        return value
    if pa.types.is_timestamp(value.type):
        # The day in the timestamp's time zone.
        return cast(_local(call, value), pa.date32(), call.node, safe=False)
    if is_integer(value.type) and value.type != pa.uint64():
        return cast(cast(value, pa.int32(), call.node), pa.date32(), call.node)
    raise call.error(f"lancelet does not convert {value.type} to a date")


def _to_timestamp(unit: str) -> Callable[[Call], Value]:
    def convert(call: Call) -> Value:
        """``to_timestamp(x)`` (``_seconds``, ...): a timestamp without time zone in this
        unit, from a timestamp (truncated toward zero), a count of units since 1970, or
        an ISO 8601 literal."""
        call.arity(1)
        target = pa.timestamp(unit)
        value = call.value(0)
        if is_null(value.type):
            return null(target)
        if is_string(value.type):
            text = call.str_literal(0, "timestamp text")
            return null(target) if text is None else _timestamp_literal(call, text, unit)
        if pa.types.is_timestamp(value.type):
            naive = cast(value, pa.timestamp(value.type.unit), call.node)
            finer = _PER_SECOND[value.type.unit] > _PER_SECOND[unit]
            return cast(naive, target, call.node, safe=not finer)
        if is_integer(value.type) and value.type != pa.uint64():
            ticks = cast(value, pa.int64(), call.node)
            if unit == "ns" and call.name == "to_timestamp":
                # to_timestamp counts seconds, and gives nanoseconds.
                return cast(cast(ticks, pa.timestamp("s"), call.node), target, call.node)
            return cast(ticks, target, call.node)
        raise call.error(f"lancelet does not convert {value.type} to a timestamp")

    return convert


def _timestamp_literal(call: Call, text: str, unit: str) -> Value:
    nanos = _parse_nanoseconds(call, text)
    per_unit = 1_000_000_000 // _PER_SECOND[unit]
    if nanos % per_unit:
        raise call.error(f"{text!r} has a fraction finer than the unit {unit}")
    return const(pa.scalar(nanos // per_unit, pa.int64()).cast(pa.timestamp(unit)))


def from_unixtime(call: Call) -> Value:
    """``from_unixtime(seconds[, zone])``: a timestamp in seconds."""
    call.arity(1, 2)
    zone = call.str_literal(1, "time zone") if len(call.args) == 2 else None
    target = pa.timestamp("s", tz=zone)
    value = call.value(0)
    if is_null(value.type):
        return null(target)
    if not is_integer(value.type) or value.type == pa.uint64():
        raise call.error(f"takes an integer count of seconds, not {value.type}")
    return cast(cast(value, pa.int64(), call.node), target, call.node)


def to_unixtime(call: Call) -> Value:
    """``to_unixtime(x)``: whole seconds since 1970 (toward zero) of a timestamp or date."""
    call.arity(1)
    value = call.value(0)
    if is_null(value.type):
        return null(pa.int64())
    if is_integer(value.type) and value.type != pa.uint64():
        return cast(value, pa.int64(), call.node)
    if pa.types.is_date32(value.type):
        days = cast(cast(value, pa.int32(), call.node), pa.int64(), call.node)
        return apply(pc.multiply, [days, const(pa.scalar(86400, pa.int64()))], call.node)
    if pa.types.is_timestamp(value.type):
        seconds = cast(
            cast(value, pa.timestamp(value.type.unit), call.node),
            pa.timestamp("s"),
            call.node,
            safe=False,
        )
        return cast(seconds, pa.int64(), call.node)
    raise call.error(f"lancelet does not convert {value.type} to seconds")


def make_date(call: Call) -> Value:
    """``make_date(year, month, day)``: failing on a day that does not exist."""
    call.arity(3)
    parts = call.values()
    if any(is_null(p.type) for p in parts):
        return null(pa.date32())
    if not all(is_integer(p.type) and p.type != pa.uint64() for p in parts):
        raise call.error("takes integer year, month and day")
    ints = [cast(p, pa.int64(), call.node) for p in parts]
    return vectorized(call, _make_dates, ints, [], pa.date32())


_DAYS_IN_MONTH = np.array([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])


def _make_dates(years: pa.Array, months: pa.Array, days: pa.Array) -> pa.Array:
    """Dates from year, month and day (Howard Hinnant's days-from-civil)."""
    mask = np.zeros(len(years), bool)
    columns = []
    for part in (years, months, days):
        if part.null_count:
            mask |= part.is_null().to_numpy(zero_copy_only=False)
        columns.append(np.asarray(part.fill_null(1).to_numpy(zero_copy_only=False), np.int64))
    y, m, d = columns
    valid = ~mask
    bad_month = valid & ((m < 1) | (m > 12))
    if bad_month.any():
        raise FilterEvaluationError(f"Month value '{int(m[bad_month][0])}' is out of range")
    if (valid & ((y < -262143) | (y > 262142))).any():
        raise FilterEvaluationError("Unable to parse date: the year is out of range")
    leap = (y % 4 == 0) & ((y % 100 != 0) | (y % 400 == 0))
    month_days = _DAYS_IN_MONTH[np.clip(m, 1, 12) - 1] + ((m == 2) & leap)
    bad_day = valid & ((d < 1) | (d > month_days))
    if bad_day.any():
        first = np.argmax(bad_day)
        raise FilterEvaluationError(f"Unable to parse date from {y[first]}, {m[first]}, {d[first]}")
    shifted = y - (m <= 2)
    era = np.floor_divide(shifted, 400)
    year_of_era = shifted - era * 400
    day_of_year = (153 * (m + np.where(m > 2, -3, 9)) + 2) // 5 + d - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    epoch_days = era * 146097 + day_of_era - 719468
    return pa.array(
        epoch_days.astype(np.int32), pa.int32(), mask=mask if mask.any() else None
    ).cast(pa.date32())


# --- the clock ------------------------------------------------------------------------


def clock() -> datetime.datetime:
    """The current time in UTC (a function, so that tests can set it)."""
    return datetime.datetime.now(datetime.timezone.utc)


def now(call: Call) -> Value:
    """``now()`` / ``current_timestamp``: the time the scan starts, UTC nanoseconds."""
    call.arity(0)
    moment = clock()
    nanos = (moment.replace(tzinfo=None) - _EPOCH) // datetime.timedelta(microseconds=1) * 1000
    return const(pa.scalar(nanos, pa.int64()).cast(pa.timestamp("ns")))


def current_time(call: Call) -> Value:
    """``current_time``: the UTC time of day the scan starts."""
    call.arity(0)
    moment = clock()
    nanos = (
        (moment.hour * 60 + moment.minute) * 60 + moment.second
    ) * 10**9 + moment.microsecond * 1000
    return const(pa.scalar(nanos, pa.int64()).cast(pa.time64("ns")))


def today(call: Call) -> Value:
    call.arity(0)
    return const(pa.scalar(clock().date(), pa.date32()))


FUNCTIONS: dict[str, Callable[[Call], Value]] = {
    "date_part": date_part,
    "datepart": date_part,
    "date_trunc": date_trunc,
    "datetrunc": date_trunc,
    "to_date": to_date,
    "to_timestamp": _to_timestamp("ns"),
    "to_timestamp_seconds": _to_timestamp("s"),
    "to_timestamp_millis": _to_timestamp("ms"),
    "to_timestamp_micros": _to_timestamp("us"),
    "to_timestamp_nanos": _to_timestamp("ns"),
    "from_unixtime": from_unixtime,
    "to_unixtime": to_unixtime,
    "make_date": make_date,
    "now": now,
    "current_timestamp": now,
    "current_time": current_time,
    "today": today,
}
