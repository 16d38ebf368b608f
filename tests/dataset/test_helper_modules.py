"""lancelet.vector.vec_to_table, lancelet.util and lancelet._datagen: pylance's small
helper modules, checked against their definitions and pylance's refusals."""

from __future__ import annotations

from pathlib import Path

import lance
import lance._datagen as pylance_datagen
import lance.util as pylance_util
import numpy as np
import pyarrow as pa
import pytest

import lancelet
from lancelet import _datagen, util
from lancelet.errors import ArgumentError
from lancelet.vector import vec_to_table


def _fsl(rows: list[list[float]], dim: int) -> pa.FixedSizeListArray:
    flat = pa.array([v for row in rows for v in row], pa.float32())
    return pa.FixedSizeListArray.from_arrays(flat, dim)


def test_vectors_from_a_matrix() -> None:
    matrix = np.arange(12, dtype=np.float64).reshape(4, 3) / 7
    table = vec_to_table(matrix)
    assert table.schema == pa.schema([pa.field("vector", pa.list_(pa.float32(), 3))])
    expected = _fsl([[float(np.float32(v)) for v in row] for row in matrix], 3)
    assert table["vector"].combine_chunks().equals(expected)


def test_vectors_from_lists_with_a_name() -> None:
    table = vec_to_table([[2.5, 6], [7.4, 3.3]], names="emb")
    assert table.column_names == ["emb"]
    assert table["emb"].to_pylist() == [[2.5, 6.0], [np.float32(7.4), np.float32(3.3)]]


def test_vectors_from_a_dict_keep_their_keys() -> None:
    table = vec_to_table({"a": [1, 2], "b": [3, 4]})
    assert table.column_names == ["id", "vector"]
    assert table["id"].to_pylist() == ["a", "b"]
    assert table["vector"].to_pylist() == [[1.0, 2.0], [3.0, 4.0]]
    keyed = vec_to_table({10: [1.0], 20: [2.0]}, names=["k", "v"])
    assert keyed.column_names == ["k", "v"]
    assert keyed["k"].to_pylist() == [10, 20]


def test_vectors_from_an_array_of_arrays() -> None:
    rows = np.empty(2, dtype=object)
    rows[0], rows[1] = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    assert vec_to_table(rows)["vector"].to_pylist() == [[1.0, 2.0], [3.0, 4.0]]


@pytest.mark.parametrize(
    ("data", "kwargs", "match"),
    [
        ([[1, 2], [3, 4, 5]], {}, "one length"),
        ([[1, 2], [3, 4, 5]], {"check_ndim": False}, "one length"),
        ([[1, 2], [3, 4]], {"ndim": 3}, "3 dimensions"),
        ([[1, 2], [3, 4]], {"ndim": 4, "check_ndim": False}, "4 dimensions"),
        (np.ones(5), {}, "shape"),
        ([[1, 2]], {"names": ["a", "b"]}, "names"),
    ],
)
def test_bad_vectors_are_refused(data: object, kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ArgumentError, match=match):
        vec_to_table(data, **kwargs)  # type: ignore[arg-type]


def test_other_data_is_refused() -> None:
    with pytest.raises(NotImplementedError, match="tuple"):
        vec_to_table((1, 2))  # type: ignore[arg-type]


def test_validate_vector_index_passes_as_pylance(tmp_path: Path) -> None:
    """Each row's own vector finds it through the index (k=1, nprobes=1, refined)."""
    vectors = np.random.default_rng(6).normal(size=(400, 8)).astype(np.float32)
    table = pa.table({"vec": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), 8)})
    lance.write_dataset(table, tmp_path / "v").create_index("vec", "IVF_FLAT", num_partitions=4)
    pylance_util.validate_vector_index(lance.dataset(tmp_path / "v"), "vec", sample_size=50)
    util.validate_vector_index(lancelet.dataset(str(tmp_path / "v")), "vec", sample_size=50)


def test_datagen_is_unsupported_as_in_a_pylance_build_without_it() -> None:
    assert _datagen.is_datagen_supported() is False
    schema = pa.schema([pa.field("x", pa.int64())])
    message = "was not built with the datagen feature"
    with pytest.raises(NotImplementedError, match=message):
        _datagen.rand_batches(schema, num_batches=1)
    if not pylance_datagen.is_datagen_supported():
        with pytest.raises(NotImplementedError, match=message):
            pylance_datagen.rand_batches(schema, num_batches=1)
