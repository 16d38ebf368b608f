"""JSON text parsed and encoded as JSONB documents, as compiled loops; the same bytes
as :func:`lancelet.file.jsonb.encode`, which stays the reference (and the path
without numba).

One kernel walks every document twice.  Each walk parses a document into a flat
tree of nodes (in document order, each knowing where its subtree ends) and sizes the
nodes from the leaves up; the second walk also sorts each object's keys (refusing
duplicates) and writes the nodes from the root down.  Decimal text cannot be rounded
to a double exactly here, so the first walk copies the text of every float (and of
every integer too big for 64 bits) out for the caller to convert; the second walk
takes their bits back.  Anything the kernel does not take exactly as Python's
``json`` parser does (invalid JSON, lone surrogates, duplicate keys, nesting or
sizes beyond its limits) makes it stop and report :data:`GIVE_UP`: the caller then
encodes the column with the reference, which returns or raises as it always did.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from lancelet.file.codecs.jit import kernel

U8 = NDArray[np.uint8]
I64 = NDArray[np.int64]
U64 = NDArray[np.uint64]
Bools = NDArray[np.bool_]

OK = 0
GIVE_UP = 1
# Containers open at once.  The reference recurses twice per level in Python (on
# top of the C parser's own recursion); deeper documents go to it, so that it
# decides where the interpreter's recursion limit lies.
MAX_DEPTH = 128
# Integer literals longer than this overflow a double: the reference raises.
MAX_INT_DIGITS = 309
# Entries keep lengths and counts in 28 bits.
LIMIT = 1 << 28

# Node kinds.
NULL, FALSE, TRUE, STRING, INT, FLOAT, NAN, INF, NEG_INF, ARRAY, OBJECT = range(11)


@kernel
def encode_docs(
    offsets: I64,
    data: U8,
    valid: Bools,
    write: bool,
    float_text: U8,
    float_ends: I64,
    float_is_int: Bools,
    float_bits: U64,
    doc_floats: I64,
    sizes: I64,
    out: U8,
    out_at: I64,
) -> int:
    """Count (``write`` false: each document's JSONB size in ``sizes``, taking every
    float for 9 bytes; the text of each float in ``float_text`` up to its
    ``float_ends``, ``float_is_int`` for integers beyond 64 bits; each document's
    first float in ``doc_floats``) or write (into ``out`` at ``out_at``, the floats'
    values from ``float_bits``) the JSONB of every valid document."""
    ndocs = len(offsets) - 1
    longest = 0
    for d in range(ndocs):
        longest = max(longest, offsets[d + 1] - offsets[d])
    # Every node but the first follows a character of its own ([ , : or {), and
    # takes at least one: a valid document of n bytes has at most n // 2 + 1 nodes.
    # (An invalid one may start more, "[[[[": the parser stops at the cap.)
    cap = longest // 2 + 2
    n_kind = np.empty(cap, np.int8)
    n_end = np.empty(cap, np.int64)  # the node after its subtree
    n_count = np.empty(cap, np.int64)  # a container's items (an object's pairs)
    n_size = np.empty(cap, np.int64)  # bytes of its data
    n_pos = np.empty(cap, np.int64)  # where its data starts in the document
    # A string's start in the pool, an integer's magnitude or a float's bits.
    n_value = np.empty(cap, np.uint64)
    # A string's length, an integer's sign, or where an object's sorted keys start.
    n_aux = np.empty(cap, np.int64)
    pool = np.empty(longest + 1, np.uint8)  # decoded strings: never longer than text
    order = np.empty(cap, np.int64)  # each object's key nodes, sorted
    merged = np.empty(cap, np.int64)
    stack = np.empty(MAX_DEPTH, np.int64)
    escapes = np.zeros(128, np.uint8)  # what a two-character escape stands for
    escapes[0x22] = 0x22
    escapes[0x5C] = 0x5C
    escapes[0x2F] = 0x2F
    escapes[0x62] = 0x08  # b
    escapes[0x66] = 0x0C  # f
    escapes[0x6E] = 0x0A  # n
    escapes[0x72] = 0x0D  # r
    escapes[0x74] = 0x09  # t
    # By node kind: the entry's kind bits, and the size of items of a fixed size
    # (-1: sized by their contents).
    entry_kinds = np.array([0, 3, 4, 1, 2, 2, 2, 2, 2, 5, 5], np.int64) << 28
    fixed_sizes = np.array([0, 0, 0, -1, -1, 9, 1, 1, 1, -1, -1], np.int64)
    word_null = np.array([110, 117, 108, 108], np.uint8)
    word_true = np.array([116, 114, 117, 101], np.uint8)
    word_false = np.array([102, 97, 108, 115, 101], np.uint8)
    word_nan = np.array([78, 97, 78], np.uint8)
    word_infinity = np.array([73, 110, 102, 105, 110, 105, 116, 121], np.uint8)
    floats = 0
    float_chars = 0

    def skip(p: int, end: int) -> int:
        while p < end and (
            data[p] == 0x20 or data[p] == 0x0A or data[p] == 0x0D or data[p] == 0x09
        ):
            p += 1
        return p

    def matches(p: int, end: int, word: U8) -> bool:
        k = 0
        while k < len(word) and p + k < end and data[p + k] == word[k]:
            k += 1
        return k == len(word)

    def hex4(p: int, end: int) -> int:
        """The four hex digits at ``p``, or -1."""
        if end - p < 4:
            return -1
        value = 0
        for k in range(4):
            c = np.int64(data[p + k])
            if 0x30 <= c <= 0x39:
                digit = c - 0x30
            elif 0x61 <= c <= 0x66:
                digit = c - 0x61 + 10
            elif 0x41 <= c <= 0x46:
                digit = c - 0x41 + 10
            else:
                return -1
            value = value * 16 + digit
        return value

    def put_utf8(at: int, cp: int) -> int:
        if cp < 0x80:
            pool[at] = cp
            return at + 1
        if cp < 0x800:
            pool[at] = 0xC0 | (cp >> 6)
            pool[at + 1] = 0x80 | (cp & 0x3F)
            return at + 2
        if cp < 0x10000:
            pool[at] = 0xE0 | (cp >> 12)
            pool[at + 1] = 0x80 | ((cp >> 6) & 0x3F)
            pool[at + 2] = 0x80 | (cp & 0x3F)
            return at + 3
        pool[at] = 0xF0 | (cp >> 18)
        pool[at + 1] = 0x80 | ((cp >> 12) & 0x3F)
        pool[at + 2] = 0x80 | ((cp >> 6) & 0x3F)
        pool[at + 3] = 0x80 | (cp & 0x3F)
        return at + 4

    def string(p: int, end: int, node: int, at: int) -> tuple[int, int]:
        """The string whose opening quote is at ``p``, decoded into the pool at
        ``at`` as ``node``: where the text and the pool go on, or (-1, at)."""
        n_kind[node] = STRING
        n_value[node] = at
        start = at
        p += 1
        while True:
            if p >= end:
                return -1, at
            c = data[p]
            if c == 0x22:
                break
            if c < 0x20:  # strict: raw control characters are refused
                return -1, at
            if c != 0x5C:
                pool[at] = c
                at += 1
                p += 1
                continue
            if p + 1 >= end:
                return -1, at
            e = data[p + 1]
            if e != 0x75:  # not \u
                if e >= 128 or escapes[e] == 0:
                    return -1, at
                pool[at] = escapes[e]
                at += 1
                p += 2
                continue
            cp = hex4(p + 2, end)
            p += 6
            if cp < 0 or 0xDC00 <= cp < 0xE000:
                return -1, at  # bad digits, or a low surrogate alone
            if 0xD800 <= cp < 0xDC00:
                # Only a low surrogate's escape right after makes a character;
                # a lone surrogate cannot be UTF-8, which the reference refuses.
                if not (p + 1 < end and data[p] == 0x5C and data[p + 1] == 0x75):
                    return -1, at
                low = hex4(p + 2, end)
                if not 0xDC00 <= low < 0xE000:
                    return -1, at
                cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00)
                p += 6
            at = put_utf8(at, cp)
        n_aux[node] = at - start
        return p + 1, at

    def key(p: int, end: int, node: int, at: int) -> tuple[int, int]:
        """An object's key at ``p`` and its colon: where the value starts."""
        if p >= end or data[p] != 0x22:
            return -1, at
        p, at = string(p, end, node, at)
        if p < 0:
            return -1, at
        n_end[node] = node + 1
        p = skip(p, end)
        if p >= end or data[p] != 0x3A:
            return -1, at
        return skip(p + 1, end), at

    def number_end(p: int, end: int) -> tuple[int, bool]:
        """Where the number at ``p`` (its sign passed) ends by Python's grammar, and
        whether it is a float; (-1, False) if there is none."""
        if p >= end:
            return -1, False
        if data[p] == 0x30:
            p += 1
        elif 0x31 <= data[p] <= 0x39:
            while p < end and 0x30 <= data[p] <= 0x39:
                p += 1
        else:
            return -1, False
        is_float = False
        if p + 1 < end and data[p] == 0x2E and 0x30 <= data[p + 1] <= 0x39:
            p += 2
            while p < end and 0x30 <= data[p] <= 0x39:
                p += 1
            is_float = True
        if p < end and (data[p] == 0x65 or data[p] == 0x45):
            q = p + 1
            if q < end and (data[q] == 0x2B or data[q] == 0x2D):
                q += 1
            if q < end and 0x30 <= data[q] <= 0x39:
                while q < end and 0x30 <= data[q] <= 0x39:
                    q += 1
                p = q
                is_float = True
        return p, is_float

    def less(a: int, b: int) -> int:
        """-1, 0 or 1 as key node ``a``'s bytes sort before, as, or after ``b``'s."""
        pa, la = np.int64(n_value[a]), n_aux[a]
        pb, lb = np.int64(n_value[b]), n_aux[b]
        for k in range(min(la, lb)):
            if pool[pa + k] != pool[pb + k]:
                return -1 if pool[pa + k] < pool[pb + k] else 1
        return -1 if la < lb else (1 if la > lb else 0)

    def sort_keys(lo: int, count: int) -> None:
        """``order[lo:lo + count]`` sorted by key bytes: insertion sorts of short
        runs, then merges (objects may hold many keys)."""
        run = 16
        hi = lo + count
        for s in range(lo, hi, run):
            e = min(s + run, hi)
            for x in range(s + 1, e):
                v = order[x]
                y = x
                while y > s and less(v, order[y - 1]) < 0:
                    order[y] = order[y - 1]
                    y -= 1
                order[y] = v
        width = run
        while width < count:
            for s in range(lo, hi, 2 * width):
                mid, e = min(s + width, hi), min(s + 2 * width, hi)
                a, b, t = s, mid, s
                while a < mid and b < e:
                    if less(order[b], order[a]) < 0:
                        merged[t] = order[b]
                        b += 1
                    else:
                        merged[t] = order[a]
                        a += 1
                    t += 1
                while a < mid:
                    merged[t] = order[a]
                    a += 1
                    t += 1
                while b < e:
                    merged[t] = order[b]
                    b += 1
                    t += 1
                for k in range(s, e):
                    order[k] = merged[k]
            width *= 2

    def int_width(m: np.uint64, negative: bool) -> int:
        """Bytes of the smallest signed (negative) or unsigned integer holding m."""
        if negative:
            if m <= np.uint64(0x80):
                return 1
            if m <= np.uint64(0x8000):
                return 2
            return 4 if m <= np.uint64(0x80000000) else 8
        if m < np.uint64(0x100):
            return 1
        if m < np.uint64(0x10000):
            return 2
        return 4 if m < np.uint64(0x100000000) else 8

    def entry(node: int) -> int:
        word: int = entry_kinds[n_kind[node]] | n_size[node]
        return word

    def put32(p: int, word: int) -> None:
        out[p] = (word >> 24) & 0xFF
        out[p + 1] = (word >> 16) & 0xFF
        out[p + 2] = (word >> 8) & 0xFF
        out[p + 3] = word & 0xFF

    def put64(p: int, word: np.uint64) -> None:
        for k in range(8):
            out[p + k] = np.uint8((word >> np.uint64(56 - 8 * k)) & np.uint64(0xFF))

    for d in range(ndocs):
        doc_floats[d] = floats
        if not valid[d]:
            if not write:
                sizes[d] = 0
            continue
        begin, end = offsets[d], offsets[d + 1]
        # -- parse: nodes in document order --
        p = skip(begin, end)
        n = 0
        depth = 0
        at = 0
        while True:
            # A value starts at p.
            if p >= end:
                return GIVE_UP
            c = data[p]
            node = n
            n += 1
            if n >= cap:
                return GIVE_UP
            n_end[node] = n
            if c == 0x7B or c == 0x5B:  # { or [
                if depth == MAX_DEPTH:
                    return GIVE_UP
                n_kind[node] = OBJECT if c == 0x7B else ARRAY
                stack[depth] = node
                depth += 1
                p = skip(p + 1, end)
                if p >= end:
                    return GIVE_UP
                if data[p] != (0x7D if c == 0x7B else 0x5D):
                    if c == 0x7B:
                        p, at = key(p, end, n, at)
                        n += 1
                        if p < 0 or n >= cap:
                            return GIVE_UP
                    continue  # the first value
                # Empty: closed below.
            elif c == 0x22:
                p, at = string(p, end, node, at)
                if p < 0:
                    return GIVE_UP
            elif c == 0x6E and matches(p, end, word_null):
                n_kind[node] = NULL
                p += 4
            elif c == 0x74 and matches(p, end, word_true):
                n_kind[node] = TRUE
                p += 4
            elif c == 0x66 and matches(p, end, word_false):
                n_kind[node] = FALSE
                p += 5
            elif c == 0x4E and matches(p, end, word_nan):
                n_kind[node] = NAN
                p += 3
            elif c == 0x49 and matches(p, end, word_infinity):
                n_kind[node] = INF
                p += 8
            elif c == 0x2D and matches(p + 1, end, word_infinity):
                n_kind[node] = NEG_INF
                p += 9
            else:
                negative = c == 0x2D
                digits_at = p + 1 if negative else p
                stop, is_float = number_end(digits_at, end)
                if stop < 0:
                    return GIVE_UP
                big = False
                m = np.uint64(0)
                if not is_float:
                    digits = stop - digits_at
                    if digits > MAX_INT_DIGITS:
                        return GIVE_UP
                    # Up to 20 digits may fit in 64 bits; past 2**64 it is a float.
                    big = digits > 20
                    q = digits_at
                    while not big and q < stop:
                        digit = np.uint64(data[q] - 0x30)
                        if m > (np.uint64(0xFFFFFFFFFFFFFFFF) - digit) // np.uint64(10):
                            big = True
                        m = m * np.uint64(10) + digit
                        q += 1
                    big = big or (negative and m > np.uint64(1 << 63))
                if is_float or big:
                    # Rounded by the caller: the text now, the bits in the second walk.
                    if write:
                        if floats >= len(float_bits):
                            return GIVE_UP
                        bits = float_bits[floats]
                        if (bits >> np.uint64(52)) & np.uint64(0x7FF) != np.uint64(0x7FF):
                            n_kind[node] = FLOAT
                            n_value[node] = bits
                        elif bits & np.uint64(0xFFFFFFFFFFFFF):
                            n_kind[node] = NAN
                        else:
                            n_kind[node] = NEG_INF if bits >> np.uint64(63) else INF
                    else:
                        n_kind[node] = FLOAT
                        for q in range(p, stop):
                            float_text[float_chars] = data[q]
                            float_chars += 1
                        float_ends[floats] = float_chars
                        float_is_int[floats] = big
                    floats += 1
                else:
                    n_kind[node] = INT
                    n_value[node] = m
                    n_aux[node] = 1 if negative else 0
                p = stop
            # A value ended: close every container it ends, then find the next value.
            found = False
            while not found:
                p = skip(p, end)
                if depth == 0:
                    break
                top = stack[depth - 1]
                if p >= end:
                    return GIVE_UP
                c = data[p]
                if c == (0x7D if n_kind[top] == OBJECT else 0x5D):
                    n_end[top] = n
                    depth -= 1
                    p += 1
                    continue
                if c != 0x2C:
                    return GIVE_UP
                p = skip(p + 1, end)
                if n_kind[top] == OBJECT:
                    p, at = key(p, end, n, at)
                    n += 1
                    if p < 0 or n >= cap:
                        return GIVE_UP
                found = True
            if not found:
                break
        if p != end:
            return GIVE_UP  # trailing data
        # -- sizes, from the leaves up; each object's keys sorted --
        ordered = 0
        for i in range(n - 1, -1, -1):
            kind = n_kind[i]
            size = fixed_sizes[kind]
            if kind == STRING:
                size = n_aux[i]
            elif kind == INT:
                m = n_value[i]
                size = 1 if m == 0 else 1 + int_width(m, n_aux[i] != 0)
            elif size < 0:
                items = 0
                size = 4
                child = i + 1
                while child < n_end[i]:
                    size += 4 + n_size[child]
                    items += 1
                    child = n_end[child]
                if kind == OBJECT:
                    items //= 2
                if kind == OBJECT and write:
                    # Sizes do not depend on the keys' order: sorted (and checked
                    # for duplicates) only when written.
                    child = i + 1
                    for k in range(items):
                        order[ordered + k] = child
                        child = n_end[child + 1]
                    sort_keys(ordered, items)
                    for k in range(ordered + 1, ordered + items):
                        if less(order[k - 1], order[k]) == 0:
                            return GIVE_UP  # a duplicate key
                    n_aux[i] = ordered
                    ordered += items
                if items >= LIMIT:
                    return GIVE_UP
                n_count[i] = items
            if size >= LIMIT:
                return GIVE_UP
            n_size[i] = size
        root_is_container = n_kind[0] == ARRAY or n_kind[0] == OBJECT
        doc_size = n_size[0] if root_is_container else 8 + n_size[0]
        if not write:
            sizes[d] = doc_size
            continue
        # -- write, from the root down: each container places its items --
        base = out_at[d]
        if doc_size != out_at[d + 1] - base:
            return GIVE_UP
        n_pos[0] = 0
        if not root_is_container:
            put32(base, 0x20000000)
            put32(base + 4, entry(0))
            n_pos[0] = 8
        for i in range(n):
            kind = n_kind[i]
            o = base + n_pos[i]
            if kind == STRING:
                start = np.int64(n_value[i])
                for k in range(n_aux[i]):
                    out[o + k] = pool[start + k]
            elif kind == INT:
                m = n_value[i]
                if m == 0:
                    out[o] = 0x00
                else:
                    negative = n_aux[i] != 0
                    width = int_width(m, negative)
                    word = np.uint64(0) - m if negative else m  # two's complement
                    out[o] = 0x40 if negative else 0x50
                    for k in range(width):
                        shift = np.uint64(8 * (width - 1 - k))
                        out[o + 1 + k] = np.uint8((word >> shift) & np.uint64(0xFF))
            elif kind == FLOAT:
                out[o] = 0x60
                put64(o + 1, n_value[i])
            elif kind == NAN:
                out[o] = 0x10
            elif kind == INF:
                out[o] = 0x20
            elif kind == NEG_INF:
                out[o] = 0x30
            elif kind == ARRAY:
                items = n_count[i]
                put32(o, 0x80000000 | items)
                place = n_pos[i] + 4 + 4 * items
                child = i + 1
                for k in range(items):
                    put32(o + 4 + 4 * k, entry(child))
                    n_pos[child] = place
                    place += n_size[child]
                    child = n_end[child]
            elif kind == OBJECT:
                items = n_count[i]
                first = n_aux[i]
                put32(o, 0x40000000 | items)
                place = n_pos[i] + 4 + 8 * items
                for k in range(2 * items):
                    # Keys in order, then their values in the same order.
                    child = order[first + k] if k < items else order[first + k - items] + 1
                    put32(o + 4 + 4 * k, entry(child))
                    n_pos[child] = place
                    place += n_size[child]
    doc_floats[ndocs] = floats
    return OK
