"""NGRAM indices: for each trigram of a string column, the rows whose text holds it.

The layout is the reference's: one file, ``ngram_postings.lance``, with a ``tokens``
column (uint32, ascending) and a ``posting_list`` column (a 64-bit Roaring tree map
of row addresses: a u64 count of 32-bit high parts, then each high part as a u32
followed by its Roaring bitmap).  Token 0 lists the null rows.

A text is lower-cased and ASCII-folded, then every window of three characters that
are all ASCII letters or digits is a trigram; trigram ``abc`` is the token
``p(a) * 37**2 + p(b) * 37 + p(c)``, where ``p`` numbers ``0-9`` as 1..10 and ``a-z``
as 11..36.  The reference folds non-ASCII letters by a table of its own (``ü`` to
``u``, ...); lancelet does not reproduce that table, so it builds an NGRAM index only
over ASCII text and refuses other text rather than write an index that would miss rows.

A ``contains(column, 'text')`` filter is narrowed to the rows holding every trigram
of the text (lower-cased, so the scan then applies the filter itself); text with no
trigram (shorter than three letters or digits in a row) or non-ASCII text is not
looked up.
"""

from __future__ import annotations

import itertools
import os
import struct
from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from lancelet import io
from lancelet.errors import CorruptIndexError, UnsupportedTypeError
from lancelet.expr import Contains, IndexQuery
from lancelet.file import LanceFileReader
from lancelet.index import files
from lancelet.index._files import IndexDetails
from lancelet.index.base import SearchResult
from lancelet.table import row_address

POSTINGS_FILE = "ngram_postings.lance"
NGRAM_DETAILS = IndexDetails("/lance.table.NGramIndexDetails", b"", 0)
_SPAN = 37
_NULL_TOKEN = 0
_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")


