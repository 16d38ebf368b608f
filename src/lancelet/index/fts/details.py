"""The manifest's record of an INVERTED index and the keywords that build one.

``index_details`` is a ``/lance.table.InvertedIndexDetails`` protobuf message whose
fields were identified by varying pylance 14's parameters
(``docs/fts/inverted-index-format.md`` §7): 1 base_tokenizer, 2 language (JSON-quoted),
3 with_position, 4 max_token_length (absent when None), 5 lower_case, 6 stem,
7 remove_stop_words, 8 ascii_folding, 9/10 min/max_ngram_length, 11 prefix_only,
12 block_size, 15 format_version.  False booleans are left out (proto3).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from lancelet.errors import ArgumentError, CorruptIndexError, UnsupportedOptionError
from lancelet.index._files import IndexDetails, varint_field
from lancelet.index.fts import analyzer
from lancelet.index.fts.params import InvertedParams

TYPE_URL = "/lance.table.InvertedIndexDetails"
_STRINGS = {1: "base_tokenizer", 2: "language"}
_NUMBERS = {
    3: "with_position",
    4: "max_token_length",
    5: "lower_case",
    6: "stem",
    7: "remove_stop_words",
    8: "ascii_folding",
    9: "min_ngram_length",
    10: "max_ngram_length",
    11: "prefix_only",
    12: "block_size",
    15: "format_version",
}
_BOOLEANS = frozenset(
    {"with_position", "lower_case", "stem", "remove_stop_words", "ascii_folding", "prefix_only"}
)
_COUNTS = frozenset({"min_ngram_length", "max_ngram_length", "block_size", "format_version"})
# Build-time resources pylance takes and does not record: they change how pylance
# shards the work, not the index's answers, so they are checked and need nothing more.
RESOURCE_KEYWORDS = frozenset({"memory_limit", "num_workers"})
KEYWORDS = frozenset(
    {
        "base_tokenizer",
        "language",
        "with_position",
        "max_token_length",
        "lower_case",
        "stem",
        "remove_stop_words",
        "custom_stop_words",
        "ascii_folding",
        "min_ngram_length",
        "max_ngram_length",
        "prefix_only",
        "block_size",
        "format_version",
    }
    | RESOURCE_KEYWORDS
)


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _tagged(number: int, raw: bytes) -> bytes:
    """A length-delimited field: tag (wire type 2), length, bytes."""
    return _varint(number << 3 | 2) + _varint(len(raw)) + raw


def details_bytes(params: InvertedParams) -> bytes:
    """The InvertedIndexDetails message pylance records for ``params``."""
    out = [
        _tagged(1, params.base_tokenizer.encode("utf-8")),
        _tagged(2, json.dumps(params.language).encode("utf-8")),
    ]
    for number, name in _NUMBERS.items():
        value = getattr(params, name)
        if value is None or value is False:
            continue
        out.append(varint_field(number, int(value)))
    return b"".join(out)


def inverted_details(params: InvertedParams) -> IndexDetails:
    return IndexDetails(TYPE_URL, details_bytes(params), 0)


def _read_varint(data: bytes, at: int, where: str) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if at >= len(data) or shift > 63:
            raise CorruptIndexError(f"{where}: the index details end inside a number")
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at += 1
        shift += 7
        if byte < 0x80:
            return value, at


def parse_details(value: bytes, where: str = "index details") -> dict[str, Any]:
    """The parameters an InvertedIndexDetails message records (unset fields are
    proto3 defaults; ``max_token_length`` None when absent)."""
    found: dict[str, Any] = {name: False if name in _BOOLEANS else 0 for name in _NUMBERS.values()}
    found.update(base_tokenizer="", language="", max_token_length=None)
    at = 0
    while at < len(value):
        tag, at = _read_varint(value, at, where)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            raw, at = _read_varint(value, at, where)
            name = _NUMBERS.get(number)
            if name is not None:
                found[name] = bool(raw) if name in _BOOLEANS else raw
        elif wire == 2:
            length, at = _read_varint(value, at, where)
            data = value[at : at + length]
            if len(data) != length:
                raise CorruptIndexError(f"{where}: a field runs past the index details")
            at += length
            if number in _STRINGS:
                text = data.decode("utf-8", "replace")
                found[_STRINGS[number]] = json.loads(text) if number == 2 else text
        else:
            raise CorruptIndexError(f"{where}: wire type {wire} in the index details")
    return found


def _check(name: str, value: Any) -> Any:
    if name == "format_version" and isinstance(value, str):
        # pylance takes 1, 2, 3, "v1", "v2" or "v3".
        text = value.lower().removeprefix("v")
        if text not in ("1", "2", "3"):
            raise ArgumentError(f"INVERTED index: unknown format_version {value!r}")
        return int(text)
    if name in _BOOLEANS:
        if not isinstance(value, bool):
            raise ArgumentError(f"INVERTED index: {name} must be a bool, got {value!r}")
        return value
    if name in _COUNTS or name in RESOURCE_KEYWORDS:
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ArgumentError(f"INVERTED index: {name} must be a positive integer, got {value!r}")
        return value
    if name == "max_token_length":
        if value is not None and (
            not isinstance(value, int) or isinstance(value, bool) or value < 1
        ):
            raise ArgumentError(
                "INVERTED index: max_token_length must be a positive integer or None, "
                f"got {value!r}"
            )
        return value
    if name == "custom_stop_words":
        if value is None:
            return None
        if isinstance(value, str) or not all(isinstance(w, str) for w in value):
            raise ArgumentError("INVERTED index: custom_stop_words must be a list of strings")
        return tuple(value)
    if not isinstance(value, str):
        raise ArgumentError(f"INVERTED index: {name} must be a string, got {value!r}")
    return value


def parameters(kwargs: Mapping[str, Any]) -> InvertedParams:
    """The index parameters of ``create_scalar_index``'s keywords, checked; unknown
    keywords are refused by name."""
    unknown = sorted(set(kwargs) - KEYWORDS)
    if unknown:
        raise UnsupportedOptionError(
            f"INVERTED index does not take {unknown}; its parameters: {sorted(KEYWORDS)}"
        )
    given = {k: _check(k, v) for k, v in kwargs.items() if k not in RESOURCE_KEYWORDS}
    if given.get("base_tokenizer") == "ngram":
        # pylance's defaults for n-grams: no stemming, no stop words.
        given.setdefault("stem", False)
        given.setdefault("remove_stop_words", False)
    params = InvertedParams(**given)
    analyzer.check_params(params)
    return params


def describe(value: bytes) -> dict[str, Any]:
    """What pylance's ``describe_indices()`` gives as an INVERTED index's ``details``:
    the recorded parameters (custom stop words and the tokenizer family are not
    recorded: None), in pylance's order."""
    found = parse_details(value)
    return {
        "lance_tokenizer": None,
        "base_tokenizer": found["base_tokenizer"],
        "language": found["language"],
        "with_position": found["with_position"],
        "max_token_length": found["max_token_length"],
        "lower_case": found["lower_case"],
        "stem": found["stem"],
        "remove_stop_words": found["remove_stop_words"],
        "custom_stop_words": None,
        "ascii_folding": found["ascii_folding"],
        "min_ngram_length": found["min_ngram_length"],
        "max_ngram_length": found["max_ngram_length"],
        "prefix_only": found["prefix_only"],
        "block_size": found["block_size"],
        "split_identifiers": False,
        "split_on_numerics": False,
        "preserve_original": False,
        "index_operators": False,
        "document_granularity": "row",
    }
