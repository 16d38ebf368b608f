"""Reproduce pylance 14.0.2's full-text _score bit for bit from the index's own statistics.
Usage: bm25.py DATASET_URI 'query terms' (terms must already be index tokens, or use --tantivy-free default text)"""
import sys, ctypes, collections, warnings, numpy as np
sys.path.insert(0, "/tmp/fts-research/scripts")
from load_idx import load
from postings import decode_list
_libm = ctypes.CDLL("libm.so.6"); _libm.logf.restype = ctypes.c_float; _libm.logf.argtypes = [ctypes.c_float]
F = np.float32
K1, B = F(1.2), F(0.75)
def idf(N, n):   # all float32; ln is the C library's logf (what Rust's f32::ln calls)
    return F(_libm.logf(float(F(1) + (F(N) - F(n) + F(0.5)) / (F(n) + F(0.5)))))
def term_score(idf_, f, dl, avgdl):
    norm = K1 * (F(1) - B + B * F(dl) / avgdl)
    return idf_ * (F(f) * (K1 + F(1)) / (F(f) + norm))
def bm25(uri, terms):
    tok, docs, inv = load(uri)
    ntok = docs["_num_tokens"].to_pylist(); rowids = docs["_rowid"].to_pylist()
    N = len(ntok); avgdl = F(F(sum(ntok)) / F(N))
    rows = inv.to_pylist(); acc = collections.defaultdict(lambda: F(0))
    for w in terms:
        if w not in tok: continue
        r = rows[tok[w]]; p = [(d, f) for s, ds_, fs in decode_list(r["_posting"], r["_length"]) for d, f in zip(ds_, fs)]
        i = idf(N, len(p))
        for d, f in p: acc[rowids[d]] = F(acc[rowids[d]] + term_score(i, f, ntok[d], avgdl))
    return acc
if __name__ == "__main__":
    import lance
    uri, q = sys.argv[1], sys.argv[2]
    terms = sys.argv[3].split() if len(sys.argv) > 3 else q.split()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = lance.dataset(uri).to_table(full_text_query=q, with_row_id=True, columns=[], limit=1000000)
    got = dict(zip(t["_rowid"].to_pylist(), t["_score"].to_pylist()))
    pred = bm25(uri, terms)
    exact = sum(F(got[r]) == pred.get(r) for r in got)
    maxulp = max(abs(int(F(got[r]).view(np.int32)) - int(pred.get(r, F(0)).view(np.int32))) for r in got) if got else 0
    print(f"query {q!r}: {len(got)} hits, predicted {len(pred)}, bit-exact {exact}, max ulp diff {maxulp}")
