"""pylance's ``jieba/<model>`` base tokenizer: Chinese word segmentation by jieba-rs
(through its Python binding ``rjieba``, the ``jieba`` extra) with the model's
dictionaries, as pylance loads them.

A model is a folder ``<model home>/jieba/<name>`` (``jieba`` alone is
``jieba/default``); the home is ``$LANCE_LANGUAGE_MODEL_HOME``, else
``lance/language_models`` under the user's data folder.  Its ``config.json`` may name
the main dictionary (``main``, default ``dict.txt``) and user dictionaries
(``users``), relative to the folder; each line is ``word [frequency [tag]]``.
Documents are cut in jieba's search mode with its HMM on; a token's position is the
character offset it starts at (measured: pylance stores that, not the token's
number).  A missing dictionary is an OSError and a missing folder a ValueError, as in
pylance.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from lancelet.errors import ArgumentError, LanceletError, UnsupportedOptionError

MODEL_HOME_VARIABLE = "LANCE_LANGUAGE_MODEL_HOME"


class LanguageModelError(LanceletError, OSError):
    """A tokenizer's language model folder or dictionary is missing or unreadable."""


def is_jieba(tokenizer: str) -> bool:
    return tokenizer == "jieba" or tokenizer.startswith("jieba/")


def model_home() -> Path:
    given = os.environ.get(MODEL_HOME_VARIABLE)
    if given:
        return Path(given)
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "lance" / "language_models"


def _binding() -> Any:
    try:
        import rjieba
    except ImportError as exc:
        raise UnsupportedOptionError(
            "INVERTED index: the jieba tokenizer needs the rjieba package "
            "(pip install 'lancelet[jieba]')"
        ) from exc
    return rjieba


def _dictionary_lines(path: Path) -> list[tuple[str, int | None, str | None]]:
    try:
        text = path.read_text("utf-8")
    except OSError as exc:
        raise LanguageModelError(f"jieba dictionary {path}: {exc}") from exc
    entries: list[tuple[str, int | None, str | None]] = []
    for number, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        try:
            frequency = int(parts[1]) if len(parts) > 1 else None
        except ValueError as exc:
            raise LanguageModelError(f"jieba dictionary {path} line {number}: {line!r}") from exc
        entries.append((parts[0], frequency, parts[2] if len(parts) > 2 else None))
    return entries


@functools.cache
def _segmenter(tokenizer: str, home: str) -> Any:
    name = "jieba/default" if tokenizer == "jieba" else tokenizer
    folder = Path(home) / name
    if not folder.is_dir():
        # pylance: invalid input (a ValueError), where a missing dictionary is an OSError.
        raise ArgumentError(f"{folder} is not a valid directory (jieba model {name!r})")
    config: dict[str, Any] = {}
    if (folder / "config.json").exists():
        try:
            config = json.loads((folder / "config.json").read_text("utf-8"))
        except (OSError, ValueError) as exc:
            raise LanguageModelError(f"{folder / 'config.json'}: {exc}") from exc
    paths = [folder / config.get("main", "dict.txt")]
    paths += [folder / user for user in config.get("users") or []]
    entries = [entry for path in paths for entry in _dictionary_lines(path)]
    segmenter = _binding().Jieba.empty()
    for word, frequency, tag in entries:
        segmenter.add_word(word, frequency, tag)
    return segmenter


def check(tokenizer: str) -> None:
    """Load the model now, so that a bad one fails before any work."""
    _segmenter(tokenizer, str(model_home()))


def tokens(texts: pa.Array, tokenizer: str) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """All documents' tokens in order, their count per document and each token's
    position (its starting character)."""
    segmenter = _segmenter(tokenizer, str(model_home()))
    words: list[str] = []
    starts: list[int] = []
    counts = np.zeros(len(texts), np.int64)
    for row, text in enumerate(texts.to_pylist()):
        if text is None:
            continue
        found = segmenter.tokenize(text, "search", True)
        counts[row] = len(found)
        words += [word for word, _, _ in found]
        starts += [start for _, start, _ in found]
    return pa.array(words, pa.large_string()), counts, np.array(starts, np.int64)
