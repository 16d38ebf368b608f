"""BM25 over an index with several partitions: are N, avgdl, n global or per partition?"""
import sys, os, glob, collections, warnings, numpy as np, lance
sys.path.insert(0, "/tmp/fts-research/scripts")
from load_idx import load
import tokfile
from postings import decode_list
from bm25 import idf, term_score, F
uri = sys.argv[1]; q = sys.argv[2]
ds = lance.dataset(uri); uuid = ds.list_indices()[0]["uuid"]
d = f"{uri}/_indices/{uuid}"
parts = sorted(int(os.path.basename(p).split("_")[1]) for p in glob.glob(d + "/part_*_docs.lance"))
tokfile.idxdir = lambda u: d
P = [load(uri, p) for p in parts]
def lists(tok, docs, inv, w):
    if w not in tok: return []
    r = inv.slice(tok[w], 1).to_pylist()[0]
    return [(dd, f) for s, ds_, fs in decode_list(r["_posting"], r["_length"]) for dd, f in zip(ds_, fs)]
Ng = sum(p[1].num_rows for p in P); totg = sum(sum(p[1]["_num_tokens"].to_pylist()) for p in P)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    t = ds.to_table(full_text_query=q, with_row_id=True, columns=[], limit=10**6)
got = dict(zip(t["_rowid"].to_pylist(), t["_score"].to_pylist()))
for mode in ("global", "per-partition"):
    acc = collections.defaultdict(lambda: F(0))
    for w in q.split():
        ng = sum(len(lists(*p, w)) for p in P)
        for tok, docs, inv in P:
            nt = docs["_num_tokens"].to_pylist(); rid = docs["_rowid"].to_pylist(); pl = lists(tok, docs, inv, w)
            if mode == "global": N, n, avg = Ng, ng, F(F(totg) / F(Ng))
            else: N, n, avg = len(nt), len(pl), F(F(sum(nt)) / F(len(nt)))
            i = idf(N, n)
            for dd, f in pl: acc[rid[dd]] = F(acc[rid[dd]] + term_score(i, f, nt[dd], avg))
    ex = sum(F(got[r]) == acc.get(r) for r in got)
    print(f"{mode}: partitions {parts}, hits {len(got)}, predicted {len(acc)}, bit-exact {ex}")
