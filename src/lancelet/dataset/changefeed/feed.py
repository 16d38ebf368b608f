"""The change feed: placeholder, being written."""

from __future__ import annotations

from typing import Any, NoReturn

from lancelet.dataset.core.snapshot import Snapshot
from lancelet.errors import UnsupportedFunctionError


def change_feed(snapshot: Snapshot, start: int, end: int | None, **kwargs: Any) -> NoReturn:
    raise UnsupportedFunctionError("LanceDataset.changes is not implemented yet")
