"""Row address changes (compaction moves rows and drops deleted ones), applied to an
index's addresses."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from lancelet.errors import ArgumentError
from lancelet.table import row_address

# The new address of a row that no longer exists.
DELETED = row_address.NO_ADDRESS


@dataclass(frozen=True)
class AddressMapping:
    """``old[i]`` became ``new[i]`` (``DELETED``: removed); other addresses stay."""

    old: np.ndarray
    new: np.ndarray

    def __post_init__(self) -> None:
        old = np.asarray(self.old, dtype=np.uint64)
        new = np.asarray(self.new, dtype=np.uint64)
        if old.ndim != 1 or old.shape != new.shape:
            raise ArgumentError(
                f"an address mapping needs equal 1-d arrays, not {old.shape} -> {new.shape}"
            )
        order = np.argsort(old, kind="stable")
        old, new = old[order], new[order]
        if len(old) > 1 and np.any(old[1:] == old[:-1]):
            raise ArgumentError("an address mapping lists an old address twice")
        object.__setattr__(self, "old", old)
        object.__setattr__(self, "new", new)

    @classmethod
    def from_dict(cls, mapping: Mapping[int, int | None]) -> AddressMapping:
        """pylance's form: old address -> new address, or None when deleted."""
        old = np.fromiter(mapping.keys(), dtype=np.uint64, count=len(mapping))
        new = np.fromiter(
            (DELETED if v is None else v for v in mapping.values()),
            dtype=np.uint64,
            count=len(mapping),
        )
        return cls(old, new)

    def apply(self, addresses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The new addresses of ``addresses``, and which of them still exist."""
        addresses = np.asarray(addresses, dtype=np.uint64)
        if not len(self.old):
            return addresses, np.ones(len(addresses), dtype=bool)
        where = np.minimum(np.searchsorted(self.old, addresses), len(self.old) - 1)
        hit = self.old[where] == addresses
        moved = np.where(hit, self.new[where], addresses)
        return moved, moved != DELETED
