"""Indices committed without details, typed by their files.

pylance's distributed full-text build (``merge_index_metadata`` then a
``CreateIndex`` commit of an ``Index`` the caller makes) records no
``index_details``: pylance lists such an index as of type ``Unknown`` with an empty
``type_url``, yet searches it and reports its statistics as an INVERTED index's
(measured with pylance 14.0.2).  lancelet does the same by giving such an index, in
memory only, the INVERTED details when its ``metadata.lance`` is an INVERTED
index's (it carries ``token_set_format`` and ``params``); the manifest is written
back without them.
"""

from __future__ import annotations

from dataclasses import replace

from lancelet import io
from lancelet.errors import LanceFileError
from lancelet.file import LanceFileReader
from lancelet.table import naming
from lancelet.table.index import IndexDetails, IndexMetadata
from lancelet.table.manifest import Manifest

INVERTED_TYPE_URL = "/lance.table.InvertedIndexDetails"
INVERTED_METADATA = "metadata.lance"
_INVERTED_KEYS = (b"token_set_format", b"params")


def with_inferred_details(manifest: Manifest, file_io: io.FileIO, root: str) -> Manifest:
    """``manifest`` with the details of its detail-less INVERTED indices inferred."""
    if not any(_undetailed(i) for i in manifest.indices):
        return manifest
    indices = tuple(
        _inferred(index, file_io, root) if _undetailed(index) else index
        for index in manifest.indices
    )
    return replace(manifest, indices=indices)


def _undetailed(index: IndexMetadata) -> bool:
    # Indices of a shallow clone's base are left untyped: their files live elsewhere.
    return index.index_details is None and not index.is_system and index.base_id is None


def _inferred(index: IndexMetadata, file_io: io.FileIO, root: str) -> IndexMetadata:
    path = io.join(root, naming.INDICES_DIR, str(index.uuid), INVERTED_METADATA)
    try:
        if not file_io.exists(path):
            return index
        metadata = LanceFileReader(path, file_io=file_io).schema.metadata or {}
    except (LanceFileError, ValueError):
        return index  # not an index lancelet can type: left as recorded
    if not all(key in metadata for key in _INVERTED_KEYS):
        return index
    return replace(index, index_details=IndexDetails(INVERTED_TYPE_URL, b""), details_inferred=True)
