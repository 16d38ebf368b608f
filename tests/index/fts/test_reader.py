"""lancelet reads pylance-built INVERTED indices: postings, lengths, documents,
positions and impacts equal those computed word by word from the documents."""

from __future__ import annotations

from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest

from lancelet.errors import CorruptIndexError
from lancelet.index.fts import codecs, reader
from lancelet.index.fts.reader import (
    InvertedIndex,
    Partition,
    PositionsMissingError,
    decode_postings,
)
from tests.index.fts import _corpus
from tests.storage import local

pytestmark = pytest.mark.local_files("pylance builds the indices on local disk")


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], InvertedIndex]:
    """5000 documents in 2 fragments, positions kept: the most common words fill 40
    posting blocks (two impact groups)."""
    docs = _corpus.words(5000, seed=3)
    path = tmp_path_factory.mktemp("fts") / "plain"
    _, directory = _corpus.build(path, docs, per_file=3000, with_position=True, **_corpus.PLAIN)
    return docs, InvertedIndex.open(local(directory))


def check_partition(
    part: Partition, docs: list[str], addresses: np.ndarray, with_positions: bool
) -> None:
    """``addresses``: the row address of each of ``docs``."""
    want = _corpus.expected(docs)
    np.testing.assert_array_equal(part.row_ids, addresses[want.rows].astype(np.uint64))
    np.testing.assert_array_equal(part.num_tokens, want.lengths)
    tokens = dict(part.tokens())
    assert sorted(tokens) == sorted(want.postings)
    # Token ids number the tokens in the order first met.
    assert [t for t, _ in sorted(tokens.items(), key=lambda kv: kv[1])] == want.first_seen
    for token, token_id in tokens.items():
        listed = want.postings[token]
        assert part.token_id(token) == token_id
        assert part.document_frequency(token_id) == len(listed)
        found_docs, found_freqs = part.postings(token_id)
        assert found_docs.dtype == np.uint32 and found_freqs.dtype == np.uint32
        np.testing.assert_array_equal(found_docs, [d for d, _, _ in listed])
        np.testing.assert_array_equal(found_freqs, [f for _, f, _ in listed])
        check_impacts(part, token_id, listed, want.lengths)
        if with_positions:
            offsets, positions = part.positions(token_id)
            np.testing.assert_array_equal(offsets, np.r_[0, np.cumsum(found_freqs)])
            np.testing.assert_array_equal(positions, [p for _, _, ps in listed for p in ps])
    assert part.token_id("absent") is None


