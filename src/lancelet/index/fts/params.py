"""The parameters of an INVERTED index: how its text was analyzed and how its
postings are laid out, with pylance 14's defaults (``docs/fts``)."""

from __future__ import annotations

from dataclasses import dataclass

# pylance 14's defaults.
DEFAULT_MAX_TOKEN_LENGTH = 40
DEFAULT_BLOCK_SIZE = 128
DEFAULT_FORMAT_VERSION = 2


@dataclass(frozen=True)
class InvertedParams:
    base_tokenizer: str = "simple"
    language: str = "English"
    with_position: bool = False
    max_token_length: int | None = DEFAULT_MAX_TOKEN_LENGTH
    lower_case: bool = True
    stem: bool = True
    remove_stop_words: bool = True
    # None: the language's built-in list; a tuple replaces it.
    custom_stop_words: tuple[str, ...] | None = None
    ascii_folding: bool = True
    min_ngram_length: int = 3
    max_ngram_length: int = 3
    prefix_only: bool = False
    block_size: int = DEFAULT_BLOCK_SIZE
    format_version: int = DEFAULT_FORMAT_VERSION
