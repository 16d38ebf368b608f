"""FSST compression (lancelet's encoder), checked by lancelet's FSST decoder; pylance
decoding it is checked in test_v2_1_write."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lancelet.errors import CorruptFileError
from lancelet.file.codecs import fsst_encode, jit
from lancelet.file.codecs.fsst import (
    FSST_SYMBOL_TABLE_SIZE,
    fsst_decompress,
    fsst_decompress_pages,
    parse_symbol_table,
)


def _strings(values: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    lengths = np.array([len(v) for v in values], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    return np.frombuffer(b"".join(values), dtype=np.uint8), offsets


def _roundtrip(values: list[bytes]) -> float:
    data, offsets = _strings(values)
    table = fsst_encode.build_table(data, offsets)
    assert table.size <= 255
    assert ((table.lengths >= 1) & (table.lengths <= 8)).all()
    new_offsets, compressed = fsst_encode.compress(table, data, offsets)
    blob = fsst_encode.serialize(table)
    assert len(blob) == FSST_SYMBOL_TABLE_SIZE
    out_offsets, out = fsst_decompress(blob, compressed, new_offsets)
    assert np.array_equal(out_offsets, offsets)
    assert out.tobytes() == data.tobytes()
    return len(compressed) / max(len(data), 1)


def test_text_compresses() -> None:
    rng = np.random.default_rng(1)
    words = [b"carefully", b"ironic", b"packages", b"deposits", b"the", b"quickly", b"final"]
    values = [b" ".join(rng.choice(words, int(rng.integers(1, 9)))) + b"." for _ in range(5000)]
    assert _roundtrip(values) < 0.5


@pytest.mark.parametrize(
    "values",
    [
        [],
        [b""] * 10,
        [b"a"],
        [bytes(range(256)) * 3, b"", b"\xff\xff\xff", b"\x00" * 40],
        [f"{i} élan vital 漢字 🙂".encode() for i in range(3000)],
        [b"x" * k for k in range(0, 300)],
        [f"{i}".encode() * 700 for i in range(60)] + [b"", b"y" * 512, b"z" * 513] + [b""] * 300,
    ],
    ids=["none", "empty", "one", "binary", "unicode", "runs", "long"],
)
def test_roundtrip(values: list[bytes]) -> None:
    _roundtrip(values)


def test_random_bytes_round_trip_with_escapes() -> None:
    rng = np.random.default_rng(2)
    assert _roundtrip([rng.bytes(int(rng.integers(0, 60))) for _ in range(4000)]) < 2.01


def test_uncompressed_table() -> None:
    blob = fsst_encode.serialize_uncompressed()
    data, offsets = _strings([b"abc", b"", b"de"])
    out_offsets, out = fsst_decompress(blob, data, offsets)
    assert out.tobytes() == b"abcde" and list(out_offsets) == [0, 3, 3, 5]


def _page_of(values: list[bytes]) -> tuple[np.ndarray, np.ndarray, fsst_encode.FsstTable]:
    data, offsets = _strings(values)
    return data, offsets, fsst_encode.build_table(data, offsets)


def test_a_table_that_only_fits_its_sample_is_judged_not_to_pay() -> None:
    """pylance's test_writer_maintains_order strings: each one repeats its own number,
    so a table learnt from some of them cannot shrink the others."""
    data, offsets, table = _page_of([f"{i}".encode() * 1024 for i in range(3000, 3400)])
    _, compressed = fsst_encode.compress(table, data, offsets)
    assert len(compressed) > len(data)  # what compressing everything would give
    assert not fsst_encode.likely_pays(table, data, offsets)


def test_text_is_judged_to_pay() -> None:
    rng = np.random.default_rng(4)
    words = [b"carefully", b"ironic", b"packages", b"deposits", b"the", b"quickly"]
    data, offsets, table = _page_of(
        [b" ".join(rng.choice(words, int(rng.integers(1, 60)))) for _ in range(3000)]
    )
    assert len(data) > 2 * 32 * 1024
    assert fsst_encode.likely_pays(table, data, offsets)
    _, compressed = fsst_encode.compress(table, data, offsets)
    assert len(compressed) < 0.6 * len(data)


def _admit_reference(values: list[int], lengths: list[int], scores: list[int]) -> list[int]:
    """The chosen candidates' indices, ranked one by one in Python: best score first,
    ties by length then bytes; a symbol of 3+ bytes only if no better one took its
    hash slot; at most 255."""
    order = sorted(range(len(values)), key=lambda i: (-scores[i], lengths[i], values[i]))
    taken: set[int] = set()
    chosen = []
    for i in order:
        if lengths[i] >= 3:
            slot = ((values[i] & 0xFFFFFF) * 2971215073 & 0xFFFFFFFF) >> 16
            if slot in taken:
                continue
            taken.add(slot)
        chosen.append(i)
    return chosen[:255]


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 4000),
    st.sampled_from([2, 2**8, 2**24]),
    st.integers(1, 60),
)
def test_admit_picks_the_best_candidates(seed: int, n: int, low: int, counts: int) -> None:
    """Up to thousands of distinct candidates (more than are ranked in full first),
    few distinct scores (ties across the cut) and few distinct first three bytes
    (slot clashes, so that the best thousand may hold fewer than 255 survivors)."""
    rng = np.random.default_rng(seed)
    high = rng.integers(0, 2**40, n, dtype=np.uint64) << np.uint64(24)
    found = {
        (int(v), int(n)): int(c)
        for v, n, c in zip(
            high | rng.integers(0, low, n, dtype=np.uint64),
            rng.integers(1, 9, n),
            rng.integers(1, counts + 1, n),
            strict=True,
        )
    }
    values = [v for v, _ in found]
    lengths = [n for _, n in found]
    scores = [count * n for (_, n), count in found.items()]
    table = fsst_encode._admit(
        np.array(values, dtype=np.uint64), np.array(lengths, dtype=np.int64), np.array(scores)
    )
    expected = _admit_reference(values, lengths, scores)
    assert table.values.tolist() == [values[i] for i in expected]
    assert table.lengths.tolist() == [lengths[i] for i in expected]


def _pages(seed: int, count: int) -> list[tuple[bytes, np.ndarray, np.ndarray]]:
    """Pages of text, each compressed with a table of its own: (table blob, compressed
    offsets, compressed bytes)."""
    rng = np.random.default_rng(seed)
    pages = []
    for k in range(count):
        words = [f"w{k}{i}".encode() * int(rng.integers(1, 4)) for i in range(8)] + [b"\xff\x00"]
        values = [b" ".join(rng.choice(words, int(rng.integers(0, 6)))) for _ in range(300)]
        data, offsets, table = _page_of(values)
        new_offsets, compressed = fsst_encode.compress(table, data, offsets)
        pages.append((fsst_encode.serialize(table), new_offsets, compressed))
    return pages


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_pages_expand_together_as_one_by_one(seed: int) -> None:
    """Each page's values expanded with its own table, in one pass, give what each
    page expanded alone gives (checked with the kernels, which the one pass needs)."""
    pages = _pages(seed, 5)
    tables = [parse_symbol_table(blob) for blob, _, _ in pages]
    counts = [len(offsets) - 1 for _, offsets, _ in pages]
    base = np.cumsum([0] + [len(c) for _, _, c in pages])
    data = np.concatenate([c for _, _, c in pages])
    offsets = np.concatenate(
        [[0]] + [offsets[1:] + base[k] for k, (_, offsets, _) in enumerate(pages)]
    ).astype(np.int64)
    together = fsst_decompress_pages(tables, data, offsets, counts)
    if not jit.enabled():  # the numpy path expands page by page: its callers do
        assert together is None
        return
    assert together is not None
    alone = [fsst_decompress(blob, c, o) for blob, o, c in pages]
    lengths = np.concatenate([np.diff(o) for o, _ in alone])
    assert np.array_equal(np.diff(together[0]), lengths)
    assert together[1].tobytes() == b"".join(d.tobytes() for _, d in alone)
    # A code past the last page's symbols is refused, not read from another's table.
    bad = data.copy()
    last = int(np.flatnonzero(np.diff(offsets) > 0)[-1])  # the last page's last value
    assert last >= len(offsets) - 1 - counts[-1] and tables[-1].num_symbols < 255
    bad[int(offsets[last])] = tables[-1].num_symbols
    with pytest.raises(CorruptFileError, match="missing symbol"):
        fsst_decompress_pages(tables, bad, offsets, counts)
    with pytest.raises(CorruptFileError, match="other counts"):
        fsst_decompress_pages(tables, data, offsets, [*counts[:-1], counts[-1] - 1])
