"""JSONB documents printed as JSON text, as compiled loops; the same text as
:func:`lancelet.file.jsonb.decode`, which stays the reference (and the path without
numba).

One kernel walks every document once, writing its text.  Lance prints a float with
its shortest round-trip digits, found here by Ryu (Ulf Adams, PLDI 2018): those
digits are unique (the shortest that read back as the value, the closest to it
among them; a double is never halfway between two), so they are the digits of
Python's ``repr`` too, which the reference uses.  Anything it does not take as it
is (a damaged or unknown entry, nesting deeper than its stack) makes it stop and
report :data:`GIVE_UP`: the caller then prints the column with the reference, which
raises the error it always did.
"""

from __future__ import annotations

from functools import cache

import numpy as np
from numpy.typing import NDArray

from lancelet.file.codecs.jit import kernel

U8 = NDArray[np.uint8]
I64 = NDArray[np.int64]
U64 = NDArray[np.uint64]

OK = 0
GIVE_UP = 1
GROW = 2  # the output buffer is too small for the next document
# Containers open at once; deeper documents go to the reference.
MAX_DEPTH = 1024
# A document never prints to more bytes than this many times its JSONB bytes: a
# string byte prints to at most six (a \u00XX escape), any number to fewer (a float's
# nine bytes to at most 24), a 4-byte entry to its comma, quotes, colon and a literal
# (at most 9), a container's 4-byte header to its two brackets.  The kernel makes
# room for that much before each document, and so never writes past ``out``.
TEXT_PER_BYTE = 6
# Ryu's tables: 5^i and 2^k / 5^i to 125 significant bits, as (low, high) words.
POW5_BITS = 125
POW5_ROWS = 326
POW5_INV_ROWS = 342


@cache
def ryu_tables() -> tuple[U64, U64]:
    """``(pow5, pow5_inv)``: row i holds 5^i scaled to 125 bits (rounded down), and 2^(bits(5^i) -
    1 + 125) / 5^i rounded up, each as two 64-bit words (exact, from Python ints)."""
    mask = (1 << 64) - 1

    def rows(values: list[int]) -> U64:
        return np.array([[v & mask, v >> 64] for v in values], np.uint64)

    pow5 = [(5**i << POW5_BITS) >> (5**i).bit_length() for i in range(POW5_ROWS)]
    inverse = [
        (1 << ((5**i).bit_length() - 1 + POW5_BITS)) // 5**i + 1 for i in range(POW5_INV_ROWS)
    ]
    return rows(pow5), rows(inverse)


