"""pylance keyword arguments lancelet accepts but does not act on.

Tuning knobs (buffer sizes, thread counts, storage options) may be ignored
safely.  Options that would change the result must not be: a caller who asks
for them gets an error instead of silently different rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_CHANGES_RESULTS = frozenset(
    {
        "asof",
        "base_paths",
        "detached",
        "fast_search",
        "full_text_query",
        "include_deleted_rows",
        "initial_bases",
        "nearest",
        "order_by",
        "target_bases",
        "with_row_created_at_version",
        "with_row_last_updated_at_version",
        "versions",
    }
)


def refuse_unsupported(options: Mapping[str, Any], call: str) -> None:
    for name, value in options.items():
        if name in _CHANGES_RESULTS and value not in (None, False):
            raise NotImplementedError(f"{call}: lancelet does not support {name}= yet")
