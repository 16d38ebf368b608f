"""AddressMapping.apply against a plain dictionary lookup, for mappings of whole
fragments (a compaction's moves, looked up by fragment) and of scattered rows."""

from __future__ import annotations

import numpy as np
import pytest

from lancelet.index.remapping import DELETED, AddressMapping


def _expected(mapping: dict[int, int], addresses: np.ndarray) -> tuple[list[int], list[bool]]:
    moved = [mapping.get(a, a) for a in addresses.tolist()]
    return moved, [m != int(DELETED) for m in moved]


def _check(old: np.ndarray, new: np.ndarray, addresses: np.ndarray) -> None:
    mapping = AddressMapping(old, new)
    moved, alive = mapping.apply(addresses)
    expected, exists = _expected(dict(zip(old.tolist(), new.tolist(), strict=True)), addresses)
    assert moved.dtype == np.uint64
    assert moved.tolist() == expected
    assert alive.tolist() == exists


def _whole(sizes: dict[int, int], rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Every row of the fragments ``sizes`` (id -> rows), listed in shuffled order,
    moved to fragment 1000 or deleted."""
    old = np.concatenate(
        [(np.uint64(f) << np.uint64(32)) | np.arange(n, dtype=np.uint64) for f, n in sizes.items()]
    )
    live = rng.random(len(old)) > 0.2
    new = np.full(len(old), DELETED, dtype=np.uint64)
    new[live] = (np.uint64(1000) << np.uint64(32)) | np.arange(int(live.sum()), dtype=np.uint64)
    order = rng.permutation(len(old))
    return old[order], new[order]


def _probes(sizes: dict[int, int], rng: np.random.Generator) -> np.ndarray:
    """Addresses in and around the fragments: every row, rows past a fragment's end,
    fragments not listed (between, below and above them) and the no-row address."""
    rows = [(f, o) for f, n in sizes.items() for o in range(n + 3)]
    rows += [(f + 1, 0) for f in sizes] + [(0, 0), (max(sizes) + 50, 1), (2**32 - 1, 5)]
    found = np.array([(f << 32) | o for f, o in rows], dtype=np.uint64)
    return np.concatenate([rng.permutation(found), [DELETED]]).astype(np.uint64)


@pytest.mark.parametrize("seed", range(5))
def test_whole_fragments(seed: int) -> None:
    rng = np.random.default_rng(seed)
    ids = sorted(rng.choice(np.arange(1, 300), size=int(rng.integers(1, 8)), replace=False))
    sizes = {int(f): int(rng.integers(1, 40)) for f in ids}
    old, new = _whole(sizes, rng)
    _check(old, new, _probes(sizes, rng))


@pytest.mark.parametrize("seed", range(5))
def test_scattered_rows(seed: int) -> None:
    """Some rows of a fragment missing, or a fragment not starting at row 0: the
    search over every old address."""
    rng = np.random.default_rng(seed)
    sizes = {3: 20, 7: 15}
    old, new = _whole(sizes, rng)
    drop = int(rng.integers(0, len(old)))
    old, new = np.delete(old, drop), np.delete(new, drop)
    _check(old, new, _probes(sizes, rng))


def test_fragment_not_from_row_zero() -> None:
    old = np.array([(4 << 32) + 1, (4 << 32) + 2], dtype=np.uint64)
    new = np.array([9 << 32, DELETED], dtype=np.uint64)
    _check(old, new, np.array([4 << 32, (4 << 32) + 1, (4 << 32) + 2, 5], dtype=np.uint64))


def test_empty_mapping_and_probes() -> None:
    _check(np.zeros(0, np.uint64), np.zeros(0, np.uint64), np.array([1, 2], dtype=np.uint64))
    _check(np.array([0], np.uint64), np.array([5], np.uint64), np.zeros(0, np.uint64))
