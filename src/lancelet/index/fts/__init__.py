"""Full-text (INVERTED) indices as pylance 14 writes them: the analyzer that turns
text into tokens, the on-disk layout of the token map, documents and posting lists
(``docs/fts/inverted-index-format.md``), BM25 scoring (``docs/fts/bm25.md``) and the
query language of ``full_text_query``."""
