"""Lance data files: the container and its encodings (format 2.0).

The names follow pylance's ``lance.file`` module.
"""

from lancelet.file.file_metadata import (
    LanceBufferDescriptor,
    LanceColumnMetadata,
    LanceColumnStatistics,
    LanceFileMetadata,
    LanceFileStatistics,
    LancePageMetadata,
)
from lancelet.file.reader import LanceFileReader, ReaderResults
from lancelet.file.session import LanceFileSession, ListResult

# LanceFileReader hands legacy (0.1) files to this subclass of it, registered on import.
from lancelet.file.v0_1.reader import LegacyFileReader  # noqa: F401
from lancelet.file.version import stable_version
from lancelet.file.writer import LanceFileWriter

__all__ = [
    "LanceBufferDescriptor",
    "LanceColumnMetadata",
    "LanceColumnStatistics",
    "LanceFileMetadata",
    "LanceFileReader",
    "LanceFileSession",
    "LanceFileStatistics",
    "LanceFileWriter",
    "LancePageMetadata",
    "ListResult",
    "ReaderResults",
    "stable_version",
]
