"""pylance's ``lance.indices``: ``IndexConfig`` and the index enums (see
:mod:`lancelet.dataset.indices.config`), and the step-by-step vector index
builder with its IVF and PQ models."""

from lancelet.dataset.indices.config import (
    IndexConfig,
    IndexFileVersion,
    SupportedDistributedIndices,
)
from lancelet.indices.builder import IndicesBuilder
from lancelet.indices.ivf import IvfModel
from lancelet.indices.pq import PqModel

__all__ = [
    "IndexConfig",
    "IndexFileVersion",
    "IndicesBuilder",
    "IvfModel",
    "PqModel",
    "SupportedDistributedIndices",
]
