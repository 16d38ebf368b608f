import lance, pyarrow as pa, shutil, sys
uri = "/tmp/fts-research/ds_pos"; shutil.rmtree(uri, ignore_errors=True)
t = pa.table({"text": ["The quick brown fox jumps over the lazy dog",
  "A lazy dog sleeps", "Quick brown foxes are running", "hello world", "dog dog dog cat"]})
ds = lance.write_dataset(t, uri)
ds.create_scalar_index("text", "INVERTED", with_position=True)
