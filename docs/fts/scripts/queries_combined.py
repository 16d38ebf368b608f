import lance, pyarrow as pa, shutil, sys
sys.path.insert(0, "src")
import numpy as np
from lancelet.index.fts.bm25 import *
import lance.query as pq
def run(a, b, queries):
    uri="/tmp/fts-research/q_cf2"; shutil.rmtree(uri, ignore_errors=True)
    ds = lance.write_dataset(pa.table({"id":list(range(len(a))),"a":a,"b":b}), uri)
    ds.create_scalar_index("a", "INVERTED"); ds.create_scalar_index("b", "INVERTED")
    ds = lance.dataset(uri)
    for q, boosts in queries:
        r = ds.to_table(full_text_query=pq.CombinedFieldsQuery(q, ["a","b"], boosts=boosts)); print(q, boosts, sorted(zip(r["id"].to_pylist(), r["_score"].to_pylist())))
a = ["dog cat", "dog", "bird fish", "cat cat dog", "fish"]
b = ["fish", "dog dog bird", "dog", "cat", "bird"]
run(a, b, [("bird", None), ("bird", [2.0, 1.0])])
print("idf n=1", idf(1,5), "n=2", idf(2,5), "n=3", idf(3,5))
a2 = ["dog cat", "", "bird fish", "cat cat dog", "fish", ""]
b2 = ["fish", "dog dog bird", "dog", "", "bird", "dog"]
run(a2, b2, [("dog", None), ("bird", None)])
for N in (4,5,6):
  for n in (1,2,3,4):
    print(N, n, idf(n, N))
print("swapped")
run(b2, a2, [("dog", None), ("bird", None)])
a3 = ["dog cat", "", "", "", "fish", "x y"]
b3 = ["fish", "dog dog bird", "dog", "", "bird", "dog"]
print("a3 first (N_a=3, N_b=5)")
run(a3, b3, [("dog", None)])
run(b3, a3, [("dog", None)])
