"""The dictionaries of pages taken in one batch (a compaction's small files) are
decoded in one batch when encoded alike: the same items as each page's own, for
every dictionary codec pylance writes (bit-packed in and out of line, LZ4 around flat
and variable-width items), and the rows pylance reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lance.file as ref
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from lancelet.errors import CorruptFileError
from lancelet.file import LanceFileReader
from lancelet.file.many import take_from_files
from lancelet.file.v2_1.read import page_batches
from lancelet.file.v2_1.read.arrow import dictionaries_array
from lancelet.file.v2_1.read.miniblock import MiniBlockPage
from lancelet.file.v2_1.read.values import Fixed, Slices, Var
from lancelet.file.v2_1.read.variable_width import VariableBlock

ROWS = 6000


def _table(seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    words = np.array([f"mode {i}" for i in range(12)])
    return pa.table(
        {
            "key": pa.array(rng.integers(0, 1500, ROWS) * 1_000_003),  # > 1024 items
            "small": pa.array(rng.integers(0, 7, ROWS), pa.int64()),
            "word": pa.array(words[rng.integers(0, 12, ROWS)]),
            "few": pa.array(rng.integers(0, 500, ROWS)),
        }
    )


def _readers(tmp_path: Path, count: int) -> tuple[list[LanceFileReader], list[str]]:
    paths = []
    for i in range(count):
        path = str(tmp_path / f"{i}.lance")
        with ref.LanceFileWriter(path, _table(i).schema, version="2.2") as writer:
            writer.write_batch(_table(i))
        paths.append(path)
    return [LanceFileReader(p) for p in paths], paths


def _first_pages(readers: list[LanceFileReader], column: int) -> list[MiniBlockPage]:
    pages = []
    for reader in readers:
        leaves = reader.plain_leaves()
        assert leaves is not None
        page = leaves[column].decoder(0)
        assert isinstance(page, MiniBlockPage) and page.dict_buffer is not None
        pages.append(page)
    return pages


def _own_dictionary(path: str, column: int) -> pa.Array:
    """A page's dictionary decoded alone, by a reader of its own."""
    (page,) = _first_pages([LanceFileReader(path)], column)
    return page.dictionary


@pytest.mark.parametrize(
    ("column", "codec"),
    [(0, "out_of_line_bitpacking"), (1, "general"), (2, "general"), (3, "inline_bitpacking")],
)
def test_batched_dictionaries_are_each_pages_own(tmp_path: Path, column: int, codec: str) -> None:
    readers, paths = _readers(tmp_path, 3)
    pages = _first_pages(readers, column)
    assert pages[0].layout.dictionary.WhichOneof("compression") == codec
    items, held = page_batches._dictionaries(pages)
    own = [_own_dictionary(p, column) for p in paths]
    assert items.equals(pa.concat_arrays(own))
    assert held.tolist() == [len(d) for d in own]


def test_dictionaries_encoded_differently_are_decoded_page_by_page(tmp_path: Path) -> None:
    readers, paths = _readers(tmp_path, 2)
    pages = [_first_pages(readers[:1], 0)[0], _first_pages(readers[1:], 1)[0]]
    assert pages[0].plan.dictionary_key != pages[1].plan.dictionary_key
    items, held = page_batches._dictionaries(pages)
    own = [_own_dictionary(paths[0], 0), _own_dictionary(paths[1], 1)]
    assert items.equals(pa.concat_arrays(own))
    assert held.tolist() == [len(d) for d in own]


def test_take_of_most_rows_decodes_the_dictionaries_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    readers, paths = _readers(tmp_path, 4)
    batched: list[int] = []
    (kind,) = {type(p.plan.dictionary_codec) for p in _first_pages(readers, 3)}
    real = kind.decode_blocks

    def spy(self: Any, buffers: Any, counts: Any) -> Any:
        batched.append(len(counts))
        return real(self, buffers, counts)

    monkeypatch.setattr(kind, "decode_blocks", spy)
    rng = np.random.default_rng(1)
    rows = [np.sort(rng.choice(ROWS, ROWS - 50, replace=False)) for _ in paths]
    got = take_from_files(readers, rows)
    expected = pa.concat_tables(
        ref.LanceFileReader(p).take_rows(r.tolist()).to_table()
        for p, r in zip(paths, rows, strict=True)
    )
    assert got is not None and got.equals(expected)
    assert 4 in batched


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.integers(1, 40).flatmap(
            lambda size: st.tuples(st.just(size), st.lists(st.integers(0, size - 1), max_size=30))
        ),
        min_size=1,
        max_size=12,
    ),
    st.sampled_from([8, 16, 32, 64]),
)
def test_dictionaries_array_takes_each_pages_items(
    pages: list[tuple[int, list[int]]], bits: int
) -> None:
    """Indices of several pages (some taking none) into their own dictionaries, the
    items back to back: each index picks its own page's item, as a Python loop does."""
    sizes = [size for size, _ in pages]
    items = pa.array([f"page {p} item {i}" for p, size in enumerate(sizes) for i in range(size)])
    raw = np.array([i for _, taken in pages for i in taken], dtype=f"<u{bits // 8}")
    indices = Fixed(raw.view(np.uint8), bits, len(raw))
    got = dictionaries_array(items, np.array(sizes), [len(t) for _, t in pages], indices)
    assert got.to_pylist() == [f"page {p} item {i}" for p, (_, t) in enumerate(pages) for i in t]


