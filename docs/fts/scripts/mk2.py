"""Synthetic corpus: 3000 docs over a Zipf vocabulary of stemmer-proof words, 2 fragments."""
import lance, pyarrow as pa, shutil, numpy as np, sys, json
rng = np.random.default_rng(7)
L = "bcdfghjkmnpqrtvwz"
def word(i):
    s = ""
    i += 1
    while i: s += L[i % len(L)]; i //= len(L)
    return "q" + s + "x"
V = 300
vocab = [word(i) for i in range(V)]
p = 1 / np.arange(1, V + 1) ** 1.1; p /= p.sum()
N = int(sys.argv[2]) if len(sys.argv) > 2 else 3000
docs = []
for d in range(N):
    n = int(rng.integers(1, 30))
    docs.append(" ".join(vocab[j] for j in rng.choice(V, n, p=p)))
uri = sys.argv[1]
shutil.rmtree(uri, ignore_errors=True)
kw = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
ds = lance.write_dataset(pa.table({"id": np.arange(N), "text": docs}), uri, max_rows_per_file=1500)
ds.create_scalar_index("text", "INVERTED", **kw)
json.dump(docs, open(uri + ".docs.json", "w"))
print(lance.dataset(uri).stats.index_stats("text_idx")["indices"])
