"""Reading every manifest on disk, each on its own: a damaged one is a finding, and
the others are still checked."""

from __future__ import annotations

import json
from dataclasses import dataclass

from lancelet import io
from lancelet.dataset.doctor.problems import Problem, Problems
from lancelet.errors import UnsupportedFeatureError, UnsupportedVersionError
from lancelet.table import naming
from lancelet.table.manifest import Manifest
from lancelet.table.manifest_file import decode_manifest
from lancelet.table.naming import ManifestLocation
from lancelet.transaction.store import DatasetStore

# What lancelet raises for something it does not implement: not damage, so no verdict.
_NOT_IMPLEMENTED = (UnsupportedFeatureError, UnsupportedVersionError, NotImplementedError)


@dataclass(frozen=True)
class LoadedVersion:
    """A version on disk: its manifest file (relative to the root), and the manifest
    if it decoded."""

    version: int
    path: str
    manifest: Manifest | None


def load_versions(store: DatasetStore, problems: Problems) -> list[LoadedVersion]:
    """Every version listed under ``_versions/``, oldest first."""
    return [_load(store, location, problems) for location in store.list_versions()]


def _load(store: DatasetStore, location: ManifestLocation, problems: Problems) -> LoadedVersion:
    relative = io.join(naming.VERSIONS_DIR, location.name)
    manifest = decode_file(store, relative, problems, location.version)
    if manifest is not None and manifest.version != location.version:
        problems.add(
            Problem(
                "manifest-version-mismatch",
                relative,
                f"The file is named for version {location.version}, but the manifest in it "
                f"describes version {manifest.version}: it was copied or renamed by hand.",
            ),
            location.version,
        )
        manifest = None
    return LoadedVersion(location.version, relative, manifest)


def decode_file(
    store: DatasetStore, relative: str, problems: Problems, version: int | None
) -> Manifest | None:
    """The manifest in the file at ``relative``, or None after recording why not."""
    path = store.path(relative)
    try:
        return decode_manifest(store.io.read_bytes(path), path)
    except FileNotFoundError:
        return None  # removed since the listing (a concurrent cleanup): not on disk
    except _NOT_IMPLEMENTED as exc:
        problems.add(
            Problem(
                "unsupported-version",
                relative,
                f"lancelet cannot read this version, so its files were not checked: {exc}",
            ),
            version,
        )
    except Exception as exc:  # damaged bytes surface as many exception types
        if io.store_failed(exc):
            raise  # the store failed (credentials, network): nothing is known
        problems.add(
            Problem(
                "unreadable-manifest",
                relative,
                f"The manifest does not decode, so no reader can open this version: "
                f"{_reason(exc, path)}",
            ),
            version,
        )
    return None


def _reason(exc: BaseException, path: str) -> str:
    """The error's message without the path it starts with (the finding names it)."""
    text = str(exc) or type(exc).__name__
    return text.removeprefix(f"{path}: ")


def hinted_version(store: DatasetStore) -> int | None:
    """The version ``latest_version_hint.json`` names, if it is there and says one."""
    try:
        data = store.io.read_bytes(store.path(naming.VERSIONS_DIR, naming.VERSION_HINT))
        version = json.loads(data)["version"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return version if isinstance(version, int) and not isinstance(version, bool) else None


def check_hint(store: DatasetStore, on_disk: list[int], problems: Problems) -> None:
    """A hint ahead of every manifest means manifests were removed: a writer writes the
    hint only after its manifest is published, and cleanup never removes the latest."""
    hint = hinted_version(store)
    latest = max(on_disk, default=0)
    if hint is None or hint <= latest:
        return
    lost = f"{latest + 1}" if hint == latest + 1 else f"{latest + 1} to {hint}"
    problems.add(
        Problem(
            "missing-manifest",
            io.join(naming.VERSIONS_DIR, naming.VERSION_HINT),
            f"The version hint says version {hint} was committed, but no manifest of "
            f"version {lost} is on disk: those manifests were removed. Readers now see "
            f"version {latest} as the latest.",
        )
    )
