"""``IndexConfig``: an index type named together with its parameters (``lance.indices``).

``create_scalar_index(column, IndexConfig("zonemap", {"rows_per_zone": 64}))`` is
``create_scalar_index(column, "ZONEMAP", rows_per_zone=64)``; the parameters are
checked as keywords are, so one lancelet does not take is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from lancelet.errors import UnsupportedOptionError


@dataclass
class IndexConfig:
    index_type: str  # e.g. "btree", "zonemap"
    parameters: dict[str, Any]


class IndexFileVersion(str, Enum):
    LEGACY = "Legacy"
    V3 = "V3"


class SupportedDistributedIndices(str, Enum):
    BTREE = "BTREE"
    INVERTED = "INVERTED"
    IVF_FLAT = "IVF_FLAT"
    IVF_PQ = "IVF_PQ"
    IVF_SQ = "IVF_SQ"
    VECTOR = "VECTOR"


def unpack(
    index_type: object, kwargs: Mapping[str, Any], where: str
) -> tuple[object, dict[str, Any]]:
    """The index type's name and its parameters, from a name and keywords or from an
    ``IndexConfig`` (then with no keywords beside it)."""
    if not isinstance(index_type, IndexConfig):
        return index_type, dict(kwargs)
    if kwargs:
        raise UnsupportedOptionError(
            f"{where}: create_scalar_index takes the parameters in the IndexConfig, "
            f"not as keywords {sorted(kwargs)}"
        )
    if not isinstance(index_type.parameters, Mapping):
        raise TypeError(f"{where}: IndexConfig.parameters must be a dict")
    return index_type.index_type, dict(index_type.parameters)
