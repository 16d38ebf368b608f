"""Lance data files: the container and its encodings (format 2.0).

The names follow pylance's ``lance.file`` module.
"""

from lancelet.file.reader import (
    LanceBufferDescriptor,
    LanceColumnMetadata,
    LanceFileMetadata,
    LanceFileReader,
    LancePageMetadata,
    ReaderResults,
)
from lancelet.file.writer import LanceFileWriter

__all__ = [
    "LanceBufferDescriptor",
    "LanceColumnMetadata",
    "LanceFileMetadata",
    "LanceFileReader",
    "LanceFileWriter",
    "LancePageMetadata",
    "ReaderResults",
]