def test_dictionaries_array_refuses_a_64_bit_index_past_every_item() -> None:
    """A 64-bit index of 2**63 or more (negative as a signed integer) is refused."""
    raw = np.array([1, 2**63 + 1], dtype="<u8")
    items = pa.array(range(4))
    with pytest.raises(CorruptFileError, match="past its page's dictionary items"):
        dictionaries_array(items, np.array([4]), [2], Fixed(raw.view(np.uint8), 64, 2))


@pytest.mark.parametrize("bad_page", [0, 1, 2])
def test_dictionaries_array_refuses_an_index_past_its_pages_items(bad_page: int) -> None:
    """An index within the items of all pages together but past its own page's."""
    sizes, counts = np.array([3, 5, 4]), [2, 0 if bad_page != 1 else 2, 3]
    picks = [[0, 2], [1, 4][: counts[1]], [3, 0, 1]]
    picks[bad_page][-1] = int(sizes[bad_page])
    raw = np.array([i for p in picks for i in p], dtype="<u2")
    items = pa.array(range(int(sizes.sum())))
    with pytest.raises(CorruptFileError, match="past its page's dictionary items"):
        dictionaries_array(items, sizes, counts, Fixed(raw.view(np.uint8), 16, len(raw)))


def _variable_block(values: list[bytes], width: int) -> bytes:
    """A variable-width block as pylance writes one: offsets' width, where the bytes
    start, the offsets (from there), the bytes."""
    kind = f"<u{width}"
    start = 2 * width + (len(values) + 1) * width
    ends = np.cumsum([0] + [len(v) for v in values])
    head = np.array([8 * width, start], dtype=kind).tobytes()
    return head + ends.astype(kind).tobytes() + b"".join(values)


@settings(max_examples=300, deadline=None)
@example(blocks=[[b"ab"], [b"c"]], width=4, damage=(0, 4, 16))  # where the bytes start
@example(blocks=[[], []], width=8, damage=(0, 23, 128))  # an offset past 2**63
@given(
    blocks=st.lists(st.lists(st.binary(max_size=6), max_size=5), min_size=2, max_size=6),
    width=st.sampled_from([4, 8]),
    damage=st.one_of(
        st.none(), st.tuples(st.integers(0, 5), st.integers(0, 24), st.integers(1, 255))
    ),
)
def test_variable_blocks_decode_together_as_each_alone(
    blocks: list[list[bytes]], width: int, damage: tuple[int, int, int] | None
) -> None:
    """Variable-width blocks (string dictionaries) decoded in one batch give each
    block's own values back to back, and are refused exactly when a block alone is:
    blocks with a flipped byte anywhere (header, offsets, bytes)."""
    codec = VariableBlock(8 * width)
    raws = [bytearray(_variable_block(b, width)) for b in blocks]
    if damage is not None:  # a byte of one block flipped, mostly in its header or offsets
        block, at, flip = damage
        raw = raws[block % len(raws)]
        raw[at % len(raw)] ^= flip
    counts = np.array([len(b) for b in blocks], dtype=np.int64)
    sizes = np.array([len(r) for r in raws], dtype=np.int64)
    base = np.frombuffer(b"".join(raws), dtype=np.uint8)
    slices = Slices(base, np.cumsum(sizes) - sizes, sizes)
    alone: list[Var] | None = []
    try:
        for i, n in enumerate(counts.tolist()):
            part = codec.decode(slices.one(i), n)
            assert isinstance(part, Var)
            alone.append(part)
    except CorruptFileError:
        alone = None
    if alone is None:
        with pytest.raises(CorruptFileError):
            codec.decode_blocks(slices, counts)
        return
    together = codec.decode_blocks(slices, counts)
    assert isinstance(together, Var)
    expected = [bytes(p.data[p.offsets[k] : p.offsets[k + 1]]) for p in alone
                for k in range(len(p.offsets) - 1)]  # fmt: skip
    found = [bytes(together.data[together.offsets[k] : together.offsets[k + 1]])
             for k in range(len(together.offsets) - 1)]  # fmt: skip
    assert found == expected
    if damage is None:
        assert found == [v for b in blocks for v in b]
