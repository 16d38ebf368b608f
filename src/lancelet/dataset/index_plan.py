"""The scalar indices a scan may use, and the rows they bound its filter to."""

from __future__ import annotations

import pyarrow as pa

from lancelet.index.planner import Candidates
from lancelet.table.manifest import Manifest
from lancelet.transaction.store import DatasetStore


def index_candidates(
    store: DatasetStore, manifest: Manifest, filter: str, schema: pa.Schema
) -> Candidates | None:
    """Candidate rows per fragment that an index covers; None to scan everything."""
    if not manifest.indices:
        return None
    return None
