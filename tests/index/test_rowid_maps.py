"""Row id tree maps serialized all at once (rowid_maps) are byte for byte those of one
Roaring bitmap per map (rowid_map.serialize, pyroaring's serialization, which pylance
reads): array and bitmap containers, many fragments, and repeated addresses."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pytest

from lancelet.index import rowid_map, rowid_maps


def _one_by_one(ids: np.ndarray, starts: np.ndarray) -> list[bytes]:
    bounds = np.r_[starts, len(ids)]
    return [rowid_map.serialize(np.unique(ids[lo:hi])) for lo, hi in itertools.pairwise(bounds)]


def _group(kind: int, rng: np.random.Generator) -> np.ndarray:
    if kind == 0:  # a few scattered addresses
        fragments = rng.integers(0, 5, rng.integers(1, 4))
        offsets = rng.integers(0, 1 << 20, len(fragments))
    elif kind == 1:  # one dense container: a bitmap
        count = int(rng.integers(4000, 9000))
        fragments = np.full(count, rng.integers(0, 3))
        offsets = rng.choice(1 << 16, count, replace=False) + (int(rng.integers(0, 4)) << 16)
    elif kind == 2:  # the array / bitmap boundary: 4096 or 4097 values
        count = 4096 + int(rng.integers(0, 2))
        fragments = np.full(count, 7)
        offsets = rng.choice(1 << 16, count, replace=False)
    else:  # many fragments and containers
        count = int(rng.integers(1, 20_000))
        fragments = rng.integers(0, 10, count)
        offsets = rng.integers(0, 1 << 22, count)
    addresses = (fragments.astype(np.uint64) << np.uint64(32)) | offsets.astype(np.uint64)
    return np.sort(addresses)  # repeats kept: a set holds each once


@pytest.mark.parametrize("seed", range(12))
def test_maps_serialized_together_are_those_serialized_one_by_one(seed: int) -> None:
    rng = np.random.default_rng(seed)
    groups = [_group(int(rng.integers(0, 4)), rng) for _ in range(int(rng.integers(1, 25)))]
    ids = np.concatenate(groups)
    starts = np.r_[0, np.cumsum([len(g) for g in groups])[:-1]].astype(np.int64)
    got = rowid_maps.serialize_groups(ids, starts)
    assert got.type == pa.binary()
    assert got.to_pylist() == _one_by_one(ids, starts)


def test_extreme_addresses() -> None:
    ids = np.array(
        [0, 0xFFFF, 0x1_0000, 0xFFFF_FFFF, (5 << 32) | 0xFFFF_FFFF, (0xFFFF_FFFF << 32) | 3],
        dtype=np.uint64,
    )
    starts = np.array([0, 2, 4])
    assert rowid_maps.serialize_groups(ids, starts).to_pylist() == _one_by_one(ids, starts)


def test_one_map_per_address() -> None:
    ids = np.arange(0, 50_000 * 7, 7, dtype=np.uint64) + (np.uint64(3) << np.uint64(32))
    starts = np.arange(len(ids))
    assert rowid_maps.serialize_groups(ids, starts).to_pylist() == _one_by_one(ids, starts)


def test_maps_past_one_binary_array_are_chunked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rowid_maps, "_BINARY_MAX", 200)
    rng = np.random.default_rng(7)
    groups = [
        np.arange(10 * i, 10 * i + int(rng.integers(1, 200)), dtype=np.uint64) for i in range(30)
    ]
    ids = np.concatenate(groups)
    starts = np.r_[0, np.cumsum([len(g) for g in groups])[:-1]].astype(np.int64)
    got = rowid_maps.serialize_groups(ids, starts)
    assert isinstance(got, pa.ChunkedArray) and got.num_chunks > 1
    for chunk in got.chunks:  # within the limit, or a single map past it
        assert len(chunk) == 1 or sum(len(m) for m in chunk.to_pylist()) <= 200
    assert got.to_pylist() == _one_by_one(ids, starts)


def test_no_maps() -> None:
    got = rowid_maps.serialize_groups(np.empty(0, np.uint64), np.empty(0, np.int64))
    assert len(got) == 0 and got.type == pa.binary()
