import sys, numpy as np, math, itertools, ctypes
sys.path.insert(0, "/tmp/fts-research/scripts")
from load_idx import load
from postings import decode_list
from impacts import qnorm
F, D = np.float32, np.float64
_libm = ctypes.CDLL("libm.so.6"); _libm.logf.restype = ctypes.c_float; _libm.logf.argtypes = [ctypes.c_float]
uri = sys.argv[1]
tok, docs, inv = load(uri); ntok = docs["_num_tokens"].to_pylist(); N = len(ntok); total = sum(ntok)
rows = inv.to_pylist()
lb = {}
for n in range(1, 1 << 20):
    lb.setdefault(qnorm(n), n)
def variants(n):
    out = {}
    for ti, ta, tn in itertools.product([F, D], repeat=3):
        arg = ti(1) + (ti(N) - ti(n) + ti(0.5)) / (ti(n) + ti(0.5))
        for lg in ("libm", "np"):
            if ti is D and lg == "np": continue
            idf = (F(_libm.logf(float(arg))) if lg == "libm" else np.log(arg)) if ti is F else D(math.log(arg))
            avg = ta(ta(total) / ta(N))
            for order in ("A", "B"):
                def sc(f, dl, idf=idf, avg=avg, order=order):
                    norm = tn(tn(1.2) * (tn(1) - tn(0.75) + tn(0.75) * tn(dl) / tn(avg)))
                    if order == "A": return F(tn(idf) * (tn(f) * tn(2.2) / (tn(f) + norm)))
                    return F(tn(2.2) * tn(idf) * tn(f) / (tn(f) + norm))
                out[(ti.__name__, lg, ta.__name__, tn.__name__, order)] = sc
    return out
stats = {}
for w, t in tok.items():
    r = rows[t]; dec = decode_list(r["_posting"], r["_length"]); n = r["_length"]
    for key, sc in variants(n).items():
        for mode in ("exact", "quant_lb"):
            for s, d, f in dec:
                if mode == "exact": v = max(sc(ff, ntok[x]) for x, ff in zip(d, f))
                else: v = max(sc(ff, lb[qnorm(ntok[x])]) for x, ff in zip(d, f))
                k = key + (mode,); stats.setdefault(k, [0, 0]); stats[k][int(v == F(s))] += 1
for k, v in sorted(stats.items(), key=lambda x: -x[1][1])[:6]: print(k, v[1], "/", sum(v))
