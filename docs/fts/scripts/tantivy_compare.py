"""Compare pylance's tokens (pylance_tokens.json, from scripts/pylance_tokens.py) with the tantivy
PyPI package's analyzer, for a few filter orders. Run with /tmp/fts-research/venv/bin/python."""
import json, sys, itertools
sys.path.insert(0, "/tmp/fts-research/scripts")
from corpus import CORPUS
import tantivy
from tantivy import TextAnalyzerBuilder, Tokenizer, Filter
ref = json.load(open("/tmp/fts-research/pylance_tokens.json"))
F = {"long": lambda: Filter.remove_long(40), "lower": Filter.lowercase, "stem": lambda: Filter.stemmer("english"),
     "stop": lambda: Filter.stopword("english"), "fold": Filter.ascii_fold}
def analyzer(order):
    b = TextAnalyzerBuilder(Tokenizer.simple())
    for name in order: b = b.filter(F[name]())
    return b.build()
def run(order, show=False):
    a = analyzer(order); ok_docs = 0; ok_pos = 0
    for d, text in enumerate(CORPUS):
        toks = a.analyze(text)          # list of strings
        want = [w for p, w in ref[d]]
        if toks == want: ok_docs += 1
        elif show: print(f"  doc {d}: tantivy {toks}\n         pylance {want}")
    return ok_docs
orders = [("long", "lower", "stem", "stop", "fold"), ("long", "lower", "stop", "stem", "fold"),
          ("lower", "long", "stem", "stop", "fold"), ("long", "lower", "fold", "stop", "stem"), ("long", "fold", "lower", "stop", "stem")]
for o in orders: print(o, run(o), "/", len(CORPUS), "documents identical")
best = max(orders, key=run); print("mismatches for", best); run(best, show=True)
# positions: tantivy's analyzer in python only returns strings; check via Tokenizer positions if exposed
print("analyzer methods:", [m for m in dir(analyzer(best)) if not m.startswith("_")])

# --- second round: pylance's stop list (measured by scripts/probe_stop_fold.py) as a custom list
stop = json.load(open("/tmp/fts-research/pylance_stopwords_probe.json"))
F["stop"] = lambda: Filter.custom_stopword(stop)
best = ("long", "lower", "stem", "stop", "fold")
print("with pylance's measured stop list:", run(best), "/", len(CORPUS)); run(best, show=True)
cand = json.load(open("/tmp/fts-research/pylance_fold_probe.json"))
a = TextAnalyzerBuilder(Tokenizer.simple()).filter(Filter.lowercase()).filter(Filter.ascii_fold()).build()
diff = {c: (a.analyze("x" + c + "x"), v) for c, v in cand.items() if a.analyze("x" + c + "x") != v}
print("ascii folding differences (tantivy, pylance):", diff)
tstop = TextAnalyzerBuilder(Tokenizer.whitespace()).filter(Filter.stopword("english")).build()
words = open("/tmp/fts-research/scripts/probe_stop_fold.py").read().split('CAND = """')[1].split('"""')[0].split()
tant_removed = [w for w in words if not tstop.analyze(w)]
print("tantivy stopword('english') removes", len(tant_removed), "of the candidates:", tant_removed)
# Snowball stemmer cross-check
import snowballstemmer, Stemmer
s1 = snowballstemmer.stemmer("english"); s2 = Stemmer.Stemmer("english")
ta = TextAnalyzerBuilder(Tokenizer.whitespace()).filter(Filter.stemmer("english")).build()
ws = "running runners ran generously generous generation happiness happily studies studying believing facade oeuvre curly ligatures newlines apostrophes exceeding dying lying skies consolidated knightly".split()
print("stemmers agree with tantivy:", all(ta.analyze(w) == [s1.stemWord(w)] == [s2.stemWord(w)] for w in ws),
      [(w, ta.analyze(w)[0], s1.stemWord(w), s2.stemWord(w)) for w in ws if not (ta.analyze(w) == [s1.stemWord(w)] == [s2.stemWord(w)])])
