"""Takes across many mini-block pages: the chunks of consecutive pages that decode
alike come in one batch, FSST expands only the rows asked for, and a damaged page
inside a batch is still named."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import lance.file as ref
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lancelet._proto import encodings_v2_1_pb2 as pb
from lancelet.errors import CorruptFileError
from lancelet.file import LanceFileReader
from lancelet.file.codecs import bitpacking
from lancelet.file.many import take_from_files
from lancelet.file.v2_1.read import miniblock, page_batches
from lancelet.file.v2_1.read.fixed_width import OutOfLineBitpacking
from lancelet.file.v2_1.read.values import Fixed
from tests.file.gen import repeated_keys
from tests.file.v2_1 import page_bytes

N = 6000


def table(n: int = N) -> pa.Table:
    words = ["AIR", "MAIL", "RAIL", "SHIP", "TRUCK"]
    return pa.table(
        {
            "key": pa.array(np.arange(n, dtype=np.int64) * 37 % 100_003),
            "maybe": pa.array([None if i % 7 == 3 else i for i in range(n)], pa.int32()),
            "mode": pa.array([words[i * 7 % 5] for i in range(n)]),
            "price": pa.array(
                [Decimal(i * 13 % 9000) / 100 for i in range(n)], pa.decimal128(15, 2)
            ),
            "vec": pa.array([[float(i), -float(i)] for i in range(n)], pa.list_(pa.float32(), 2)),
            "flag": pa.array([i % 3 == 0 for i in range(n)]),
        }
    )


def write(path: Path, data: pa.Table, **kwargs: Any) -> Path:
    with ref.LanceFileWriter(str(path), data.schema, version="2.2", **kwargs) as writer:
        for batch in data.to_batches(max_chunksize=500):
            writer.write_batch(batch)
    return path


def test_take_across_pages_batches_their_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = table()
    path = write(tmp_path / "t.lance", data, data_cache_bytes=4096)
    batches: list[int] = []
    real = page_batches.take_pages

    def spy(pages: Any, *args: Any) -> Any:
        batches.append(len(pages))
        return real(pages, *args)

    monkeypatch.setattr(page_batches, "take_pages", spy)
    rows = sorted({0, 1, N - 1, *range(5, N, 97)})
    reader = LanceFileReader(path)
    for name in data.column_names:
        batches.clear()
        got = reader.take_rows(rows, columns=[name]).to_table().column(name)
        assert got.to_pylist() == data.column(name).take(rows).to_pylist(), name
        pages = LanceFileReader(path)._leaves[data.column_names.index(name)].info.pages
        if len(pages) > 4:
            assert batches and max(batches) > 1, name


def _corrupt_chunk(path: Path, column: int, page: int) -> Path:
    data, columns = page_bytes.pages(path)
    entry = columns[column][page]
    forged = bytearray(data)
    chunks_at = int(entry.meta.buffer_offsets[1])
    # Chunk 0's value buffer size (a u32 after the u16 level count): it no longer
    # fills the chunk.
    forged[chunks_at + 4] ^= 0x40
    out = path.with_name("forged.lance")
    out.write_bytes(bytes(forged))
    return out


def test_damaged_page_inside_a_batch_is_named(tmp_path: Path) -> None:
    data = table()
    path = write(tmp_path / "t.lance", data, data_cache_bytes=4096)
    reader = LanceFileReader(path)
    leaf = reader._leaves[0]
    assert len(leaf.info.pages) > 4
    forged = _corrupt_chunk(path, 0, 2)
    starts = leaf.starts
    rows = [int(starts[p]) for p in range(5)]  # the first row of pages 0..4
    with pytest.raises(CorruptFileError, match=r"column 'key' page 2\b") as info:
        LanceFileReader(forged).take_rows(rows, columns=["key"]).to_table()
    assert str(forged) in str(info.value)
    # Pages around it still read.
    fine = [int(starts[p]) for p in (0, 1, 3, 4)]
    got = LanceFileReader(forged).take_rows(fine, columns=["key"]).to_table().column("key")
    assert got.to_pylist() == data.column("key").take(fine).to_pylist()


def comments(n: int) -> pa.Table:
    rng = np.random.default_rng(4)
    words = ["carefully", "final", "deposits", "sleep", "quickly", "ironic", "pinto", "beans"]
    picks = rng.integers(0, len(words), (n, 6))
    return pa.table(
        {"c": [" ".join(words[j] for j in row) + f" {i}" for i, row in enumerate(picks)]}
    )


def _fsst_layout(path: Path) -> tuple[int, pb.PageLayout]:
    _, columns = page_bytes.pages(path)
    for index, entry in enumerate(columns[0]):
        mini = entry.layout.mini_block_layout
        if mini.value_compression.WhichOneof("compression") == "fsst":
            return index, entry.layout
    raise AssertionError("pylance did not use FSST")


def test_fsst_take_matches_the_table(tmp_path: Path) -> None:
    data = comments(20_000)
    path = write(tmp_path / "c.lance", data)
    _fsst_layout(path)  # the test is about FSST pages
    rows = sorted({0, 3, 19_999, *range(11, 20_000, 503)})
    got = LanceFileReader(path).take_rows(rows).to_table()
    assert got.column("c").to_pylist() == data.column("c").take(rows).to_pylist()


def test_fsst_take_still_checks_the_codes_it_expands(tmp_path: Path) -> None:
    data = comments(20_000)
    path = write(tmp_path / "c.lance", data)
    page, layout = _fsst_layout(path)
    raw, columns = page_bytes.pages(path)
    entry = columns[0][page]
    chunk = page_bytes.miniblock_chunks(layout.mini_block_layout, *entry.buffers[:2])[0]
    at, _ = chunk.buffers[0]
    offsets = np.frombuffer(entry.buffers[1], "<u4", chunk.count + 1, chunk.start + at)
    end = int(entry.meta.buffer_offsets[1]) + chunk.start + at + int(offsets[2])
    forged_bytes = bytearray(raw)
    forged_bytes[end - 2 : end] = b"\x00\xff"  # value 1 now ends in an escape
    forged = tmp_path / "forged.lance"
    forged.write_bytes(bytes(forged_bytes))
    first = int(LanceFileReader(path)._leaves[0].starts[page])
    with pytest.raises(CorruptFileError, match=rf"page {page}\b.*no payload") as info:
        LanceFileReader(forged).take_rows([first + 1]).to_table()
    assert str(forged) in str(info.value)
    # A row whose value is intact still reads.
    got = LanceFileReader(forged).take_rows([first + 2]).to_table().column("c")
    assert got.to_pylist() == data.column("c").take([first + 2]).to_pylist()


def test_take_decodes_only_the_dictionary_items_it_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Sorted keys repeated 1-7 times: pylance stores run-length encoded indices into a
    # bit-packed dictionary (TPC-H's l_orderkey).
    n = 60_000
    data = repeated_keys(0, n)
    keys = data.column("k").to_numpy()
    path = write(tmp_path / "k.lance", data)
    _refuse_whole_bitpacked_dictionaries(path, monkeypatch, "a take")
    rows = sorted({0, 1, n - 1, *range(3, n, 1999)})
    reader = LanceFileReader(path)
    got = reader.take_rows(rows).to_table().column("k")
    assert got.to_pylist() == keys[rows].tolist()


def test_short_range_decodes_only_the_dictionary_items_it_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A BTREE index reads one 4,096-row page of sorted keys from a file page whose
    # dictionary holds every distinct key: only the items of that run are decoded.
    n = 200_000
    data = repeated_keys(1, n)
    keys = data.column("k").to_numpy()
    with ref.LanceFileWriter(str(tmp_path / "k.lance"), data.schema, version="2.2") as writer:
        writer.write_batch(data)  # one page, its dictionary of some 50,000 keys
    path = tmp_path / "k.lance"
    _refuse_whole_bitpacked_dictionaries(path, monkeypatch, "a short read")
    for start, count in [(0, 4096), (20_000, 4096), (n - 100, 100), (123, 1)]:
        got = LanceFileReader(path).read_range(start, count).to_table().column("k")
        assert got.to_pylist() == keys[start : start + count].tolist()


def test_a_page_read_again_decodes_its_dictionary_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Repeated short reads of one page (lookups on an open file): the first decodes
    only its items, the second the whole bit-packed dictionary, kept for the rest."""
    n = 200_000
    data = repeated_keys(1, n)
    keys = data.column("k").to_numpy()
    path = tmp_path / "k.lance"
    with ref.LanceFileWriter(str(path), data.schema, version="2.2") as writer:
        writer.write_batch(data)  # one page, its dictionary of some 50,000 keys
    layouts = [p.layout.mini_block_layout for p in LanceFileReader(path)._leaves[0].info.pages]
    assert [m.dictionary.WhichOneof("compression") for m in layouts] == ["out_of_line_bitpacking"]
    decoded: list[int] = []
    real = miniblock.MiniBlockPage._decoded_dictionary

    def counted(self: miniblock.MiniBlockPage, shared: bool) -> Any:
        if not self.dictionary_decoded:
            decoded.append(int(self.layout.num_dictionary_items))
        return real(self, shared)

    monkeypatch.setattr(miniblock.MiniBlockPage, "_decoded_dictionary", counted)
    reader = LanceFileReader(path)
    for i, start in enumerate([0, 20_000, n - 100, 123, 77_000]):
        got = reader.read_range(start, 100).to_table().column("k")
        assert got.to_pylist() == keys[start : start + 100].tolist()
        assert len(decoded) == (0 if i == 0 else 1)


