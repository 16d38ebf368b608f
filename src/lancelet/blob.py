"""pylance's ``lance.blob`` names (re-exported)."""

from lancelet.dataset.read.blob import DEFAULT_BLOB_BUFFER_SIZE, BlobColumn, BlobFile

__all__ = ["DEFAULT_BLOB_BUFFER_SIZE", "BlobColumn", "BlobFile"]
