"""Recover pylance's token sequence per document: index the corpus with_position=True,
decode the FST + postings + positions, and rebuild each document's (position, token) list."""
import lance, pyarrow as pa, shutil, sys, json, collections
sys.path.insert(0, "/tmp/fts-research/scripts")
from corpus import CORPUS
import tokfile, fstdec
from load_idx import load
from positions import decode_positions
uri = "/tmp/fts-research/ds_tok"; shutil.rmtree(uri, ignore_errors=True)
ds = lance.write_dataset(pa.table({"text": CORPUS}), uri)
ds.create_scalar_index("text", "INVERTED", with_position=True)
tok, docs, inv = load(uri); rows = inv.to_pylist()
per_doc = collections.defaultdict(list)
for w, t in tok.items():
    for d, ps in decode_positions(rows[t]):
        for p in ps: per_doc[d].append((p, w))
ntok = docs["_num_tokens"].to_pylist()
out = []
for d in range(len(CORPUS)):
    seq = sorted(per_doc[d]); assert len(seq) == ntok[d]
    out.append(seq)
json.dump(out, open("/tmp/fts-research/pylance_tokens.json", "w"), ensure_ascii=False)
for d, s in enumerate(out): print(d, [w for p, w in s])
