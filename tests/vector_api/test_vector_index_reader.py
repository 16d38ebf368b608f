"""``lancelet.dataset.VectorIndexReader`` reads the partitions of a pylance-built
index as pylance's reader does."""

from __future__ import annotations

from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest
from lance.dataset import VectorIndexReader as TheirReader

import lancelet
from lancelet.dataset import VectorIndexReader


@pytest.fixture(scope="module")
def uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    rng = np.random.default_rng(2)
    vectors = rng.normal(size=(1500, 16)).astype(np.float32)
    table = pa.table(
        {
            "v": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), 16),
            "id": np.arange(1500),
        }
    )
    path = str(tmp_path_factory.mktemp("reader") / "ds")
    ds = lance.write_dataset(table, path, max_rows_per_file=600)
    ds.create_index("v", "IVF_PQ", num_partitions=4, num_sub_vectors=4, name="pq")
    ds.create_index("v", "IVF_FLAT", num_partitions=3, name="flat", metric="cosine")
    ds.create_scalar_index("id", "BTREE")
    return path


@pytest.mark.parametrize("name", ["pq", "flat"])
@pytest.mark.parametrize("with_vector", [False, True])
def test_partitions_equal_pylance(uri: str, name: str, with_vector: bool) -> None:
    mine = VectorIndexReader(lancelet.dataset(uri), name)
    theirs = TheirReader(lance.dataset(uri), name)
    assert mine.num_partitions() == theirs.num_partitions()
    for number in range(mine.num_partitions()):
        got = mine.read_partition(number, with_vector=with_vector)
        expected = theirs.read_partition(number, with_vector=with_vector)
        assert got.schema.remove_metadata() == expected.schema.remove_metadata()
        if name == "flat" and with_vector:
            assert got["_rowid"] == expected["_rowid"]
            a = np.stack(got["flat"].to_numpy(zero_copy_only=False))
            b = np.stack(expected["flat"].to_numpy(zero_copy_only=False))
            assert np.array_equal(a, b)
        else:
            assert got.equals(expected.replace_schema_metadata(None))


def test_errors_as_pylance(uri: str) -> None:
    pairs = ((VectorIndexReader, lancelet.dataset(uri)), (TheirReader, lance.dataset(uri)))
    for reader, data in pairs:
        with pytest.raises(ValueError, match="not vector index"):
            reader(data, "id_idx")
        with pytest.raises(KeyError, match="not found"):
            reader(data, "nope")
        opened: Any = reader(data, "pq")
        with pytest.raises(IndexError, match="out of range"):
            opened.read_partition(4)
