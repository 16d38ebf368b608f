"""Every Lance file format version, the names users give them, and what lancelet
does with each.

A version has three spellings: its name ("2.1"), the (major, minor) pair in a
file's footer, and the pair a manifest records for each data file.  They differ
for the older versions: 2.0 files say (0, 3) in their footer and pylance records
(2, 0) for them; legacy (0.1) files say (0, 1) or (0, 2).
"""

from __future__ import annotations

from dataclasses import dataclass

from lancelet.errors import UnsupportedVersionError


@dataclass(frozen=True)
class FileVersion:
    name: str
    footer: tuple[int, int]  # the pair a writer puts in the footer
    footer_aliases: frozenset[tuple[int, int]]  # every footer pair that means this version
    readable: bool
    writable: bool

    @property
    def manifest_pair(self) -> tuple[int, int]:
        """``(file_major_version, file_minor_version)`` as a manifest records it (for
        legacy files, pylance records their footer's pair)."""
        if self.name == "0.1":
            return self.footer
        major, minor = self.name.split(".")
        return int(major), int(minor)

    @property
    def structural(self) -> bool:
        """Whether pages use the 2.1 structural layouts (rep/def levels, mini-blocks)."""
        return self.footer >= (2, 1)


def _version(
    name: str, footer: tuple[int, int], *others: tuple[int, int], read: bool, write: bool
) -> FileVersion:
    return FileVersion(name, footer, frozenset({footer, *others}), read, write)


VERSIONS: dict[str, FileVersion] = {
    v.name: v
    for v in (
        _version("0.1", (0, 2), (0, 1), read=True, write=True),  # datasets' files only
        _version("2.0", (0, 3), (2, 0), read=True, write=True),
        _version("2.1", (2, 1), read=True, write=True),
        _version("2.2", (2, 2), read=True, write=True),
        _version("2.3", (2, 3), read=False, write=False),
    )
}

# pylance's names for versions; "stable" and "next" move with pylance releases
# (pylance 14: stable is 2.2, next is 2.3).
ALIASES = {"legacy": "0.1", "stable": "2.2", "next": "2.3", "0.3": "2.0"}

# What lancelet writes when a new dataset or file names no version.
DEFAULT_WRITE = "2.2"


def stable_version() -> str:
    """The version pylance calls "stable" (pylance's ``lance.file.stable_version``)."""
    return ALIASES["stable"]


def by_name(requested: str) -> FileVersion:
    """The version a user's ``data_storage_version`` names (case does not matter)."""
    key = str(requested).strip().lower()
    found = VERSIONS.get(ALIASES.get(key, key))
    if found is None:
        known = ", ".join([*VERSIONS, *ALIASES])
        raise UnsupportedVersionError(
            f"unknown Lance file format version {requested!r}; the known names are {known}"
        )
    return found


def writable(requested: str | None) -> FileVersion:
    """The version to write for ``requested`` (None: lancelet's default)."""
    version = by_name(DEFAULT_WRITE if requested is None else requested)
    if not version.writable:
        names = ", ".join(v.name for v in VERSIONS.values() if v.writable)
        raise UnsupportedVersionError(
            f"data_storage_version {requested!r} (file format {version.name}) is not "
            f"supported for writing; lancelet writes {names}"
        )
    return version


def index_file_version(data_storage_version: str) -> str:
    """The format of a dataset's index files: its own, but 2.0 for a legacy (0.1)
    dataset, as pylance writes them."""
    version = writable(data_storage_version)
    return "2.0" if version.name == "0.1" else version.name


def from_footer(major: int, minor: int) -> FileVersion | None:
    """The version a footer's pair names; None for a pair no version uses."""
    return next((v for v in VERSIONS.values() if (major, minor) in v.footer_aliases), None)


def from_manifest(major: int, minor: int) -> FileVersion | None:
    """The version of a data file as its manifest entry records it; None when the
    pair names none (writers before 2.0 left it (0, 0))."""
    if (major, minor) in {(0, 0), (0, 1), (0, 2)}:
        return VERSIONS["0.1"]
    if (major, minor) == (0, 3):
        return VERSIONS["2.0"]
    return VERSIONS.get(f"{major}.{minor}")
