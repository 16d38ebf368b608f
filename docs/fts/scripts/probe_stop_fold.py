"""Which words pylance's English stop filter removes; how its ascii folding maps special characters."""
import lance, pyarrow as pa, shutil, sys, json
sys.path.insert(0, "/tmp/fts-research/scripts")
from load_idx import load
from positions import decode_positions
CAND = """i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers herself it its itself they them their theirs themselves what which who whom this that these those am is are was were be been being have has had having do does did doing would should could ought a an the and but if or because as until while of at by for with about against between into through during before after above below to from up down in out on off over under again further then once here there when where why how all any both each few more most other some such no nor not only own same so than too very s t can will just don now d ll m o re ve y ain aren couldn didn doesn hadn hasn haven isn ma mightn mustn needn shan shouldn wasn weren won wouldn shall may might must also cannot let us yet however""".split()
FOLD = "½ ⅓ ¼ ™ © … ﬀ Đ ł þ ð ĳ № ‰ € £ ¹ ⁴ ₂ Ⅷ ⓐ ⒜ ⑴ ℃ ㎏ ﬃ Ǆ ŉ ʼn ı ſ Ŋ ŀ".split()
def run(name, texts, **kw):
    uri = f"/tmp/fts-research/ds_probe_{name}"; shutil.rmtree(uri, ignore_errors=True)
    lance.write_dataset(pa.table({"text": texts}), uri).create_scalar_index("text", "INVERTED", with_position=True, **kw)
    tok, docs, inv = load(uri); rows = inv.to_pylist(); per = {}
    for w, t in tok.items():
        for d, ps in decode_positions(rows[t]):
            for p in ps: per.setdefault(d, []).append((p, w))
    return [sorted(per.get(d, [])) for d in range(len(texts))]
r = run("stop", [" ".join(CAND)], stem=False)[0]
kept = {CAND[p] for p, w in r}
stop = [w for w in CAND if w not in kept]
print("removed as stop words:", len(stop), stop)
print("kept:", sorted(kept))
json.dump(stop, open("/tmp/fts-research/pylance_stopwords_probe.json", "w"))
r = run("fold", ["x" + c + "x" for c in FOLD], stem=False, remove_stop_words=False)
fold = {c: [w for p, w in toks] for c, toks in zip(FOLD, r)}
print("folding (token of 'x'+c+'x'):", fold)
json.dump(fold, open("/tmp/fts-research/pylance_fold_probe.json", "w"), ensure_ascii=False)
