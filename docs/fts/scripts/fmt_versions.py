import lance, pyarrow as pa, shutil, sys, os, json
sys.path.insert(0, "/tmp/fts-research/scripts")
import lancelet as ll
from lancelet.file.reader import LanceFileReader
text = ["The quick brown fox jumps over the lazy dog", "hello world dog"]
for name, kw in [("v1", dict(format_version=1)), ("v3", dict(format_version=3)), ("bs256", dict(block_size=256)), ("custom_stop", dict(custom_stop_words=["quick"]))]:
    uri = f"/tmp/fts-research/ds_fmt_{name}"; shutil.rmtree(uri, ignore_errors=True)
    ds = lance.write_dataset(pa.table({"text": text}), uri)
    try: ds.create_scalar_index("text", "INVERTED", **kw)
    except Exception as e: print(name, "ERROR", e); continue
    d = [f"{uri}/_indices/{x}" for x in os.listdir(uri + "/_indices")][0]
    print("==", name, kw, sorted(os.listdir(d)))
    for f in sorted(os.listdir(d)):
        s = LanceFileReader(f"{d}/{f}").metadata().schema
        md = {k.decode(): v.decode()[:80] for k, v in (s.metadata or {}).items() if k != b"params"}
        print("   ", f, [x.name + ":" + str(x.type) for x in s], md)
    print("    details", ll.dataset(uri)._manifest.indices[0].index_details.value)
