import sys, numpy as np, ctypes
sys.path.insert(0, "/tmp/fts-research/scripts")
from load_idx import load
from postings import decode_list
F = np.float32
_libm = ctypes.CDLL("libm.so.6"); _libm.logf.restype = ctypes.c_float; _libm.logf.argtypes = [ctypes.c_float]
k1, b = F(1.2), F(0.75); one = F(1)
stats = {}
for uri in sys.argv[1:]:
    tok, docs, inv = load(uri); ntok = docs["_num_tokens"].to_pylist(); N = len(ntok); total = sum(ntok)
    avg = F(F(total) / F(N)); rows = inv.to_pylist()
    norms = {
      "k1*(1-b+b*dl/avg)": lambda dl: k1 * (one - b + b * F(dl) / avg),
      "k1*(1-b+b*(dl/avg))": lambda dl: k1 * (one - b + b * (F(dl) / avg)),
      "k1*(1-b)+k1*b*dl/avg": lambda dl: k1 * (one - b) + k1 * b * F(dl) / avg,
      "k1*(1-b)+dl*(k1*b/avg)": lambda dl: k1 * (one - b) + F(dl) * (k1 * b / avg),
      "k1*((1-b)+dl*(b/avg))": lambda dl: k1 * ((one - b) + F(dl) * (b / avg)),
      "k1*(1-b+b*dl*(1/avg))": lambda dl: k1 * (one - b + b * F(dl) * (one / avg)),
      "k1*(1-b+dl*(b/avg))": lambda dl: k1 * (one - b + F(dl) * (b / avg)),
    }
    tfs = {
      "f*(k1+1)/(f+n)": lambda f, n: F(f) * (k1 + one) / (F(f) + n),
      "(k1+1)*f/(f+n)": lambda f, n: (k1 + one) * F(f) / (F(f) + n),
      "f/(f+n)*(k1+1)": lambda f, n: F(f) / (F(f) + n) * (k1 + one),
      "f*(k1+1)*(1/(f+n))": lambda f, n: F(f) * (k1 + one) * (one / (F(f) + n)),
    }
    for w, t in tok.items():
        r = rows[t]; dec = decode_list(r["_posting"], r["_length"]); n = r["_length"]
        idf = F(_libm.logf(float(one + (F(N) - F(n) + F(0.5)) / (F(n) + F(0.5)))))
        for nn, nf in norms.items():
            for tn, tf in tfs.items():
                for comb in ("idf*tf", "tf*idf"):
                    k = (nn, tn, comb); st = stats.setdefault(k, [0, 0])
                    for s, d, f in dec:
                        v = max(idf * tf(ff, nf(ntok[x])) for x, ff in zip(d, f))
                        st[int(v == F(s))] += 1
for k, v in sorted(stats.items(), key=lambda x: -x[1][1])[:5]: print(k, v[1], "/", sum(v))
