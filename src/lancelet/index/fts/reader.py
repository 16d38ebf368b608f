"""Reading pylance 14's INVERTED index directories (``docs/fts/inverted-index-format.md``).

An index directory holds ``metadata.lance`` (parameters and partition numbers) and,
per partition ``p``, ``part_<p>_tokens.lance`` (an FST from token to token id),
``part_<p>_docs.lance`` (row id and kept token count per document; a document's id is
its row number there) and ``part_<p>_invert.lance`` (per token id: posting blocks,
scores, impacts and, when built with positions, the positions).  Token and document
ids are local to a partition.  Only the layout pylance writes by default (format
version 2, FST token sets, blocks of 128, varint tails) is read; others are refused.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import ducer
import numpy as np
import pyarrow as pa

from lancelet import io
from lancelet.errors import ArgumentError, CorruptIndexError, UnsupportedIndexError
from lancelet.index._files import IndexFile, expect_columns, read_index_file
from lancelet.index.fts import codecs
from lancelet.index.fts.params import InvertedParams

METADATA_FILE = "metadata.lance"
FORMAT_KEYS = {
    "format_version": "2",
    "token_set_format": "fst",
    "posting_block_size": "128",
    "posting_tail_codec": "varint_delta_v1",
}
INVERT_KEYS = {k: v for k, v in FORMAT_KEYS.items() if k != "token_set_format"}
POSITION_KEYS = {"positions_codec": "packed_delta_v1", "positions_layout": "shared_stream_v2"}
# Parameters pylance records that lancelet's analyzer has no field for: only their
# default values are accepted (another value would tokenize differently).
FIXED_PARAMS: dict[str, Any] = {
    "lance_tokenizer": "text",
    "split_identifiers": False,
    "split_on_numerics": False,
    "preserve_original": False,
    "index_operators": False,
}
_U32_MAX = int(np.iinfo(np.uint32).max)
_FULL_HEADER = 9  # f32 block max score, u32 first doc id, u8 doc-delta width


class PositionsMissingError(ArgumentError):
    """A query needs token positions, and the index was built without them."""


def tokens_file(p: int) -> str:
    return f"part_{p}_tokens.lance"


def docs_file(p: int) -> str:
    return f"part_{p}_docs.lance"


def invert_file(p: int) -> str:
    return f"part_{p}_invert.lance"


def params_from_json(text: str, format_version: int, where: str) -> InvertedParams:
    """The parameters recorded in ``metadata.lance``'s ``params`` key."""
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise CorruptIndexError(f"{where}: params are not JSON: {exc}") from exc
    if not isinstance(raw, dict):
        raise CorruptIndexError(f"{where}: params are not a JSON object")
    for key, default in FIXED_PARAMS.items():
        if raw.get(key, default) != default:
            raise UnsupportedIndexError(
                f"{where}: lancelet does not read INVERTED indices built with {key}={raw[key]!r}"
            )
    fields = {k: v for k, v in raw.items() if k not in FIXED_PARAMS}
    stops = fields.get("custom_stop_words")
    if stops is not None:
        fields["custom_stop_words"] = tuple(stops)
    try:
        return InvertedParams(**fields, format_version=format_version)
    except TypeError as exc:
        raise UnsupportedIndexError(f"{where}: unknown INVERTED index parameters: {exc}") from exc


def _check_keys(file: IndexFile, expected: Mapping[str, str]) -> None:
    for key, value in expected.items():
        found = file.metadata.get(key)
        if found != value:
            raise UnsupportedIndexError(
                f"{file.path}: lancelet reads INVERTED indices with {key}={value!r}, "
                f"this one has {found!r}"
            )


def _partition_numbers(file: IndexFile) -> list[int]:
    try:
        numbers = json.loads(file.metadata.get("partitions", ""))
    except ValueError as exc:
        raise CorruptIndexError(f"{file.path}: partitions are not JSON: {exc}") from exc
    if not isinstance(numbers, list) or not all(
        isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in numbers
    ):
        raise CorruptIndexError(f"{file.path}: partitions {numbers!r} are not partition numbers")
    return numbers


