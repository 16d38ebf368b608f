"""Where each kind of object lives inside a dataset directory, and what it is called.

A dataset root holds ``data/`` (Lance data files), ``_versions/`` (one manifest
per version), ``_transactions/``, ``_deletions/``, ``_indices/`` and
``_refs/tags/``.  Names carry the facts a reader needs before opening the file:
the version a manifest describes, the fragment and read version a deletion file
belongs to.
"""

from __future__ import annotations

import re
import secrets
import uuid
from dataclasses import dataclass
from enum import Enum

DATA_DIR = "data"
VERSIONS_DIR = "_versions"
TRANSACTIONS_DIR = "_transactions"
DELETIONS_DIR = "_deletions"
INDICES_DIR = "_indices"
TAGS_DIR = "_refs/tags"
VERSION_HINT = "latest_version_hint.json"

_U64_MAX = 2**64 - 1
MANIFEST_SUFFIX = ".manifest"


class ManifestNaming(Enum):
    """V1 names a manifest by its version; V2 by ``u64::MAX - version`` so that a
    lexicographic listing of an object store yields the newest version first."""

    V1 = 1
    V2 = 2


def manifest_name(version: int, scheme: ManifestNaming = ManifestNaming.V2) -> str:
    if scheme is ManifestNaming.V1:
        return f"{version}{MANIFEST_SUFFIX}"
    return f"{_U64_MAX - version:020d}{MANIFEST_SUFFIX}"


# Detached versions have the top bit set: random numbers no attached version reaches.
DETACHED_VERSION_MASK = 1 << 63


def is_detached(version: int) -> bool:
    return bool(version & DETACHED_VERSION_MASK)


def new_detached_version() -> int:
    return DETACHED_VERSION_MASK | secrets.randbits(63)


def detached_manifest_name(version: int) -> str:
    return f"d{version}{MANIFEST_SUFFIX}"


_V2_NAME = re.compile(r"^(\d{20})\.manifest$")
_V1_NAME = re.compile(r"^(\d{1,19})\.manifest$")


@dataclass(frozen=True)
class ManifestLocation:
    version: int
    name: str
    scheme: ManifestNaming


def parse_manifest_name(name: str) -> ManifestLocation | None:
    """The version a ``_versions/`` entry describes, or None for anything else."""
    match = _V2_NAME.match(name)
    if match:
        return ManifestLocation(_U64_MAX - int(match.group(1)), name, ManifestNaming.V2)
    match = _V1_NAME.match(name)
    if match:
        return ManifestLocation(int(match.group(1)), name, ManifestNaming.V1)
    return None


def data_file_name() -> str:
    """A fresh data file name: the first 24 bits of a random UUID in binary, then the
    rest in hex.  The binary prefix spreads files evenly across object-store
    partitions, which key on leading characters."""
    raw = uuid.uuid4().bytes
    prefix = "".join(f"{byte:08b}" for byte in raw[:3])
    return f"{prefix}{raw[3:].hex()}.lance"


def transaction_file_name(read_version: int) -> str:
    return f"{read_version}-{uuid.uuid4()}.txn"


class DeletionKind(Enum):
    ARROW = "arrow"
    BITMAP = "bin"


def deletion_file_name(
    fragment_id: int, read_version: int, file_id: int, kind: DeletionKind
) -> str:
    return f"{fragment_id}-{read_version}-{file_id}.{kind.value}"


def new_deletion_file_id() -> int:
    """Random, so two writers deleting from one fragment never pick the same name."""
    return secrets.randbits(64)


def tag_file_name(tag: str) -> str:
    return f"{tag}.json"
