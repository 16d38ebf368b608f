"""create_index arguments against pylance: a name that is no vector index type is a
NotImplementedError naming the types, in pylance's words; the shuffle parameters
only pace pylance's shuffle, so lancelet takes them and records what pylance records
(shuffle_partition_concurrency in the runtime hints, never the batches)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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


@pytest.mark.local_files("pylance writes its own copy beside lancelet's on local disk")
@pytest.mark.parametrize(
    ("index_type", "extra"), [("IVF_PQ", {"num_sub_vectors": 2}), ("IVF_SQ", {}), ("IVF_FLAT", {})]
)
@pytest.mark.parametrize(
    "shuffle",
    [
        {"shuffle_partition_batches": 1, "shuffle_partition_concurrency": 10},
        {"shuffle_partition_batches": "anything"},
        {"shuffle_partition_concurrency": 0},
    ],
)
def test_shuffle_parameters_are_recorded_as_in_pylance(
    tmp_path: Path, index_type: str, extra: dict[str, Any], shuffle: dict[str, Any]
) -> None:
    hints = []
    for lib, name in ((lance, "theirs"), (ll, "ours")):
        uri = str(tmp_path / name)
        lance.write_dataset(lance.dataset(_source(tmp_path)).to_table(), uri)
        dataset = lib.dataset(uri).create_index(
            "emb", index_type, num_partitions=2, **extra, **shuffle
        )
        hints.append(lance.dataset(uri).describe_indices()[0].details["runtime_hints"])
        assert dataset.version == 2
    assert hints[1] == hints[0]


@pytest.mark.parametrize(
    ("value", "error"), [(-1, OverflowError), ("x", TypeError), (2.5, TypeError)]
)
def test_bad_shuffle_concurrency_fails_as_in_pylance(
    path: str, value: Any, error: type[Exception]
) -> None:
    for lib in (lance, ll):
        with pytest.raises(error):
            lib.dataset(path).create_index(
                "emb", "IVF_FLAT", num_partitions=2, shuffle_partition_concurrency=value
            )
    assert ll.dataset(path).version == 1


def _source(tmp_path: Path) -> str:
    uri = str(tmp_path / "source")
    if not Path(uri).exists():
        vectors = np.random.default_rng(1).random((300, 8), np.float32)
        column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), 8)
        lance.write_dataset(pa.table({"emb": column}), uri)
    return uri