@dataclass(frozen=True)
class InvertedIndex:
    """An INVERTED index: its parameters and partitions."""

    params: InvertedParams
    partitions: tuple[Partition, ...]

    @classmethod
    def open(cls, directory: io.Place) -> InvertedIndex:
        """Open the index in ``directory`` (its ``_indices/<uuid>/``)."""
        meta = read_index_file(directory, METADATA_FILE)
        expect_columns(meta, {"deleted_fragments": pa.binary()})
        _check_keys(meta, FORMAT_KEYS)
        params = params_from_json(
            meta.metadata.get("params", ""), int(FORMAT_KEYS["format_version"]), meta.path
        )
        partitions = tuple(
            Partition.open(directory, p, params.with_position) for p in _partition_numbers(meta)
        )
        return cls(params, partitions)

    @property
    def num_docs(self) -> int:
        return sum(len(p.row_ids) for p in self.partitions)

    @property
    def total_tokens(self) -> int:
        return sum(p.total_tokens for p in self.partitions)

    def document_frequency(self, token: str) -> int:
        total = 0
        for part in self.partitions:
            token_id = part.token_id(token)
            if token_id is not None:
                total += part.document_frequency(token_id)
        return total


@dataclass(frozen=True)
class Partition:
    """One partition: its token map, documents and posting lists."""

    directory: io.Place
    number: int
    row_ids: np.ndarray
    num_tokens: np.ndarray
    with_position: bool
    _fst: Any = field(repr=False)

    @classmethod
    def open(cls, directory: io.Place, number: int, with_position: bool) -> Partition:
        docs = read_index_file(directory, docs_file(number))
        expect_columns(docs, {"_rowid": pa.uint64(), "_num_tokens": pa.uint32()})
        tokens = read_index_file(directory, tokens_file(number))
        expect_columns(
            tokens,
            {
                "_token_fst_bytes": pa.large_binary(),
                "_token_next_id": pa.uint32(),
                "_token_total_length": pa.uint64(),
            },
        )
        if tokens.table.num_rows != 1:
            raise CorruptIndexError(f"{tokens.path}: {tokens.table.num_rows} rows, expected 1")
        fst = _open_fst(tokens.table.column(0)[0].as_py(), tokens.path)
        row_ids = docs.table.column("_rowid").to_numpy()
        num_tokens = docs.table.column("_num_tokens").to_numpy()
        total = docs.metadata.get("total_tokens")
        if total is not None and total != str(int(num_tokens.sum(dtype=np.uint64))):
            raise CorruptIndexError(f"{docs.path}: total_tokens {total} is not the docs' sum")
        return cls(directory, number, row_ids, num_tokens, with_position, fst)

    @property
    def total_tokens(self) -> int:
        return int(self.num_tokens.sum(dtype=np.uint64))

    def vocabulary_size(self) -> int:
        """How many distinct tokens the partition holds."""
        return len(self._fst)

    def token_id(self, token: str) -> int | None:
        found = self._fst.get(token.encode("utf-8"))
        return None if found is None else int(found)

    def tokens(self) -> list[tuple[str, int]]:
        """Every (token, token id) of the partition, tokens in byte order."""
        return [(key.decode("utf-8"), int(value)) for key, value in self._fst.items()]

    @cached_property
    def _invert(self) -> _InvertFile:
        return _InvertFile.read(self.directory, self.number, self.with_position, len(self.row_ids))

    @property
    def num_token_ids(self) -> int:
        return len(self._invert.lengths)

    def document_frequency(self, token_id: int) -> int:
        return int(self._invert.lengths[self._checked(token_id)])

    def max_score(self, token_id: int) -> float:
        return float(self._invert.max_scores[self._checked(token_id)])

    def postings(self, token_id: int) -> tuple[np.ndarray, np.ndarray]:
        docs, freqs, _ = self._invert.postings(self._checked(token_id))
        return docs, freqs

    def documents(self, token_id: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The token's postings as (row ids, freqs, document lengths), kept decoded:
        gathering row ids and lengths of a long posting list cost as much as the rest
        of a query (measured 1 ms per common token at 1,000,000 docs)."""
        invert = self._invert
        token_id = self._checked(token_id)
        found = invert.decoded.get(("documents", token_id))
        if found is None:
            docs, freqs = self.postings(token_id)
            found = invert.decoded.put(
                ("documents", token_id), (self.row_ids[docs], freqs, self.num_tokens[docs])
            )
        return found[0], found[1], found[2]

    def kept(self, key: Hashable, compute: Callable[[], np.ndarray]) -> np.ndarray:
        """An array derived from this partition's postings (``key`` names it and
        what it depends on), kept with the decoded posting lists."""
        cache = self._invert.decoded
        found = cache.get(key)
        if found is None:
            found = cache.put(key, (compute(),))
        return found[0]

    def block_max_scores(self, token_id: int) -> np.ndarray:
        """The stored upper bound of the BM25 score of each posting block (float32)."""
        return self._invert.postings(self._checked(token_id))[2]

    def impacts(self, token_id: int) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """The token's impact entries: (last doc, freqs, quantized lengths) per posting
        block, then per group of 32 blocks."""
        invert = self._invert
        token_id = self._checked(token_id)
        where = f"{invert.path}: token {token_id}"
        return [codecs.decode_impact(entry, where) for entry in invert.impacts[token_id].as_py()]

    def positions(self, token_id: int) -> tuple[np.ndarray, np.ndarray]:
        if not self.with_position:
            raise PositionsMissingError(
                "the INVERTED index was built without positions (with_position=False); "
                "phrase queries need an index built with with_position=True"
            )
        token_id = self._checked(token_id)
        _, freqs, _ = self._invert.postings(token_id)
        return self._invert.positions(token_id, freqs)

    def _checked(self, token_id: int) -> int:
        if not 0 <= token_id < len(self._invert.lengths):
            raise ArgumentError(f"token id {token_id} is out of range")
        return token_id


def _open_fst(data: bytes, where: str) -> Any:
    try:
        return ducer.Map(data)
    except Exception as exc:  # ducer reports damaged FSTs with its own errors
        raise CorruptIndexError(f"{where}: the token FST does not read: {exc}") from exc


@dataclass(frozen=True)
class _InvertFile:
    path: str
    num_docs: int
    lengths: np.ndarray
    max_scores: np.ndarray
    blocks: pa.LargeListArray | pa.ListArray
    impacts: pa.ListArray
    compressed_positions: pa.LargeBinaryArray | None
    position_offsets: pa.ListArray | None
    decoded: _DecodedCache = field(default_factory=lambda: _DecodedCache(), compare=False)

    @classmethod
    def read(
        cls, directory: io.Place, number: int, with_position: bool, n_docs: int
    ) -> _InvertFile:
        file = read_index_file(directory, invert_file(number))
        columns: dict[str, pa.DataType | None] = {
            "_posting": pa.list_(pa.large_binary()),
            "_max_score": pa.float32(),
            "_length": pa.uint32(),
            "_impacts": pa.list_(pa.large_binary()),
        }
        if with_position:
            columns["_compressed_position"] = pa.large_binary()
            columns["_position_block_offset"] = pa.list_(pa.uint32())
        expect_columns(file, columns)
        _check_keys(file, INVERT_KEYS)
        if with_position:
            _check_keys(file, POSITION_KEYS)
        table = file.table.combine_chunks()

        def column(name: str) -> Any:
            return table.column(name).chunk(0) if table.num_rows else pa.array([], columns[name])

        return cls(
            file.path,
            n_docs,
            column("_length").to_numpy(),
            column("_max_score").to_numpy(),
            column("_posting"),
            column("_impacts"),
            column("_compressed_position") if with_position else None,
            column("_position_block_offset") if with_position else None,
        )

    def postings(self, token_id: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        found = self.decoded.get(("postings", token_id))
        if found is None:
            found = self.decoded.put(("postings", token_id), self._decoded_postings(token_id))
        return found[0], found[1], found[2]

    def _decoded_postings(self, token_id: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        where = f"{self.path}: token {token_id}"
        blocks = self.blocks[token_id].values
        docs, freqs, scores = decode_postings(blocks, int(self.lengths[token_id]), where)
        if len(docs) and int(docs[-1]) >= self.num_docs:
            raise CorruptIndexError(f"{where}: doc id {docs[-1]} past the {self.num_docs} docs")
        return docs, freqs, scores

    def positions(self, token_id: int, freqs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        found = self.decoded.get(("positions", token_id))
        if found is None:
            found = self.decoded.put(
                ("positions", token_id), self._decoded_positions(token_id, freqs)
            )
        return found[0], found[1]

    def _decoded_positions(self, token_id: int, freqs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        assert self.compressed_positions is not None and self.position_offsets is not None
        where = f"{self.path}: positions of token {token_id}"
        data = np.frombuffer(self.compressed_positions[token_id].as_py(), dtype=np.uint8)
        starts = self.position_offsets[token_id].values.to_numpy()
        return decode_positions(data, starts, freqs, where)


class _DecodedCache:
    """Decoded posting lists and positions of one partition, least recently used
    dropped past ``limit`` bytes: an open index is kept across queries and decoding
    was most of a query's time (measured 1.7 ms per common token at 300,000 docs).
    The arrays are made read-only, as they are handed out again."""

    def __init__(self, limit: int = 128 << 20) -> None:
        self.limit = limit
        self.size = 0
        self.entries: OrderedDict[Hashable, tuple[np.ndarray, ...]] = OrderedDict()

    def get(self, key: Hashable) -> tuple[np.ndarray, ...] | None:
        found = self.entries.get(key)
        if found is not None:
            self.entries.move_to_end(key)
        return found

    def put(self, key: Hashable, arrays: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
        for array in arrays:
            array.flags.writeable = False
        size = sum(a.nbytes for a in arrays)
        if size > self.limit:
            return arrays
        self.entries[key] = arrays
        self.size += size
        while self.size > self.limit:
            _, dropped = self.entries.popitem(last=False)
            self.size -= sum(a.nbytes for a in dropped)
        return arrays


def _binary_parts(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The bytes and the int64 offsets (relative to the bytes) of a (large) binary array."""
    array = array.cast(pa.large_binary())
    buffers = array.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int64)[
        array.offset : array.offset + len(array) + 1
    ]
    data = (
        np.frombuffer(buffers[2], dtype=np.uint8)
        if buffers[2] is not None
        else np.zeros(0, np.uint8)
    )
    base = int(offsets[0]) if len(offsets) else 0
    end = int(offsets[-1]) if len(offsets) else 0
    return data[base:end], offsets - base


