"""Compaction: small or deletion-heavy fragments rewritten into fewer, fuller ones.

* :mod:`.options`: the options (explicit, the dataset's config, pylance's defaults)
  and the metrics a compaction reports;
* :mod:`.planning`: which fragments are rewritten, in which groups;
* :mod:`.rewrite`: one group's live rows written to new data files, in order;
* :mod:`.small_files`: runs of small fragments read together, their deleted rows
  left out as their pages decode;
* :mod:`.commit`: fresh fragment ids reserved, then one Rewrite committed;
* :mod:`.tasks` and :mod:`.json_form`: the plan / execute / commit steps of
  ``lance.optimize``, as pickles or as pylance's JSON.
"""

from lancelet.dataset.compaction.commit import commit_rewrites, compact
from lancelet.dataset.compaction.options import CompactionMetrics, CompactionSettings
from lancelet.dataset.compaction.planning import plan_bins
from lancelet.dataset.compaction.rewrite import rewrite_fragments
from lancelet.dataset.compaction.tasks import (
    Compaction,
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
    "CompactionSettings",
    "CompactionTask",
    "RewriteResult",
    "commit_rewrites",
    "compact",
    "plan_bins",
    "rewrite_fragments",
]
