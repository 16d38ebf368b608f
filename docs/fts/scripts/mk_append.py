"""Append rows after indexing, then optimize_indices(); also delete rows: what happens to the index files."""
import lance, pyarrow as pa, shutil, json, os, sys
from lancelet.file.reader import LanceFileReader
src = json.load(open("/tmp/fts-research/ds3.docs.json"))
uri = "/tmp/fts-research/ds_append"; shutil.rmtree(uri, ignore_errors=True)
ds = lance.write_dataset(pa.table({"text": src[:1000]}), uri)
ds.create_scalar_index("text", "INVERTED")
ds = lance.write_dataset(pa.table({"text": src[1000:1500]}), uri, mode="append")
def show(tag):
    ds = lance.dataset(uri)
    print("==", tag, "version", ds.version, "indices", [(i["uuid"][:8], sorted(i["fragment_ids"])) for i in ds.list_indices()])
    for d in sorted(os.listdir(uri + "/_indices")):
        p = f"{uri}/_indices/{d}"; files = sorted(os.listdir(p))
        md = LanceFileReader(p + "/metadata.lance").metadata().schema.metadata
        dele = LanceFileReader(p + "/metadata.lance").read_all().to_table()["deleted_fragments"].to_pylist()
        print("  ", d[:8], files, "partitions", md[b"partitions"], "deleted_fragments", dele)
    st = ds.stats.index_stats("text_idx"); print("   stats", [(x["num_tokens"], x["num_docs"]) for x in st["indices"]], "segments", st["num_segments"], "unindexed rows", st["num_unindexed_rows"])
show("after append")
ds = lance.dataset(uri); ds.optimize.optimize_indices(); show("after optimize_indices")
ds = lance.dataset(uri); ds.delete("text LIKE 'qbx%'"); show("after delete")
ds = lance.dataset(uri); ds.optimize.compact_files(); show("after compact")
