"""create_index on a vector column with a name that is no vector index type: a
NotImplementedError naming the types, in pylance's words."""

from __future__ import annotations

from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelet as ll


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> str:
    vectors = np.random.default_rng(0).random((64, 8), np.float32)
    table = pa.table({"emb": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), 8)})
    uri = str(tmp_path_factory.mktemp("types") / "ds")
    lance.write_dataset(table, uri)
    return uri


@pytest.mark.parametrize("name", ["foo", "BTREE", "inverted"])
def test_other_names_are_not_implemented_as_in_pylance(path: str, name: str) -> None:
    with pytest.raises(NotImplementedError) as theirs:
        lance.dataset(path).create_index("emb", name, num_partitions=2, num_sub_vectors=2)
    with pytest.raises(NotImplementedError) as ours:
        ll.dataset(path).create_index("emb", name, num_partitions=2, num_sub_vectors=2)
    assert str(theirs.value) in str(ours.value)
    assert ll.dataset(path).version == 1 and not Path(path, "_indices").exists()
