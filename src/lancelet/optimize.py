"""``lance.optimize``'s names: compaction planned, executed and committed in steps
(implemented in :mod:`lancelet.dataset.compaction`)."""

from lancelet.dataset.compaction import (
    Compaction,
    CompactionMetrics,
    CompactionOptions,
    CompactionPlan,
    CompactionTask,
    RewriteResult,
)

__all__ = [
    "Compaction",
    "CompactionMetrics",
    "CompactionOptions",
    "CompactionPlan",
    "CompactionTask",
    "RewriteResult",
]
