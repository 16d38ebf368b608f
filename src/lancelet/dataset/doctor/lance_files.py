"""Opening a Lance file (a data file, an index file) to see that it is sound, telling
damage from a format lancelet cannot read: both can fail as "version not supported"."""

from __future__ import annotations

from dataclasses import dataclass

from lancelet import io
from lancelet.errors import UnsupportedEncodingError, UnsupportedVersionError
from lancelet.file import LanceFileReader, version
from lancelet.file.container import FOOTER, FOOTER_SIZE
from lancelet.io import FileIO

# Past every format version known: what a newer writer could put in a footer.
_NEWEST_KNOWN = max(pair for v in version.VERSIONS.values() for pair in v.footer_aliases)


def footer_pair(file_io: FileIO, path: str) -> tuple[int, int] | None:
    """The (major, minor) pair in the file's footer, None if it cannot be read."""
    try:
        source = file_io.open_input(path)
        try:
            raw = source.read(source.size - FOOTER_SIZE, FOOTER_SIZE).to_pybytes()
        finally:
            source.close()
    except (OSError, ValueError):
        return None
    *_, major, minor, _magic = FOOTER.unpack(raw)
    return int(major), int(minor)


def damaged_footer(
    file_io: FileIO, path: str, recorded: tuple[int, int] | None = None
) -> str | None:
    """Why the footer of a file that would not open as "unsupported" is damaged, or
    None when it names a format lancelet cannot read (no verdict then).

    ``recorded``: the format the manifest records for the file (a data file), which
    its footer must name; without one, only a pair no writer ever used, below the
    newest known, is damage (a higher one may be a newer writer's)."""
    pair = footer_pair(file_io, path)
    if pair is None:
        return None
    if recorded is not None:
        expected = version.from_manifest(*recorded)
        if expected is not None and pair not in expected.footer_aliases:
            return (
                f"its footer names format {pair[0]}.{pair[1]}, the manifest records {expected.name}"
            )
        return None
    if version.from_footer(*pair) is None and pair < _NEWEST_KNOWN:
        return f"its footer names format {pair[0]}.{pair[1]}, which no Lance writer uses"
    return None


@dataclass(frozen=True)
class Opened:
    """A file opened: its ``reader``, or why it is damaged, or why there is no verdict."""

    reader: LanceFileReader | None = None
    damage: str | None = None
    undecided: str | None = None


def open_lance_file(file_io: FileIO, path: str, recorded: tuple[int, int] | None = None) -> Opened:
    """Open the file at ``path``, reading its footer and metadata (``recorded``: the
    format the manifest records for it)."""
    try:
        return Opened(reader=LanceFileReader(path, file_io=file_io))
    except UnsupportedVersionError as exc:
        damage = damaged_footer(file_io, path, recorded)
        return Opened(damage=damage) if damage else Opened(undecided=_reason(exc, path))
    except UnsupportedEncodingError as exc:
        return Opened(undecided=_reason(exc, path))
    except Exception as exc:  # damaged bytes surface as many exception types
        if io.store_failed(exc):
            raise  # the store failed (credentials, network): nothing is known
        return Opened(damage=_reason(exc, path))


def _reason(exc: BaseException, path: str) -> str:
    text = str(exc) or type(exc).__name__
    return text.removeprefix(f"{path}: ")