def _positions() -> np.ndarray:
    """Byte -> its place in the trigram alphabet (0: not a letter or digit)."""
    table = np.zeros(256, dtype=np.uint32)
    table[np.frombuffer(b"0123456789", np.uint8)] = np.arange(1, 11)
    table[np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", np.uint8)] = np.arange(11, 37)
    return table


_POSITIONS = _positions()


def postings_schema() -> pa.Schema:
    return pa.schema(
        [
            pa.field("tokens", pa.uint32()),
            pa.field(
                "posting_list",
                pa.binary(),
                nullable=False,
                metadata={"lance-encoding:compression": "none"},
            ),
        ]
    )


def trigram_tokens(values: pa.Array, rows: np.ndarray, where: str) -> tuple[np.ndarray, np.ndarray]:
    """(token, row) pairs of a batch of strings: one per trigram occurrence, and
    token 0 for each null row."""
    if values.type not in (pa.string(), pa.large_string()):
        raise UnsupportedTypeError(f"{where}: an NGRAM index needs a string column")
    ascii_ok = pc.all(pc.string_is_ascii(values), skip_nulls=True).as_py()
    if ascii_ok is False:
        raise UnsupportedTypeError(
            f"{where}: lancelet builds NGRAM indices over ASCII text only "
            "(the reference folds other letters by a table lancelet does not have)"
        )
    nulls = values.is_null().to_numpy(zero_copy_only=False)
    lowered = pc.ascii_lower(values.fill_null(""))
    if isinstance(lowered, pa.ChunkedArray):
        lowered = lowered.combine_chunks()
    offsets, data = _buffers(lowered)
    lengths = np.diff(offsets)
    windows = np.maximum(lengths - 2, 0)
    starts = np.repeat(offsets[:-1], windows) + _ranks(windows)
    codes = _POSITIONS[data]
    first, second, third = codes[starts], codes[starts + 1], codes[starts + 2]
    valid = (first > 0) & (second > 0) & (third > 0)
    tokens = first * _SPAN**2 + second * _SPAN + third
    owners = np.repeat(rows, windows)
    return (
        np.concatenate([tokens[valid], np.full(int(nulls.sum()), _NULL_TOKEN, np.uint32)]),
        np.concatenate([owners[valid], rows[nulls]]),
    )


def _buffers(strings: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The offsets (relative to the first) and the bytes of a string array."""
    offset_type = np.int64 if strings.type == pa.large_string() else np.int32
    buffers = strings.buffers()
    raw = np.frombuffer(buffers[1], dtype=offset_type)
    offsets = raw[strings.offset : strings.offset + len(strings) + 1].astype(np.int64)
    base = int(offsets[0]) if len(offsets) else 0
    data = (
        np.frombuffer(buffers[2], dtype=np.uint8)
        if buffers[2] is not None
        else np.zeros(0, np.uint8)
    )
    data = data[base : int(offsets[-1]) if len(offsets) else 0]
    return offsets - base, data


def _ranks(counts: np.ndarray) -> np.ndarray:
    """0, 1, ..., counts[i] - 1 for each i, concatenated."""
    total = int(counts.sum())
    ends = np.cumsum(counts)
    ranks: np.ndarray = np.arange(total, dtype=np.int64) - np.repeat(ends - counts, counts)
    return ranks


def _bounds(*keys: np.ndarray) -> np.ndarray:
    """Where each run of equal (sorted) keys starts, and the end of the last run."""
    n = len(keys[0])
    changed = np.zeros(max(n - 1, 0), dtype=bool)
    for key in keys:
        changed |= key[1:] != key[:-1]
    return np.flatnonzero(np.r_[n > 0, changed, True])


def serialize_tree_map(rows: np.ndarray) -> bytes:
    """A 64-bit Roaring tree map of sorted unique uint64 ``rows``."""
    highs, lows = row_address.unpack(rows)
    bounds = _bounds(highs).tolist()
    parts = [_U64.pack(len(bounds) - 1)]
    for lo, hi in itertools.pairwise(bounds):
        parts.append(_U32.pack(int(highs[lo])))
        parts.append(BitMap(lows[lo:hi], optimize=False).serialize())
    return b"".join(parts)


def _sorted_pairs(pairs: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (token, row) pairs, by token and then row."""
    tokens = np.concatenate([np.zeros(0, np.uint32), *(p[0] for p in pairs)])
    rows = np.concatenate([np.zeros(0, np.uint64), *(p[1].astype(np.uint64) for p in pairs)])
    order = np.lexsort((rows, tokens))
    tokens, rows = tokens[order], rows[order]
    firsts = _bounds(tokens, rows)[:-1]
    return tokens[firsts], rows[firsts]


def write_ngram(
    batches: Iterable[tuple[pa.Array, np.ndarray]],
    directory: io.Place,
    value_type: pa.DataType,
    version: str,
) -> int:
    """Write an NGRAM index of ``(strings, row addresses)`` batches into ``directory``
    in file format ``version``; returns the number of tokens."""
    where = os.fspath(directory)
    if value_type not in (pa.string(), pa.large_string()):
        raise UnsupportedTypeError(f"an NGRAM index needs a string column, not {value_type}")
    tokens, rows = _sorted_pairs([trigram_tokens(values, ids, where) for values, ids in batches])
    bounds = _bounds(tokens).tolist()
    postings = [serialize_tree_map(rows[lo:hi]) for lo, hi in itertools.pairwise(bounds)]
    table = pa.Table.from_arrays(
        [pa.array(tokens[bounds[:-1]], pa.uint32()), pa.array(postings, pa.binary())],
        schema=postings_schema(),
    )
    files.write_table(directory.join(POSTINGS_FILE), table, files.writable_version(version), {})
    return len(postings)


def query_tokens(text: str) -> np.ndarray | None:
    """The distinct tokens of the trigrams of ``text`` (as a row's are made); None when
    lancelet cannot make them as the reference does (non-ASCII text) or there are none."""
    if not text.isascii():
        return None
    values = pa.array([text])
    tokens, _ = trigram_tokens(values, np.zeros(1, np.uint64), "query")
    return np.unique(tokens) if len(tokens) else None


def deserialize_tree_map(data: bytes, where: str) -> np.ndarray:
    """The sorted uint64 rows of a 64-bit Roaring tree map (:func:`serialize_tree_map`)."""
    view = memoryview(data)
    if len(view) < _U64.size:
        raise CorruptIndexError(f"{where}: a posting list is {len(view)} bytes")
    (count,) = _U64.unpack_from(view, 0)
    position, parts, previous = _U64.size, [], -1
    for _ in range(count):
        if position + _U32.size > len(view):
            raise CorruptIndexError(f"{where}: a posting list ends early")
        (high,) = _U32.unpack_from(view, position)
        position += _U32.size
        try:
            bitmap = BitMap.deserialize(bytes(view[position:]))
        except (ValueError, OverflowError) as exc:
            raise CorruptIndexError(f"{where}: a posting list is damaged: {exc}") from exc
        if high <= previous:
            raise CorruptIndexError(f"{where}: a posting list's parts are out of order")
        position += len(bitmap.serialize())
        previous = high
        lows = np.asarray(bitmap.to_array(), dtype=np.uint64)
        parts.append(row_address.pack(high, lows))
    if position != len(view):
        raise CorruptIndexError(f"{where}: a posting list has {len(view) - position} extra bytes")
    return np.concatenate([np.zeros(0, np.uint64), *parts])


class NGramIndex:
    """An NGRAM index directory, opened: its tokens in memory, posting lists read as
    ``contains`` queries need them."""

    def __init__(self, path: str, reader: LanceFileReader, tokens: np.ndarray):
        self.path = path
        self._reader = reader
        self._tokens = tokens

    @classmethod
    def open(cls, directory: io.Place) -> NGramIndex:
        path = directory.join(POSTINGS_FILE)
        reader = files.open_file(path, [("tokens", pa.uint32()), ("posting_list", pa.binary())])
        with files.reading(path):
            tokens = reader.read_all(columns=["tokens"]).to_table().column(0)
        if tokens.null_count:
            raise CorruptIndexError(f"{path}: a token is null")
        found = tokens.to_numpy()
        if len(found) and np.any(found[1:] <= found[:-1]):
            raise CorruptIndexError(f"{path}: the tokens are not in ascending order")
        return cls(path.path, reader, found)

    def search(self, query: IndexQuery) -> SearchResult | None:
        """The rows that may hold the substring of a ``contains`` query: those holding
        each of its trigrams (case and ASCII folding make it a superset)."""
        if not isinstance(query, Contains):
            return None
        wanted = query_tokens(query.substring)
        if wanted is None:
            return None
        places = np.searchsorted(self._tokens, wanted)
        present = places < len(self._tokens)
        present[present] = self._tokens[places[present]] == wanted[present]
        if not np.all(present):
            return SearchResult(np.zeros(0, np.uint64), exact=False)
        rows: np.ndarray | None = None
        for place in places.tolist():
            table = files.read_rows(self._reader, place, 1)
            listed = deserialize_tree_map(table.column(1)[0].as_py(), self.path)
            rows = listed if rows is None else np.intersect1d(rows, listed, assume_unique=True)
        assert rows is not None
        return SearchResult(rows, exact=False)

    def statistics(self) -> dict[str, Any]:
        return {"num_ngrams": len(self._tokens)}
