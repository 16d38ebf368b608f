"""Legacy Lance files (format 0.1, footer (0, 1) or (0, 2)): read here, written by
:mod:`.writer` for legacy datasets.

Older datasets still hold them; pylance writes them with
``data_storage_version="legacy"``.  The layout, from the end of the file::

    data pages | page table | statistics | dictionaries | manifest | metadata | footer

* footer (16 bytes): ``i64 metadata position, u16 major, u16 minor, b"LANC"``;
* metadata: ``u32 length`` + ``lance.file.Metadata`` (batch offsets, page table and
  manifest positions);
* manifest: ``u32 length`` + ``lance.table.Manifest`` holding only the file's schema
  (pylance's data files describe themselves);
* page table: ``(i64 position, i64 length)`` for every field id from the schema's
  smallest to its largest and every batch, field-major.

A page holds one field of one batch, with no validity bitmap: fixed-width values
(booleans as bits, fixed-size lists and binaries flattened) plainly; strings and
binaries as their bytes followed by ``length + 1`` absolute i64 positions (an empty
value of a nullable field reads as null); lists as ``length`` i32/i64 positions into
their child's values; dictionaries as plain keys whose values sit elsewhere in the
file.  Structs and null columns have no bytes.  Nulls in other columns were written
as whatever their slot held and read back as values, as pylance reads them.
"""

from __future__ import annotations

import os

import numpy as np

from lancelet.errors import LanceletError
from lancelet.file.container import RangeSource
from lancelet.file.v0_1.container import footer_pair, read_layout
from lancelet.file.version import VERSIONS
from lancelet.io import FileIO


def is_legacy(path: str | os.PathLike[str], file_io: FileIO) -> bool:
    """Whether the file at ``path`` ends in a legacy (0.1) footer.

    A file that cannot be opened is not legacy: the 2.x reader reports the problem.
    """
    try:
        source = file_io.open_input(path)
    except (LanceletError, OSError):
        return False
    try:
        return ends_in_legacy_footer(source)
    finally:
        source.close()


def ends_in_legacy_footer(source: RangeSource) -> bool:
    """Whether an opened file ends in a legacy (0.1) footer."""
    return footer_pair(source) in VERSIONS["0.1"].footer_aliases


def batch_offsets(path: str | os.PathLike[str], file_io: FileIO) -> np.ndarray:
    """The first row of each batch of the legacy file at ``path``, and its row count."""
    source = file_io.open_input(path)
    try:
        return read_layout(source).batch_offsets
    finally:
        source.close()
