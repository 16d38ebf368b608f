"""Row id sequences: the stable row id of each physical row of a fragment.

With stable row ids, every row gets an id from the manifest's ``next_row_id``
counter when it is first written, and keeps it while it moves (compaction,
update, merge).  A fragment lists its rows' ids, in physical order, as a
``RowIdSequence`` (rowids.proto): a run of segments, each encoded the way that
suits it (a range, a range with holes or with a bitmap, a sorted or unsorted
array of 16-, 32- or 64-bit offsets from a base).

Decoding checks every length against the fragment's row count before it
allocates, so damaged metadata is an error, never a huge allocation or a wrong id.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import numpy as np

from lancelet._proto import rowids_pb2
from lancelet.errors import CorruptDatasetError
from lancelet.table.fragment import Fragment, Sequence

_U16 = np.dtype("<u2")
_U32 = np.dtype("<u4")
_U64 = np.dtype("<u8")
_DTYPES: dict[str, np.dtype[Any]] = {"u16_array": _U16, "u32_array": _U32, "u64_array": _U64}
_U16_MAX, _U32_MAX, _U64_MAX = (int(np.iinfo(t).max) for t in (_U16, _U32, _U64))
# Runs beyond this many contiguous stretches are stored as one array segment.
_MAX_RANGES = 16


def decode(data: bytes, num_rows: int, where: str, *, partial: bool = False) -> np.ndarray:
    """The ``num_rows`` ids a serialized ``RowIdSequence`` lists, as uint64; with
    ``partial``, it may list fewer (an uncommitted fragment whose other rows get new
    ids at commit, see ``lineage.with_row_ids``)."""
    sequence = rowids_pb2.RowIdSequence()
    try:
        sequence.ParseFromString(data)
    except Exception as exc:  # protobuf raises DecodeError or RuntimeError
        raise CorruptDatasetError(f"{where}: the row id sequence does not decode: {exc}") from exc
    parts: list[np.ndarray] = []
    remaining = num_rows
    for number, segment in enumerate(sequence.segments):
        ids = decode_segment(segment, remaining, f"{where}: row id segment {number}")
        parts.append(ids)
        remaining -= len(ids)
    if remaining and not partial:
        raise CorruptDatasetError(
            f"{where}: the row id sequence lists {num_rows - remaining} ids for {num_rows} rows"
        )
    out: np.ndarray = np.concatenate(parts) if parts else np.zeros(0, np.uint64)
    return out


def decode_segment(segment: rowids_pb2.U64Segment, limit: int, where: str) -> np.ndarray:
    """The values of one segment, at most ``limit`` of them."""
    kind = segment.WhichOneof("segment")
    if kind == "range":
        start, length = _span(segment.range.start, segment.range.end, limit, where)
        return np.arange(start, start + length, dtype=np.uint64)
    if kind == "range_with_holes":
        with_holes = segment.range_with_holes
        start, length = _span(with_holes.start, with_holes.end, limit + _MAX_HOLES, where)
        holes = _array(with_holes.holes, length, where)
        if len(holes) and (
            bool(np.any(np.diff(holes.astype(np.int64)) <= 0))
            or int(holes[0]) < start
            or int(holes[-1]) >= start + length
        ):
            raise CorruptDatasetError(f"{where}: the holes are not sorted inside the range")
        keep = np.ones(length, dtype=bool)
        keep[(holes - np.uint64(start)).astype(np.int64)] = False
        return _within(np.flatnonzero(keep).astype(np.uint64) + np.uint64(start), limit, where)
    if kind == "range_with_bitmap":
        bitmap = segment.range_with_bitmap.bitmap
        start, end = segment.range_with_bitmap.start, segment.range_with_bitmap.end
        start, length = _span(start, end, 8 * len(bitmap), where)
        if len(bitmap) != (length + 7) // 8:
            raise CorruptDatasetError(
                f"{where}: a bitmap of {len(bitmap)} bytes for a range of {length} ids"
            )
        # Bit i of byte j stands for start + 8j + i (least significant bit first, as
        # pylance writes it).
        bits = np.unpackbits(np.frombuffer(bitmap, dtype=np.uint8), bitorder="little")[:length]
        return _within(np.flatnonzero(bits).astype(np.uint64) + np.uint64(start), limit, where)
    if kind in ("sorted_array", "array"):
        values = _array(getattr(segment, kind), limit, where)
        if kind == "sorted_array" and bool(np.any(values[1:] <= values[:-1])):
            raise CorruptDatasetError(f"{where}: a sorted array of row ids is not sorted")
        return values
    raise CorruptDatasetError(f"{where}: a segment of unknown kind")


# A range with holes may span more ids than the fragment has rows; not by more than
# this, so a damaged range cannot make the decoder allocate without bound.
_MAX_HOLES = 1 << 26


def _span(start: int, end: int, limit: int, where: str) -> tuple[int, int]:
    if end < start or end - start > limit:
        raise CorruptDatasetError(
            f"{where}: the range [{start}, {end}) does not fit the fragment's rows"
        )
    return start, end - start


def _within(ids: np.ndarray, limit: int, where: str) -> np.ndarray:
    if len(ids) > limit:
        raise CorruptDatasetError(f"{where}: lists more ids than the fragment has rows")
    return ids


def _array(pb: rowids_pb2.EncodedU64Array, limit: int, where: str) -> np.ndarray:
    kind = pb.WhichOneof("array")
    if kind is None:
        return np.zeros(0, np.uint64)
    part = getattr(pb, kind)
    data = part.values if kind == "u64_array" else part.offsets
    dtype = _DTYPES[kind]
    if len(data) % dtype.itemsize or len(data) // dtype.itemsize > limit:
        raise CorruptDatasetError(
            f"{where}: an array of {len(data)} bytes does not hold whole {dtype.itemsize}-byte "
            f"values for at most {limit} rows"
        )
    values: np.ndarray = np.frombuffer(data, dtype=dtype).astype(np.uint64)
    if kind == "u64_array":
        return values
    if part.base >= _U64_MAX - _U32_MAX:
        raise CorruptDatasetError(f"{where}: the array's base {part.base} overflows")
    out: np.ndarray = values + np.uint64(part.base)
    return out


def encode(ids: np.ndarray) -> bytes:
    """A ``RowIdSequence`` for ``ids`` (uint64, physical order): a few ranges when the
    ids run in a few contiguous stretches, otherwise one segment, whichever of a
    range with holes, a range with a bitmap or an array is smallest."""
    ids = np.ascontiguousarray(ids, dtype=np.uint64)
    sequence = rowids_pb2.RowIdSequence()
    if len(ids):
        breaks = np.flatnonzero(ids[1:] != ids[:-1] + np.uint64(1)) + 1
        if len(breaks) < _MAX_RANGES:
            for run in np.split(ids, breaks):
                sequence.segments.add().range.CopyFrom(
                    rowids_pb2.U64Segment.Range(start=int(run[0]), end=int(run[-1]) + 1)
                )
        else:
            sequence.segments.append(_one_segment(ids))
    return sequence.SerializeToString()


def _one_segment(ids: np.ndarray) -> rowids_pb2.U64Segment:
    segment = rowids_pb2.U64Segment()
    if not bool(np.all(ids[1:] > ids[:-1])):
        segment.array.CopyFrom(encoded_array(ids))
        return segment
    start, end = int(ids[0]), int(ids[-1]) + 1
    holes = np.setdiff1d(np.arange(start, end, dtype=np.uint64), ids, assume_unique=True)
    costs = {
        "holes": _array_bytes(holes),
        "bitmap": (end - start + 7) // 8,
        "sorted": _array_bytes(ids),
    }
    best = min(costs, key=costs.__getitem__)
    if best == "holes":
        segment.range_with_holes.CopyFrom(
            rowids_pb2.U64Segment.RangeWithHoles(start=start, end=end, holes=encoded_array(holes))
        )
    elif best == "bitmap":
        bits = np.zeros(end - start, dtype=bool)
        bits[(ids - np.uint64(start)).astype(np.int64)] = True
        bitmap = np.packbits(bits, bitorder="little").tobytes()
        segment.range_with_bitmap.CopyFrom(
            rowids_pb2.U64Segment.RangeWithBitmap(start=start, end=end, bitmap=bitmap)
        )
    else:
        segment.sorted_array.CopyFrom(encoded_array(ids))
    return segment


def segment_of_values(values: np.ndarray) -> rowids_pb2.U64Segment:
    """``values`` as one segment, as pylance makes one from a list of values (lineage
    spans, the ids of a fragment completed at commit): a range when they run without
    a gap, else the smallest by its estimate of a range with holes (4 bytes a hole), a range
    with a bitmap (a bit a slot) and a sorted array (2 bytes a value), ties going in
    that order; an array when they are not sorted."""
    segment = rowids_pb2.U64Segment()
    if not len(values):
        segment.range.start = segment.range.end = 0
        return segment
    if not bool(np.all(values[1:] > values[:-1])):
        segment.array.CopyFrom(encoded_array(values))
        return segment
    low, high = int(values[0]), int(values[-1])
    slots = high - low + 1
    holes = slots - len(values)
    if not holes:
        segment.range.start, segment.range.end = low, high + 1
        return segment
    sizes = (4 * holes, (slots + 7) // 8, 2 * len(values))
    if sizes[0] == min(sizes):
        missing = np.setdiff1d(np.arange(low, high + 1, dtype=np.uint64), values)
        segment.range_with_holes.start, segment.range_with_holes.end = low, high + 1
        segment.range_with_holes.holes.CopyFrom(encoded_array(missing))
    elif sizes[1] == min(sizes):
        bits = np.zeros(slots, dtype=bool)
        bits[(values - np.uint64(low)).astype(np.int64)] = True
        segment.range_with_bitmap.start, segment.range_with_bitmap.end = low, high + 1
        segment.range_with_bitmap.bitmap = np.packbits(bits, bitorder="little").tobytes()
    else:
        segment.sorted_array.CopyFrom(encoded_array(values))
    return segment


def _width(values: np.ndarray) -> int:
    if not len(values):
        return 2
    spread = int(values.max()) - int(values.min())
    return 2 if spread <= _U16_MAX else 4 if spread <= _U32_MAX else 8


def _array_bytes(values: np.ndarray) -> int:
    return _width(values) * len(values)


def encoded_array(values: np.ndarray) -> rowids_pb2.EncodedU64Array:
    out = rowids_pb2.EncodedU64Array()
    width = _width(values)
    if width == 8:
        out.u64_array.values = values.astype(_U64).tobytes()
        return out
    base = int(values.min()) if len(values) else 0
    offsets = (values - np.uint64(base)).astype(_U16 if width == 2 else _U32).tobytes()
    target = out.u16_array if width == 2 else out.u32_array
    target.base = base
    target.offsets = offsets
    return out


def carrying(fragments: Iterable[Fragment], ids: np.ndarray) -> list[Fragment]:
    """New fragments holding rows that keep their ids (moved, not inserted): ``ids``
    lists them in the fragments' physical order."""
    out = []
    start = 0
    for fragment in fragments:
        stop = start + fragment.physical_rows
        if stop > len(ids):
            raise ValueError("fewer row ids than rows written")
        out.append(replace(fragment, row_id_meta=Sequence(inline=encode(ids[start:stop]))))
        start = stop
    if start != len(ids):
        raise ValueError("more row ids than rows written")
    return out
