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

from lancelet.file.codecs.jit import uncounted_kernel

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


# Global arrays are constants to numba (and need no reference counting).
ESCAPES = np.zeros(256, np.uint8)  # the letter of a two-character escape, else 0
for _byte, _letter in zip(b'\b\f\n\r\t"\\', b'bfnrt"\\', strict=True):
    ESCAPES[_byte] = _letter
HEXDIGITS = np.frombuffer(b"0123456789abcdef", np.uint8).copy()
UNICODE_ESCAPE = np.frombuffer(b"\\u00", np.uint8).copy()
PAIRS = np.frombuffer("".join(f"{k:02d}" for k in range(100)).encode(), np.uint8).copy()
POWERS_OF_TEN = np.array([10**k for k in range(20)], np.uint64)


def new_stack() -> I64:
    """Room for :data:`MAX_DEPTH` open containers, seven fields each."""
    return np.empty((MAX_DEPTH, 7), np.int64)


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


@uncounted_kernel
def print_docs(
    offsets: I64,
    data: U8,
    valid: NDArray[np.bool_],
    first: int,
    out: U8,
    out_at: I64,
    stack: I64,
    pow5: U64,
    pow5_inv: U64,
) -> tuple[int, int]:
    """Write the text of documents ``first`` onwards into ``out``: document d's at
    ``out[out_at[d]:out_at[d + 1]]`` (empty for a null; ``out_at[first]`` is where the
    first starts).  Returns ``(OK, count)``, ``(GROW, d)`` when ``out`` has no room
    for document d (the ones before it are written), or ``(GIVE_UP, d)``.
    ``stack`` (:func:`new_stack`) holds the open containers around the innermost.

    Compiled without reference counting (so it makes no arrays): numba would count
    references to the arrays its inner functions read at every call, two atomic
    operations each, which took most of the time."""
    scalar, array, obj = 0x20000000, 0x80000000, 0x40000000
    kinds, length = 0x70000000, 0x0FFFFFFF
    null, string, number, false, true, container = 0, 1 << 28, 2 << 28, 3 << 28, 4 << 28, 5 << 28
    u0, u1, u5, u10 = np.uint64(0), np.uint64(1), np.uint64(5), np.uint64(10)
    u1000, u10000, u1e8 = np.uint64(1000), np.uint64(10000), np.uint64(10**8)
    low32, u32_, u64_ = np.uint64(0xFFFFFFFF), np.uint64(32), np.uint64(64)
    # The innermost open container's fields, kept in locals; the stack holds the
    # rows of those around it.
    kind_, count_, entries_, next_, key_, value_, end_ = range(7)

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

    def put_null(o: int) -> int:
        out[o], out[o + 1], out[o + 2], out[o + 3] = 110, 117, 108, 108
        return o + 4

    def put_true(o: int) -> int:
        out[o], out[o + 1], out[o + 2], out[o + 3] = 116, 114, 117, 101
        return o + 4

    def put_false(o: int) -> int:
        out[o], out[o + 1], out[o + 2], out[o + 3], out[o + 4] = 102, 97, 108, 115, 101
        return o + 5

    def put_quoted(o: int, start: int, stop: int) -> int:
        """The string ``data[start:stop]`` in quotes, escaped as Python's json does."""
        o = put(o, 0x22)
        for p in range(start, stop):
            c = data[p]
            if c >= 0x20 and c != 0x22 and c != 0x5C:
                o = put(o, c)
            elif ESCAPES[c]:
                o = put(put(o, 0x5C), ESCAPES[c])
            else:
                o = put_text(o, UNICODE_ESCAPE)
                o = put(put(o, HEXDIGITS[c >> 4]), HEXDIGITS[c & 15])
        return put(o, 0x22)

    def digit_count(value: np.uint64) -> int:
        """How many decimal digits ``value`` has: a guess from three comparisons,
        then counted up (at most a few steps)."""
        n = (
            17
            if value >= POWERS_OF_TEN[16]
            else 9
            if value >= POWERS_OF_TEN[8]
            else 5
            if value >= POWERS_OF_TEN[4]
            else 1
        )
        while n < 20 and value >= POWERS_OF_TEN[n]:
            n += 1
        return n

    def put_pair(at: int, pair: int) -> None:
        out[at], out[at + 1] = PAIRS[2 * pair], PAIRS[2 * pair + 1]

    def write_digits(end: int, value: np.uint64) -> None:
        """``value`` in decimal, its last digit at ``end - 1``: eight digits a
        division, those split in halves and quarters (steps that do not wait on
        one another), then PAIRS."""
        at = end
        while value >= u1e8:
            chunk = np.int64(value % u1e8)
            value //= u1e8
            high, low = chunk // 10000, chunk % 10000
            put_pair(at - 8, high // 100)
            put_pair(at - 6, high % 100)
            put_pair(at - 4, low // 100)
            put_pair(at - 2, low % 100)
            at -= 8
        small = np.int64(value)
        while small >= 100:
            put_pair(at - 2, small % 100)
            small //= 100
            at -= 2
        if small >= 10:
            put_pair(at - 2, small)
        else:
            out[at - 1] = 0x30 + small

    def put_digits(o: int, value: np.uint64) -> int:
        n = digit_count(value)
        write_digits(o + n, value)
        return o + n

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
        while value % u5 == u0:
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
        mm_shift = u1 if mantissa != u0 or biased <= 1 else u0
        vm_zeros, vr_zeros = False, False
        if e2 >= 0:
            q = ((e2 * 78913) >> 18) - (1 if e2 > 3 else 0)  # log10(2^e2), less one
            e10 = q
            j = -e2 + q + POW5_BITS + ((q * 1217359) >> 19)
            vr, vp, vm = mul_shift_all(m2, pow5_inv, q, j, mm_shift)
            if q <= 21:
                if mv % u5 == u0:
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
                vr_zeros = (mv & ((u1 << np.uint64(q)) - u1)) == u0
        removed, last = 0, u0
        if vm_zeros or vr_zeros:
            # Exact cases: ties round to even, and the lower bound may be reached.
            # Four digits at a time while four go (each would, one at a time).
            while vp // u10000 > vm // u10000:
                vm_zeros = vm_zeros and vm % u10000 == u0
                vr_zeros = vr_zeros and last == u0 and vr % u1000 == u0
                last = vr // u1000 % u10
                vr, vp, vm = vr // u10000, vp // u10000, vm // u10000
                removed += 4
            while vp // u10 > vm // u10:
                vm_zeros = vm_zeros and vm % u10 == u0
                vr_zeros = vr_zeros and last == u0
                last = vr % u10
                vr, vp, vm = vr // u10, vp // u10, vm // u10
                removed += 1
            if vm_zeros:
                while vm % u10 == u0:
                    vr_zeros = vr_zeros and last == u0
                    last = vr % u10
                    vr, vp, vm = vr // u10, vp // u10, vm // u10
                    removed += 1
            if vr_zeros and last == u5 and vr & u1 == u0:
                last = np.uint64(4)
            up = (vr == vm and (not even or not vm_zeros)) or last >= u5
        else:
            while vp // u10000 > vm // u10000:
                last = vr // u1000 % u10
                vr, vp, vm = vr // u10000, vp // u10000, vm // u10000
                removed += 4
            while vp // u10 > vm // u10:
                last = vr % u10
                vr, vp, vm = vr // u10, vp // u10, vm // u10
                removed += 1
            up = vr == vm or last >= u5
        return vr + (u1 if up else u0), e10 + removed

    def put_float(o: int, bits: np.uint64) -> int:
        """A double as Lance prints one (see ``lancelet.file.jsonb.format_float``):
        its shortest digits, positional from 1e-5 up to 1e16, else ``d.ddde±N``."""
        if bits & np.uint64(0x7FF0000000000000) == np.uint64(0x7FF0000000000000):
            return put_null(o)
        if bits >> np.uint64(63):
            o = put(o, 0x2D)
        if bits & np.uint64(0x7FFFFFFFFFFFFFFF) == u0:
            return put(put(put(o, 0x30), 0x2E), 0x30)
        value, power = shortest(bits)
        n = digit_count(value)
        point = n + power  # digits before the decimal point
        if 0 < point <= 16:
            if point >= n:
                o = put_digits(o, value)
                for _ in range(point - n):
                    o = put(o, 0x30)
                return put(put(o, 0x2E), 0x30)
            # Written one byte on, then the integer part moved back before the point.
            write_digits(o + n + 1, value)
            for k in range(point):
                out[o + k] = out[o + k + 1]
            out[o + point] = 0x2E
            return o + n + 1
        if -5 < point <= 0:
            out[o], out[o + 1] = 0x30, 0x2E
            for k in range(-point):
                out[o + 2 + k] = 0x30
            end = o + 2 - point + n
            write_digits(end, value)
            return end
        if n > 1:
            write_digits(o + n + 1, value)
            out[o], out[o + 1] = out[o + 1], 0x2E
            o += n + 1
        else:
            o = put_digits(o, value)
        o = put(o, 0x65)
        o = put(o, 0x2B if point > 1 else 0x2D)
        return put_digits(o, np.uint64(abs(point - 1)))

    for d in range(first, len(offsets) - 1):
        o = out_at[d]
        out_at[d + 1] = o
        if not valid[d]:
            continue
        begin, end = offsets[d], offsets[d + 1]
        if o + TEXT_PER_BYTE * (end - begin) > len(out):
            return GROW, d
        depth = 0
        # The innermost open container (the others are on the stack).
        c_kind = c_count = c_entries = c_next = c_key = c_value = c_end = 0
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
                if depth > 0:  # the open one's place, kept to come back to
                    top = depth - 1
                    stack[top, kind_], stack[top, count_], stack[top, entries_] = (
                        c_kind,
                        c_count,
                        c_entries,
                    )
                    stack[top, next_], stack[top, key_], stack[top, value_] = c_next, c_key, c_value
                    stack[top, end_] = c_end
                c_kind, c_count, c_entries = ckind, count, start + 4
                c_next, c_key, c_value, c_end = 0, body, value_at, stop
                depth += 1
                o = put(o, 0x5B if ckind == array else 0x7B)
            elif kind == null:
                o = put_null(o)
            elif kind == true:
                o = put_true(o)
            elif kind == false:
                o = put_false(o)
            elif kind == string:
                o = put_quoted(o, start, stop)
            elif kind == number:
                if stop - start < 1:
                    return GIVE_UP, d
                tag = data[start]
                if tag == 0x00:
                    o = put(o, 0x30)
                elif tag == 0x10 or tag == 0x20 or tag == 0x30:
                    o = put_null(o)
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
                    o = put_digits(o, value)
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
                i = c_next
                if i == c_count:
                    o = put(o, 0x5D if c_kind == array else 0x7D)
                    depth -= 1
                    if depth > 0:
                        top = depth - 1
                        c_kind, c_count, c_entries = (
                            stack[top, kind_],
                            stack[top, count_],
                            stack[top, entries_],
                        )
                        c_next, c_key, c_value = (
                            stack[top, next_],
                            stack[top, key_],
                            stack[top, value_],
                        )
                        c_end = stack[top, end_]
                    continue
                if i > 0:
                    o = put(o, 0x2C)
                if c_kind == obj:
                    # Keys are printed here whole; their value is the next item.
                    key = u32(c_entries + 4 * i)
                    kstart = c_key
                    kstop = kstart + (key & length)
                    if kstop > c_end or key & kinds != string:
                        return GIVE_UP, d
                    c_key = kstop
                    o = put(put_quoted(o, kstart, kstop), 0x3A)
                    entry = u32(c_entries + 4 * (c_count + i))
                else:
                    entry = u32(c_entries + 4 * i)
                start = c_value
                stop = start + (entry & length)
                if stop > c_end:
                    return GIVE_UP, d
                c_value = stop
                c_next = i + 1
                found = True
            if not found:
                break
        out_at[d + 1] = o
    return OK, len(offsets) - 1
