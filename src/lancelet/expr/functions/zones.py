"""Local time in a timestamp's time zone, as pylance (chrono-tz) reads it, for the date
functions.

pyarrow reads a zone's offsets from the system's time zone database with the vendored
``date`` library, chrono-tz compiles in the same IANA data, and the two agree except at
the ends: before a zone adopted standard time its offset was local mean time, with
seconds (New York: -4:56:02 until 1883), which pyarrow drops; and after the last
transition the database lists (2037 in most installations) pyarrow keeps the last
offset where chrono-tz goes on applying the zone's daylight-saving rule.  The range in
which pyarrow's offsets are Python's ``zoneinfo``'s (which reads the rule too) is
found once per zone, and timestamps outside it fail (:func:`check_trusted`) rather
than give other fields than pylance's.

``date_trunc`` to an hour or coarser truncates the local time and maps it back as
DataFusion does: an ambiguous local time (a clock set back) keeps the offset the
timestamp had; a local time that does not exist (a clock set forward) is read an hour
earlier and moved an hour later.
"""

from __future__ import annotations

import datetime
import functools
import zoneinfo

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet.errors import FilterEvaluationError

__all__ = ["check_trusted", "local_floor", "trusted_range"]

_HOUR_US = 3_600_000_000
_SECOND_US = 1_000_000
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
# Offsets are compared every 30 days from 1700 to 2300, and a change of agreement is
# then located to the second.
_STEP_US = 30 * 24 * _HOUR_US
_FIRST_US = -8_520_336_000_000_000  # 1700-01-01
_LAST_US = 10_413_792_000_000_000  # 2300-01-01


def _pyarrow_offsets(zone: str, micros: np.ndarray) -> np.ndarray:
    stamps = pa.array(micros, pa.timestamp("us", zone))
    local = pc.local_timestamp(stamps).cast(pa.int64()).to_numpy(zero_copy_only=False)
    offsets: np.ndarray = local - micros
    return offsets


def _python_offsets(info: zoneinfo.ZoneInfo, micros: np.ndarray) -> np.ndarray:
    # Once per zone, over the sample instants only (not over data values).
    offsets = []
    for value in micros.tolist():
        offset = (_EPOCH + datetime.timedelta(microseconds=value)).astimezone(info).utcoffset()
        offsets.append(0 if offset is None else offset // datetime.timedelta(microseconds=1))
    return np.array(offsets, dtype=np.int64)


@functools.lru_cache(maxsize=64)
def trusted_range(zone: str) -> tuple[int, int] | None:
    """The instants (microseconds since 1970, from inclusive, to exclusive) at which
    pyarrow reads ``zone``'s offsets as chrono-tz does; None for a fixed offset or a
    zone Python does not know."""
    try:
        info = zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return None
    samples = np.arange(_FIRST_US, _LAST_US, _STEP_US, dtype=np.int64)
    agree = _pyarrow_offsets(zone, samples) == _python_offsets(info, samples)
    anchor = int(np.searchsorted(samples, 0))
    if not agree[anchor]:
        return (0, 0)
    before = np.flatnonzero(~agree[:anchor])
    after = np.flatnonzero(~agree[anchor:])
    start = (
        _FIRST_US
        if not len(before)
        else _boundary(zone, info, samples[before[-1]], samples[before[-1] + 1])
    )
    end = (
        _LAST_US
        if not len(after)
        else _boundary(zone, info, samples[anchor + after[0] - 1], samples[anchor + after[0]])
    )
    return (start, end)


def _boundary(zone: str, info: zoneinfo.ZoneInfo, low: int, high: int) -> int:
    """The first second (after ``low``, up to ``high``) whose agreement is ``high``'s."""

    def agrees(micros: int) -> bool:
        point = np.array([micros], dtype=np.int64)
        return bool(_pyarrow_offsets(zone, point)[0] == _python_offsets(info, point)[0])

    wanted = agrees(int(high))
    low, high = int(low), int(high)
    while high - low > _SECOND_US:
        middle = (low + high) // 2
        if agrees(middle) == wanted:
            high = middle
        else:
            low = middle
    # Values at the boundary's second are refused too: it is only located to a second.
    return high + _SECOND_US if wanted else high - _SECOND_US


def check_trusted(values: pa.Array) -> None:
    """Fail when a timestamp falls where pyarrow reads its zone's offset differently
    from pylance."""
    zone = values.type.tz
    bounds = trusted_range(zone) if zone else None
    if bounds is None or not len(values) or values.null_count == len(values):
        return
    micros = values.cast(pa.timestamp(values.type.unit)).cast(pa.timestamp("us"), safe=False)
    extremes = pc.min_max(micros.cast(pa.int64()))
    low, high = extremes["min"].as_py(), extremes["max"].as_py()
    if low < bounds[0] or high >= bounds[1]:
        raise FilterEvaluationError(
            f"lancelet reads local times of {zone} only from {_text(bounds[0])} to "
            f"{_text(bounds[1])} (UTC), where pyarrow's time zone data reads them as "
            "pylance's does (local mean time before, or daylight-saving rules after, differ)"
        )


def _text(micros: int) -> str:
    return (_EPOCH + datetime.timedelta(microseconds=micros)).strftime("%Y-%m-%d %H:%M:%S")


def local_floor(values: pa.Array, unit: str) -> pa.Array:
    """``values`` (with a time zone) truncated to ``unit`` in local time."""
    check_trusted(values)
    zone, tick = values.type.tz, values.type.unit
    naive = pa.timestamp(tick)
    local = pc.local_timestamp(values)
    floored = pc.floor_temporal(local, unit=unit, week_starts_monday=True)
    earliest = pc.assume_timezone(floored, zone, ambiguous="earliest", nonexistent="earliest")
    latest = pc.assume_timezone(floored, zone, ambiguous="latest", nonexistent="latest")

    def ticks(array: pa.Array) -> np.ndarray:
        filled = array.cast(naive).cast(pa.int64()).fill_null(0)
        return np.asarray(filled.to_numpy(zero_copy_only=False), dtype=np.int64)

    hour = _HOUR_US * {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}[tick] // 1_000_000
    offset = ticks(local) - ticks(values)
    early = ticks(earliest)
    # A local time that exists maps back to itself; one that does not is read an hour
    # earlier (where it exists) and moved an hour later.
    exists = ticks(pc.local_timestamp(earliest)) == ticks(floored)
    shifted = pc.assume_timezone(
        pa.array(ticks(floored) - hour, naive), zone, ambiguous="earliest", nonexistent="earliest"
    )
    keep_early = (ticks(floored) - early) == offset
    result = np.where(exists, np.where(keep_early, early, ticks(latest)), ticks(shifted) + hour)
    mask = values.is_null().to_numpy(zero_copy_only=False) if values.null_count else None
    return pa.array(result, naive, mask=mask).cast(values.type)
