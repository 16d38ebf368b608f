import lance, pyarrow as pa, shutil, sys, random, itertools
import numpy as np
import lance.query as pq
W = ["dog","cat","bird","fish","cow","owl","ant"]
F = np.float32
random.seed(int(sys.argv[1]))
variants = {}
def add(name, ok): e = variants.setdefault(name, [0,0]); e[0] += ok; e[1] += 1
bad = 0
for trial in range(40):
    n = random.randint(5, 30)
    a = [" ".join(random.choices(W, k=random.randint(0,8))) for _ in range(n)]
    uri="/tmp/fts-research/q_ex6"; shutil.rmtree(uri, ignore_errors=True)
    ds = lance.write_dataset(pa.table({"id":list(range(n)),"text":a}), uri)
    ds.create_scalar_index("text", "INVERTED", stem=False)
    d = lance.dataset(uri)
    clauses = [random.sample(W, random.randint(1,3)) for _ in range(3)]
    q = pq.BooleanQuery([(pq.Occur.MUST, pq.MatchQuery(" ".join(clauses[0]), "text"))] + [(pq.Occur.SHOULD, pq.MatchQuery(" ".join(c), "text")) for c in clauses[1:]])
    x = dict(zip(*[c.to_pylist() for c in d.to_table(full_text_query=q, columns=["id","_score"]).columns]))
    parts = [dict(zip(*[c.to_pylist() for c in d.to_table(full_text_query=pq.MatchQuery(" ".join(c),"text"), columns=["id","_score"]).columns])) for c in clauses]
    term = {w: dict(zip(*[c.to_pylist() for c in d.to_table(full_text_query=pq.MatchQuery(w,"text"), columns=["id","_score"]).columns])) for w in W}
    for i, v in x.items():
        m, s1, s2 = (F(p.get(i, 0.0)) for p in parts)
        add("m+s1+s2", float(F(F(m+s1)+s2)) == v)
        add("m+(s1+s2)", float(F(m+F(s1+s2))) == v)
        # should clauses flattened into one term list (distinct terms?) 
        sh = F(0)
        for c in clauses[1:]:
            for w in c: sh = F(sh + F(term[w].get(i, 0.0)))
        add("m+flat(s)", float(F(m+sh)) == v)
        shu = F(0)
        for w in dict.fromkeys(clauses[1] + clauses[2]): shu = F(shu + F(term[w].get(i, 0.0)))
        add("m+flatuniq(s)", float(F(m+shu)) == v)
        if float(F(F(m+s1)+s2)) != v and bad < 4:
            bad += 1; print(clauses, float(m), float(s1), float(s2), v, float(F(F(m+s1)+s2)))
print(variants)