def frontier(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The (freq, norm) pairs no other pair beats in freq at an equal or smaller norm."""
    kept: list[tuple[int, int]] = []
    for norm in sorted({q for _, q in pairs}):
        freq = max(f for f, q in pairs if q == norm)
        if not kept or freq > kept[-1][0]:
            kept.append((freq, norm))
    return kept


def quantized(length: int) -> int:
    if length < 16:
        return length
    k = length.bit_length() - 1
    return 8 * (k - 2) + ((length >> (k - 3)) & 7)


def check_impacts(
    part: Partition, token_id: int, listed: list[tuple[int, int, list[int]]], lengths: list[int]
) -> None:
    blocks = [listed[i : i + 128] for i in range(0, len(listed), 128)]
    groups = [listed[g * 4096 : (g + 1) * 4096] for g in range(0, (len(blocks) + 31) // 32)]
    entries = part.impacts(token_id)
    assert len(entries) == len(blocks) + len(groups)
    for entry, members in zip(entries, blocks + groups, strict=True):
        last, freqs, norms = entry
        assert last == members[-1][0]
        want = frontier([(f, quantized(lengths[d])) for d, f, _ in members])
        assert list(zip(freqs.tolist(), norms.tolist(), strict=True)) == want


def test_postings_positions_and_documents(plain: tuple[list[str], InvertedIndex]) -> None:
    docs, index = plain
    assert index.params.with_position and index.params.base_tokenizer == "whitespace"
    assert len(index.partitions) == 1
    part = index.partitions[0]
    # Row addresses: fragment 1 starts at 1 << 32.
    addresses = np.r_[np.arange(3000), (1 << 32) + np.arange(2000)]
    check_partition(part, docs, addresses, with_positions=True)
    assert index.num_docs == len(_corpus.expected(docs).rows)
    assert index.total_tokens == sum(len(d.split()) for d in docs)
    biggest = max(range(part.num_token_ids), key=part.document_frequency)
    assert part.document_frequency(biggest) > 32 * 128  # group impacts are exercised


def test_default_params_and_no_positions(tmp_path: Path) -> None:
    docs = ["The quick brown fox jumps over the lazy dog", "hello world", "dogs and cats"]
    _, directory = _corpus.build(tmp_path / "d", docs)
    index = InvertedIndex.open(local(directory))
    assert index.params == type(index.params)()
    part = index.partitions[0]
    np.testing.assert_array_equal(part.num_tokens, [6, 2, 2])
    dog = part.token_id("dog")
    assert dog is not None
    np.testing.assert_array_equal(part.postings(dog)[0], [0, 2])
    assert index.document_frequency("lazi") == 1 and index.document_frequency("the") == 0
    with pytest.raises(PositionsMissingError):
        part.positions(dog)


def test_partitions_after_appends(tmp_path: Path) -> None:
    first, second = _corpus.words(700, seed=5), _corpus.words(400, seed=6)
    ds, _ = _corpus.build(tmp_path / "a", first, **_corpus.PLAIN)
    ds = lance.write_dataset(pa.table({"text": second}), ds.uri, mode="append")
    ds.optimize.optimize_indices()
    index = InvertedIndex.open(local(_corpus.index_dir(lance.dataset(ds.uri))))
    assert len(index.partitions) == 2
    check_partition(index.partitions[0], first, np.arange(700), with_positions=False)
    check_partition(index.partitions[1], second, (1 << 32) + np.arange(400), with_positions=False)
    want = _corpus.expected(first + second)
    for token in ("waaq", "wabq"):
        assert index.document_frequency(token) == len(want.postings[token])
    assert index.num_docs == len(want.rows)


def test_no_tokens(tmp_path: Path) -> None:
    _, directory = _corpus.build(tmp_path / "z", ["x" * 90], base_tokenizer="raw")
    index = InvertedIndex.open(local(directory))
    assert index.partitions == () and index.num_docs == 0 and index.total_tokens == 0
    assert index.document_frequency("x") == 0


def test_packed_blocks_decode_as_numbers() -> None:
    # An independent BitPacker4x packing of one block: lane i % 4, slot i // 4.
    values = (np.arange(128, dtype=np.uint64) * 2654435761) % 1000
    words = np.zeros((10, 4), dtype=np.uint64)
    for i, v in enumerate(values.tolist()):
        lane, slot = i % 4, i // 4
        for b in range(10):
            bit = slot * 10 + b
            words[bit // 32, lane] |= ((v >> b) & 1) << (bit % 32)
    raw = words.astype("<u4").tobytes()
    np.testing.assert_array_equal(codecs.unpack_blocks(np.frombuffer(raw, np.uint8), 10)[0], values)


def test_damage_is_an_error(tmp_path: Path) -> None:
    docs = _corpus.words(400, seed=4)
    _, directory = _corpus.build(tmp_path / "d", docs, with_position=True, **_corpus.PLAIN)
    index = InvertedIndex.open(local(directory))
    part = index.partitions[0]
    biggest = max(range(part.num_token_ids), key=part.document_frequency)
    blocks = part._invert.blocks[biggest].values
    length = part.document_frequency(biggest)
    assert length > 128  # a full block and a tail
    good = blocks.to_pylist()
    damaged = [
        [good[0][:-3], *good[1:]],  # a full block cut short
        [good[0][:8] + bytes([40]) + good[0][9:], *good[1:]],  # an impossible width
        [*good[:-1], good[-1][:-1]],  # the tail cut short
        good[:-1],  # a block missing
    ]
    for blocks_ in damaged:
        with pytest.raises(CorruptIndexError):
            decode_postings(pa.array(blocks_, pa.large_binary()), length, "damaged")
    with pytest.raises(CorruptIndexError):
        decode_postings(pa.array(good, pa.large_binary()), length + 1, "wrong length")
    # Files: a truncated invert file, an FST of garbage.
    invert = Path(directory) / "part_0_invert.lance"
    invert.write_bytes(invert.read_bytes()[:-100])
    with pytest.raises(CorruptIndexError):
        InvertedIndex.open(local(directory)).partitions[0].postings(0)
    with pytest.raises(CorruptIndexError):
        reader._open_fst(b"not an fst at all, not at all", "tokens")
