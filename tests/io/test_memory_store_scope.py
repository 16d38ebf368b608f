"""``memory://`` is a fresh store per open, in pylance and in lancelet.

Every ``dataset``/``write_dataset`` (and file reader or writer) call that resolves a
``memory://`` URI gets a new, empty in-memory store, so a dataset written there is
reachable only through the object ``write_dataset`` returned and the views derived
from it (other versions, fragments, commits made on it): opening the same URI again
finds nothing, and creating it again succeeds.
"""

from __future__ import annotations

import pickle
import uuid
from typing import Any

import lance
import pyarrow as pa
import pytest

import lancelet as ll

TABLE = pa.table({"a": [1, 2, 3]})


def _uri() -> str:
    return f"memory://{uuid.uuid4().hex}/ds"


@pytest.mark.parametrize("lib", [lance, ll], ids=["pylance", "lancelet"])
def test_a_memory_dataset_is_forgotten_between_opens(lib: Any) -> None:
    uri = _uri()
    lib.write_dataset(TABLE, uri)
    with pytest.raises(ValueError, match="not found"):
        lib.dataset(uri)
    again = lib.write_dataset(TABLE, uri)  # a second create finds an empty store
    assert again.version == 1
    appended = lib.write_dataset(TABLE, uri, mode="append")  # so does an append
    assert (appended.version, appended.count_rows()) == (1, 3)


@pytest.mark.parametrize("lib", [lance, ll], ids=["pylance", "lancelet"])
def test_the_returned_dataset_and_its_views_share_the_store(lib: Any) -> None:
    ds = lib.write_dataset(TABLE, _uri())
    ds.delete("a = 1")
    assert (ds.version, ds.count_rows()) == (2, 2)
    ds = lib.write_dataset(TABLE, ds, mode="append")  # a dataset as the destination
    assert (ds.version, ds.count_rows()) == (3, 5)
    assert ds.checkout_version(1).count_rows() == 3
    ds.create_scalar_index("a", "BTREE")
    assert ds.to_table(filter="a = 2").num_rows == 2
    assert [f.count_rows() for f in ds.get_fragments()] == [2, 3]


def test_a_pickled_copy_in_the_same_process_shares_the_store() -> None:
    ds = ll.write_dataset(TABLE, _uri())
    copy = pickle.loads(pickle.dumps(ds))
    ds.delete("a = 1")
    copy.checkout_latest()
    assert copy.count_rows() == 2
