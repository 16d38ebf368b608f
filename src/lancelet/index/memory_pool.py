"""The memory an index build's sort may hold: pylance's ``LANCE_MEM_POOL_SIZE``.

pylance sorts the (value, row) pairs of a BTREE or BITMAP build in DataFusion under a
memory pool of ``LANCE_MEM_POOL_SIZE`` bytes, spilling sorted runs to disk when the
pool is full, and fails with "Resources exhausted" when the pool cannot hold even
what merging the spilled runs needs.  With ``LANCE_BYPASS_SPILLING`` set (to
anything) it sorts in memory, with no limit and nothing spilled.

Unset (or not a whole number, which is warned about), the pool is 150 MiB per CPU
the process may run on: pylance 14 does not spill the 96 MB of pairs of a TPC-H SF1
``l_orderkey`` BTREE on two CPUs unless given a pool of 100 or 150 MiB, and does on
one CPU, as it does given 150 MiB; on two CPUs its default and a 300 MiB pool start
to spill at the same input size (8.2 to 8.6 million rows).

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
POOL_BYTES_PER_CPU = 150 * 1024 * 1024

# What Rust's u64 parse takes: digits, an optional leading +, nothing else.
_U64 = re.compile(r"\+?[0-9]+")


def default_pool_bytes() -> int:
    """The pool when the variable is unset: 150 MiB per CPU this process may use."""
    affinity = getattr(os, "sched_getaffinity", None)
    cpus = len(affinity(0)) if affinity is not None else os.cpu_count()
    return POOL_BYTES_PER_CPU * max(1, cpus or 1)


def sort_budget() -> int | None:
    """Bytes a sort may hold; None when spilling is bypassed (no limit)."""
    if BYPASS_VARIABLE in os.environ:
        return None
    given = os.environ.get(POOL_SIZE_VARIABLE)
    if given is None:
        return default_pool_bytes()
    if _U64.fullmatch(given) and int(given) < 2**64:
        return int(given)
    default = default_pool_bytes()
    LOGGER.warning(
        "Failed to parse %s=%r as a number of bytes, using the default %d",
        POOL_SIZE_VARIABLE,
        given,
        default,
    )
    return default
