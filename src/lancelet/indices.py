"""``lance.indices``'s names lancelet has: ``IndexConfig`` and the index enums (see
:mod:`lancelet.dataset.index_config`)."""

from lancelet.dataset.index_config import IndexConfig, IndexFileVersion, SupportedDistributedIndices

__all__ = ["IndexConfig", "IndexFileVersion", "SupportedDistributedIndices"]
