"""``dataset(uri, asof=...)``: the version that was the latest at a moment."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from lancelet.errors import ArgumentError, VersionNotFoundError
from lancelet.transaction.store import DatasetStore


@dataclass(frozen=True)
class AsOf:
    """A version named by a moment: the latest committed at or before it."""

    moment: datetime | str


def version_asof(store: DatasetStore, asof: datetime | str) -> int:
    """The newest version committed at or before ``asof`` (a naive datetime is local
    time, as ``datetime.timestamp`` takes it; a string is ISO 8601)."""
    if isinstance(asof, str):
        try:
            asof = datetime.fromisoformat(asof)
        except ValueError as exc:
            raise ArgumentError(f"asof: {asof!r} is not an ISO 8601 timestamp") from exc
    if not isinstance(asof, datetime):
        raise TypeError(f"asof must be a datetime or an ISO 8601 string, not {type(asof)}")
    limit_ns = int(asof.timestamp() * 1_000_000) * 1_000
    for location in reversed(store.list_versions()):
        if store.read_manifest(location.version).timestamp_ns <= limit_ns:
            return location.version
    raise VersionNotFoundError(f"{store.root}: no version was committed at or before {asof}")
