# ruff: noqa: RUF001
"""Measure pylance 14's analyzer tables with ``lance.tokenize`` and write them to
``src/lancelet/index/fts/_tables.py`` (a research tool: needs pylance installed).

* alphanumeric characters (the simple tokenizer's token characters): every code point
  c as ``"a" + c + "a"`` with all filters off stays one token iff c is alphanumeric;
* lower-casing and ASCII folding: every code point, alone, through the whitespace
  tokenizer with only that filter on (both act character by character);
* stop words per language: candidates are the words of text files on this machine,
  Spark's Snowball stop lists and every letter run (and its substrings up to 18
  characters) of the two regions of pylance's binary holding its word lists; a
  candidate is a stop word iff pylance drops it as a whitespace token.

Usage: python scripts/fts_analyzer_tables.py WORDS.json [SPARK_STOPWORD_DIR]
"""

from __future__ import annotations

import glob
import json
import os
import re
import sys

import lance

LANGUAGES = [
    "Arabic",
    "Danish",
    "Dutch",
    "English",
    "Finnish",
    "French",
    "German",
    "Greek",
    "Hungarian",
    "Italian",
    "Norwegian",
    "Portuguese",
    "Romanian",
    "Russian",
    "Spanish",
    "Swedish",
    "Tamil",
    "Turkish",
]
WHITESPACE = {0x9, 0xA, 0xC, 0xD, 0x20}
CODES = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000 and c not in WHITESPACE]
OFF = dict(max_token_length=None, stem=False, remove_stop_words=False)


def alphanumeric() -> list[int]:
    found = []
    for i in range(0, len(CODES), 20000):
        part = CODES[i : i + 20000]
        text = " ".join("a" + chr(c) + "a" for c in part)
        tokens = [
            t.text for t in lance.tokenize(text, lower_case=False, ascii_folding=False, **OFF)
        ]
        j = 0
        for c in part:
            if tokens[j] == "a" + chr(c) + "a":
                found.append(c)
                j += 1
            else:
                assert tokens[j] == tokens[j + 1] == "a"
                j += 2
    return found


def per_character(**filters: bool) -> dict[int, str]:
    changed = {}
    for i in range(0, len(CODES), 20000):
        part = CODES[i : i + 20000]
        text = "a " + " ".join(chr(c) for c in part)
        got = {
            t.position: t.text
            for t in lance.tokenize(text, base_tokenizer="whitespace", **filters, **OFF)
        }
        for k, c in enumerate(part):
            if got[k + 1] != chr(c):
                changed[c] = got[k + 1]
    return changed


def stop_candidates(words_json: str, spark_dir: str | None) -> list[str]:
    so = glob.glob(os.path.join(os.path.dirname(lance.__file__), "*.so"))[0]
    with open(so, "rb") as f:
        binary = f.read()
    with open(words_json) as f:
        found: set[str] = {w for w, _ in json.load(f)}
    for lo, hi in [(8170000, 8300000), (17440000, 17470000)]:
        text = binary[lo:hi].decode("utf-8", "replace")
        for run in re.findall(r"[^\W\d_'’]*(?:['’][^\W\d_]*)*", text):
            run = run.lower()
            for i in range(len(run)):
                for j in range(i + 1, min(len(run), i + 18) + 1):
                    found.add(run[i:j])
    if spark_dir:
        for name in glob.glob(os.path.join(spark_dir, "*.txt")):
            with open(name, encoding="utf-8") as f:
                found |= set(f.read().lower().split())
    return sorted(w for w in found if w and not any(ord(ch) in WHITESPACE for ch in w))


def stop_words(candidates: list[str], language: str) -> list[str]:
    kept = set()
    for i in range(0, len(candidates), 200000):
        part = candidates[i : i + 200000]
        text = "x " + " ".join(part)
        for t in lance.tokenize(
            text,
            base_tokenizer="whitespace",
            language=language,
            stem=False,
            remove_stop_words=True,
            lower_case=False,
            ascii_folding=False,
            max_token_length=None,
        ):
            if t.position > 0:
                kept.add(i + t.position - 1)
    return [w for k, w in enumerate(candidates) if k not in kept]


def chunked(name: str, value: object) -> str:
    """``name = ("...", ...)``: the JSON text of value as string literals of at most
    ~90 characters each."""
    text = json.dumps(value, ensure_ascii=True, separators=(",", ":"), sort_keys=True)
    lines, piece = [], ""
    for ch in text:
        if len(json.dumps(piece + ch)) > 90:
            lines.append(f"    {json.dumps(piece)}")
            piece = ""
        piece += ch
    lines.append(f"    {json.dumps(piece)}")
    return f"{name} = (\n" + "\n".join(lines) + "\n)\n"


def main() -> None:
    ranges: list[list[int]] = []
    for c in alphanumeric():
        if ranges and ranges[-1][1] == c - 1:
            ranges[-1][1] = c
        else:
            ranges.append([c, c])
    lower = per_character(lower_case=True, ascii_folding=False)
    fold = per_character(lower_case=False, ascii_folding=True)
    candidates = stop_candidates(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
    stops = {lang: stop_words(candidates, lang) for lang in LANGUAGES}
    write_module(ranges, lower, fold, stops, len(candidates))


def write_module(
    ranges: list[list[int]],
    lower: dict[int, str],
    fold: dict[int, str],
    stops: dict[str, list[str]],
    num_candidates: int,
) -> None:
    out = os.path.join(os.path.dirname(__file__), "..", "src/lancelet/index/fts/_tables.py")
    with open(out, "w") as f:
        f.write(
            '"""pylance 14.0.2\'s analyzer tables, measured by '
            "``scripts/fts_analyzer_tables.py``\n(generated: do not edit).  JSON texts, "
            'decoded by ``analyzer``."""\n\n'
            f"# {len(ranges)} [first, last] code point ranges of alphanumeric characters.\n"
        )
        f.write(chunked("ALPHANUMERIC_RANGES", ranges))
        f.write(f"# Lower-case of each of the {len(lower)} characters lower-casing changes.\n")
        f.write(chunked("LOWER", {str(k): v for k, v in lower.items()}))
        f.write(f"# ASCII folding of each of the {len(fold)} characters folding changes.\n")
        f.write(chunked("FOLD", {str(k): v for k, v in fold.items()}))
        f.write(f"# Built-in stop words per language ({num_candidates} candidates probed).\n")
        f.write(chunked("STOP_WORDS", stops))


if __name__ == "__main__":
    main()
