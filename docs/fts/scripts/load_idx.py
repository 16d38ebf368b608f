import sys, json, collections
sys.path.insert(0, "/tmp/fts-research/scripts")
import fstdec, tokfile
from lancelet.file.reader import LanceFileReader
def load(uri, part=0):
    d = tokfile.idxdir(uri)
    b = tokfile.fst_bytes(d, part)
    tok = {k.decode(): v for k, v in fstdec.items(b)}
    docs = LanceFileReader(f"{d}/part_{part}_docs.lance").read_all().to_table()
    inv = LanceFileReader(f"{d}/part_{part}_invert.lance").read_all().to_table()
    return tok, docs, inv
def expected(docs_text):
    post = collections.defaultdict(list)
    for i, t in enumerate(docs_text):
        c = collections.Counter(t.split())
        for w, f in c.items(): post[w].append((i, f))
    return post