@kernel
def print_docs(
    offsets: I64,
    data: U8,
    valid: NDArray[np.bool_],
    first: int,
    out: U8,
    out_at: I64,
    pow5: U64,
    pow5_inv: U64,
) -> tuple[int, int]:
    """Write the text of documents ``first`` onwards into ``out``: document d's at
    ``out[out_at[d]:out_at[d + 1]]`` (empty for a null; ``out_at[first]`` is where the
    first starts).  Returns ``(OK, count)``, ``(GROW, d)`` when ``out`` has no room
    for document d (the ones before it are written), or ``(GIVE_UP, d)``."""
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
    pairs = np.empty(200, np.uint8)  # "00" to "99"
    for k in range(100):
        pairs[2 * k], pairs[2 * k + 1] = 0x30 + k // 10, 0x30 + k % 10
    # Open containers: kind, count, where the entries start, the next item, where the
    # next key's and value's bytes start, and where the container ends.
    st_kind = np.empty(MAX_DEPTH, np.int64)
    st_count = np.empty(MAX_DEPTH, np.int64)
    st_entries = np.empty(MAX_DEPTH, np.int64)
    st_next = np.empty(MAX_DEPTH, np.int64)
    st_key = np.empty(MAX_DEPTH, np.int64)
    st_value = np.empty(MAX_DEPTH, np.int64)
    st_end = np.empty(MAX_DEPTH, np.int64)
    u0, u1, u5, u10, u100 = np.uint64(0), np.uint64(1), np.uint64(5), np.uint64(10), np.uint64(100)
    u1000, u10000 = np.uint64(1000), np.uint64(10000)
    low32, u32_, u64_ = np.uint64(0xFFFFFFFF), np.uint64(32), np.uint64(64)

    def u32(p: int) -> int:
        word: int = (
            (np.int64(data[p]) << 24)
            | (np.int64(data[p + 1]) << 16)
            | (np.int64(data[p + 2]) << 8)
            | np.int64(data[p + 3])
        )
        return word

    def put(o: int, byte: int) -> int:
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

    def put_digits(o: int, value: np.uint64) -> tuple[int, int]:
        """``value`` in decimal, two digits a division; returns where it ends and how
        many digits it has."""
        at = len(digits)
        while value >= u100:
            pair = 2 * np.int64(value % u100)
            value //= u100
            at -= 2
            digits[at], digits[at + 1] = pairs[pair], pairs[pair + 1]
        if value >= u10:
            pair = 2 * np.int64(value)
            at -= 2
            digits[at], digits[at + 1] = pairs[pair], pairs[pair + 1]
        else:
            at -= 1
            digits[at] = 0x30 + np.uint8(value)
        for k in range(at, len(digits)):
            o = put(o, digits[k])
        return o, len(digits) - at

    def umul(a: np.uint64, b: np.uint64) -> tuple[np.uint64, np.uint64]:
        """The 128-bit product ``a * b`` as (high, low) words, from 32-bit halves."""
        a_lo, a_hi, b_lo, b_hi = a & low32, a >> u32_, b & low32, b >> u32_
        b00, b01, b10, b11 = a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi
        mid1 = b10 + (b00 >> u32_)
        mid2 = b01 + (mid1 & low32)
        return b11 + (mid1 >> u32_) + (mid2 >> u32_), (mid2 << u32_) | (b00 & low32)

    def shift_right(high: np.uint64, low: np.uint64, shift: int) -> np.uint64:
        """The 128-bit ``high:low`` shifted right by ``shift`` (0 < shift < 64)."""
        amount = np.uint64(shift)
        shifted: np.uint64 = (high << (u64_ - amount)) | (low >> amount)
        return shifted

    def mul_shift_all(
        m2: np.uint64, table: U64, row: int, j: int, mm_shift: np.uint64
    ) -> tuple[np.uint64, np.uint64, np.uint64]:
        """Ryu's ``(4 m2, 4 m2 + 2, 4 m2 - 1 - mm_shift) * table[row] >> j`` from one
        product: with P = 2 m2 T (192 bits; the low word only carries), they are P,
        P + T and P - T (or 2P - T) shifted."""
        t_lo, t_hi = table[row, 0], table[row, 1]
        m = m2 << u1
        high0, low = umul(m, t_lo)
        high, mid_part = umul(m, t_hi)
        mid = high0 + mid_part
        if mid < high0:
            high += u1
        vr = shift_right(high, mid, j - 64 - 1)
        low2 = low + t_lo
        mid2 = mid + t_hi + (u1 if low2 < low else u0)
        vp = shift_right(high + (u1 if mid2 < mid else u0), mid2, j - 64 - 1)
        if mm_shift == u1:
            low3 = low - t_lo
            mid3 = mid - t_hi - (u1 if low3 > low else u0)
            vm = shift_right(high - (u1 if mid3 > mid else u0), mid3, j - 64 - 1)
        else:
            low3 = low + low
            mid3 = mid + mid + (u1 if low3 < low else u0)
            high3 = high + high + (u1 if mid3 < mid else u0)
            low4 = low3 - t_lo
            mid4 = mid3 - t_hi - (u1 if low4 > low3 else u0)
            vm = shift_right(high3 - (u1 if mid4 > mid3 else u0), mid4, j - 64)
        return vr, vp, vm

    def fives(value: np.uint64) -> int:
        """How many times 5 divides ``value`` (not zero)."""
        count = 0
        while value % u5 == 0:
            value //= u5
            count += 1
        return count

    def shortest(bits: np.uint64) -> tuple[np.uint64, int]:
        """Ryu's d2d: the shortest digits of a finite nonzero double's magnitude, and
        the power of ten of the last one (value = digits * 10^power)."""
        mantissa = bits & np.uint64((1 << 52) - 1)
        biased = np.int64((bits >> np.uint64(52)) & np.uint64(0x7FF))
        if biased == 0:
            e2, m2 = 1 - 1023 - 52 - 2, mantissa
        else:
            e2, m2 = biased - 1023 - 52 - 2, mantissa | np.uint64(1 << 52)
        even = (m2 & u1) == 0
        mv = np.uint64(4) * m2
        mm_shift = u1 if mantissa != 0 or biased <= 1 else u0
        vm_zeros, vr_zeros = False, False
        if e2 >= 0:
            q = ((e2 * 78913) >> 18) - (1 if e2 > 3 else 0)  # log10(2^e2), less one
            e10 = q
            j = -e2 + q + POW5_BITS + ((q * 1217359) >> 19)
            vr, vp, vm = mul_shift_all(m2, pow5_inv, q, j, mm_shift)
            if q <= 21:
                if mv % u5 == 0:
                    vr_zeros = fives(mv) >= q
                elif even:
                    vm_zeros = fives(mv - u1 - mm_shift) >= q
                elif fives(mv + np.uint64(2)) >= q:
                    vp -= u1
        else:
            q = ((-e2 * 732923) >> 20) - (1 if -e2 > 1 else 0)  # log10(5^-e2), less one
            e10 = q + e2
            i = -e2 - q
            j = q - (((i * 1217359) >> 19) + 1 - POW5_BITS)
            vr, vp, vm = mul_shift_all(m2, pow5, i, j, mm_shift)
            if q <= 1:
                vr_zeros = True
                if even:
                    vm_zeros = mm_shift == u1
                else:
                    vp -= u1
            elif q < 63:
                vr_zeros = (mv & ((u1 << np.uint64(q)) - u1)) == 0
        removed, last = 0, u0
        if vm_zeros or vr_zeros:
            # Exact cases: ties round to even, and the lower bound may be reached.
            # Four digits at a time while four go (each would, one at a time).
            while vp // u10000 > vm // u10000:
                vm_zeros = vm_zeros and vm % u10000 == 0
                vr_zeros = vr_zeros and last == 0 and vr % u1000 == 0
                last = vr // u1000 % u10
                vr, vp, vm = vr // u10000, vp // u10000, vm // u10000
                removed += 4
            while vp // u10 > vm // u10:
                vm_zeros = vm_zeros and vm % u10 == 0
                vr_zeros = vr_zeros and last == 0
                last = vr % u10
                vr, vp, vm = vr // u10, vp // u10, vm // u10
                removed += 1
            if vm_zeros:
                while vm % u10 == 0:
                    vr_zeros = vr_zeros and last == 0
                    last = vr % u10
                    vr, vp, vm = vr // u10, vp // u10, vm // u10
                    removed += 1
            if vr_zeros and last == 5 and vr % np.uint64(2) == 0:
                last = np.uint64(4)
            up = (vr == vm and (not even or not vm_zeros)) or last >= 5
        else:
            while vp // u10000 > vm // u10000:
                last = vr // u1000 % u10
                vr, vp, vm = vr // u10000, vp // u10000, vm // u10000
                removed += 4
            while vp // u10 > vm // u10:
                last = vr % u10
                vr, vp, vm = vr // u10, vp // u10, vm // u10
                removed += 1
            up = vr == vm or last >= 5
        return vr + (u1 if up else u0), e10 + removed

    def put_float(o: int, bits: np.uint64) -> int:
        """A double as Lance prints one (see ``lancelet.file.jsonb.format_float``):
        its shortest digits, positional from 1e-5 up to 1e16, else ``d.ddde±N``."""
        if bits & np.uint64(0x7FF0000000000000) == np.uint64(0x7FF0000000000000):
            return put_text(o, word_null)
        if bits >> np.uint64(63):
            o = put(o, 0x2D)
        if bits & np.uint64(0x7FFFFFFFFFFFFFFF) == 0:
            return put(put(put(o, 0x30), 0x2E), 0x30)
        value, power = shortest(bits)
        start = o
        o, n = put_digits(o, value)
        point = n + power  # digits before the decimal point
        if 0 < point <= 16:
            if point >= n:
                for _ in range(point - n):
                    o = put(o, 0x30)
                return put(put(o, 0x2E), 0x30)
            for k in range(n - 1, point - 1, -1):  # the fraction, moved right by one
                out[start + k + 1] = out[start + k]
            out[start + point] = 0x2E
            return o + 1
        if -5 < point <= 0:
            for k in range(n - 1, -1, -1):
                out[start + 2 - point + k] = out[start + k]
            out[start], out[start + 1] = 0x30, 0x2E
            for k in range(-point):
                out[start + 2 + k] = 0x30
            o = start + 2 - point + n
            return o
        if n > 1:
            for k in range(n - 1, 0, -1):
                out[start + k + 1] = out[start + k]
            out[start + 1] = 0x2E
            o += 1
        o = put(o, 0x65)
        o = put(o, 0x2B if point > 1 else 0x2D)
        o, _ = put_digits(o, np.uint64(abs(point - 1)))
        return o

    for d in range(first, len(offsets) - 1):
        o = out_at[d]
        out_at[d + 1] = o
        if not valid[d]:
            continue
        begin, end = offsets[d], offsets[d + 1]
        if o + TEXT_PER_BYTE * (end - begin) > len(out):
            return GROW, d
        depth = 0
        if end - begin < 4:
            return GIVE_UP, d
        header = u32(begin)
        # The item to print next: its entry and bytes; a container is opened.
        if header & 0xE0000000 == scalar:
            if end - begin < 8:
                return GIVE_UP, d
            entry = u32(begin + 4)
            start = begin + 8
            stop = start + (entry & length)
        else:
            entry, start, stop = container, begin, end
        while True:
            kind = entry & kinds
            if stop > end:
                return GIVE_UP, d
            if kind == container:
                if stop - start < 4 or depth == MAX_DEPTH:
                    return GIVE_UP, d
                head = u32(start)
                ckind, count = head & 0xE0000000, head & length
                if ckind != array and ckind != obj:
                    return GIVE_UP, d
                slots = 2 * count if ckind == obj else count
                body = start + 4 + 4 * slots
                if body > stop:
                    return GIVE_UP, d
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
                    return GIVE_UP, d
                tag = data[start]
                if tag == 0x00:
                    o = put(o, 0x30)
                elif tag == 0x10 or tag == 0x20 or tag == 0x30:
                    o = put_text(o, word_null)
                elif tag == 0x40 or tag == 0x50:
                    width = stop - start - 1
                    if width > 8:
                        return GIVE_UP, d
                    value = u0
                    for p in range(start + 1, stop):
                        value = (value << np.uint64(8)) | np.uint64(data[p])
                    if tag == 0x40 and width > 0 and data[start + 1] >= 0x80:
                        o = put(o, 0x2D)
                        # Its magnitude (a shift by 64 would be undefined).
                        full = width == 8
                        value = ~value + u1 if full else (u1 << np.uint64(8 * width)) - value
                    o, _ = put_digits(o, value)
                elif tag == 0x60:
                    if stop - start < 9:
                        return GIVE_UP, d
                    bits = u0
                    for p in range(start + 1, start + 9):
                        bits = (bits << np.uint64(8)) | np.uint64(data[p])
                    o = put_float(o, bits)
                else:
                    return GIVE_UP, d
            else:
                return GIVE_UP, d
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
                        return GIVE_UP, d
                    st_key[top] = kstop
                    o = put(put_quoted(o, kstart, kstop), 0x3A)
                    entry = u32(st_entries[top] + 4 * (count + i))
                else:
                    entry = u32(st_entries[top] + 4 * i)
                start = st_value[top]
                stop = start + (entry & length)
                if stop > st_end[top]:
                    return GIVE_UP, d
                st_value[top] = stop
                st_next[top] = i + 1
                found = True
            if not found:
                break
        out_at[d + 1] = o
    return OK, len(offsets) - 1
