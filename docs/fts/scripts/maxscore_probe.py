import sys, numpy as np, math, struct
sys.path.insert(0, "/tmp/fts-research/scripts")
from load_idx import load
from postings import decode_list
from bm25 import idf, term_score, F
from impacts import qnorm
uri = sys.argv[1]
tok, docs, inv = load(uri); ntok = docs["_num_tokens"].to_pylist(); N = len(ntok)
avg32 = F(F(sum(ntok)) / F(N)); avg64 = sum(ntok) / N
rows = inv.to_pylist()
stats = {}
def bump(k, ok): stats.setdefault(k, [0, 0]); stats[k][ok] += 1
for w, t in tok.items():
    r = rows[t]; dec = decode_list(r["_posting"], r["_length"]); n = r["_length"]
    i32 = idf(N, n); i64 = math.log(1 + (N - n + 0.5) / (n + 0.5))
    for s, d, f in dec:
        c = {}
        c["f32 exact max"] = max(term_score(i32, ff, ntok[x], avg32) for x, ff in zip(d, f))
        c["f64 exact max"] = F(max(i64 * ff * 2.2 / (ff + 1.2 * (0.25 + 0.75 * ntok[x] / avg64)) for x, ff in zip(d, f)))
        c["f64 (k1+1)idf f/(f+norm)"] = F(max(i64 * 2.2 * ff / (ff + 1.2 * (0.25 + 0.75 * ntok[x] / avg64)) for x, ff in zip(d, f)))
        mf = max(f); mindl = min(ntok[x] for x in d)
        c["f32 (max f, min dl)"] = term_score(i32, mf, mindl, avg32)
        for k, v in c.items(): bump(k, int(v == F(s)))
    bump("list max == max(block max)", int(F(r["_max_score"]) == max(F(s) for s, _, _ in dec)))
for k, v in stats.items(): print(f"{k}: equal {v[1]} / {sum(v)}")
