"""Tags: names for versions, stored one per file under ``_refs/tags/``.

A tag file is ``_refs/tags/{name}.json`` holding exactly the JSON pylance
writes (serde's pretty printer: 2-space indent, no trailing newline)::

    {
      "branch": null,
      "version": 3,
      "createdAt": "2026-11-21T06:03:08.609738991Z",
      "updatedAt": "2026-11-21T06:03:08.609738991Z",
      "manifestSize": 430,
      "metadata": {}
    }

A tagged version is never removed by ``cleanup_old_versions``.
"""

from __future__ import annotations

import builtins
import json
import re
import time
import urllib.parse
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import Any

from lancelet import io
from lancelet.dataset.core import arguments
from lancelet.errors import (
    ArgumentError,
    CorruptDatasetError,
    InvalidTagNameError,
    TagError,
    TagNotFoundError,
    VersionNotFoundError,
)
from lancelet.table import naming
from lancelet.transaction.store import DatasetStore

_JSON_SUFFIX = ".json"
# File names are capped at 255 bytes, and a tag file is first written under a
# longer temporary name: pylance's fails from 212 bytes on (lancelet's from 213).
_MAX_NAME_BYTES = 211
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))$"
)


@dataclass(frozen=True)
class TagContents:
    """One tag file.  Times are nanoseconds since the epoch, so a rewrite keeps
    ``createdAt`` exactly as pylance wrote it."""

    version: int
    created_at_ns: int
    updated_at_ns: int
    manifest_size: int
    branch: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> bytes:
        doc = {
            "branch": self.branch,
            "version": self.version,
            "createdAt": format_rfc3339(self.created_at_ns),
            "updatedAt": format_rfc3339(self.updated_at_ns),
            "manifestSize": self.manifest_size,
            "metadata": self.metadata,
        }
        return json.dumps(doc, indent=2, ensure_ascii=False).encode()

    @classmethod
    def from_json(cls, data: bytes, path: str) -> TagContents:
        try:
            doc = json.loads(data)
            branch = doc.get("branch")
            contents = cls(
                version=_non_negative_int(doc["version"]),
                created_at_ns=parse_rfc3339(doc["createdAt"]),
                updated_at_ns=parse_rfc3339(doc["updatedAt"]),
                manifest_size=_non_negative_int(doc.get("manifestSize", 0)),
                branch=None if branch is None else str(branch),
                metadata={str(k): str(v) for k, v in (doc.get("metadata") or {}).items()},
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise CorruptDatasetError(f"{path}: not a valid tag file: {exc}") from exc
        return contents

    def as_dict(self) -> dict[str, Any]:
        """The entry pylance's ``tags.list()`` returns for this tag."""
        return {
            "branch": self.branch,
            "version": self.version,
            "created_at": _to_datetime(self.created_at_ns),
            "updated_at": _to_datetime(self.updated_at_ns),
            "manifest_size": self.manifest_size,
            "metadata": dict(self.metadata),
        }


def _non_negative_int(value: object) -> int:
    # bool is an int subclass, but `"version": true` is not a version.
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"expected a non-negative integer, got {value!r}")
    return value


# -- timestamps ---------------------------------------------------------------------------


