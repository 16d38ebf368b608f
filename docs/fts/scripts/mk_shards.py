import lance, pyarrow as pa, shutil, json, os, sys
from lancelet.file.reader import LanceFileReader
src = json.load(open("/tmp/fts-research/ds3.docs.json"))[:3000]
uri = "/tmp/fts-research/ds_shards"; shutil.rmtree(uri, ignore_errors=True)
ds = lance.write_dataset(pa.table({"text": src}), uri, max_rows_per_file=1000)
ds.create_scalar_index("text", "INVERTED", **json.loads(sys.argv[1] if len(sys.argv) > 1 else "{}"))
d = os.listdir(uri + "/_indices")[0]; p = f"{uri}/_indices/{d}"
files = sorted(os.listdir(p)); print(files)
print("metadata:", LanceFileReader(p + "/metadata.lance").metadata().schema.metadata)
for f in files:
    if f.endswith("_docs.lance"):
        r = LanceFileReader(f"{p}/{f}"); t = r.read_all().to_table(); ids = t["_rowid"].to_pylist()
        print("  ", f, len(ids), "frags", sorted({i >> 32 for i in ids}), "meta", r.metadata().schema.metadata)
    if f.endswith("_tokens.lance"):
        t = LanceFileReader(f"{p}/{f}").read_all().to_table(); print("  ", f, "next_id", t["_token_next_id"][0], "total_len", t["_token_total_length"][0])
st = lance.dataset(uri).stats.index_stats("text_idx"); print("stats:", [(x["num_tokens"], x["num_docs"]) for x in st["indices"]], st["num_segments"])
