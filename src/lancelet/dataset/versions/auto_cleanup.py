"""Cleanup after commits, as the dataset's config asks (pylance's keys).

``lance.auto_cleanup.interval`` (required): every commit whose version is a multiple of
it runs a cleanup (0: every commit).  ``lance.auto_cleanup.older_than`` (a duration
such as ``"7s"``, ``"1h 30m"`` or ``"14days"``; default: any age) and
``lance.auto_cleanup.retain_versions`` bound what it removes.  The version the commit
was built on counts as the latest, so it and the new one are always kept; tagged
versions are kept without complaint.  A cleanup that fails leaves the commit made and
is reported as a warning, as pylance logs it.
"""

from __future__ import annotations

import re
import warnings
from datetime import timedelta
from typing import TypedDict

from lancelet.dataset.versions.cleanup import cleanup_old_versions
from lancelet.errors import ArgumentError, LanceletError
from lancelet.table import naming
from lancelet.table.manifest import Manifest
from lancelet.transaction.store import DatasetStore

INTERVAL_KEY = "lance.auto_cleanup.interval"
OLDER_THAN_KEY = "lance.auto_cleanup.older_than"
RETAIN_VERSIONS_KEY = "lance.auto_cleanup.retain_versions"

_UNIT_SECONDS = {
    **dict.fromkeys(("nsec", "ns"), 1e-9),
    **dict.fromkeys(("usec", "us", "µs"), 1e-6),
    **dict.fromkeys(("msec", "ms"), 1e-3),
    **dict.fromkeys(("seconds", "second", "sec", "s"), 1.0),
    **dict.fromkeys(("minutes", "minute", "min", "m"), 60.0),
    **dict.fromkeys(("hours", "hour", "hr", "h"), 3600.0),
    **dict.fromkeys(("days", "day", "d"), 86400.0),
    **dict.fromkeys(("weeks", "week", "w"), 604800.0),
    **dict.fromkeys(("months", "month", "M"), 2630016.0),
    **dict.fromkeys(("years", "year", "y"), 31557600.0),
}
_PART = re.compile(r"\s*(\d+)\s*([a-zA-Zµ]+)")


class AutoCleanupConfig(TypedDict):
    """Cleanup run after every ``interval``-th commit, removing versions older than
    ``older_than_seconds`` (pylance's ``auto_cleanup_options``)."""

    interval: int
    older_than_seconds: int


def config_values(options: AutoCleanupConfig) -> dict[str, str]:
    """The config entries ``auto_cleanup_options`` give a new dataset."""
    try:
        interval, older = int(options["interval"]), int(options["older_than_seconds"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ArgumentError(
            "auto_cleanup_options must give integer 'interval' and 'older_than_seconds'"
        ) from exc
    return {INTERVAL_KEY: str(interval), OLDER_THAN_KEY: f"{older}s"}


def parse_duration(text: str) -> timedelta:
    """A duration written as number-unit pairs (``"1h 30m"``), humantime's units."""
    seconds, position = 0.0, 0
    for match in _PART.finditer(text):
        if match.start() != position or match.group(2) not in _UNIT_SECONDS:
            break
        seconds += int(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        position = match.end()
    if position == 0 or text[position:].strip():
        raise ArgumentError(f"{text!r} is not a duration such as '10s', '1h 30m' or '14days'")
    return timedelta(seconds=seconds)


def after_commit(store: DatasetStore, manifest: Manifest) -> None:
    """Run the cleanup the config of the version just committed asks for, if any."""
    config = manifest.config
    if INTERVAL_KEY not in config or naming.is_detached(manifest.version):
        return
    try:
        _cleanup(store, manifest)
    except (LanceletError, OSError) as exc:
        warnings.warn(
            f"{store.root}: auto cleanup failed after version {manifest.version} was "
            f"committed: {exc}",
            RuntimeWarning,
            stacklevel=3,
        )


def _cleanup(store: DatasetStore, manifest: Manifest) -> None:
    config = manifest.config
    interval = _integer(config[INTERVAL_KEY], INTERVAL_KEY)
    if interval and manifest.version % interval:
        return
    older_than = timedelta(0)
    if OLDER_THAN_KEY in config:
        older_than = parse_duration(config[OLDER_THAN_KEY])
    retain = None
    if RETAIN_VERSIONS_KEY in config:
        retain = _integer(config[RETAIN_VERSIONS_KEY], RETAIN_VERSIONS_KEY)
    cleanup_old_versions(
        store,
        older_than,
        retain,
        error_if_tagged_old_versions=False,
        latest=max(manifest.version - 1, 1),
    )


def _integer(text: str, key: str) -> int:
    if not text.strip().isdigit():
        raise ArgumentError(f"config {key}={text!r} is not a non-negative integer")
    return int(text)
