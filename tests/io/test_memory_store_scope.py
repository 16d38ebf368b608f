"""``memory://`` is one store per process in lancelet, a fresh store per open in pylance.

A deliberate difference.  pylance builds a new, empty in-memory store each time a
``memory://`` URI is resolved, so a dataset written there is reachable only through
the object ``write_dataset`` returned: opening the same URI again finds nothing, and
creating it again succeeds.  lancelet keeps one store for the process, as an object
store behaves: a dataset written there can be opened again by its URI (the Spark
source refuses ``memory://``, whose executors are other processes), and a second
``mode="create"`` is refused as it would be on disk.
"""

from __future__ import annotations

import uuid

import lance
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.errors import DatasetAlreadyExistsError

TABLE = pa.table({"a": [1, 2, 3]})


def _uri() -> str:
    return f"memory://{uuid.uuid4().hex}/ds"


def test_pylance_forgets_a_memory_dataset_between_opens() -> None:
    uri = _uri()
    lance.write_dataset(TABLE, uri)
    with pytest.raises(ValueError, match="not found"):
        lance.dataset(uri)
    lance.write_dataset(TABLE, uri)  # a second create finds an empty store


def test_lancelet_keeps_a_memory_dataset_for_the_process() -> None:
    uri = _uri()
    ll.write_dataset(TABLE, uri)
    assert ll.dataset(uri).to_table().equals(TABLE)
    with pytest.raises(DatasetAlreadyExistsError):
        ll.write_dataset(TABLE, uri)
    ll.write_dataset(TABLE, uri, mode="append")
    assert ll.dataset(uri).count_rows() == 6
