import lance, pyarrow as pa, shutil, sys, random
sys.path.insert(0, "src")
import lancelet as ll
import lance.query as pq, lancelet.query as lq
import lancelet.index.fts.combined as cb
random.seed(1)
W = ["dog","cat","bird","fish","cow","owl"]
counts = [0,0,0]; total = 0
for trial in range(25):
    n = random.randint(3, 12)
    a = [" ".join(random.choices(W, k=random.randint(0,6))) for _ in range(n)]
    b = [" ".join(random.choices(W, k=random.randint(0,6))) for _ in range(n)]
    uri="/tmp/fts-research/q_cf4"; shutil.rmtree(uri, ignore_errors=True)
    ds = lance.write_dataset(pa.table({"id":list(range(n)),"a":a,"b":b}), uri)
    ds.create_scalar_index("a", "INVERTED"); ds.create_scalar_index("b", "INVERTED")
    boosts = [round(random.uniform(1, 4), 2), round(random.uniform(1, 4), 2)]
    q = " ".join(random.sample(W, 2))
    r = lance.dataset(uri).to_table(full_text_query=pq.CombinedFieldsQuery(q, ["a","b"], boosts=boosts))
    x = dict(zip(r["id"].to_pylist(), r["_score"].to_pylist()))
    for v in range(3):
        cb.VARIANT = v
        o = ll.dataset(uri).to_table(full_text_query=lq.CombinedFieldsQuery(q, ["a","b"], boosts=boosts))
        y = dict(zip(o["id"].to_pylist(), o["_score"].to_pylist()))
        assert set(x) == set(y)
        counts[v] += sum(x[k] == y[k] for k in x)
    total += len(x)
print(total, counts)
