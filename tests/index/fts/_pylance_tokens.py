"""pylance's tokens for lancelet's analyzer tests, taken from pylance itself: its
query tokenizer (``lance.tokenize``) per document, and the token ids and per-document
token counts of a real pylance INVERTED index (its FST decoded with ``ducer``, its
files read with pylance's own file reader)."""

from __future__ import annotations

import glob
import os
from typing import Any

import pyarrow as pa

# Analyzer keywords lance.tokenize and create_scalar_index share.
KEYWORDS = (
    "base_tokenizer", "language", "max_token_length", "lower_case", "stem",
    "remove_stop_words", "custom_stop_words", "ascii_folding", "min_ngram_length",
    "max_ngram_length", "prefix_only",
)  # fmt: skip


def tokenize(texts: list[str | None], kwargs: dict[str, Any]) -> list[list[tuple[str, int]]]:
    """Each document's (token, position) list; positions are pylance's minus the
    first kept token's (``lance.tokenize`` numbers from the first kept token)."""
    import lance

    out = []
    for text in texts:
        if text is None:
            out.append([])
            continue
        found = [(t.text, t.position) for t in lance.tokenize(text, **kwargs)]
        first = found[0][1] if found else 0
        out.append([(w, p - first) for w, p in found])
    return out


def index_tokens(
    directory: str, texts: pa.Array, kwargs: dict[str, Any]
) -> tuple[list[str], list[int]]:
    """The vocabulary in token id order and each row's ``_num_tokens`` (0 for
    rows the docs file leaves out) of the index pylance builds over ``texts``."""
    import ducer
    import lance
    from lance.file import LanceFileReader

    uri = os.path.join(directory, "ds")
    dataset = lance.write_dataset(pa.table({"text": texts}), uri, mode="overwrite")
    dataset.create_scalar_index("text", "INVERTED", with_position=True, replace=True, **kwargs)
    index_dir = sorted(glob.glob(os.path.join(uri, "_indices", "*")), key=os.path.getmtime)[-1]
    if not os.path.exists(os.path.join(index_dir, "part_0_tokens.lance")):
        return [], [0] * len(texts)
    tokens = LanceFileReader(os.path.join(index_dir, "part_0_tokens.lance")).read_all().to_table()
    fst = ducer.Map(tokens["_token_fst_bytes"][0].as_py())
    by_id = sorted((int(v), k.decode()) for k, v in fst.items())
    docs = LanceFileReader(os.path.join(index_dir, "part_0_docs.lance")).read_all().to_table()
    counts = [0] * len(texts)
    for row, count in zip(docs["_rowid"].to_pylist(), docs["_num_tokens"].to_pylist(), strict=True):
        counts[row] = count
    return [w for _, w in by_id], counts
