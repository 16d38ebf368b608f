"""FSST string compression: building a symbol table and compressing with it.

FSST (Boncz, Neumann, Leis: "FSST: Fast Random Access String Compression", VLDB
2020) replaces frequent substrings of up to 8 bytes by one-byte codes; a byte no
symbol covers is written as the escape code 255 and the byte itself.  The table
format and the decoder are in :mod:`lancelet.file.codecs.fsst`.

The table is grown the way the paper describes: compress a sample with the
current table, count how often each symbol (and each byte) is used and how often
two consecutive symbols follow each other, and keep the 255 candidates (symbols,
bytes, and concatenations of consecutive pairs) with the highest gain (count
times length, single bytes promoted 8x), over a few rounds; the table that
compressed the sample best wins.

Compression is greedy: at each position the longest symbol that matches.  To
make that a handful of array lookups, a table holds at most one symbol of 3 bytes
or more per hash slot of its first 3 bytes (a longer symbol sharing a slot with a
better one is dropped, as in the paper's implementation), and 2- and 1-byte
symbols sit in direct tables.  Every string is compressed at once: each step
advances all unfinished strings by one code, so the work is whole-array numpy
operations, a step per code of the longest line (strings are compressed in lines
of at most 512 bytes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
from numpy.typing import NDArray

from lancelet.file.codecs import jit
from lancelet.file.codecs.fsst import FSST_SYMBOL_TABLE_SIZE
from lancelet.file.codecs.kernels import fsst as kernels

__all__ = ["FsstTable", "build_table", "compress", "likely_pays", "serialize"]

U8 = NDArray[np.uint8]
U64 = NDArray[np.uint64]
U16 = NDArray[np.uint16]
I64 = NDArray[np.int64]

_ESCAPE: Final = 255
_MAX_SYMBOLS: Final = 255
_MAGIC: Final = 0x46535354
_HASH_BITS: Final = 16
_HASH_PRIME: Final = np.uint64(2971215073)
_KEY_PRIME: Final = np.uint64(0x9E3779B97F4A7C15)
_SAMPLE_BYTES: Final = 1 << 15
_SAMPLE_LINE: Final = 512
_ROUNDS: Final = (8, 38, 68, 98, 128)
_MASKS: Final = np.array(
    [0] + [(1 << (8 * k)) - 1 for k in range(1, 8)] + [(1 << 64) - 1], dtype=np.uint64
)


@dataclass(frozen=True)
class FsstTable:
    """Symbols (little-endian, unused high bytes zero) and their lengths (1..8);
    code ``i`` is symbol ``i``."""

    values: U64
    lengths: I64

    @property
    def size(self) -> int:
        return len(self.values)


@dataclass(frozen=True)
class _Lookup:
    long_value: U64  # per hash slot: the symbol of 3+ bytes there (1 when none: no match)
    long_mask: U64  # the symbol's bytes as a mask (0 when none)
    long_length: I64
    long_code: I64
    short_code: I64  # per 2-byte prefix: the 2-byte symbol's code, else the first byte's
    short_length: I64  # 2 or 1
    byte_code: I64  # 256 entries: code of the 1-byte symbol, -1 for none


def _hash(prefix3: U64) -> I64:
    mixed = (prefix3 * _HASH_PRIME) & np.uint64(0xFFFFFFFF)
    slots: I64 = (mixed >> np.uint64(32 - _HASH_BITS)).astype(np.int64)
    return slots


def _lookup(table: FsstTable) -> _Lookup:
    slots = 1 << _HASH_BITS
    long_value = np.ones(slots, dtype=np.uint64)
    long_mask = np.zeros(slots, dtype=np.uint64)
    long_length = np.zeros(slots, dtype=np.int64)
    long_code = np.zeros(slots, dtype=np.int64)
    codes = np.arange(table.size, dtype=np.int64)
    long = table.lengths >= 3
    slot = _hash(table.values[long] & np.uint64(0xFFFFFF))
    # Symbols are unique per slot by construction (see _admit); assign them.
    long_value[slot] = table.values[long]
    long_mask[slot] = _MASKS[table.lengths[long]]
    long_length[slot] = table.lengths[long]
    long_code[slot] = codes[long]
    byte_code = np.full(256, -1, dtype=np.int64)
    one = table.lengths == 1
    byte_code[table.values[one].astype(np.int64)] = codes[one]
    prefixes = np.arange(1 << 16, dtype=np.int64)
    short_code = byte_code[prefixes & 0xFF]
    short_length = np.ones(1 << 16, dtype=np.int64)
    two = table.lengths == 2
    pairs = table.values[two].astype(np.int64)
    short_code[pairs] = codes[two]
    short_length[pairs] = 2
    return _Lookup(
        long_value, long_mask, long_length, long_code, short_code, short_length, byte_code
    )


def _words(data: U8) -> U64:
    """The 8 bytes starting at every position, little endian (zero past the end)."""
    padded = np.zeros(len(data) + 8, dtype=np.uint8)
    padded[: len(data)] = data
    windows = np.lib.stride_tricks.sliding_window_view(padded, 8)
    words: U64 = np.ascontiguousarray(windows).view("<u8").reshape(-1)
    return words


def _word_at(aligned: U64, at: I64) -> U64:
    """The 8 bytes starting at each position ``at`` of the data held as aligned
    little-endian words (padded with a zero word): two words, shifted together."""
    word_index = at >> 3
    shift = (at & 7).astype(np.uint64) << np.uint64(3)
    low = aligned[word_index] >> shift
    # Shifting by 63 - s and then by 1 gives 0, not the word, when s is 0.
    high = (aligned[1:][word_index] << (np.uint64(63) - shift)) << np.uint64(1)
    word: U64 = low | high
    return word


def _step(look: _Lookup, word: U64, left: I64) -> tuple[I64, I64]:
    """The greedy choice for the 8-byte windows ``word`` (``left`` bytes to their
    string's end; ``word`` is overwritten): the longest symbol's code (-1: escape the
    byte) and the bytes it covers."""
    near_end = np.flatnonzero(left < 8)
    if len(near_end):
        word[near_end] &= _MASKS[left[near_end]]
    slot = _hash(word & np.uint64(0xFFFFFF))
    hit = (word & look.long_mask[slot]) == look.long_value[slot]
    prefix = (word & np.uint64(0xFFFF)).astype(np.intp)
    code = look.short_code[prefix]
    length = look.short_length[prefix]
    if len(near_end):
        # A symbol may hold zero bytes: it matches only where the string has its length.
        tail = left[near_end]
        hit[near_end] &= look.long_length[slot[near_end]] <= tail
        last = near_end[tail < 2]
        code[last] = look.byte_code[(word[last] & np.uint64(0xFF)).astype(np.intp)]
        length[last] = 1
    found = np.flatnonzero(hit)
    code[found] = look.long_code[slot[found]]
    length[found] = look.long_length[slot[found]]
    return code, length


@dataclass(frozen=True)
class _Parse:
    """Every token of every string, in string then position order."""

    string: I64
    start: I64
    code: I64  # symbol code, or -1 for an escaped byte
    length: I64  # bytes the token covers


def _parse(table: FsstTable, data: U8, offsets: I64) -> _Parse:
    if jit.enabled():
        return _Parse(*kernels.parse(*_kernel_args(table, data, offsets)))
    look = _lookup(table)
    words = _words(data)
    cursor = offsets[:-1].copy()
    end = offsets[1:]
    active = np.flatnonzero(cursor < end)
    strings: list[I64] = []
    starts: list[I64] = []
    codes: list[I64] = []
    lengths: list[I64] = []
    while len(active):
        at = cursor[active]
        code, length = _step(look, words[at], end[active] - at)
        strings.append(active)
        starts.append(at)
        codes.append(code)
        lengths.append(length)
        cursor[active] = at + length
        active = active[cursor[active] < end[active]]
    if not strings:
        empty = np.zeros(0, dtype=np.int64)
        return _Parse(empty, empty, empty, empty)
    string = np.concatenate(strings)
    order = np.argsort(string, kind="stable")
    return _Parse(
        string[order],
        np.concatenate(starts)[order],
        np.concatenate(codes)[order],
        np.concatenate(lengths)[order],
    )


def compress(table: FsstTable, data: U8, offsets: I64) -> tuple[I64, U8]:
    """Each string ``data[offsets[i]:offsets[i+1]]`` compressed on its own; returns
    the compressed strings' offsets (from 0) and bytes.

    Strings are compressed in lines of at most 512 bytes (a symbol never spans two):
    the codes of the lines, one after the other, are a valid encoding of the string,
    and no string needs more than 512 steps of the array-wide greedy parse."""
    offsets = np.asarray(offsets, dtype=np.int64)
    _, lines = _lines(data, offsets)
    if jit.enabled():
        line_offsets, out = kernels.compress(*_kernel_args(table, data, lines))
    else:
        line_offsets, out = _compress_lines(_lookup(table), data, lines)
    if len(lines) == len(offsets):
        return line_offsets, out
    pieces = _line_counts(np.diff(offsets))
    first_line = np.concatenate(([0], np.cumsum(pieces))).astype(np.int64)
    return line_offsets[first_line], out


def _compress_lines(look: _Lookup, data: U8, offsets: I64) -> tuple[I64, U8]:
    """The numpy path of :func:`compress`: every string advanced by one code per step."""
    aligned = _aligned_words(data, offsets)
    # Each string gets room for its worst case (every byte escaped), then is compacted.
    base = 2 * offsets[:-1]
    finish = base.copy()
    out = np.empty(2 * len(data), dtype=np.uint8)
    string = np.flatnonzero(offsets[:-1] < offsets[1:])
    at, end, position = offsets[string], offsets[string + 1], base[string]
    while len(at):
        code, length = _step(look, _word_at(aligned, at), end - at)
        escape = code < 0
        out[position] = np.where(escape, _ESCAPE, code).astype(np.uint8)
        out[position[escape] + 1] = data[at[escape]]
        position = position + 1 + escape
        at = at + length
        going = at < end
        if not going.all():
            done = ~going
            finish[string[done]] = position[done]
            string, at, end, position = string[going], at[going], end[going], position[going]
    written = finish - base
    new_offsets = np.concatenate(([0], np.cumsum(written))).astype(np.int64)
    # The written ranges are disjoint and in order: a running count of range starts
    # minus range ends marks their bytes (no index array per byte).  At most one range
    # starts and one ends at any position once empty ones are left out.
    filled = written > 0
    edges = np.zeros(len(out) + 1, dtype=np.int8)
    edges[base[filled]] += 1
    edges[finish[filled]] -= 1
    keep = np.cumsum(edges[:-1], dtype=np.int8).view(np.bool_)
    return new_offsets, out[keep]


def _aligned_words(data: U8, offsets: I64) -> U64:
    """The data as little-endian words, zero-padded by at least one whole word, after
    checking the offsets lie within it (the kernels do not check bounds)."""
    if len(offsets) == 0 or offsets[0] < 0 or offsets[-1] > len(data):
        raise ValueError("FSST input offsets must lie within the data")
    if bool(np.any(np.diff(offsets) < 0)):
        raise ValueError("FSST input offsets must be non-decreasing")
    padded = np.zeros(len(data) // 8 * 8 + 16, dtype=np.uint8)
    padded[: len(data)] = data
    words: U64 = padded.view(np.uint64)
    return words


def _kernel_args(
    table: FsstTable, data: U8, offsets: I64
) -> tuple[U64, I64, U64, U16, U16, U8, U64]:
    """The kernels' arguments: the data as padded words, the offsets and the lookups
    (see ``kernels.fsst``) built from the table directly: they are built once per
    training round, so only the few slots that hold symbols are written."""
    codes = np.arange(table.size, dtype=np.uint16)
    lengths = table.lengths.astype(np.uint16)
    long = table.lengths >= 3
    slot = _hash(table.values[long] & np.uint64(0xFFFFFF))
    long_value = np.zeros(1 << _HASH_BITS, dtype=np.uint64)
    long_value[slot] = table.values[long]
    long_info = np.zeros(1 << _HASH_BITS, dtype=np.uint16)  # length 0: no symbol
    long_info[slot] = lengths[long] << 8 | codes[long]
    byte_info = np.full(256, _ESCAPE, dtype=np.uint8)
    one = table.lengths == 1
    byte_info[table.values[one].astype(np.intp)] = codes[one]
    # A 2-byte prefix without a 2-byte symbol takes its first byte's choice; the
    # prefix's first byte is its low byte, so the 256 choices repeat 256 times.
    short_info = np.tile(np.uint16(256) | byte_info.astype(np.uint16), 256)
    two = table.lengths == 2
    short_info[table.values[two].astype(np.intp)] = np.uint16(512) | codes[two]
    return (
        _aligned_words(data, offsets),
        offsets,
        long_value,
        long_info,
        short_info,
        byte_info,
        _MASKS,
    )


TABLE_BYTES: Final = FSST_SYMBOL_TABLE_SIZE


def serialize_uncompressed() -> bytes:
    """A table saying the values are stored as they are (what pylance writes for a
    page too small to compress)."""
    out = bytearray(FSST_SYMBOL_TABLE_SIZE)
    out[:8] = (_MAGIC << 32).to_bytes(8, "little")
    return bytes(out)


def serialize(table: FsstTable) -> bytes:
    """The 2312-byte symbol table blob pylance stores in an ``Fsst`` encoding."""
    header = (_MAGIC << 32) | (1 << 24) | table.size
    out = bytearray(FSST_SYMBOL_TABLE_SIZE)
    out[:8] = header.to_bytes(8, "little")
    words_end = 8 + 8 * table.size
    out[8:words_end] = table.values.astype("<u8").tobytes()
    out[words_end : words_end + table.size] = table.lengths.astype(np.uint8).tobytes()
    return bytes(out)


# -- building the table ------------------------------------------------------------------


def _picks(n: int, wanted: int, held_out: bool) -> I64:
    """``wanted`` of ``n`` strings spread evenly; ``held_out``: the ones half-way
    between those (a second sample, to judge a table built on the first)."""
    if not held_out:
        return np.unique(np.linspace(0, n - 1, wanted).astype(np.int64))
    if wanted < 2:
        return np.asarray([(n - 1) // 2], dtype=np.int64)
    return np.unique(np.linspace(0, n - 1, 2 * wanted - 1)[1::2].astype(np.int64))


def _sample(data: U8, offsets: I64, held_out: bool = False) -> tuple[U8, I64]:
    """Whole strings spread evenly over the input, about 32 KiB of them, cut into
    lines of at most 512 bytes (as the paper's implementation samples): a symbol
    never spans two lines, and no parse of the sample takes more than 512 steps."""
    if len(data) <= _SAMPLE_BYTES:
        return _lines(data, offsets)
    n = len(offsets) - 1
    lengths = np.diff(offsets)
    average = max(len(data) / max(n, 1), 1.0)
    wanted = min(n, max(1, int(_SAMPLE_BYTES / average)))
    picked = _picks(n, wanted, held_out)
    sizes = lengths[picked]
    new_offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    index = np.repeat(offsets[picked] - new_offsets[:-1], sizes) + np.arange(
        int(sizes.sum()), dtype=np.int64
    )
    return _lines(data[index], new_offsets)


def _line_counts(lengths: I64) -> I64:
    """Lines of at most ``_SAMPLE_LINE`` bytes per string (an empty string is one)."""
    counts: I64 = np.maximum(-(-lengths // _SAMPLE_LINE), 1)
    return counts


def _lines(data: U8, offsets: I64) -> tuple[U8, I64]:
    """The strings cut into lines of at most ``_SAMPLE_LINE`` bytes: the data and the
    lines' offsets."""
    lengths = np.diff(offsets)
    if not len(lengths) or int(lengths.max()) <= _SAMPLE_LINE:
        return data, offsets
    pieces = _line_counts(lengths)
    owner = np.repeat(np.arange(len(lengths), dtype=np.int64), pieces)
    first_piece = np.cumsum(pieces) - pieces
    within = np.arange(len(owner), dtype=np.int64) - first_piece[owner]
    ends = np.minimum(offsets[owner] + (within + 1) * _SAMPLE_LINE, offsets[owner + 1])
    return data, np.concatenate((offsets[:1], ends)).astype(np.int64)


def likely_pays(table: FsstTable, data: U8, offsets: I64) -> bool:
    """Whether compressing every string with ``table`` may save space, judged on a
    second sample (about 32 KiB, none of it the sample the table was built on when
    the input is large): a table that does not shrink strings it has not seen will
    not shrink the rest.  Small inputs are always worth the exact check."""
    if len(data) <= 2 * _SAMPLE_BYTES:
        return True
    held, held_offsets = _sample(data, np.asarray(offsets, dtype=np.int64), held_out=True)
    raw = int(held_offsets[-1] - held_offsets[0])
    _, compressed = compress(table, held, held_offsets)
    return len(compressed) < raw


def _token_bytes(table: FsstTable, parsed: _Parse, data: U8) -> tuple[U64, I64]:
    """Each token's bytes and length (an escape is its byte)."""
    escape = parsed.code < 0
    values = data[parsed.start].astype(np.uint64)
    values[~escape] = table.values[parsed.code[~escape]]
    return values, parsed.length


def _round(table: FsstTable, data: U8, offsets: I64, frac: int) -> tuple[FsstTable, int]:
    """One round: the table's gain on the sample, and the next table."""
    pairs = frac < _ROUNDS[-1]
    if jit.enabled():
        args = _kernel_args(table, data, offsets)
        values, lengths, counts, gain = kernels.round_candidates(*args, table.values, pairs)
    else:
        values, lengths, counts, gain = _candidates(table, data, offsets, pairs)
    keep = counts >= max(1, 5 * frac // 128)
    values, lengths = values[keep], lengths[keep]
    scores = counts[keep] * lengths * np.where(lengths == 1, 8, 1)
    return _admit(values, lengths, scores), int(gain)


def _candidates(table: FsstTable, data: U8, offsets: I64, pairs: bool) -> tuple[U64, I64, I64, int]:
    """The numpy path of ``kernels.round_candidates``: the sample parsed with the
    table, the distinct candidates (bytes, length) with their counts, and the gain."""
    parsed = _parse(table, data, offsets)
    escape = parsed.code < 0
    gain = int((parsed.length - 1 - escape).sum())
    values, lengths = _token_bytes(table, parsed, data)
    # A multi-byte token's first byte stays a candidate of its own.
    multi = lengths > 1
    cand_v = [values, values[multi] & np.uint64(0xFF)]
    cand_l = [lengths, np.ones(int(multi.sum()), dtype=np.int64)]
    if pairs:
        same = parsed.string[1:] == parsed.string[:-1]
        left_v, left_l = values[:-1][same], lengths[:-1][same]
        for right_v, right_l in (
            (values[1:][same], lengths[1:][same]),
            (values[1:][same] & np.uint64(0xFF), np.ones(int(same.sum()), dtype=np.int64)),
        ):
            room = left_l < 8
            total = np.minimum(left_l + right_l, 8)[room]
            joined = left_v[room] | (
                right_v[room] << (np.uint64(8) * left_l[room].astype(np.uint64))
            )
            cand_v.append(joined & _MASKS[total])
            cand_l.append(total)
    values_all = np.concatenate(cand_v)
    lengths_all = np.concatenate(cand_l)
    # One 64-bit key per (bytes, length); a collision would only merge two candidates'
    # counts (the symbols themselves come from the data), so it cannot corrupt output.
    keys = values_all * _KEY_PRIME + lengths_all.astype(np.uint64)
    _, first, counts = np.unique(keys, return_index=True, return_counts=True)
    return values_all[first], lengths_all[first], counts, gain


# Candidates ranked in full only when the best few of them fall short (see _admit).
_ADMIT_FIRST: Final = 4 * _MAX_SYMBOLS


def _admit(values: U64, lengths: I64, scores: I64) -> FsstTable:
    """The best 255 candidates, at most one of 3+ bytes per hash slot.

    A round meets thousands of candidates; sorting them all cost more than the
    round's parse.  The best ones first (every candidate scoring at least the
    ``_ADMIT_FIRST``-th best score: a prefix of the full ranking, ties included)
    give the same table whenever 255 of them survive the slot check, as the
    survivors of a prefix are the full ranking's survivors in it."""
    if len(scores) > _ADMIT_FIRST:
        least = np.partition(scores, len(scores) - _ADMIT_FIRST)[len(scores) - _ADMIT_FIRST]
        best = np.flatnonzero(scores >= least)
        table = _admit_ranked(values[best], lengths[best], scores[best])
        if table.size == _MAX_SYMBOLS:
            return table
    return _admit_ranked(values, lengths, scores)


def _admit_ranked(values: U64, lengths: I64, scores: I64) -> FsstTable:
    """:func:`_admit` over every candidate given."""
    order = np.lexsort((values, lengths, -scores))  # best first, ties by bytes
    values, lengths = values[order], lengths[order]
    slot = _hash(values & np.uint64(0xFFFFFF))
    key = np.where(lengths >= 3, slot, -1 - np.arange(len(values)))
    _, first = np.unique(key, return_index=True)
    keep = np.zeros(len(values), dtype=bool)
    keep[first] = True
    chosen = np.flatnonzero(keep)[:_MAX_SYMBOLS]
    return FsstTable(values[chosen], lengths[chosen])


def build_table(data: U8, offsets: I64) -> FsstTable:
    """A symbol table for the strings ``data[offsets[i]:offsets[i+1]]``."""
    offsets = np.asarray(offsets, dtype=np.int64)
    sample, sample_offsets = _sample(data, offsets)
    table = FsstTable(np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64))
    best, best_gain = table, -(1 << 62)
    for frac in _ROUNDS:
        new_table, gain = _round(table, sample, sample_offsets, frac)
        if gain >= best_gain:
            best, best_gain = table, gain
        table = new_table
    _, gain = _round(table, sample, sample_offsets, _ROUNDS[-1])
    if gain >= best_gain:
        best = table
    return best
