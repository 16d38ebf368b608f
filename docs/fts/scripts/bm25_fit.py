"""Try float32/float64 orderings of BM25 against pylance's _score for single-term queries."""
import sys, json, lance, numpy as np, itertools, warnings, ctypes, math
_libm = ctypes.CDLL("libm.so.6"); _libm.logf.restype = ctypes.c_float; _libm.logf.argtypes = [ctypes.c_float]
def logf(x): return np.float32(_libm.logf(float(x)))
sys.path.insert(0, "/tmp/fts-research/scripts")
from load_idx import load
from postings import decode_list
uri = sys.argv[1]; ds = lance.dataset(uri)
tok, docs, inv = load(uri)
ntok = np.array(docs["_num_tokens"].to_pylist()); rowids = docs["_rowid"].to_pylist()
N = len(ntok); total = int(ntok.sum()); rows = inv.to_pylist()
F, D = np.float32, np.float64
k1, b = 1.2, 0.75
def cands(n, f, dl):
    out = {}
    for ti, ta, tn, tc in itertools.product([F, D], repeat=4):
        arg = ti(1) + (ti(N) - ti(n) + ti(0.5)) / (ti(n) + ti(0.5))
        idf = logf(arg) if ti is F else D(math.log(arg))
        avg = ta(ta(total) / ta(N))
        for bdiv in (0, 1, 2):
            if bdiv == 0: norm = tn(tn(k1) * (tn(1) - tn(b) + tn(b) * tn(dl) / tn(avg)))
            elif bdiv == 1: norm = tn(tn(k1) * (tn(1) - tn(b) + tn(b) * (tn(dl) / tn(avg))))
            else: norm = tn(tn(k1) * (tn(1) - tn(b) + tn(dl) * (tn(b) / tn(avg))))
            ff = tc(f)
            out[("mixed", ti.__name__, ta.__name__, tn.__name__, tc.__name__, bdiv, "A")] = F(tc(idf) * (ff * tc(k1 + 1) / (ff + tc(norm))))
            out[("mixed", ti.__name__, ta.__name__, tn.__name__, tc.__name__, bdiv, "B")] = F(tc(idf) * tc(k1 + 1) * ff / (ff + tc(norm)))
            out[("mixed", ti.__name__, ta.__name__, tn.__name__, tc.__name__, bdiv, "C")] = F(tc(idf) * (ff * tc(k1 + 1)) / (ff + tc(norm)))
    return out
    for prec_name, T in [("f32", F), ("f64", D)]:
        avg = T(total) / T(N)
        idf_a = T(np.log(T(1) + (T(N) - T(n) + T(0.5)) / (T(n) + T(0.5))))
        idf_b = T(np.log1p((T(N) - T(n) + T(0.5)) / (T(n) + T(0.5))))
        for idfn, idf in [("ln1p", idf_a), ("log1p", idf_b)]:
            ff = T(f); L = T(dl)
            norm1 = T(k1) * (T(1) - T(b) + T(b) * L / avg)
            norm2 = T(k1) * (T(1) - T(b) + T(b) * (L / avg))
            norm3 = T(k1) * (T(1) - T(b)) + T(k1) * T(b) * L / avg
            for nn, norm in [("n1", norm1), ("n2", norm2), ("n3", norm3)]:
                out[(prec_name, idfn, nn, "idf*(k1+1)*f/(f+norm)")] = F(idf * T(k1 + 1) * ff / (ff + norm))
                out[(prec_name, idfn, nn, "idf*(f*(k1+1)/(f+norm))")] = F(idf * (ff * T(k1 + 1) / (ff + norm)))
                out[(prec_name, idfn, nn, "idf*f/(f+norm)*(k1+1)")] = F(idf * ff / (ff + norm) * T(k1 + 1))
                out[(prec_name, idfn, nn, "(k1+1)*idf*f/(f+norm)")] = F(T(k1 + 1) * idf * ff / (ff + norm))
                out[(prec_name, idfn, nn, "idf*(f/(f+norm))*(k1+1)")] = F(idf * (ff / (ff + norm)) * T(k1 + 1))
    return out
score = {}
terms = sys.argv[2:] or sorted(tok, key=lambda w: -rows[tok[w]]["_length"])[:6]
tot = 0
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    for w in terms:
        t = ds.to_table(full_text_query=w, with_row_id=True, columns=[], limit=100000)
        got = dict(zip(t["_rowid"].to_pylist(), t["_score"].to_pylist()))
        p = [(d, f) for s, ds_, fs in decode_list(rows[tok[w]]["_posting"], rows[tok[w]]["_length"]) for d, f in zip(ds_, fs)]
        n = len(p)
        for d, f in p:
            tot += 1
            for k, v in cands(n, f, ntok[d]).items():
                score[k] = score.get(k, 0) + (v == F(got[rowids[d]]))
print("samples", tot)
for k, v in sorted(score.items(), key=lambda x: -x[1])[:8]: print(v, k)
