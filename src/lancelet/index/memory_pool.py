"""The memory an index build's sort may hold: pylance's ``LANCE_MEM_POOL_SIZE``.

pylance sorts the (value, row) pairs of a BTREE or BITMAP build in DataFusion under a
memory pool of ``LANCE_MEM_POOL_SIZE`` bytes (100 MiB by default; a value that is not
a whole number is warned about and the default used), spilling sorted runs to disk
when the pool is full, and fails with "Resources exhausted" when the pool cannot hold
even what merging the spilled runs needs.  With ``LANCE_BYPASS_SPILLING`` set (to
anything) it sorts in memory, with no limit and nothing spilled.

lancelet's sort (:mod:`.external_sort`) takes the same two variables, read when a
build starts.  The budget covers the pairs the sort holds, as Arrow buffers: the run
being gathered and sorted (at most half the budget, since sorting copies it) and the
blocks the merge holds, one per spilled run (at most half).  It does not cover the
scan feeding the build (batches of 131,072 rows) nor what the index itself keeps
while it is written (a BITMAP index's bitmaps, a BTREE's page summaries).
"""

from __future__ import annotations

import os
import re

from lancelet.log import LOGGER

POOL_SIZE_VARIABLE = "LANCE_MEM_POOL_SIZE"
BYPASS_VARIABLE = "LANCE_BYPASS_SPILLING"
DEFAULT_POOL_BYTES = 100 * 1024 * 1024

# What Rust's u64 parse takes: digits, an optional leading +, nothing else.
_U64 = re.compile(r"\+?[0-9]+")


def sort_budget() -> int | None:
    """Bytes a sort may hold; None when spilling is bypassed (no limit)."""
    if BYPASS_VARIABLE in os.environ:
        return None
    given = os.environ.get(POOL_SIZE_VARIABLE)
    if given is None:
        return DEFAULT_POOL_BYTES
    if _U64.fullmatch(given) and int(given) < 2**64:
        return int(given)
    LOGGER.warning(
        "Failed to parse %s=%r as a number of bytes, using the default %d",
        POOL_SIZE_VARIABLE,
        given,
        DEFAULT_POOL_BYTES,
    )
    return DEFAULT_POOL_BYTES
