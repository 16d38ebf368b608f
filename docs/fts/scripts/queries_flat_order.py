import lance, pyarrow as pa, shutil
import lance.query as pq
uri="/tmp/fts-research/q_flato"; shutil.rmtree(uri, ignore_errors=True)
ds = lance.write_dataset(pa.table({"id":list(range(6)),"text":["dog cat", "x dog cat y z w", "dog cat dog cat", "cat", "q dog cat", "dog"]}), uri)
for name, q in [("phrase", pq.PhraseQuery("dog cat","text")), ("boost", pq.BoostQuery(pq.MatchQuery("dog","text"), pq.MatchQuery("cat","text"))), ("match_and", pq.MatchQuery("dog cat","text", operator=pq.FullTextOperator.AND)), ("match", pq.MatchQuery("dog cat","text")), ("bool_should", pq.BooleanQuery([(pq.Occur.SHOULD, pq.MatchQuery("dog","text"))]))]:
    r = ds.to_table(full_text_query=q); print(name, r["id"].to_pylist(), [round(x,4) for x in r["_score"].to_pylist()])
for name, q in [("multi1", pq.MultiMatchQuery("dog cat",["text"])), ("dict1", {"query": "dog cat", "columns": ["text"]}), ("dict2", {"query": "dog cat", "columns": ["text", "text"]})]:
    r = ds.to_table(full_text_query=q); print(name, r["id"].to_pylist(), [round(x,4) for x in r["_score"].to_pylist()])
