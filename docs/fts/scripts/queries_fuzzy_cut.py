import lance, pyarrow as pa, shutil
import lance.query as pq
uri="/tmp/fts-research/q_fz3"; shutil.rmtree(uri, ignore_errors=True)
words = ["apple","apply","ample","maple apple apply","apples", "bread"]
ds = lance.write_dataset(pa.table({"id":list(range(len(words))),"text":words}), uri)
ds.create_scalar_index("text", "INVERTED", stem=False)
ds = lance.dataset(uri)
for q, kw in [("apple",{}),("apple apple",{}),("apple apple",{"fuzziness":1}),("apple",{"fuzziness":1}),("apple apply",{"fuzziness":1}),("apple apple apply",{"fuzziness":1}),("apply apple apple",{"fuzziness":1}), ("apple apple",{"fuzziness":1, "operator": pq.FullTextOperator.AND}), ("apple apply", {"fuzziness":1, "max_expansions":1})]:
    r = ds.to_table(full_text_query=pq.MatchQuery(q,"text",**kw))
    print(q, kw, sorted(zip(r["id"].to_pylist(), [round(x,6) for x in r["_score"].to_pylist()])))
