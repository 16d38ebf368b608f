"""``lance.indices``'s names lancelet has: ``IndexConfig`` and the index enums (see
:mod:`lancelet.dataset.indices.config`)."""

from lancelet.dataset.indices.config import (
    IndexConfig,
    IndexFileVersion,
    SupportedDistributedIndices,
)

__all__ = ["IndexConfig", "IndexFileVersion", "SupportedDistributedIndices"]
