"""Probe the doc-length quantization in _impacts: doc with length n holds one unique token once."""
import lance, pyarrow as pa, shutil, sys, json
sys.path.insert(0, "/tmp/fts-research/scripts")
from load_idx import load
from postings import varint
L = "bcdfghjkmnpqrtvwz"
def word(i):
    s = ""; i += 1
    while i: s += L[i % len(L)]; i //= len(L)
    return "qu" + s + "x"
lens = list(range(1, 301)) + list(range(320, 2000, 40)) + [3000, 5000, 10000, 20000, 65535, 70000]
texts = [" ".join([word(i)] + ["qbx"] * (n - 1)) for i, n in enumerate(lens)]
uri = "/tmp/fts-research/ds_norm"; shutil.rmtree(uri, ignore_errors=True)
ds = lance.write_dataset(pa.table({"text": texts}), uri)
ds.create_scalar_index("text", "INVERTED")
tok, docs, inv = load(uri)
rows = inv.to_pylist(); res = {}
for i, n in enumerate(lens):
    imp = rows[tok[word(i)]]["_impacts"][0]
    last, p = varint(imp, 0); cnt, p = varint(imp, p); v, p = varint(imp, p)
    q = varint(imp, p)[0] if v & 1 else None
    res[n] = (imp.hex(" "), q)
print(" ".join(f"{n}:{res[n][1]}" for n in lens))
json.dump(res, open("/tmp/fts-research/norm_probe.json", "w"))
