"""What a page decoder hands to the field assembly: one leaf column's levels and values.

Every structural layout (mini-block, full-zip, constant, blob) decodes a page, or a
range of its rows, into a :class:`LevelledPage`; turning levels into Arrow validity
and offsets happens once, in the assembly, for all layouts alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray


@dataclass(frozen=True)
class LevelledPage:
    """Decoded rows of one leaf column.

    ``rep`` and ``defs`` hold one entry per level entry (an item, or a null or empty
    list that has no item); either is None when the page's layers need none (no list
    layer, or no layer that can be null or empty).  ``values`` holds one value per
    *visible* entry, that is every entry except those marking a null or empty list
    (which have no item); entries of null items or null structs hold placeholders of
    any value.  Values are in the leaf's Arrow type (check the reference if it
    differs: the assembly and every layout must agree on this).  ``layers`` are the
    page's ``RepDefLayer`` values, innermost (the item) first.
    """

    rep: NDArray[np.uint16] | None
    defs: NDArray[np.uint16] | None
    values: pa.Array
    layers: tuple[int, ...]


class PageDecoder(Protocol):
    """Reads rows of one page of one leaf column."""

    @property
    def num_rows(self) -> int: ...

    def read(self, start: int, end: int) -> LevelledPage:
        """Rows ``[start, end)`` of the page (page-relative row numbers)."""
        ...

    def take(self, rows: NDArray[np.int64]) -> LevelledPage:
        """The given rows (page-relative, sorted ascending, no repeats), touching only
        the chunks or byte ranges that hold them."""
        ...
