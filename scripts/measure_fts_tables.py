"""Measure the character and word tables of pylance's text analyzer and write them to
``src/lancelet/index/fts/tables.json`` (needs pylance; run from the repository root).

Every table is pylance's answer to a probe through ``lance.tokenize``:

* ``alnum_ranges``: the code points the simple tokenizer keeps inside a token (each
  probed between two ``a``: one token ``a?a`` or two ``a`` tokens);
* ``lower``: each code point's lower-casing, where it changes it (probed alone with
  the whitespace tokenizer, lower_case only);
* ``fold``: each code point's ASCII folding, where it changes it (alone, folding
  only);
* ``stop_words``: per language, the candidate words that stop-word removal drops.
  Candidates are Spark's stop-word lists (inside pyspark's jars), the current
  table, and words of the text files under ``--words-from`` directories.

    python scripts/measure_fts_tables.py --words-from /usr/share /usr/lib/python3
"""

from __future__ import annotations

import argparse
import json
import os
import re
import zipfile
from collections.abc import Iterable
from pathlib import Path

import lance

TABLES = Path("src/lancelet/index/fts/tables.json")
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
# The whitespace tokenizer's separators (ASCII whitespace but vertical tab: measured).
ASCII_SPACE = {0x9, 0xA, 0xC, 0xD, 0x20}
CHUNK = 20000


def code_points() -> list[int]:
    return [c for c in range(0x110000) if not 0xD800 <= c < 0xE000 and c not in ASCII_SPACE]


def tokens(text: str, **options: object) -> dict[int, str]:
    found = lance.tokenize(text, max_token_length=None, stem=False, **options)
    return {token.position: token.text for token in found}


def alone(codes: list[int], **options: object) -> dict[int, str | None]:
    """Each code point's token when it stands alone (None: no token)."""
    out: dict[int, str | None] = {}
    for start in range(0, len(codes), CHUNK):
        part = codes[start : start + CHUNK]
        got = tokens("a " + " ".join(map(chr, part)), base_tokenizer="whitespace", **options)
        for k, code in enumerate(part):
            out[code] = got.get(k + 1)
    return out


def alphanumeric(codes: list[int]) -> list[int]:
    kept = []
    for start in range(0, len(codes), CHUNK):
        part = codes[start : start + CHUNK]
        text = " ".join("a" + chr(c) + "a" for c in part)
        found = lance.tokenize(
            text, base_tokenizer="simple", lower_case=False, ascii_folding=False,
            max_token_length=None, stem=False, remove_stop_words=False,
        )  # fmt: skip
        inside = {t.text for t in found}
        kept += [c for c in part if "a" + chr(c) + "a" in inside]
    return kept


def ranges(codes: list[int]) -> list[list[int]]:
    out: list[list[int]] = []
    for code in codes:
        if out and out[-1][1] == code - 1:
            out[-1][1] = code
        else:
            out.append([code, code])
    return out


def candidate_words(roots: Iterable[str], current: dict[str, list[str]]) -> set[str]:
    words = {w for listed in current.values() for w in listed}
    import pyspark

    for jar in (Path(pyspark.__file__).parent / "jars").glob("spark-mllib_*.jar"):
        with zipfile.ZipFile(jar) as archive:
            for name in archive.namelist():
                if "/stopwords/" in name and name.endswith(".txt"):
                    words |= set(archive.read(name).decode().split())
    pattern = re.compile(r"[^\W\d_]{1,}")
    for root in roots:
        for folder, _, files in os.walk(root):
            for file in files:
                path = os.path.join(folder, file)
                if file.endswith((".txt", ".md", ".rst", ".po", ".html")):
                    text = Path(path).read_bytes()[:2_000_000].decode("utf-8", "ignore")
                    words |= {w.lower() for w in pattern.findall(text)}
    return words


def stop_words(language: str, words: list[str]) -> list[str]:
    kept: set[int] = set()
    for start in range(0, len(words), 100000):
        part = words[start : start + 100000]
        found = lance.tokenize(
            "x " + " ".join(part), language=language, stem=False, remove_stop_words=True,
            lower_case=True, ascii_folding=False, max_token_length=None,
        )  # fmt: skip
        kept |= {start + t.position - 1 for t in found if t.position > 0}
    return [w for k, w in enumerate(words) if k not in kept]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--words-from", nargs="*", default=[])
    args = parser.parse_args()
    current = json.loads(TABLES.read_text()) if TABLES.exists() else {}
    codes = code_points()
    alnum = alphanumeric(codes)
    allowed = set(alnum)
    lower = alone(codes, lower_case=True, ascii_folding=False, remove_stop_words=False)
    fold = alone(codes, lower_case=False, ascii_folding=True, remove_stop_words=False)
    words = sorted(
        w
        for w in candidate_words(args.words_from, current.get("stop_words", {}))
        if w and all(ord(c) in allowed for c in w) and w == "".join(c.lower() for c in w)
    )
    tables = {
        "alnum_ranges": ranges(alnum),
        "lower": {str(c): v for c, v in lower.items() if v is not None and v != chr(c)},
        "fold": {str(c): v for c, v in fold.items() if v is not None and v != chr(c)},
        "stop_words": {language: stop_words(language, words) for language in LANGUAGES},
    }
    TABLES.write_text(json.dumps(tables, ensure_ascii=False, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
