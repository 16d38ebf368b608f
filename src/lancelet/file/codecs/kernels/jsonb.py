"""JSONB documents printed as JSON text, as compiled loops; the same text as
:func:`lancelet.file.jsonb.decode`, which stays the reference (and the path without
numba).

One kernel walks every document twice: first counting the bytes each prints to
(and collecting the bits of each float, which Python formats: shortest digits need
``repr``), then writing them.  Anything it does not take as it is (a damaged or
unknown entry, nesting deeper than its stack) makes it stop and report
:data:`GIVE_UP`: the caller then prints the column with the reference, which
raises the error it always did.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from lancelet.file.codecs.jit import kernel

U8 = NDArray[np.uint8]
I64 = NDArray[np.int64]
U64 = NDArray[np.uint64]

OK = 0
GIVE_UP = 1
# Containers open at once; deeper documents go to the reference.
MAX_DEPTH = 1024


@kernel
def print_docs(
    offsets: I64,
    data: U8,
    valid: NDArray[np.bool_],
    write: bool,
    out: U8,
    out_at: I64,
    float_bits: U64,
    float_text: U8,
    float_at: I64,
    sizes: I64,
    doc_floats: I64,
) -> int:
    """Count (``write`` false: ``sizes`` without floats, ``float_bits``, and each
    document's first float in ``doc_floats``) or write (into ``out`` at ``out_at``,
    floats copied from ``float_text``) the text of every valid document."""
    scalar, array, obj = 0x20000000, 0x80000000, 0x40000000
    kinds, length = 0x70000000, 0x0FFFFFFF
    null, string, number, false, true, container = 0, 1 << 28, 2 << 28, 3 << 28, 4 << 28, 5 << 28
    word_null = np.array([110, 117, 108, 108], np.uint8)
    word_true = np.array([116, 114, 117, 101], np.uint8)
    word_false = np.array([102, 97, 108, 115, 101], np.uint8)
    unicode_escape = np.array([92, 117, 48, 48], np.uint8)  # \u00
    escapes = np.zeros(256, np.uint8)  # the letter of a two-character escape
    escapes[0x08] = 98  # b
    escapes[0x0C] = 102  # f
    escapes[0x0A] = 110  # n
    escapes[0x0D] = 114  # r
    escapes[0x09] = 116  # t
    escapes[0x22] = 0x22
    escapes[0x5C] = 0x5C
    hexdigits = np.array(
        [48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 97, 98, 99, 100, 101, 102], np.uint8
    )
    digits = np.empty(20, np.uint8)
    # Open containers: kind, count, where the entries start, the next item, where the
    # next key's and value's bytes start, and where the container ends.
    st_kind = np.empty(MAX_DEPTH, np.int64)
    st_count = np.empty(MAX_DEPTH, np.int64)
    st_entries = np.empty(MAX_DEPTH, np.int64)
    st_next = np.empty(MAX_DEPTH, np.int64)
    st_key = np.empty(MAX_DEPTH, np.int64)
    st_value = np.empty(MAX_DEPTH, np.int64)
    st_end = np.empty(MAX_DEPTH, np.int64)
    floats = 0

    def u32(p: int) -> int:
        word: int = (
            (np.int64(data[p]) << 24)
            | (np.int64(data[p + 1]) << 16)
            | (np.int64(data[p + 2]) << 8)
            | np.int64(data[p + 3])
        )
        return word

    def put(o: int, byte: int) -> int:
        if write:
            out[o] = byte
        return o + 1

    def put_text(o: int, text: U8) -> int:
        for c in text:
            o = put(o, c)
        return o

    def put_quoted(o: int, start: int, stop: int) -> int:
        """The string ``data[start:stop]`` in quotes, escaped as Python's json does."""
        o = put(o, 0x22)
        for p in range(start, stop):
            c = data[p]
            if c >= 0x20 and c != 0x22 and c != 0x5C:
                o = put(o, c)
            elif escapes[c]:
                o = put(put(o, 0x5C), escapes[c])
            else:
                o = put_text(o, unicode_escape)
                o = put(put(o, hexdigits[c >> 4]), hexdigits[c & 15])
        return put(o, 0x22)

    for d in range(len(offsets) - 1):
        doc_floats[d] = floats
        if not valid[d]:
            continue
        begin, end = offsets[d], offsets[d + 1]
        o = out_at[d] if write else 0
        depth = 0
        if end - begin < 4:
            return GIVE_UP
        header = u32(begin)
        # The item to print next: its entry and bytes; a container is opened.
        if header & 0xE0000000 == scalar:
            if end - begin < 8:
                return GIVE_UP
            entry = u32(begin + 4)
            start = begin + 8
            stop = start + (entry & length)
        else:
            entry, start, stop = container, begin, end
        while True:
            kind = entry & kinds
            if stop > end:
                return GIVE_UP
            if kind == container:
                if stop - start < 4 or depth == MAX_DEPTH:
                    return GIVE_UP
                head = u32(start)
                ckind, count = head & 0xE0000000, head & length
                if ckind != array and ckind != obj:
                    return GIVE_UP
                slots = 2 * count if ckind == obj else count
                body = start + 4 + 4 * slots
                if body > stop:
                    return GIVE_UP
                value_at = body
                if ckind == obj:
                    for k in range(count):
                        value_at += u32(start + 4 + 4 * k) & length
                st_kind[depth], st_count[depth], st_entries[depth] = ckind, count, start + 4
                st_next[depth], st_key[depth], st_value[depth] = 0, body, value_at
                st_end[depth] = stop
                depth += 1
                o = put(o, 0x5B if ckind == array else 0x7B)
            elif kind == null:
                o = put_text(o, word_null)
            elif kind == true:
                o = put_text(o, word_true)
            elif kind == false:
                o = put_text(o, word_false)
            elif kind == string:
                o = put_quoted(o, start, stop)
            elif kind == number:
                if stop - start < 1:
                    return GIVE_UP
                tag = data[start]
                if tag == 0x00:
                    o = put(o, 0x30)
                elif tag == 0x10 or tag == 0x20 or tag == 0x30:
                    o = put_text(o, word_null)
                elif tag == 0x40 or tag == 0x50:
                    width = stop - start - 1
                    if width > 8:
                        return GIVE_UP
                    value = np.uint64(0)
                    for p in range(start + 1, stop):
                        value = (value << np.uint64(8)) | np.uint64(data[p])
                    negative = tag == 0x40 and width > 0 and data[start + 1] >= 0x80
                    if negative:
                        o = put(o, 0x2D)
                        if width == 8:
                            value = ~value + np.uint64(1)
                        else:
                            value = (np.uint64(1) << np.uint64(8 * width)) - value
                    n = 0
                    while True:
                        digits[n] = 0x30 + np.uint8(value % np.uint64(10))
                        n += 1
                        value //= np.uint64(10)
                        if value == 0:
                            break
                    for k in range(n - 1, -1, -1):
                        o = put(o, digits[k])
                elif tag == 0x60:
                    if stop - start < 9:
                        return GIVE_UP
                    if write:
                        for p in range(float_at[floats], float_at[floats + 1]):
                            o = put(o, float_text[p])
                    else:
                        bits = np.uint64(0)
                        for p in range(start + 1, start + 9):
                            bits = (bits << np.uint64(8)) | np.uint64(data[p])
                        float_bits[floats] = bits
                    floats += 1
                else:
                    return GIVE_UP
            else:
                return GIVE_UP
            # The next item: close every finished container, then take the next
            # item of the innermost open one (a key first, in an object).
            found = False
            while depth > 0 and not found:
                top = depth - 1
                i, count = st_next[top], st_count[top]
                if i == count:
                    o = put(o, 0x5D if st_kind[top] == array else 0x7D)
                    depth -= 1
                    continue
                if i > 0:
                    o = put(o, 0x2C)
                if st_kind[top] == obj:
                    # Keys are printed here whole; their value is the next item.
                    key = u32(st_entries[top] + 4 * i)
                    kstart = st_key[top]
                    kstop = kstart + (key & length)
                    if kstop > st_end[top] or key & kinds != string:
                        return GIVE_UP
                    st_key[top] = kstop
                    o = put(put_quoted(o, kstart, kstop), 0x3A)
                    entry = u32(st_entries[top] + 4 * (count + i))
                else:
                    entry = u32(st_entries[top] + 4 * i)
                start = st_value[top]
                stop = start + (entry & length)
                if stop > st_end[top]:
                    return GIVE_UP
                st_value[top] = stop
                st_next[top] = i + 1
                found = True
            if not found:
                break
        if not write:
            sizes[d] = o
    doc_floats[len(offsets) - 1] = floats
    return OK
