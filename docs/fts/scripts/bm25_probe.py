import sys, json, lance, numpy as np, collections
sys.path.insert(0, "/tmp/fts-research/scripts")
from load_idx import load
from postings import decode_list
uri = sys.argv[1]
ds = lance.dataset(uri)
tok, docs, inv = load(uri)
ntok = np.array(docs["_num_tokens"].to_pylist(), dtype=np.float64)
rowids = docs["_rowid"].to_pylist()
N = len(ntok); avgdl = ntok.sum() / N
rows = inv.to_pylist()
post = {w: [(d, f) for s, ds_, fs in decode_list(rows[t]["_posting"], rows[t]["_length"]) for d, f in zip(ds_, fs)] for w, t in tok.items()}
def variants(w, k1=1.2, b=0.75):
    p = post[w]; n = len(p)
    d = np.array([x for x, _ in p]); f = np.array([y for _, y in p], dtype=np.float64)
    idf = np.log(1 + (N - n + 0.5) / (n + 0.5))
    s64 = idf * (k1 + 1) * f / (f + k1 * (1 - b + b * ntok[d] / avgdl))
    # float32 chain
    F = np.float32
    idf32 = F(np.log(F(1) + (F(N) - F(n) + F(0.5)) / (F(n) + F(0.5))))
    s32 = idf32 * F(k1 + 1) * f.astype(F) / (f.astype(F) + F(k1) * (F(1) - F(b) + F(b) * ntok[d].astype(F) / F(avgdl)))
    return d, s64, s32
q = sys.argv[2]
t = ds.to_table(full_text_query=q, with_row_id=True, columns=["text"] if "text" in ds.schema.names else None, limit=100000)
got = dict(zip(t["_rowid"].to_pylist(), t["_score"].to_pylist()))
terms = q.split()
acc64 = collections.defaultdict(float); acc32 = collections.defaultdict(lambda: np.float32(0))
for w in terms:
    d, s64, s32 = variants(w)
    for x, a, c in zip(d, s64, s32): acc64[rowids[x]] += a; acc32[rowids[x]] = np.float32(acc32[rowids[x]] + c)
print("N", N, "avgdl", avgdl, "hits", len(got), "pred", len(acc64))
diff64 = [abs(got[r] - acc64[r]) for r in got]; diff32 = [abs(got[r] - float(acc32[r])) for r in got]
exact32 = sum(np.float32(got[r]) == acc32[r] for r in got)
print("max |diff| float64 formula", max(diff64), " float32 chain", max(diff32), " bit-exact f32", exact32, "/", len(got))
for r in list(got)[:5]: print(r, repr(got[r]), repr(acc64[r]), repr(float(acc32[r])))
