"""Decode pylance 14 posting blocks (_posting column of part_N_invert.lance), format_version 2,
posting_tail_codec varint_delta_v1, posting_block_size 128 (layout measured; see inverted-index-format.md)."""
import struct
def varint(b, p):
    v = s = 0
    while True:
        x = b[p]; p += 1; v |= (x & 0x7F) << s; s += 7
        if x < 0x80: return v, p
def bp4x_unpack(b, p, w):
    """128 values packed as 4 interleaved 32-bit lanes (value i -> lane i%4, slot i//4),
    each lane LSB-first over w u32 words; word k of lane j at byte p + (4*k + j)*4."""
    if w == 0: return [0] * 128, p
    words = struct.unpack_from("<%dI" % (4 * w), b, p)
    out = [0] * 128
    mask = (1 << w) - 1
    for j in range(4):
        lane = 0
        for k in range(w): lane |= words[4 * k + j] << (32 * k)
        for s in range(32): out[4 * s + j] = (lane >> (w * s)) & mask
    return out, p + 16 * w
def decode_block(b, full, with_pos=False):
    """Returns (block_max_score, doc_ids, freqs, rest_offset)"""
    score, = struct.unpack_from("<f", b, 0)
    if full:
        first, = struct.unpack_from("<I", b, 4); p = 8
        w = b[p]; p += 1
        deltas, p = bp4x_unpack(b, p, w)
        docs = []; d = first
        for x in deltas: d += x; docs.append(d)
        w = b[p]; p += 1
        freqs, p = bp4x_unpack(b, p, w)
    else:
        p = 4; docs = []; d = 0
        # tail: count is known from _length; read varints until we have n docs then n freqs
        raise NotImplementedError
    return score, docs, freqs, p
def decode_tail(b, n):
    score, = struct.unpack_from("<f", b, 0); p = 4
    docs = []; d = 0
    for i in range(n):
        x, p = varint(b, p); d = x if i == 0 else d + x; docs.append(d)
    freqs = []
    for i in range(n):
        x, p = varint(b, p); freqs.append(x)
    return score, docs, freqs, p
def decode_list(blocks, length, block_size=128):
    out = []
    nfull = length // block_size
    for i, blk in enumerate(blocks):
        if i < nfull: s, d, f, p = decode_block(blk, True)
        else: s, d, f, p = decode_tail(blk, length - nfull * block_size)
        assert p == len(blk), (i, p, len(blk))
        out.append((s, d, f))
    return out
