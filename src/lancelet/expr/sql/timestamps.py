"""Timestamps in SQL filters and values, read as pylance 14 (DataFusion over arrow-rs)
reads them; :mod:`lancelet.expr.filter` calls in here wherever a timestamp meets a
string, a literal or a timestamp of another zone or unit.

What pylance does, and what lancelet does with it:

* ``TIMESTAMP 'text'`` and ``CAST('text' AS TIMESTAMP)`` are timestamps without a time
  zone, in microseconds unless a precision says otherwise (``TIMESTAMP(9) '...'``).  A
  text without an offset gives its wall-clock time; one with an offset (``Z``,
  ``+02:00``, ``-0530``, ``-05``, a zone name) gives the UTC wall-clock time of that
  instant.  Fractional digits the precision cannot hold are dropped by pylance;
  lancelet refuses them instead.
* A timestamp without a zone compared with one that has a zone is read as wall-clock
  time in that zone (a wall-clock time the zone skips or repeats around a DST change is
  an error, in both).  For a literal with an offset and a column whose zone is not UTC,
  that reads the literal's UTC wall-clock time in the column's zone: pylance compares
  with an instant other than the one written (``ny >= TIMESTAMP '...06:00:00Z'`` is
  ``ny >= 06:00`` New York time).  lancelet refuses that comparison.
* Timestamps with zones compare as instants, whatever the zones.
* A DATE compared with a timestamp is midnight UTC (a date is not read in a zone).
* A string compared with a timestamp is cast to the timestamp's type: an offset gives
  that instant, otherwise the wall-clock time in the type's zone (pylance refuses such
  a comparison with a column, and applies this rule to other timestamp values).
* Timestamps of different units are compared in the coarser unit, each value
  truncated (DataFusion issue 22756): a literal is truncated to the column's unit, and
  of two columns the finer.  lancelet refuses a literal the column's unit cannot hold
  exactly and comparisons of columns of different units.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelet.errors import FilterError

__all__ = [
    "TimestampText",
    "adopt",
    "cast_text",
    "casts_text",
    "check_list_units",
    "check_mixed_list",
    "check_zone_reading",
    "coarsening_error",
    "coarsens",
    "is_utc",
    "localize",
    "parse_text",
    "unit_error",
]

_NS_PER_UNIT = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}
_NS_PER_DAY = 86_400 * 1_000_000_000
_EPOCH_ORDINAL = datetime.date(1970, 1, 1).toordinal()
_INT64 = range(-(2**63), 2**63)

# arrow-rs's timestamp syntax: a date, then optionally a T, t or space and a time as
# HH:MM:SS[.fraction] or HHMMSS, then optionally a zone.
_TEXT = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})"
    r"(?:[Tt ](?:(?P<h>\d{2}):(?P<m>\d{2}):(?P<s>\d{2})(?:\.(?P<frac>\d+))?"
    r"|(?P<h2>\d{2})(?P<m2>\d{2})(?P<s2>\d{2}))"
    r"(?P<zone>.*))?",
    re.DOTALL | re.ASCII,
)
_FIXED_OFFSET = re.compile(r"([+-])(\d{2})(?::?(\d{2}))?", re.ASCII)
# Zone names that are UTC under any name: reading a wall-clock time in them is exact.
_UTC_NAMES = frozenset(
    {"UTC", "Etc/UTC", "Etc/UCT", "UCT", "Zulu", "Etc/Zulu", "Universal", "Etc/Universal"}
)


@dataclass(frozen=True)
class TimestampText:
    """A timestamp string as arrow-rs reads it.

    ``wall_ns``: the wall-clock reading, as nanoseconds since 1970-01-01 00:00 of that
    clock; ``zone``: the zone the text names (``"Z"``, ``"+02:00"``, a zone name), or
    None when it names none.
    """

    wall_ns: int
    zone: str | None


def parse_text(text: str) -> TimestampText:
    """Read ``text`` as arrow-rs reads a timestamp string; raises :class:`FilterError`
    for texts it refuses, and for those it would read with a loss (more than nine
    fractional digits, a leap second)."""
    match = _TEXT.fullmatch(text)
    if match is None:
        raise FilterError(
            f"cannot read {text!r} as a timestamp: expected YYYY-MM-DD, optionally "
            "followed by T or a space, HH:MM:SS[.fraction] and a zone (Z, +02:00, -0530, UTC)"
        )
    try:
        day = datetime.date.fromisoformat(match["date"])
    except ValueError:
        raise FilterError(f"cannot read {text!r} as a timestamp: no such date") from None
    hour, minute, second = (
        int(match[a] or match[b] or 0) for a, b in (("h", "h2"), ("m", "m2"), ("s", "s2"))
    )
    if hour > 23 or minute > 59 or second > 59:
        raise FilterError(f"cannot read {text!r} as a timestamp: no such time of day")
    fraction = match["frac"] or ""
    if len(fraction) > 9:
        raise FilterError(
            f"{text!r} has more than nine fractional digits; pylance drops the digits "
            "beyond nanoseconds, lancelet refuses them"
        )
    nanos = int(fraction.ljust(9, "0")) if fraction else 0
    seconds = ((day.toordinal() - _EPOCH_ORDINAL) * 24 + hour) * 3600 + minute * 60 + second
    zone = match["zone"] or None
    if zone is not None:
        zone = _zone_name(zone, text)
    return TimestampText(seconds * 1_000_000_000 + nanos, zone)


def _zone_name(zone: str, text: str) -> str:
    if zone in ("Z", "z"):
        return "Z"
    name = zone.lstrip()
    fixed = _FIXED_OFFSET.fullmatch(name)
    if fixed:
        sign, hours, minutes = fixed.group(1), int(fixed.group(2)), int(fixed.group(3) or 0)
        if hours > 23 or minutes > 59:
            raise FilterError(f"cannot read {text!r} as a timestamp: no such offset {name!r}")
        return f"{sign}{hours:02d}:{minutes:02d}"
    try:
        if name in ("Z", "z"):  # only right after the time
            raise ValueError(name)
        pc.assume_timezone(pa.array([0], pa.timestamp("s")), timezone=name)  # known?
    except (pa.ArrowInvalid, ValueError):
        raise FilterError(
            f"cannot read {text!r} as a timestamp: {name!r} is neither an offset nor a "
            "time zone name"
        ) from None
    return name


def _instant_ns(parsed: TimestampText, text: str) -> int:
    """The UTC instant of a text that names a zone, in nanoseconds since the epoch."""
    assert parsed.zone is not None
    if parsed.zone == "Z":
        return parsed.wall_ns
    return _localize_ns(parsed.wall_ns, parsed.zone, text)


def _localize_ns(wall_ns: int, zone: str, what: str) -> int:
    """The instant at which the clocks of ``zone`` read ``wall_ns``."""
    unit = "ns" if wall_ns in _INT64 else "us"
    if wall_ns % _NS_PER_UNIT[unit]:
        raise FilterError(f"{what}: out of the range of nanosecond timestamps")
    wall = pa.array([wall_ns // _NS_PER_UNIT[unit]], pa.timestamp(unit))
    try:
        instant = pc.assume_timezone(wall, timezone=zone)
    except pa.ArrowInvalid as e:
        raise FilterError(f"{what} is not one instant in the time zone {zone!r}: {e}") from None
    value: int = instant.cast(pa.int64())[0].as_py()
    return value * _NS_PER_UNIT[unit]


def _in_unit(ns: int, unit: str, what: str) -> int | None:
    """``ns`` in ``unit``; None when the unit cannot hold it exactly."""
    if ns % _NS_PER_UNIT[unit]:
        return None
    value = ns // _NS_PER_UNIT[unit]
    if value not in _INT64:
        raise FilterError(f"{what} is out of the range of timestamp[{unit}]")
    return value


def _scalar(ns: int, dtype: pa.TimestampType, what: str, *, literal: str) -> pa.Scalar:
    value = _in_unit(ns, dtype.unit, what)
    if value is None:
        raise FilterError(
            f"{what} has more fractional digits than {literal} holds ({dtype.unit}); "
            f"pylance drops them, lancelet refuses them: write {_finer(literal)} or fewer digits"
        )
    return pa.scalar(value, pa.int64()).cast(dtype)


def cast_text(value: pa.Scalar, target: pa.TimestampType | pa.Date32Type) -> pa.Scalar:
    """``CAST('text' AS target)`` (also ``TIMESTAMP 'text'``), as arrow-rs casts a
    string: with a zone in ``target``, the text's instant, or its wall-clock time in that
    zone when it names none; without, the wall-clock time, or the instant's UTC
    wall-clock time when the text names a zone.  A DATE takes the (UTC) date of that."""
    if not value.is_valid:
        return pa.scalar(None, target)
    text: str = value.as_py()
    what = f"the timestamp {text!r}"
    parsed = parse_text(text)
    if pa.types.is_date32(target):
        ns = parsed.wall_ns if parsed.zone is None else _instant_ns(parsed, text)
        return pa.scalar(ns // _NS_PER_DAY, pa.int32()).cast(pa.date32())
    if parsed.zone is None:
        ns = parsed.wall_ns if target.tz is None else _localize_ns(parsed.wall_ns, target.tz, what)
    else:
        ns = _instant_ns(parsed, text)
    return _scalar(ns, target, what, literal=_sql_type(target))


def _finer(literal: str) -> str:
    return "TIMESTAMP(9) '...'" if literal.startswith("TIMESTAMP") else "the time in that unit"


def _sql_type(dtype: pa.TimestampType) -> str:
    if dtype.tz is not None:
        return str(dtype)
    digits = {"s": 0, "ms": 3, "us": 6, "ns": 9}[dtype.unit]
    return "TIMESTAMP" if digits == 6 else f"TIMESTAMP({digits})"


def adopt(value: pa.Scalar, target: pa.TimestampType) -> pa.Scalar | None:
    """A constant compared with a ``target`` column, in ``target``'s type as pylance
    reads it: strings as :func:`cast_text` casts them, timestamps without a zone as
    wall-clock time in ``target``'s zone, dates as midnight UTC.  None when
    ``target``'s unit cannot hold the value exactly (pylance would truncate it), or for
    constants of other types."""
    source = value.type
    if pa.types.is_string(source) or pa.types.is_large_string(source):
        return cast_text(value.cast(pa.string()), target)
    if not value.is_valid:
        return pa.scalar(None, target)
    if pa.types.is_date(source):
        ns = value.cast(pa.date32()).cast(pa.int32()).as_py() * _NS_PER_DAY
    elif pa.types.is_timestamp(source):
        ns = value.cast(pa.int64()).as_py() * _NS_PER_UNIT[source.unit]
        if source.tz is None and target.tz is not None:
            ns = _localize_ns(ns, target.tz, f"the timestamp {value}")
    else:
        return None
    adopted = _in_unit(ns, target.unit, f"the timestamp {value}")
    return None if adopted is None else pa.scalar(adopted, pa.int64()).cast(target)


def localize(expression: pc.Expression, zone: str) -> pc.Expression:
    """A timestamp without a zone read as wall-clock time in ``zone`` (an error, when
    evaluated, where ``zone``'s clocks skip or repeat that time, as in pylance)."""
    return pc.assume_timezone(expression, timezone=zone)


def is_utc(zone: str) -> bool:
    """Whether ``zone`` is UTC under some name, so that reading a UTC wall-clock time
    in it keeps the instant."""
    if zone in _UTC_NAMES:
        return True
    fixed = _FIXED_OFFSET.fullmatch(zone)
    return fixed is not None and int(fixed.group(2)) == 0 and int(fixed.group(3) or 0) == 0


def check_zone_reading(node: exp.Expression, zone: str) -> None:
    """Refuse to read a timestamp of ``node`` as wall-clock time in ``zone`` when it was
    written with an offset: pylance would read that instant's UTC wall-clock time in
    ``zone``, an instant other than the one written."""
    if is_utc(zone):
        return
    for cast in node.find_all(exp.Cast):
        text = cast.this
        if not (isinstance(text, exp.Literal) and text.is_string):
            continue
        if not cast.to.is_type(exp.DataType.Type.TIMESTAMP, exp.DataType.Type.DATETIME):
            continue
        match = _TEXT.fullmatch(text.this)
        if match is not None and match["zone"]:
            raise FilterError(
                f"{cast.sql()} has an offset and is compared with a timestamp in the time "
                f"zone {zone!r}: pylance reads the literal as its UTC wall-clock time in "
                f"{zone!r}, another instant than the one written, so lancelet refuses it; "
                f"write the time in {zone!r} without an offset, or compare with the plain "
                f"string '{text.this}'"
            )


def casts_text(source: pa.DataType, target: pa.DataType, value: pa.Scalar) -> bool:
    """Whether a CAST of the string constant ``value`` to ``target`` is
    :func:`cast_text`'s: to a timestamp, or to a DATE from more than a date."""
    if not (pa.types.is_string(source) or pa.types.is_large_string(source)):
        return False
    if pa.types.is_timestamp(target):
        return True
    return pa.types.is_date32(target) and value.is_valid and len(value.as_py()) > 10


def unit_error(
    sql: str, left: pa.TimestampType, right: pa.TimestampType, constant: pa.Scalar | None
) -> FilterError:
    """The refusal of a comparison of timestamps of different units."""
    coarser = left.unit if _NS_PER_UNIT[left.unit] > _NS_PER_UNIT[right.unit] else right.unit
    if constant is not None:
        return FilterError(
            f"{sql!r}: the timestamp {constant} is finer than the unit it is compared in "
            f"({coarser}); pylance truncates it to {coarser}, so lancelet refuses it: "
            "write a time that fits the column's unit"
        )
    return FilterError(
        f"{sql!r} compares timestamps of different units ({left.unit} and {right.unit}); "
        f"pylance truncates both to {coarser} (DataFusion issue 22756), so that different "
        "times compare equal; lancelet refuses: cast the coarser one to the finer unit "
        "with arrow_cast"
    )


def check_list_units(constants: list[pa.Scalar | None], sql: str) -> None:
    """Refuse an IN list of timestamps of different units holding a time that the
    coarsest of them cannot hold exactly: pylance types the list in that unit and
    truncates the time (``x IN (TIMESTAMP(0) '...', TIMESTAMP '...:00.005')`` matches
    ``...:00``), where the comparison alone is exact."""
    stamps = [
        c for c in constants if c is not None and c.is_valid and pa.types.is_timestamp(c.type)
    ]
    units = {c.type.unit for c in stamps}
    if len(units) < 2:
        return
    coarsest = max(units, key=lambda unit: _NS_PER_UNIT[unit])
    for constant in stamps:
        ns = constant.cast(pa.int64()).as_py() * _NS_PER_UNIT[constant.type.unit]
        if ns % _NS_PER_UNIT[coarsest]:
            raise FilterError(
                f"{sql!r}: the timestamp {constant} is finer than the unit it is compared "
                f"in ({coarsest}): pylance types the IN list in its coarsest unit and "
                "truncates it, so lancelet refuses it: write the list's times in one unit"
            )


def check_mixed_list(subject: pa.DataType, items: list[pa.DataType], sql: str, kind: str) -> None:
    """Refuse ``zoned IN (DATE ..., TIMESTAMP ...)`` and ``zoned BETWEEN DATE ... AND
    TIMESTAMP ...`` (or the other way round), where the zone is not UTC.  pylance
    types such a list as timestamps without a zone, and then reads its values unlike
    a single comparison does: in an IN list, the timestamps as UTC (alone, they are
    wall-clock time in the column's zone); in BETWEEN, the date as midnight in the
    column's zone (alone, midnight UTC)."""
    if not (pa.types.is_timestamp(subject) and subject.tz is not None) or is_utc(subject.tz):
        return
    naive = any(pa.types.is_timestamp(t) and t.tz is None for t in items)
    if not (naive and any(pa.types.is_date(t) for t in items)):
        return
    misread = (
        "the timestamps as UTC, where alone it reads them as wall-clock time in the column's zone"
        if kind == "IN"
        else "the date as midnight in the column's zone, where alone it reads it as midnight UTC"
    )
    raise FilterError(
        f"{sql!r}: where {kind} mixes a DATE and a TIMESTAMP without a time zone for a "
        f"column in the time zone {subject.tz!r}, pylance reads {misread}; lancelet "
        "refuses the mix: write each comparison on its own, joined with OR or AND"
    )


def coarsens(source: pa.DataType, target: pa.DataType) -> bool:
    """Whether a cast from ``source`` to ``target`` is one of a timestamp to a coarser
    unit, which drops digits."""
    if not (pa.types.is_timestamp(source) and pa.types.is_timestamp(target)):
        return False
    return bool(_NS_PER_UNIT[target.unit] > _NS_PER_UNIT[source.unit])


def coarsening_error(cast: str, sql: str) -> FilterError:
    """The refusal of a timestamp cast to a coarser unit in a filter."""
    return FilterError(
        f"{cast!r} (filter {sql!r}) casts a timestamp to a coarser unit: in a filter "
        "pylance compares such a cast as if the value were not cast (where a projection "
        "truncates it), so lancelet refuses it in filters"
    )