def format_rfc3339(ns: int) -> str:
    """UTC with 'Z' and as many fraction digits as chrono prints (0, 3, 6 or 9)."""
    seconds, nanos = divmod(ns, 1_000_000_000)
    base = (_EPOCH + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S")
    if nanos == 0:
        fraction = ""
    elif nanos % 1_000_000 == 0:
        fraction = f".{nanos // 1_000_000:03d}"
    elif nanos % 1_000 == 0:
        fraction = f".{nanos // 1_000:06d}"
    else:
        fraction = f".{nanos:09d}"
    return f"{base}{fraction}Z"


def parse_rfc3339(text: object) -> int:
    if not isinstance(text, str):
        raise ValueError(f"expected an RFC 3339 timestamp, got {text!r}")
    match = _RFC3339.match(text)
    if match is None:
        raise ValueError(f"expected an RFC 3339 timestamp, got {text!r}")
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    fraction, _zulu, sign, off_hours, off_minutes = match.groups()[6:]
    moment = datetime(year, month, day, hour, minute, second, tzinfo=timezone.utc)
    if sign is not None:
        offset = timedelta(hours=int(off_hours), minutes=int(off_minutes))
        moment -= offset if sign == "+" else -offset
    seconds = (moment - _EPOCH) // timedelta(seconds=1)
    nanos = int((fraction or "").ljust(9, "0"))
    return seconds * 1_000_000_000 + nanos


def _to_datetime(ns: int) -> datetime:
    # datetime holds microseconds; pylance truncates the same way.
    return _EPOCH + timedelta(microseconds=ns // 1_000)


# -- names --------------------------------------------------------------------------------


def _name_problem(tag: str) -> str | None:
    """Why pylance would refuse ``tag`` as a ref name, or None if it is acceptable."""
    if not tag:
        return "a tag name cannot be empty"
    if not all(c.isalnum() or c in ".-_" for c in tag):
        return "tag name characters must be alphanumeric, '.', '-' or '_'"
    if tag.startswith("."):
        return "a tag name cannot begin with a dot"
    if tag.endswith("."):
        return "a tag name cannot end with a dot"
    if ".." in tag:
        return "a tag name cannot have two consecutive dots"
    if tag.endswith(".lock"):
        return "a tag name cannot end with .lock"
    if len(_file_stem(tag).encode()) > _MAX_NAME_BYTES:
        return f"a tag name is limited to {_MAX_NAME_BYTES} bytes"
    return None


def _file_stem(tag: str) -> str:
    # pylance's object-store paths percent-encode non-ASCII names the same way.
    return urllib.parse.quote(tag, safe="")


def _tag_from_file_name(name: str) -> str | None:
    if name.startswith(".") or not name.endswith(_JSON_SUFFIX):
        return None  # a temporary file of a tag being written, or a stranger
    return urllib.parse.unquote(name[: -len(_JSON_SUFFIX)])


# -- versions -----------------------------------------------------------------------------


def _manifest_path(store: DatasetStore, version: int) -> str | None:
    location = store.manifest_location(version)
    return None if location is None else store.path(naming.VERSIONS_DIR, location.name)


def _version_manifest(store: DatasetStore, version: object) -> str | None:
    """The manifest file of version number ``version``, None if there is none."""
    if not isinstance(version, int) or isinstance(version, bool):
        raise TypeError(f"a version must be an int or a tag name, not {type(version).__name__}")
    return _manifest_path(store, version) if version >= 1 else None


def resolve_version(store: DatasetStore, version: int | str) -> int:
    """The version number ``version`` names: itself if it exists, or a tag's target."""
    if isinstance(version, str):
        number = Tags(store).get_version(version)
        if _manifest_path(store, number) is None:
            raise VersionNotFoundError(
                f"{store.root}: tag {version!r} points at version {number}, which does not exist"
            )
        return number
    version = arguments.unsigned(version, "version", store.root)
    if _version_manifest(store, version) is None:
        raise VersionNotFoundError(f"{store.root}: version {version} does not exist")
    return version


# -- the tag collection -------------------------------------------------------------------

# What a tag may point at, in pylance's forms (see Tags._main_branch_reference).
Reference = int | str | tuple[str | None, int | None] | None


class Tags:
    """The tags of one dataset, with the methods of pylance's ``ds.tags``."""

    def __init__(self, store: DatasetStore, checked_out: int | None = None) -> None:
        # The version of the dataset the tags were reached from: a tag created or
        # updated with no reference points there, as in pylance.
        self._store = store
        self._checked_out = checked_out

    def _path(self, tag: str) -> str:
        return self._store.path(naming.TAGS_DIR, _file_stem(tag) + _JSON_SUFFIX)

    def _check_name(self, tag: str, *, new: bool = False) -> None:
        if not isinstance(tag, str):
            raise TypeError(f"a tag name must be a str, not {type(tag).__name__}")
        problem = _name_problem(tag)
        if problem is None and new and not tag.isascii():
            # pylance 14 accepts these but then fails to list any tag of the dataset.
            problem = "lancelet only creates tags with ASCII names (pylance cannot list others)"
        if problem is not None:
            raise InvalidTagNameError(f"{self._store.root}: invalid tag name {tag!r}: {problem}")

    def _read(self, tag: str) -> TagContents | None:
        path = self._path(tag)
        try:
            data = self._store.io.read_bytes(path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if io.store_failed(exc):
                raise
            raise CorruptDatasetError(f"{path}: cannot read tag {tag!r}: {exc}") from exc
        return TagContents.from_json(data, path)

    def _require(self, tag: str) -> TagContents:
        self._check_name(tag)
        contents = self._read(tag)
        if contents is None:
            raise TagNotFoundError(f"{self._store.root}: tag {tag!r} does not exist")
        return contents

    def _target(self, tag: str, reference: Reference) -> tuple[int, int]:
        """The version ``reference`` names and the byte size of its manifest."""
        reference = self._main_branch_reference(tag, reference)
        if isinstance(reference, str):
            source = self._require(reference)
            if source.branch is not None:
                raise TagError(
                    f"{self._store.root}: cannot point tag {tag!r} at tag {reference!r}: "
                    f"it names branch {source.branch!r}, and lancelet only tags the main branch"
                )
            version = source.version
        else:
            version = arguments.unsigned(reference, "version", f"{self._store.root}: tag {tag!r}")
        path = _version_manifest(self._store, version)
        if path is None:
            raise VersionNotFoundError(
                f"{self._store.root}: cannot point tag {tag!r} at version {version}: "
                "that version does not exist"
            )
        return version, self._store.io.size_of(path)

    def _main_branch_reference(self, tag: str, reference: Reference) -> int | str:
        """pylance's forms of a reference: None (the version checked out), a tag name, a
        version number, or a (branch, version) pair (None as the version: the
        branch's latest); lancelet has the main branch only."""
        if reference is None:
            if self._checked_out is None:
                raise ArgumentError(f"{self._store.root}: tag {tag!r}: a reference is required")
            return self._checked_out
        if not isinstance(reference, tuple):
            return reference
        branch, version = reference
        if branch not in (None, "main"):
            raise TagError(
                f"{self._store.root}: cannot point tag {tag!r} at branch {branch!r}: lancelet "
                "reads and writes the main branch only"
            )
        return self._store.latest_version() if version is None else version

    def list(self) -> dict[str, dict[str, Any]]:
        """Every tag, by name, as pylance's ``tags.list()`` reports it."""
        out: dict[str, dict[str, Any]] = {}
        for file_name in sorted(self._store.io.list_dir(self._store.path(naming.TAGS_DIR))):
            tag = _tag_from_file_name(file_name)
            contents = None if tag is None else self._read(tag)
            # None also covers a tag deleted between the listing and the read.
            if tag is not None and contents is not None:
                out[tag] = contents.as_dict()
        return out

    def list_ordered(self, order: str | None = None) -> builtins.list[tuple[str, dict[str, Any]]]:
        """``list()`` as (name, tag) pairs sorted by version, newest first unless
        ``order="asc"``; tags of one version stay in name order, as in pylance."""
        if order is None:
            order = "desc"
        if order not in ("asc", "desc"):
            raise ValueError(f"Invalid sort order '{order}'. Valid values are: asc, desc")
        return sorted(
            self.list().items(),
            key=lambda item: item[1]["version"],
            reverse=order == "desc",
        )

    def get_version(self, tag: str) -> int:
        return self._require(tag).version

    def create(self, tag: str, reference: Reference = None) -> None:
        self._check_name(tag, new=True)
        version, manifest_size = self._target(tag, reference)
        now = time.time_ns()
        contents = TagContents(version, now, now, manifest_size)
        # put_if_not_exists, so two concurrent creates of one tag cannot both succeed.
        if not self._store.io.put_if_not_exists(self._path(tag), contents.to_json()):
            raise TagError(f"{self._store.root}: tag {tag!r} already exists")

    def update(self, tag: str, reference: Reference = None) -> None:
        """Point an existing tag elsewhere; its creation time and metadata stay."""
        old = self._require(tag)
        version, manifest_size = self._target(tag, reference)
        new = replace(
            old,
            version=version,
            manifest_size=manifest_size,
            updated_at_ns=time.time_ns(),
            branch=None,
        )
        self._store.io.put(self._path(tag), new.to_json())

    def replace_metadata(self, tag: str, metadata: dict[str, str]) -> None:
        """Replace the tag's metadata; where it points and ``updated_at`` stay."""
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise TypeError("replace_metadata: metadata must map strings to strings")
        old = self._require(tag)
        self._store.io.put(self._path(tag), replace(old, metadata=dict(metadata)).to_json())

    def delete(self, tag: str) -> None:
        self._require(tag)
        self._store.io.delete(self._path(tag))
