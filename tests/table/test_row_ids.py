"""Row id sequences: every segment kind decoded from bytes built with protobuf here,
encodings chosen by size, and damage refused."""

from __future__ import annotations

import numpy as np
import pytest

from lancelet._proto import rowids_pb2
from lancelet.errors import CorruptDatasetError
from lancelet.table import row_address, row_ids

Seg = rowids_pb2.U64Segment


def _sequence(*segments: rowids_pb2.U64Segment) -> bytes:
    return rowids_pb2.RowIdSequence(segments=list(segments)).SerializeToString()


def _u16(base: int, values: list[int]) -> rowids_pb2.EncodedU64Array:
    offsets = np.array(values, dtype="<u2").tobytes()
    return rowids_pb2.EncodedU64Array(
        u16_array=rowids_pb2.EncodedU64Array.U16Array(base=base, offsets=offsets)
    )


def _u64(values: list[int]) -> rowids_pb2.EncodedU64Array:
    data = np.array(values, dtype="<u8").tobytes()
    return rowids_pb2.EncodedU64Array(u64_array=rowids_pb2.EncodedU64Array.U64Array(values=data))


def test_every_segment_kind_decodes() -> None:
    data = _sequence(
        Seg(range=Seg.Range(start=10, end=13)),
        Seg(range_with_holes=Seg.RangeWithHoles(start=20, end=25, holes=_u16(20, [1, 3]))),
        Seg(sorted_array=_u16(100, [0, 7, 9])),
        Seg(array=_u64([2**40, 3, 1])),
    )
    got = row_ids.decode(data, 3 + 3 + 3 + 3, "t")
    assert got.tolist() == [10, 11, 12, 20, 22, 24, 100, 107, 109, 2**40, 3, 1]


def test_bitmap_bits_run_least_significant_first() -> None:
    # As pylance 14 writes rows 5 and 15 of the range [5, 16): bytes 0x01, 0x04.
    data = _sequence(
        Seg(range_with_bitmap=Seg.RangeWithBitmap(start=5, end=16, bitmap=b"\x01\x04"))
    )
    assert row_ids.decode(data, 2, "t").tolist() == [5, 15]


@pytest.mark.parametrize(
    "ids",
    [
        np.arange(5, 1005),
        np.arange(0, 3000, 3),  # sorted, sparse: bitmap or array
        np.delete(np.arange(0, 5000), [7, 900, 4000]),  # range with holes
        np.array([9, 3, 2**50, 7]),  # unsorted, 64-bit
        np.concatenate([np.arange(10, 20), np.arange(50, 60), np.arange(5, 8)]),
        np.random.default_rng(3).permutation(100_000)[:3000] + 2**33,
        np.array([], dtype=np.int64),
    ],
)
def test_encode_round_trips(ids: np.ndarray) -> None:
    ids = ids.astype(np.uint64)
    assert row_ids.decode(row_ids.encode(ids), len(ids), "t").tolist() == ids.tolist()


def test_sparse_sorted_ids_are_not_stored_as_a_run_of_ranges() -> None:
    ids = np.arange(0, 30_000, 2, dtype=np.uint64)
    encoded = row_ids.encode(ids)
    sequence = rowids_pb2.RowIdSequence.FromString(encoded)
    assert len(sequence.segments) == 1
    assert len(encoded) < 4_000  # a bitmap (3,750 bytes), not 15,000 ranges


@pytest.mark.parametrize(
    ("data", "rows"),
    [
        (_sequence(Seg(range=Seg.Range(start=0, end=10))), 9),  # too many ids
        (_sequence(Seg(range=Seg.Range(start=0, end=10))), 11),  # too few
        (_sequence(Seg(range=Seg.Range(start=10, end=0))), 0),  # reversed
        (_sequence(Seg(range=Seg.Range(start=0, end=2**62))), 5),  # would allocate a lot
        (_sequence(Seg(sorted_array=_u16(0, [3, 2]))), 2),  # not sorted
        (
            _sequence(Seg(range_with_bitmap=Seg.RangeWithBitmap(start=0, end=20, bitmap=b"\xff"))),
            8,
        ),
        (
            _sequence(Seg(range_with_holes=Seg.RangeWithHoles(start=0, end=5, holes=_u16(0, [9])))),
            4,
        ),
        (b"\x0a\xff\xff", 1),  # truncated protobuf
    ],
)
def test_damaged_sequences_are_refused(data: bytes, rows: int) -> None:
    with pytest.raises(CorruptDatasetError):
        row_ids.decode(data, rows, "t")


def test_row_addresses_split_by_fragment() -> None:
    addresses = np.concatenate([row_address.of_range(3, 5, 8), row_address.of_range(7, 0, 2)])
    assert addresses.tolist() == [
        (3 << 32) + 5,
        (3 << 32) + 6,
        (3 << 32) + 7,
        7 << 32,
        (7 << 32) + 1,
    ]
    split = row_address.by_fragment(addresses)
    assert {k: v.tolist() for k, v in split.items()} == {3: [5, 6, 7], 7: [0, 1]}
    assert row_address.describe((7 << 32) + 1) == "fragment 7, offset 1"
