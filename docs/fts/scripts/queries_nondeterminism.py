import lance, pyarrow as pa, shutil, sys, random
import lance.query as pq
W = ["dog","cat","bird","fish","cow","owl","ant"]
random.seed(3)
diff = 0; total = 0
for trial in range(15):
    n = random.randint(5, 30)
    a = [" ".join(random.choices(W, k=random.randint(0,8))) for _ in range(n)]
    uri="/tmp/fts-research/q_ex8"; shutil.rmtree(uri, ignore_errors=True)
    ds = lance.write_dataset(pa.table({"id":list(range(n)),"text":a}), uri)
    ds.create_scalar_index("text", "INVERTED", stem=False)
    lance.write_dataset(pa.table({"id":[100,101],"text":[" ".join(random.choices(W, k=4)) for _ in range(2)]}), uri, mode="append")
    clauses = [random.sample(W, random.randint(1,3)) for _ in range(3)]
    q = pq.BooleanQuery([(pq.Occur.SHOULD, pq.MatchQuery(" ".join(c), "text")) for c in clauses])
    runs = [dict(zip(*[c.to_pylist() for c in lance.dataset(uri).to_table(full_text_query=q, columns=["id","_score"]).columns])) for _ in range(6)]
    for i in runs[0]:
        total += 1
        diff += len({r[i] for r in runs}) > 1
print(diff, total)
