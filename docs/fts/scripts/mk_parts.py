"""Force several partitions (memory_limit / num_workers) and look at the files."""
import lance, pyarrow as pa, shutil, numpy as np, json, os, sys
sys.path.insert(0, "/tmp/fts-research/scripts")
src = json.load(open("/tmp/fts-research/ds3.docs.json"))
for name, kw in [("w2", dict(num_workers=2)), ("w2m1", dict(num_workers=2, memory_limit=1)), ("w1m1", dict(num_workers=1, memory_limit=1))]:
    uri = f"/tmp/fts-research/ds_parts_{name}"; shutil.rmtree(uri, ignore_errors=True)
    ds = lance.write_dataset(pa.table({"text": src}), uri, max_rows_per_file=2000)
    ds.create_scalar_index("text", "INVERTED", **kw)
    d = [x for x in os.listdir(uri + "/_indices")][0]
    files = sorted(os.listdir(f"{uri}/_indices/{d}"))
    from lancelet.file.reader import LanceFileReader
    md = LanceFileReader(f"{uri}/_indices/{d}/metadata.lance").metadata().schema.metadata
    print(name, kw, files, "partitions=", md.get(b"partitions", md.get("partitions")))
    for f in files:
        if f.endswith("_docs.lance"):
            t = LanceFileReader(f"{uri}/_indices/{d}/{f}").read_all().to_table()
            ids = t["_rowid"].to_pylist(); print("   ", f, len(ids), "rowid range", min(ids), max(ids), "sorted", ids == sorted(ids))
    st = lance.dataset(uri).stats.index_stats("text_idx"); print("   stats num_tokens/num_docs per index:", [(x["num_tokens"], x["num_docs"]) for x in st["indices"]], "num_segments", st["num_segments"])
