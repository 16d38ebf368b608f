"""Decode _compressed_position / _position_block_offset (positions_codec packed_delta_v1,
positions_layout shared_stream_v2) -- layout measured, see inverted-index-format.md."""
import sys, json
sys.path.insert(0, "/tmp/fts-research/scripts")
from postings import bp4x_unpack, varint, decode_list
def decode_block_positions(cp, start, end, freqs):
    total = sum(freqs); vals = []; p = start
    while total - len(vals) >= 128:
        w = cp[p]; p += 1
        v, p = bp4x_unpack(cp, p, w); vals += v
    while len(vals) < total:
        x, p = varint(cp, p); vals.append(x)
    assert p == end, (p, end)
    out = []; i = 0
    for f in freqs:
        d = vals[i:i + f]; i += f; acc = []; s = 0
        for j, x in enumerate(d): s = x if j == 0 else s + x; acc.append(s)
        out.append(acc)
    return out
def decode_positions(row):
    dec = decode_list(row["_posting"], row["_length"])
    offs = row["_position_block_offset"] + [len(row["_compressed_position"])]
    res = []
    for k, (s, d, f) in enumerate(dec):
        res += list(zip(d, decode_block_positions(row["_compressed_position"], offs[k], offs[k + 1], f)))
    return res
if __name__ == "__main__":
    from load_idx import load
    uri = sys.argv[1]
    tok, docs, inv = load(uri); texts = json.load(open(uri + ".docs.json")); rows = inv.to_pylist()
    bad = 0
    for w, t in tok.items():
        got = decode_positions(rows[t])
        want = [(d, [i for i, x in enumerate(texts[d].split()) if x == w]) for d, _ in got]
        bad += got != want
    print("tokens", len(tok), "position lists mismatching", bad)
