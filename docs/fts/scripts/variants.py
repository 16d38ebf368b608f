"""Build small indices with different tokenizer params; print metadata params, tokens, index_details bytes."""
import lance, pyarrow as pa, shutil, sys, json, warnings
sys.path.insert(0, "/tmp/fts-research/scripts")
import fstdec, tokfile, lancelet as ll
text = ["The Quick brown fox's jumping, over-the-lazy dogs! Café naïve 123 4.5 e-mail foo_bar"]
cases = {
 "default": {},
 "whitespace": dict(base_tokenizer="whitespace"),
 "raw": dict(base_tokenizer="raw"),
 "raw_nomax": dict(base_tokenizer="raw", max_token_length=None),
 "ngram": dict(base_tokenizer="ngram"),
 "nolower": dict(lower_case=False),
 "nostem": dict(stem=False),
 "nostop": dict(remove_stop_words=False),
 "nofold": dict(ascii_folding=False),
 "maxlen4": dict(max_token_length=4),
 "withpos": dict(with_position=True),
}
for name, kw in cases.items():
    uri = f"/tmp/fts-research/ds_var_{name}"; shutil.rmtree(uri, ignore_errors=True)
    ds = lance.write_dataset(pa.table({"text": text}), uri)
    ds.create_scalar_index("text", "INVERTED", **kw)
    d = tokfile.idxdir(uri)
    import os
    if not os.path.exists(d + "/part_0_tokens.lance"):
        print(f"== {name} {kw}: files {sorted(os.listdir(d))}"); continue
    b = tokfile.fst_bytes(d)
    toks = sorted(fstdec.items(b), key=lambda x: x[1])
    from lancelet.file.reader import LanceFileReader
    params = json.loads(LanceFileReader(d + "/metadata.lance").metadata().schema.metadata[b"params"])
    det = ll.dataset(uri)._manifest.indices[0].index_details
    print(f"== {name} {kw}")
    print("   params diff from default:", {k: v for k, v in params.items() if k in ("base_tokenizer","with_position","max_token_length","lower_case","stem","remove_stop_words","ascii_folding","min_ngram_length","max_ngram_length")})
    print("   tokens in id order:", [k.decode() for k, v in toks][:60], "count", len(toks))
    print("   index_details:", type(det), det if not hasattr(det, "SerializeToString") else det)
