"""How far the stored block max scores are from max over the block of the query-time BM25 (bm25.py)."""
import sys, collections, numpy as np
sys.path.insert(0, "/tmp/fts-research/scripts")
from load_idx import load
from postings import decode_list
from bm25 import idf, term_score, F
for uri in sys.argv[1:]:
    tok, docs, inv = load(uri); ntok = docs["_num_tokens"].to_pylist(); N = len(ntok)
    avg = F(F(sum(ntok)) / F(N)); rows = inv.to_pylist(); hist = collections.Counter()
    for w, t in tok.items():
        r = rows[t]; dec = decode_list(r["_posting"], r["_length"]); i = idf(N, r["_length"])
        for s, d, f in dec:
            v = max(term_score(i, ff, ntok[x], avg) for x, ff in zip(d, f))
            hist[int(F(s).view(np.int32)) - int(v.view(np.int32))] += 1
    print(uri, "stored - query-formula max, in ulps:", sorted(hist.items()))
