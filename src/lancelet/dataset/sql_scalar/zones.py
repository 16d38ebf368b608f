"""Local time in a timestamp's time zone, as pylance (chrono-tz) reads it, for the date
functions.

pyarrow reads a zone's offsets from the system's time zone database, as chrono-tz
compiles in the same IANA data, with one difference: before a zone adopted standard
time its offset was local mean time, with seconds (New York: -4:56:02 until 1883), and
pyarrow drops those seconds.  Timestamps of a zone's local-mean-time era therefore fail
(:func:`check_standard_time`) rather than give other fields than pylance's.

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

__all__ = ["check_standard_time", "local_floor"]

_HOUR_US = 3_600_000_000


@functools.lru_cache(maxsize=64)
def standard_time_start(zone: str) -> int | None:
    """Microseconds since 1970 (UTC) from which ``zone``'s offsets are whole minutes;
    None when they always are (or the zone is a fixed offset)."""
    try:
        info = zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return None

    def has_seconds(micros: int) -> bool:
        moment = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
        moment += datetime.timedelta(microseconds=micros)
        offset = moment.astimezone(info).utcoffset()
        return offset is not None and offset.total_seconds() % 60 != 0

    low = -8_520_336_000_000_000  # 1700-01-01: every zone kept local mean time then
    if not has_seconds(low):
        return None
    high = 4_102_444_800_000_000  # 2100-01-01
    if has_seconds(high):
        return high
    while high - low > 1_000_000:
        middle = (low + high) // 2
        if has_seconds(middle):
            low = middle
        else:
            high = middle
    return high


def check_standard_time(values: pa.Array) -> None:
    """Fail when a timestamp falls in its zone's local-mean-time era."""
    zone = values.type.tz
    start = standard_time_start(zone) if zone else None
    if start is None or not len(values):
        return
    micros = values.cast(pa.timestamp(values.type.unit)).cast(pa.timestamp("us"), safe=False)
    earliest = pc.min(micros.cast(pa.int64())).as_py()
    if earliest is not None and earliest < start:
        raise FilterEvaluationError(
            f"lancelet does not read local times of {zone} before it took standard time "
            "(its local mean time offset has seconds pyarrow drops)"
        )


def local_floor(values: pa.Array, unit: str) -> pa.Array:
    """``values`` (with a time zone) truncated to ``unit`` in local time."""
    check_standard_time(values)
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
