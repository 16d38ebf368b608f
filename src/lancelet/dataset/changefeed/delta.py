"""pylance's ``LanceDataset.delta()``: placeholder, being written."""

from __future__ import annotations

from typing import Any, NoReturn

from lancelet.dataset.core.snapshot import Snapshot
from lancelet.errors import UnsupportedFunctionError


class DatasetDelta:
    pass


def dataset_delta(snapshot: Snapshot, compared_against: Any, **kwargs: Any) -> NoReturn:
    raise UnsupportedFunctionError("LanceDataset.delta is not implemented yet")