def _u32_at(data: np.ndarray, starts: np.ndarray) -> np.ndarray:
    grabbed = data[starts[:, None] + np.arange(4)]
    return np.ascontiguousarray(grabbed).view("<u4").ravel()


def _unpack_at(data: np.ndarray, starts: np.ndarray, widths: np.ndarray, where: str) -> np.ndarray:
    """The 128 values of the BitPacker4x blocks at byte ``starts`` of ``data`` with
    ``widths``: shape (len(starts), 128) uint32."""
    out = np.zeros((len(starts), codecs.BLOCK), dtype=np.uint32)
    if len(starts) and int(widths.max()) > 32:
        raise CorruptIndexError(f"{where}: a block has bit width {int(widths.max())}")
    for width in np.unique(widths).tolist():
        if width == 0:
            continue
        chosen = np.flatnonzero(widths == width)
        spans = starts[chosen][:, None] + np.arange(16 * width)
        if len(spans) and int(spans[:, -1].max()) >= len(data):
            raise CorruptIndexError(f"{where}: a packed block runs past its bytes")
        out[chosen] = codecs.unpack_blocks(data[spans], width)
    return out


def decode_postings(
    blocks: pa.Array, length: int, where: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(doc ids, term frequencies, block max scores) of one token's posting blocks."""
    data, offsets = _binary_parts(blocks)
    full, tail = divmod(length, codecs.BLOCK)
    if len(offsets) - 1 != full + (tail > 0):
        raise CorruptIndexError(f"{where}: {len(offsets) - 1} posting blocks for {length} docs")
    starts = offsets[:full]
    sizes = np.diff(offsets)
    if np.any(sizes < 4) or np.any(sizes[:full] < _FULL_HEADER + 1):
        raise CorruptIndexError(f"{where}: a posting block is too short")
    scores = _u32_at(data, offsets[:-1]).view("<f4").astype(np.float32)
    doc_widths = data[starts + 8].astype(np.int64)
    freq_starts = starts + _FULL_HEADER + 16 * doc_widths
    if np.any(freq_starts >= offsets[1 : full + 1]):
        raise CorruptIndexError(f"{where}: a posting block is too short")
    freq_widths = data[freq_starts].astype(np.int64)
    if np.any(freq_starts + 1 + 16 * freq_widths != offsets[1 : full + 1]):
        raise CorruptIndexError(f"{where}: a posting block's size contradicts its bit widths")
    deltas = _unpack_at(data, starts + _FULL_HEADER, doc_widths, where)
    freqs = _unpack_at(data, freq_starts + 1, freq_widths, where)
    firsts = _u32_at(data, starts + 4).astype(np.uint64)
    docs = (np.cumsum(deltas, axis=1, dtype=np.uint64) + firsts[:, None]).ravel()
    freqs = freqs.ravel()
    if tail:
        tail_bytes = data[offsets[full] + 4 : offsets[full + 1]]
        values = codecs.decode_varints(tail_bytes, 2 * tail, where)
        if codecs.varint_span(tail_bytes, 2 * tail, where) != len(tail_bytes):
            raise CorruptIndexError(f"{where}: the tail block has trailing bytes")
        docs = np.concatenate([docs, np.cumsum(values[:tail], dtype=np.uint64)])
        freqs = np.concatenate([freqs, values[tail:].astype(np.uint32)])
    if len(docs) and (
        np.any(docs[1:] <= docs[:-1]) or int(docs[-1]) > _U32_MAX or np.any(freqs == 0)
    ):
        raise CorruptIndexError(f"{where}: posting doc ids are not ascending or a freq is 0")
    return docs.astype(np.uint32), freqs.astype(np.uint32), scores


def decode_positions(
    data: np.ndarray, block_starts: np.ndarray, freqs: np.ndarray, where: str
) -> tuple[np.ndarray, np.ndarray]:
    """CSR (offsets, positions) of a token's docs from its shared position streams:
    per posting block, the block's docs' positions (first absolute, then gaps within
    the doc) as chunks of 128 bit-packed values and a varint tail."""
    block = codecs.BLOCK
    counts = (
        np.add.reduceat(freqs.astype(np.int64), np.arange(0, len(freqs), block))
        if len(freqs)
        else np.zeros(0, np.int64)
    )
    if len(block_starts) != len(counts):
        raise CorruptIndexError(
            f"{where}: {len(block_starts)} position blocks, {len(counts)} expected"
        )
    ends = np.r_[block_starts[1:], len(data)].astype(np.int64)
    chunk_starts: list[int] = []
    chunk_widths: list[int] = []
    pieces: list[tuple[str, Any]] = []
    for start, end, count in zip(
        block_starts.tolist(), ends.tolist(), counts.tolist(), strict=True
    ):
        pos = start
        for _ in range(count // block):  # one header per 128 positions
            if pos >= end:
                raise CorruptIndexError(f"{where}: a position chunk runs past its bytes")
            width = int(data[pos])
            chunk_starts.append(pos + 1)
            chunk_widths.append(width)
            pieces.append(("packed", len(chunk_starts) - 1))
            pos += 1 + 16 * width
        rest = count % block
        tail = data[pos:end]
        if codecs.varint_span(tail, rest, where) != len(tail):
            raise CorruptIndexError(f"{where}: a position block's size is wrong")
        pieces.append(("varint", codecs.decode_varints(tail, rest, where)))
    packed = _unpack_at(
        data, np.array(chunk_starts, np.int64), np.array(chunk_widths, np.int64), where
    )
    parts = [packed[p].astype(np.uint64) if kind == "packed" else p for kind, p in pieces]
    gaps = np.concatenate([np.zeros(0, np.uint64), *parts]).astype(np.int64)
    offsets = np.r_[0, np.cumsum(freqs, dtype=np.int64)]
    running = np.cumsum(gaps)
    firsts = offsets[:-1]
    base = running[firsts] - gaps[firsts] if len(firsts) else np.zeros(0, np.int64)
    positions = running - np.repeat(base, freqs.astype(np.int64))
    if len(positions) and (positions.max() > _U32_MAX):
        raise CorruptIndexError(f"{where}: a position overflows 32 bits")
    return offsets, positions.astype(np.uint32)
