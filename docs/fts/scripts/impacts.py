"""Encode/verify the _impacts column (measured layout; see inverted-index-format.md)."""
import sys, json
sys.path.insert(0, "/tmp/fts-research/scripts")
from postings import decode_list, varint
def qnorm(n):
    if n < 16: return n
    k = n.bit_length() - 1
    return 8 * (k - 2) + ((n >> (k - 3)) & 7)
def uvarint(x):
    out = bytearray()
    while True:
        if x < 0x80: out.append(x); return bytes(out)
        out.append((x & 0x7F) | 0x80); x >>= 7
def frontier(pairs):
    best = {}
    for f, q in pairs: best[q] = max(best.get(q, 0), f)   # for each norm, max freq
    out = []; maxf = 0
    for q in sorted(best):                                # keep a pair only if its freq beats all shorter norms
        if best[q] > maxf: out.append((best[q], q)); maxf = best[q]
    return out
def encode_impacts(last_doc, pairs):
    fr = frontier(pairs)
    b = uvarint(last_doc) + uvarint(len(fr))
    pf, pq = 0, 0
    for f, q in fr:
        fd = f - pf - 1; nd = q - pq
        if nd == 1: b += uvarint(fd << 1)
        else: b += uvarint((fd << 1) | 1) + uvarint(nd)
        pf, pq = f, q
    return b
if __name__ == "__main__":
    from load_idx import load
    tok, docs, inv = load(sys.argv[1])
    ntok = docs["_num_tokens"].to_pylist(); rows = inv.to_pylist()
    ok = bad = 0; shapes = set()
    for w, tid in tok.items():
        r = rows[tid]; dec = decode_list(r["_posting"], r["_length"])
        want = [encode_impacts(d[-1], [(f, qnorm(ntok[x])) for x, f in zip(d, fs)]) for s, d, fs in dec]
        alld = [(f, qnorm(ntok[x])) for s, d, fs in dec for x, f in zip(d, fs)]
        want.append(encode_impacts(dec[-1][1][-1], alld))
        shapes.add((len(dec), len(r["_impacts"])))
        if want == r["_impacts"]: ok += 1
        else:
            bad += 1
            if bad < 3: print(w, len(dec), [x.hex(" ") for x in want[-2:]], [x.hex(" ") for x in r["_impacts"][-2:]])
    print("impacts match", ok, "mismatch", bad, "(blocks, impacts) shapes", sorted(shapes)[-5:])
