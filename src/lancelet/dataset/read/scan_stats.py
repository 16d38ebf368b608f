"""``ScanStatistics`` and the ``scan_stats_callback`` a scan reports them to.

A scanner given a callback counts its work (see :mod:`lancelet.io.accounting`): the
index search it plans at construction counts towards its first run, and each run
(``to_table``, ``to_batches`` exhausted or closed, ``count_rows``) reports once,
with the reads made and the index segments and pages it loaded.

The counters are lancelet's own, named as pylance's: ``iops`` and ``requests`` the
read requests made of storage for data (as ``lancelet.iops_counter`` counts them: a
local read is one), ``bytes_read`` the bytes they returned (reads of index files are
not counted there, as in pylance, but below); ``indices_loaded`` index
segments opened from storage; ``parts_loaded`` index pages read from storage (BTREE
pages: the other index types are read whole when opened), ``index_cache_hits`` pages
found in memory instead, ``index_cache_misses`` the same as ``parts_loaded``;
``index_comparisons`` index segments searched, once per filter condition.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from lancelet.io import accounting

T = TypeVar("T")


@dataclass(frozen=True)
class ScanStatistics:
    """What one run of a scan did (see the module docstring for each counter)."""

    iops: int
    requests: int
    bytes_read: int
    indices_loaded: int
    parts_loaded: int
    index_comparisons: int
    index_cache_hits: int
    index_cache_misses: int
    all_counts: dict[str, int] = field(default_factory=dict)
    # Timings pylance reports for debugging; lancelet keeps none.
    all_times: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, counters: accounting.Counters) -> ScanStatistics:
        counts = counters.as_dict()
        return cls(
            iops=counters.iops,
            requests=counters.requests,
            bytes_read=counters.bytes_read,
            indices_loaded=counters.indices_loaded,
            parts_loaded=counters.parts_loaded,
            index_comparisons=counters.index_comparisons,
            index_cache_hits=counters.index_cache_hits,
            index_cache_misses=counters.parts_loaded,
            all_counts=counts,
        )


class ScanRecorder:
    """Counts a scanner's runs for ``callback`` (which may be None: nothing counted)."""

    def __init__(self, callback: Callable[[ScanStatistics], Any] | None) -> None:
        if callback is not None and not callable(callback):
            raise TypeError("scan_stats_callback must be callable")
        self._callback = callback
        # Work done while the scanner was built, reported with its first run.
        self.planning = accounting.Counters() if callback is not None else None

    def _next_run(self) -> accounting.Counters | None:
        if self._callback is None:
            return None
        counters, self.planning = self.planning or accounting.Counters(), None
        return counters

    def _report(self, counters: accounting.Counters | None) -> None:
        if self._callback is not None and counters is not None:
            self._callback(ScanStatistics.of(counters))

    def run(self, work: Callable[[], T]) -> T:
        """``work()``, counted and reported as one run."""
        counters = self._next_run()
        with accounting.collecting(counters):
            result = work()
        self._report(counters)
        return result

    def stream(self, items: Iterator[T]) -> Iterator[T]:
        """``items``, each step counted; reported once they are exhausted or closed."""
        if self._callback is None:
            yield from items
            return
        counters = self._next_run()
        try:
            while True:
                with accounting.collecting(counters):
                    item = next(items, _END)
                if item is _END:
                    break
                yield item
        except GeneratorExit:  # the caller stopped early: the run ends here
            self._report(counters)
            raise
        self._report(counters)


_END: Any = object()