def _packed_dictionary(values: np.ndarray, bits: int, raw_tail: bool) -> np.ndarray:
    """An out-of-line bit-packed buffer: whole 1024-value chunks, then the tail raw
    or as a zero-padded chunk."""
    whole = len(values) // 1024 * 1024
    padded = np.zeros(-(-len(values) // 1024) * 1024, values.dtype)
    padded[: len(values)] = values
    chunks = padded.reshape(-1, 1024)
    if raw_tail and whole < len(values):
        packed = bitpacking._pack_chunks(chunks[:-1], bits).tobytes() + values[whole:].tobytes()
    else:
        packed = bitpacking._pack_chunks(chunks, bits).tobytes()
    return np.frombuffer(packed, np.uint8)


@pytest.mark.parametrize("raw_tail", [False, True])
def test_out_of_line_values_at_positions(raw_tail: bool) -> None:
    rng = np.random.default_rng(9)
    values = rng.integers(0, 2**21, 5000).astype(np.uint64)
    buffer = _packed_dictionary(values, 21, raw_tail)
    codec = OutOfLineBitpacking(64, 21)
    positions = np.array([0, 1, 1023, 1024, 3000, 4095, 4096, 4999], dtype=np.int64)
    got = codec.decode_at(buffer, len(values), positions)
    assert isinstance(got, Fixed) and got.as_uint().tolist() == values[positions].tolist()
    with pytest.raises(CorruptFileError, match="bytes"):
        codec.decode_at(buffer[:-8], len(values), positions)


def test_fsst_pages_of_other_symbol_tables_decode_in_one_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FSST pages batch whatever their symbol tables (a compaction's files each have
    their own): their values are decoded together and each page's expanded with
    its own table, giving the rows pylance reads."""
    paths = []
    for i in range(3):
        part = comments(20_000).slice(i * 5000, 6000)
        paths.append(write(tmp_path / f"{i}.lance", part))
        _fsst_layout(paths[-1])
    readers = [LanceFileReader(p) for p in paths]
    pages = [r._leaves[0].decoder(0) for r in readers]
    assert all(isinstance(p, miniblock.MiniBlockPage) for p in pages)
    tables = {p.layout.value_compression.fsst.symbol_table for p in pages}  # type: ignore[union-attr]
    assert len(tables) == 3 and len({p.batch_key for p in pages}) == 1  # type: ignore[union-attr]
    batches: list[int] = []
    real = page_batches.take_pages

    def spy(batch: Any, *args: Any) -> Any:
        batches.append(len(batch))
        return real(batch, *args)

    monkeypatch.setattr(page_batches, "take_pages", spy)
    rng = np.random.default_rng(2)
    rows = [np.sort(rng.choice(6000, 5900, replace=False)) for _ in paths]
    got = take_from_files(readers, rows)
    expected = pa.concat_tables(
        ref.LanceFileReader(str(p)).take_rows(r.tolist()).to_table()
        for p, r in zip(paths, rows, strict=True)
    )
    assert got is not None and got.equals(expected)
    assert max(batches) >= 3


def test_damaged_fsst_page_inside_a_batch_is_named(tmp_path: Path) -> None:
    data = comments(20_000)
    path = write(tmp_path / "c.lance", data)
    page, layout = _fsst_layout(path)
    raw, columns = page_bytes.pages(path)
    entry = columns[0][page]
    chunk = page_bytes.miniblock_chunks(layout.mini_block_layout, *entry.buffers[:2])[0]
    at, _ = chunk.buffers[0]
    offsets = np.frombuffer(entry.buffers[1], "<u4", chunk.count + 1, chunk.start + at)
    end = int(entry.meta.buffer_offsets[1]) + chunk.start + at + int(offsets[2])
    forged_bytes = bytearray(raw)
    forged_bytes[end - 2 : end] = b"\x00\xff"  # value 1 now ends in an escape
    forged = tmp_path / "forged.lance"
    forged.write_bytes(bytes(forged_bytes))
    every = np.arange(20_000)
    with pytest.raises(CorruptFileError, match=rf"page {page}\b") as info:
        take_from_files([LanceFileReader(forged)], [every])
    assert str(forged) in str(info.value)


def _refuse_whole_bitpacked_dictionaries(
    path: Path, monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    """Check that ``path`` has a bit-packed dictionary, then make decoding any such
    dictionary whole fail the test."""
    layouts = [p.layout.mini_block_layout for p in LanceFileReader(path)._leaves[0].info.pages]
    assert any(m.dictionary.WhichOneof("compression") == "out_of_line_bitpacking" for m in layouts)
    real = miniblock.MiniBlockPage._decoded_dictionary

    def whole(self: miniblock.MiniBlockPage, shared: bool) -> Any:
        kind = self.layout.dictionary.WhichOneof("compression")
        assert kind != "out_of_line_bitpacking", f"{what} decoded a whole bit-packed dictionary"
        return real(self, shared)

    monkeypatch.setattr(miniblock.MiniBlockPage, "_decoded_dictionary", whole)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 9), min_size=1, max_size=6),
    st.integers(0, 1 << 9),
    st.integers(-1, 5),
    st.randoms(use_true_random=False),
)
def test_every_chunk_wanted_as_counted(logs: list[int], last: int, left_out: int, rng: Any) -> None:
    """Whether every chunk of a page holds a wanted row, as counting them tells (chunks
    of powers of two, the last one of what remains, possibly none): pages whose rows
    are wanted but for a few, or but for a whole chunk, or at random."""
    counts = np.array([1 << k for k in logs[:-1]] + [last], dtype=np.int64)
    starts = np.cumsum(counts) - counts
    total = int(counts.sum())
    fewest = int(counts.min())
    page = SimpleNamespace(item_starts=starts, counts=counts, num_rows=total, fewest_values=fewest)
    wanted = set(range(total))
    if 0 <= left_out < len(counts):  # one chunk left out whole
        wanted -= set(range(int(starts[left_out]), int(starts[left_out] + counts[left_out])))
    drop = rng.sample(sorted(wanted), rng.randint(0, len(wanted)) if rng.random() < 0.3 else 0)
    rows = np.array(sorted(wanted - set(drop)), dtype=np.int64)
    chunk_of = np.searchsorted(starts, rows, side="right") - 1
    expected = set(chunk_of.tolist()) == set(range(len(counts)))
    assert page_batches._every_chunk_wanted(page, rows) == expected  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.integers(0, 50), max_size=40), ascending=st.booleans())
def test_distinct_indices_as_numpy_finds_them(values: list[int], ascending: bool) -> None:
    """The few-items path's distinct indices (sorted input skips the sort) and where
    each value is among them, as np.unique gives them."""
    raw = np.array(sorted(values) if ascending else values, dtype=np.int64)
    found, inverse = miniblock._distinct(raw)
    expected, expected_inverse = np.unique(raw, return_inverse=True)
    assert found.tolist() == expected.tolist()
    assert inverse.tolist() == expected_inverse.reshape(-1).tolist()
