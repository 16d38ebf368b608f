"""``LanceDataset.insert`` takes ``write_dataset``'s keywords with the same names and
defaults (its effects are compared with pylance's in test_api_more.py)."""

from __future__ import annotations

import inspect

import lancelet
from lancelet.dataset.write.dataset_write import write_keyword_defaults


def test_insert_knows_every_write_dataset_keyword_and_default() -> None:
    params = inspect.signature(lancelet.write_dataset).parameters
    expected = {
        name: p.default for name, p in params.items() if name not in ("data_obj", "uri", "mode")
    }
    assert write_keyword_defaults() == expected
