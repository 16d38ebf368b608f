"""Reader and writer feature flags: what a client must understand to use a version.

A manifest sets a reader flag for every feature a reader must implement to get
the right rows, and a writer flag for every feature a writer must preserve.  A
client that meets a flag it does not know must refuse rather than guess.
"""

from __future__ import annotations

from collections.abc import Mapping

from lancelet.errors import UnsupportedFeatureError

DELETION_FILES = 1
STABLE_ROW_IDS = 2
USE_V2_FORMAT_DEPRECATED = 4
TABLE_CONFIG = 8
BASE_PATHS = 16
DISABLE_TRANSACTION_FILE = 32
# Data files of several 2.x versions in one dataset (pylance 14); the manifest's
# data_format names the version new files get.
MIXED_FILE_VERSIONS = 256

FLAG_NAMES = {
    DELETION_FILES: "deletion files",
    STABLE_ROW_IDS: "stable row ids",
    USE_V2_FORMAT_DEPRECATED: "v2 format (deprecated flag)",
    TABLE_CONFIG: "table config",
    BASE_PATHS: "multiple base paths",
    DISABLE_TRANSACTION_FILE: "transaction files disabled",
    MIXED_FILE_VERSIONS: "mixed data file versions",
}

READABLE = DELETION_FILES | STABLE_ROW_IDS | USE_V2_FORMAT_DEPRECATED | TABLE_CONFIG
READABLE |= DISABLE_TRANSACTION_FILE | MIXED_FILE_VERSIONS | BASE_PATHS
WRITABLE = DELETION_FILES | STABLE_ROW_IDS | USE_V2_FORMAT_DEPRECATED | TABLE_CONFIG
WRITABLE |= DISABLE_TRANSACTION_FILE | MIXED_FILE_VERSIONS | BASE_PATHS


def flag_names(bits: int) -> list[str]:
    """The names of the flags set in ``bits``, lowest bit first."""
    bits_set = (1 << i for i in range(64) if bits & (1 << i))
    return [FLAG_NAMES.get(bit, f"unknown ({bit})") for bit in bits_set]


def _describe(bits: int) -> str:
    names = []
    for bit in (1 << i for i in range(64)):
        if bits & bit:
            names.append(f"{bit} ({FLAG_NAMES.get(bit, 'unknown')})")
    return ", ".join(names)


def check_readable(flags: int, where: str) -> None:
    unsupported = flags & ~READABLE
    if unsupported:
        raise UnsupportedFeatureError(
            f"{where}: cannot read, the manifest requires reader feature flag(s) "
            f"{_describe(unsupported)} which lancelet does not implement"
        )


def check_writable(flags: int, where: str) -> None:
    unsupported = flags & ~WRITABLE
    if unsupported:
        raise UnsupportedFeatureError(
            f"{where}: cannot write, the manifest requires writer feature flag(s) "
            f"{_describe(unsupported)} which lancelet does not implement"
        )


def flags_for(
    has_deletions: bool,
    config: Mapping[str, str],
    mixed_versions: bool = False,
    stable_row_ids: bool = False,
    base_paths: bool = False,
) -> tuple[int, int]:
    """The (reader, writer) flags a manifest with these properties must carry."""
    reader = writer = BASE_PATHS if base_paths else 0
    if stable_row_ids:
        reader |= STABLE_ROW_IDS
        writer |= STABLE_ROW_IDS
    if has_deletions:
        reader |= DELETION_FILES
        writer |= DELETION_FILES
    if mixed_versions:
        reader |= MIXED_FILE_VERSIONS
        writer |= MIXED_FILE_VERSIONS
    if config:
        writer |= TABLE_CONFIG
    return reader, writer
