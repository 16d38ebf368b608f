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
        print(name, r.schema.names, [(a, round(b,7)) for a,b in zip(r["id"].to_pylist() if "id" in r.schema.names else [None]*r.num_rows, r["_score"].to_pylist() if "_score" in r.schema.names else [])])
    except Exception as e: print(name, "ERR", type(e).__name__, str(e)[:300])
words = ["apple","apply","ample","maple apple apply","apples"]
ds = mk("/tmp/fts-research/q_fz2", pa.table({"id":list(range(len(words))),"text":words}), [("text",{"stem":False})])
show(ds, "fz apple apply", full_text_query=MatchQuery("apple apply","text",fuzziness=1))
show(ds, "ex apple apply", full_text_query=MatchQuery("apple apply","text"))
show(ds, "fz apple", full_text_query=MatchQuery("apple","text",fuzziness=1))
show(ds, "ex apple", full_text_query=MatchQuery("apple","text"))
show(ds, "ex apply", full_text_query=MatchQuery("apply","text"))
show(ds, "ex ample", full_text_query=MatchQuery("ample","text"))
show(ds, "and rep", full_text_query=MatchQuery("apple apple","text",operator=Op.AND))
# deletions + unindexed
t = pa.table({"id":list(range(6)),"text":["dog cat","dog","bird dog dog","cat","dog bird","fish"]})
ds = mk("/tmp/fts-research/q_del", t, [("text",{})])
ds.delete("id = 1")
ds = lance.write_dataset(pa.table({"id":[10,11,12],"text":["dog dog","cat dog fish","bird"]}), "/tmp/fts-research/q_del", mode="append")
show(ds, "del+app", full_text_query="dog")
show(ds, "del+app match", full_text_query=MatchQuery("dog cat","text"))
show(ds, "del+app lim2", full_text_query="dog", limit=2)
show(ds, "del+app filt", full_text_query="dog", filter="id >= 4")
show(ds, "del+app phrase?", full_text_query=PhraseQuery("dog cat","text"))
show(ds, "del+app and", full_text_query=MatchQuery("dog cat","text", operator=Op.AND))
# nearest hybrid
t = pa.table({"id":list(range(4)),"text":["dog cat","dog","bird","cat"],"v":pa.FixedSizeListArray.from_arrays(pa.array(np.arange(8,dtype=np.float32)),2)})
ds = mk("/tmp/fts-research/q_hyb", t, [("text",{})])
show(ds, "hyb", full_text_query="dog", nearest={"column":"v","q":[0,0],"k":2})
# flat order
t = pa.table({"id":list(range(5)),"text":["dog","cat dog","dog dog","x","dog a b c"]})
ds = mk("/tmp/fts-research/q_flat", t)
show(ds, "flat", full_text_query=MatchQuery("dog","text"))
show(ds, "flat lim", full_text_query=MatchQuery("dog","text"), limit=2)
show(ds, "flat and", full_text_query=MatchQuery("dog cat","text", operator=Op.AND))
show(ds, "flat bool", full_text_query=BooleanQuery([(Occur.MUST, MatchQuery("dog","text"))]))
show(ds, "flat fuzzy", full_text_query=MatchQuery("dgg","text", fuzziness=1))
