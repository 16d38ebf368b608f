"""pylance's analyzer tables, measured from pylance by
``scripts/measure_fts_tables.py`` and stored in ``tables.json``: the characters its
simple tokenizer keeps inside a token, its per-character lower-casing and ASCII
folding (where they change a character), and its stop words per language."""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

# The whitespace tokenizer's separators: ASCII whitespace without the vertical tab
# (measured), which is RE2's \s.
WHITESPACE_PATTERN = r"\s+"


@functools.cache
def _tables() -> dict[str, Any]:
    text = resources.files("lancelet.index.fts").joinpath("tables.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def languages() -> tuple[str, ...]:
    """The ``language`` names pylance accepts (capitalized, as it spells them)."""
    return tuple(sorted(_tables()["stop_words"]))


@functools.cache
def separator_pattern() -> str:
    """An RE2 pattern of the runs of characters the simple tokenizer splits on: all
    but the measured token characters (Unicode letters and numbers, as Rust's
    ``char::is_alphanumeric`` has them)."""
    parts = []
    for first, last in _tables()["alnum_ranges"]:
        parts.append(f"\\x{{{first:x}}}" + (f"-\\x{{{last:x}}}" if last > first else ""))
    return "[^" + "".join(parts) + "]+"


def alnum_ranges() -> list[tuple[int, int]]:
    """The measured token characters as inclusive code point ranges."""
    return [(int(first), int(last)) for first, last in _tables()["alnum_ranges"]]


@functools.cache
def lower_table() -> dict[int, str]:
    """``str.translate`` table of pylance's lower-casing, character by character (no
    final-sigma rule, and newer Unicode than some Pythons)."""
    return {int(code): low for code, low in _tables()["lower"].items()}


@functools.cache
def fold_table() -> dict[int, str]:
    """``str.translate`` table of pylance's ASCII folding."""
    return {int(code): folded for code, folded in _tables()["fold"].items()}


@functools.cache
def stop_words(language: str) -> frozenset[str]:
    return frozenset(_tables()["stop_words"][language])
