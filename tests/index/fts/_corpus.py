"""Corpora whose token occurrences are known word by word, and pylance-built INVERTED
indices over them (the independent side of the format tests)."""

from __future__ import annotations

import glob
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa

# Analyzer settings under which a document's tokens are exactly its words split on
# spaces: lower-case ASCII letters, no stemming, no stop words.
PLAIN = {"base_tokenizer": "whitespace", "stem": False, "remove_stop_words": False}


def words(n_docs: int, seed: int, vocabulary: int = 300, longest: int = 24) -> list[str]:
    """Documents of Zipf-distributed words ("aa", "ab", ...; stemmer-proof letters)."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    names = [f"w{letters[i // 26]}{letters[i % 26]}q" for i in range(vocabulary)]
    lengths = rng.integers(0, longest, n_docs)
    picks = np.minimum(rng.zipf(1.3, int(lengths.sum())) - 1, vocabulary - 1)
    docs, at = [], 0
    for length in lengths.tolist():
        docs.append(" ".join(names[k] for k in picks[at : at + length]))
        at += length
    return docs


@dataclass(frozen=True)
class Expected:
    """A corpus's postings computed word by word: token -> [(doc, freq, positions)].
    Documents without tokens are not in the index (measured): doc ids number the
    others, and ``rows`` gives each doc's row in the corpus."""

    postings: dict[str, list[tuple[int, int, list[int]]]]
    lengths: list[int]
    first_seen: list[str]
    rows: list[int]


def expected(docs: list[str]) -> Expected:
    postings: dict[str, list[tuple[int, int, list[int]]]] = defaultdict(list)
    first_seen: dict[str, None] = {}
    lengths, rows = [], []
    for row, text in enumerate(docs):
        tokens = text.split()
        if not tokens:
            continue
        d = len(rows)
        rows.append(row)
        lengths.append(len(tokens))
        where: dict[str, list[int]] = defaultdict(list)
        for position, token in enumerate(tokens):
            where[token].append(position)
            first_seen.setdefault(token)
        counts = Counter(tokens)
        for token, positions in where.items():
            postings[token].append((d, counts[token], positions))
    return Expected(dict(postings), lengths, list(first_seen), rows)


def build(
    path: Path, docs: list[str], per_file: int | None = None, **params: Any
) -> tuple[lance.LanceDataset, str]:
    """A dataset of ``docs`` (column "text") with a pylance INVERTED index; returns it
    and the index directory."""
    table = pa.table({"text": pa.array(docs, pa.string())})
    kwargs = {"max_rows_per_file": per_file} if per_file else {}
    ds = lance.write_dataset(table, str(path), **kwargs)
    ds.create_scalar_index("text", "INVERTED", name="text_idx", **params)
    return ds, index_dir(ds)


def index_dir(ds: lance.LanceDataset, name: str = "text_idx") -> str:
    found = [i for i in ds.list_indices() if i["name"] == name]
    directory = f"{ds.uri}/_indices/{found[0]['uuid']}"
    assert glob.glob(f"{directory}/metadata.lance")
    return directory
