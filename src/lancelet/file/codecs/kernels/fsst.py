"""FSST's greedy compression and its expansion as compiled loops.

Same tables and same output as the numpy paths in
:mod:`lancelet.file.codecs.fsst_encode` and :mod:`lancelet.file.codecs.fsst`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from lancelet.file.codecs.jit import kernel

U8 = NDArray[np.uint8]
U16 = NDArray[np.uint16]
U64 = NDArray[np.uint64]
I64 = NDArray[np.int64]

ESCAPE = 255
OK = 0
DANGLING_ESCAPE = 1
MISSING_SYMBOL = 2


# The greedy step is written out in both loops below: numba compiled it 2-3x slower
# as a shared (even inlined) helper.  Its lookups are ``length << 8 | code`` with code
# 255 for an escape: per hash slot the symbol of 3+ bytes (0 when none), per 2-byte
# prefix the 2- or 1-byte choice, per byte the 1-byte choice (see
# ``fsst_encode._step``); small tables keep them in cache.  ``words`` is the data
# zero-padded to whole 64-bit words plus one.


@kernel
def compress(
    words: U64,
    offsets: I64,
    long_value: U64,
    long_info: U16,
    short_info: U16,
    byte_info: U8,
    masks: U64,
) -> tuple[I64, U8]:
    """Each string ``data[offsets[i]:offsets[i+1]]`` compressed greedily, the longest
    symbol at each position; offsets from 0 and bytes."""
    n = len(offsets) - 1
    out = np.empty(2 * (offsets[n] - offsets[0]), dtype=np.uint8)
    new_offsets = np.empty(n + 1, dtype=np.int64)
    new_offsets[0] = 0
    written = 0
    prime = np.uint64(2971215073)
    low32 = np.uint64(0xFFFFFFFF)
    for i in range(n):
        at = offsets[i]
        end = offsets[i + 1]
        while at < end:
            left = end - at
            shift = np.uint64(8 * (at & 7))
            word = words[at >> 3] >> shift
            if shift != 0:
                word |= words[(at >> 3) + 1] << (np.uint64(64) - shift)
            if left < 8:
                word &= masks[left]
            slot = (((word & np.uint64(0xFFFFFF)) * prime) & low32) >> np.uint64(16)
            info = np.int64(long_info[slot])
            length = info >> 8
            if length == 0 or length > left or (word & masks[length]) != long_value[slot]:
                if left >= 2:
                    info = np.int64(short_info[word & np.uint64(0xFFFF)])
                else:
                    info = 256 | np.int64(byte_info[word & np.uint64(0xFF)])
                length = info >> 8
            code = info & 0xFF
            if code == ESCAPE:
                out[written] = ESCAPE
                out[written + 1] = np.uint8(word & np.uint64(0xFF))
                written += 2
            else:
                out[written] = code
                written += 1
            at += length
        new_offsets[i + 1] = written
    return new_offsets, out[:written]


@kernel
def parse(
    words: U64,
    offsets: I64,
    long_value: U64,
    long_info: U16,
    short_info: U16,
    byte_info: U8,
    masks: U64,
) -> tuple[I64, I64, I64, I64]:
    """Every token of every string, in string then position order: its string, start,
    code (-1 for an escaped byte) and length."""
    n = len(offsets) - 1
    total = offsets[n] - offsets[0]
    string = np.empty(total, dtype=np.int64)
    start = np.empty(total, dtype=np.int64)
    codes = np.empty(total, dtype=np.int64)
    lengths = np.empty(total, dtype=np.int64)
    count = 0
    prime = np.uint64(2971215073)
    low32 = np.uint64(0xFFFFFFFF)
    for i in range(n):
        at = offsets[i]
        end = offsets[i + 1]
        while at < end:
            left = end - at
            shift = np.uint64(8 * (at & 7))
            word = words[at >> 3] >> shift
            if shift != 0:
                word |= words[(at >> 3) + 1] << (np.uint64(64) - shift)
            if left < 8:
                word &= masks[left]
            slot = (((word & np.uint64(0xFFFFFF)) * prime) & low32) >> np.uint64(16)
            info = np.int64(long_info[slot])
            length = info >> 8
            if length == 0 or length > left or (word & masks[length]) != long_value[slot]:
                if left >= 2:
                    info = np.int64(short_info[word & np.uint64(0xFFFF)])
                else:
                    info = 256 | np.int64(byte_info[word & np.uint64(0xFF)])
                length = info >> 8
            code = info & 0xFF
            string[count] = i
            start[count] = at
            codes[count] = -1 if code == ESCAPE else code
            lengths[count] = length
            count += 1
            at += length
    return string[:count], start[:count], codes[:count], lengths[:count]


@kernel
def expanded_sizes(data: U8, rel: I64, lengths: I64, num_symbols: int) -> tuple[I64, int, int]:
    """The output offsets (from 0) of FSST values ``data[rel[i]:rel[i + 1]]``.
    ``rel`` must be non-decreasing within ``0..len(data)`` (the caller checks).
    Returns them and an error (``DANGLING_ESCAPE`` or ``MISSING_SYMBOL``) with its
    byte position in ``data``."""
    n = len(rel) - 1
    out_offsets = np.empty(n + 1, dtype=np.int64)
    out_offsets[0] = 0
    total = 0
    for i in range(n):
        p = rel[i]
        end = rel[i + 1]
        while p < end:
            code = data[p]
            if code == ESCAPE:
                if p + 1 >= end:
                    return out_offsets, DANGLING_ESCAPE, p
                total += 1
                p += 2
            elif code >= num_symbols:
                return out_offsets, MISSING_SYMBOL, p
            else:
                total += lengths[code]
                p += 1
        out_offsets[i + 1] = total
    return out_offsets, OK, 0


@kernel
def expand_into(
    data: U8, begin: int, end: int, words: U64, lengths: I64, out: U64, start: int
) -> tuple[int, np.uint64, int, np.uint64]:
    """Expand the codes ``data[begin:end]`` (checked by :func:`expanded_sizes`) into
    ``out``'s bytes from byte ``start`` on, eight at a time: symbols (``words``: each
    row little endian, unused bytes zero) are gathered into a word, written whole.

    A word this range shares with the range before or after it (its first, when
    ``start`` is not a multiple of 8, and its last, when its end is not) is returned
    rather than written, as ``(index, word)`` (index -1: none), head then tail, for
    the caller to combine: so ranges expand on several threads at once."""
    w = start // 8  # the word being filled
    fill = start % 8  # bytes of it taken
    head_at, head, word = w if fill > 0 else -1, np.uint64(0), np.uint64(0)
    p = begin
    while p < end:
        code = data[p]
        if code == ESCAPE:
            row = 256 + np.int64(data[p + 1])
            p += 2
        else:
            row = np.int64(code)
            p += 1
        symbol, length = words[row], lengths[row]
        word |= symbol << np.uint64(8 * fill)  # the bytes past the word fall off
        fill += length
        if fill >= 8:
            if w == head_at:
                head = word
            else:
                out[w] = word
            w += 1
            fill -= 8
            # What did not fit: the symbol less its first ``length - fill`` bytes.
            word = symbol >> np.uint64(8 * (length - fill)) if fill > 0 else np.uint64(0)
    if w == head_at:  # the first word never filled: it is the tail
        head_at = -1
    return head_at, head, w if fill > 0 else -1, word


@kernel
def round_candidates(
    words: U64,
    offsets: I64,
    long_value: U64,
    long_info: U16,
    short_info: U16,
    byte_info: U8,
    masks: U64,
    symbols: U64,
    pairs: bool,
) -> tuple[U64, I64, I64, int]:
    """One training round over the strings (see ``fsst_encode._round``): each string
    parsed greedily as :func:`parse` does, and every candidate counted as it is met: each
    token (an escape as its byte), the first byte of each token longer than one and,
    with ``pairs``, each token joined with the next one of its string and with that
    one's first byte (at most 8 bytes).  Returns the distinct candidates' bytes,
    lengths and counts, in no order, and the table's gain (bytes saved) on the strings.

    The counts live in a hash table on (bytes, length) whose slot is one row (bytes,
    length, count; length 0 when free), doubled when half full."""
    bits = 12
    table = np.zeros((1 << bits, 3), dtype=np.uint64)
    distinct = 0
    gain = 0
    prime = np.uint64(2971215073)
    low32 = np.uint64(0xFFFFFFFF)
    key_prime = np.uint64(0x9E3779B97F4A7C15)
    cand_v = np.empty(4, dtype=np.uint64)  # a token's candidates: bytes, length
    cand_l = np.empty(4, dtype=np.int64)
    n = len(offsets) - 1
    for i in range(n):
        at = offsets[i]
        end = offsets[i + 1]
        prev_value = np.uint64(0)
        prev_length = 0
        while at < end:
            left = end - at
            shift = np.uint64(8 * (at & 7))
            word = words[at >> 3] >> shift
            if shift != 0:
                word |= words[(at >> 3) + 1] << (np.uint64(64) - shift)
            if left < 8:
                word &= masks[left]
            slot = (((word & np.uint64(0xFFFFFF)) * prime) & low32) >> np.uint64(16)
            info = np.int64(long_info[slot])
            length = info >> 8
            if length == 0 or length > left or (word & masks[length]) != long_value[slot]:
                if left >= 2:
                    info = np.int64(short_info[word & np.uint64(0xFFFF)])
                else:
                    info = 256 | np.int64(byte_info[word & np.uint64(0xFF)])
                length = info >> 8
            code = info & 0xFF
            first = word & np.uint64(0xFF)
            if code == ESCAPE:
                value = first
                gain -= 1
            else:
                value = symbols[code]
                gain += length - 1
            at += length
            cand_v[0] = value
            cand_l[0] = length
            count = 1
            if length > 1:
                cand_v[count] = first
                cand_l[count] = 1
                count += 1
            if pairs and prev_length > 0 and prev_length < 8:
                total = min(prev_length + length, 8)
                joined = prev_value | (value << np.uint64(8 * prev_length))
                cand_v[count] = joined & masks[total]
                cand_l[count] = total
                count += 1
                cand_v[count] = prev_value | (first << np.uint64(8 * prev_length))
                cand_l[count] = prev_length + 1
                count += 1
            prev_value = value
            prev_length = length
            for c in range(count):
                v = cand_v[c]
                ln = np.uint64(cand_l[c])
                key = v * key_prime + ln
                mask = (1 << bits) - 1
                mixed = (key ^ (key >> np.uint64(31))) * np.uint64(0xBF58476D1CE4E5B9)
                s = np.int64(mixed >> np.uint64(64 - bits))
                while table[s, 1] != 0 and (table[s, 0] != v or table[s, 1] != ln):
                    s = (s + 1) & mask
                if table[s, 1] == 0:
                    table[s, 0] = v
                    table[s, 1] = ln
                    distinct += 1
                table[s, 2] += np.uint64(1)
                if 2 * distinct > mask:
                    bits += 1
                    grown = np.zeros((1 << bits, 3), dtype=np.uint64)
                    for old in range(mask + 1):
                        if table[old, 1] != 0:
                            old_key = table[old, 0] * key_prime + table[old, 1]
                            mixed = (old_key ^ (old_key >> np.uint64(31))) * np.uint64(
                                0xBF58476D1CE4E5B9
                            )
                            moved = np.int64(mixed >> np.uint64(64 - bits))
                            while grown[moved, 1] != 0:
                                moved = (moved + 1) & ((1 << bits) - 1)
                            grown[moved, 0] = table[old, 0]
                            grown[moved, 1] = table[old, 1]
                            grown[moved, 2] = table[old, 2]
                    table = grown
    out_value = np.empty(distinct, dtype=np.uint64)
    out_length = np.empty(distinct, dtype=np.int64)
    out_count = np.empty(distinct, dtype=np.int64)
    at = 0
    for s in range(len(table)):
        if table[s, 1] != 0:
            out_value[at] = table[s, 0]
            out_length[at] = np.int64(table[s, 1])
            out_count[at] = np.int64(table[s, 2])
            at += 1
    return out_value, out_length, out_count, gain


@kernel
def expand_pages(
    data: U8,
    rel: I64,
    page_ends: I64,
    symbols: U8,
    lengths: I64,
    num_symbols: I64,
    out: U8,
) -> tuple[I64, int, int]:
    """:func:`expanded_sizes` and the expansion in one pass, of the values of one or
    more pages back to back (page ``k``'s end at ``page_ends[k]`` and expand with its
    own table: ``symbols[k]``, ``lengths[k]``, ``num_symbols[k]``), into an ``out``
    with room for every code at its longest and 8 bytes more: each symbol's row of
    ``symbols[k]`` (512 x 8 bytes, zero past its length) is stored whole, 8 bytes at
    once, and the next one starts ``length`` bytes on (a quarter faster than
    gathering words; the bytes past a value's end are overwritten or left past the
    last).  Returns the output offsets and an error with its byte position, as
    :func:`expanded_sizes`."""
    n = len(rel) - 1
    out_offsets = np.empty(n + 1, dtype=np.int64)
    out_offsets[0] = 0
    at = 0
    i = 0
    for page in range(len(page_ends)):
        limit = num_symbols[page]
        while i < page_ends[page]:
            p, end = rel[i], rel[i + 1]
            while p < end:
                code = data[p]
                if code == ESCAPE:
                    if p + 1 >= end:
                        return out_offsets, DANGLING_ESCAPE, p
                    row = 256 + np.int64(data[p + 1])
                    p += 2
                elif code >= limit:
                    return out_offsets, MISSING_SYMBOL, p
                else:
                    row = np.int64(code)
                    p += 1
                for k in range(8):  # one 8-byte store once compiled
                    out[at + k] = symbols[page, row, k]
                at += lengths[page, row]
            i += 1
            out_offsets[i] = at
    return out_offsets, OK, 0
