import lance, pyarrow as pa, shutil, os, sys
uri = "/tmp/fts-research/ds1"
shutil.rmtree(uri, ignore_errors=True)
t = pa.table({"id": list(range(5)), "text": [
  "The quick brown fox jumps over the lazy dog",
  "A lazy dog sleeps",
  "Quick brown foxes are running",
  "hello world",
  "dog dog dog cat"]})
ds = lance.write_dataset(t, uri)
ds.create_scalar_index("text", "INVERTED")
ds = lance.dataset(uri)
print(ds.describe_indices())
print(ds.list_indices())
import json
print(json.dumps(ds.stats.index_stats("text_idx"), indent=1, default=str))
for root, d, f in os.walk(uri+"/_indices"):
    for x in f: print(os.path.join(root,x), os.path.getsize(os.path.join(root,x)))
