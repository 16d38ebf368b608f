import lance, pyarrow as pa, shutil, numpy as np
from lance.query import MatchQuery, PhraseQuery, BoostQuery, MultiMatchQuery, BooleanQuery, Occur, FullTextOperator as Op
def mk(uri, t, idx=(), **kw):
    shutil.rmtree(uri, ignore_errors=True)
    ds = lance.write_dataset(t, uri, **kw)
    for c, p in idx: ds.create_scalar_index(c, "INVERTED", **p)
    return lance.dataset(uri)
def show(ds, name, **kw):
    try:
        r = ds.to_table(**kw)
        print(name, r.schema.names, list(zip(r["id"].to_pylist() if "id" in r.schema.names else [None]*r.num_rows, r["_score"].to_pylist() if "_score" in r.schema.names else [])))
    except Exception as e: print(name, "ERR", type(e).__name__, str(e)[:300])
# no index
ds = mk("/tmp/fts-research/q_noidx", pa.table({"id":[0,1,2],"text":["dog cat","dog","bird"]}))
show(ds, "noidx_plain", full_text_query="dog")
show(ds, "noidx_match", full_text_query=MatchQuery("dog","text"))
show(ds, "noidx_dict", full_text_query={"query":"dog","columns":["text"]})
show(ds, "noidx_phrase", full_text_query=PhraseQuery("dog cat","text"))
# ties
ds = mk("/tmp/fts-research/q_ties", pa.table({"id":list(range(10)),"text":["dog cat"]*5+["cat dog"]*5}), [("text",{})], max_rows_per_file=3)
show(ds, "ties", full_text_query="dog")
show(ds, "ties_lim", full_text_query="dog", limit=3)
show(ds, "ties_lim_off", full_text_query="dog", limit=3, offset=2)
# fuzzy
words = ["apple","apply","ample","maple","apples","applesauce","app","aple","bpple","appl", "apple pie", "applied"]
ds = mk("/tmp/fts-research/q_fz", pa.table({"id":list(range(len(words))),"text":words}), [("text",{"stem":False})])
for q, kw in [("apple",{"fuzziness":1}),("apple",{"fuzziness":2}),("apple",{"fuzziness":None}),("app",{"fuzziness":None}),("apples",{"fuzziness":None}),("apple",{"fuzziness":1,"max_expansions":2}),("apple",{"fuzziness":2,"max_expansions":3}),("apple",{"fuzziness":1,"prefix_length":2}),("apple",{"fuzziness":2,"prefix_length":3}),("appel",{"fuzziness":2}),("apple pie",{"fuzziness":1,"operator":Op.AND}),("apple",{"fuzziness":1,"boost":3.0})]:
    show(ds, f"fz {q} {kw}", full_text_query=MatchQuery(q,"text",**kw))
