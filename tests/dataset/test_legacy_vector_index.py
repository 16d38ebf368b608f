"""The legacy one-file IVF_PQ index layout (``index_file_version="Legacy"``): lancelet
reads pylance's and answers as pylance does; lancelet writes it when asked and
pylance lists, describes and queries it as its own; a compaction keeps it legacy;
optimize_indices, which pylance cannot apply to it, is refused; damaged files are
errors."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest
from lance.indices import IndexFileVersion

import lancelet as ll
from lancelet.errors import CorruptIndexError, UnsupportedIndexError, UnsupportedOptionError
from tests.vector_checks import assert_same_neighbours

ROWS = 2400
DIMENSION = 32
METRICS = ("l2", "cosine", "dot")
pytestmark = pytest.mark.local_files("reads and damages the index files on disk")


def _table(seed: int, rows: int, start: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 3, (12, DIMENSION))
    vectors = centres[rng.integers(0, 12, rows)] + rng.normal(0, 1, (rows, DIMENSION))
    column = pa.FixedSizeListArray.from_arrays(
        pa.array(vectors.astype(np.float32).ravel()), DIMENSION
    )
    return pa.table({"id": np.arange(start, start + rows), "vec": column})


def _build(library: Any, uri: str, metric: str) -> None:
    lance.write_dataset(_table(3, ROWS), uri, max_rows_per_file=800)
    version = IndexFileVersion.LEGACY if library is lance else "Legacy"
    library.dataset(uri).create_index(
        "vec",
        "IVF_PQ",
        num_partitions=5,
        num_sub_vectors=8,
        metric=metric,
        index_file_version=version,
    )


def _index_directory(uri: str) -> Path:
    """The directory of the index's (one) segment at the latest version."""
    (segment,) = lance.dataset(uri).stats.index_stats("vec_idx")["indices"]
    return Path(uri) / "_indices" / segment["uuid"]


def _index_files(uri: str) -> list[str]:
    return sorted(os.listdir(_index_directory(uri)))


def _stats(dataset: Any) -> dict[str, Any]:
    stats = dict(dataset.stats.index_stats("vec_idx"))
    stats.pop("updated_at_timestamp_ms", None)
    return stats


def _assert_same_answers(uri: str, seed: int, queries: int = 25, **scan: Any) -> None:
    mine, theirs = ll.dataset(uri), lance.dataset(uri)
    rng = np.random.default_rng(seed)
    for _ in range(queries):
        query = rng.normal(0, 3, DIMENSION).astype(np.float32)
        for extra in ({"nprobes": 2}, {"nprobes": 4, "refine_factor": 3}):
            nearest = {"column": "vec", "q": query, "k": 10, **extra}
            got = mine.to_table(columns=["id"], nearest=nearest, **scan)
            want = theirs.to_table(columns=["id"], nearest=nearest, **scan)
            distances = got["_distance"].to_numpy()
            assert_same_neighbours(
                got["id"].to_numpy(), distances, want["id"].to_numpy(), 1e-5, 1e-5
            )
            np.testing.assert_allclose(
                distances, want["_distance"].to_numpy(), rtol=1e-5, atol=1e-5
            )


@pytest.mark.parametrize("metric", METRICS)
def test_pylance_legacy_index_answers(tmp_path: Path, metric: str) -> None:
    uri = str(tmp_path / "ds")
    _build(lance, uri, metric)
    assert _index_files(uri) == ["index.idx"]
    assert _stats(ll.dataset(uri)) == _stats(lance.dataset(uri))
    lance.dataset(uri).delete("id % 9 = 4")
    lance.write_dataset(_table(4, 300, ROWS), uri, mode="append")
    _assert_same_answers(uri, 11)
    _assert_same_answers(uri, 12, queries=10, filter="id > 700", prefilter=True)
    _assert_same_answers(uri, 13, queries=10, filter="id > 700")


@pytest.mark.parametrize("metric", METRICS)
def test_lancelet_legacy_index_reads_in_pylance(tmp_path: Path, metric: str) -> None:
    uri = str(tmp_path / "ds")
    _build(ll, uri, metric)
    assert _index_files(uri) == ["index.idx"]
    stats = _stats(lance.dataset(uri))
    assert stats["indices"][0]["index_file_version"] == "Legacy"
    assert _stats(ll.dataset(uri)) == stats
    _assert_same_answers(uri, 21)


def test_other_types_ignore_legacy_as_pylance(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    lance.write_dataset(_table(3, ROWS), uri)
    ll.dataset(uri).create_index("vec", "IVF_FLAT", num_partitions=4, index_file_version="Legacy")
    assert _index_files(uri) == ["auxiliary.idx", "index.idx"]
    assert (
        lance.dataset(uri).stats.index_stats("vec_idx")["indices"][0]["index_file_version"] == "V3"
    )


def test_compaction_keeps_legacy_layout(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _build(lance, uri, "l2")
    dataset = ll.dataset(uri)
    dataset.delete("id < 300")
    dataset.optimize.compact_files(target_rows_per_fragment=5000)
    assert _index_files(uri) == ["index.idx"]
    stats = _stats(lance.dataset(uri))
    assert stats["indices"][0]["index_file_version"] == "Legacy"
    assert stats["num_indexed_rows"] == ROWS - 300
    assert _stats(ll.dataset(uri)) == stats
    _assert_same_answers(uri, 31)


def test_optimize_indices_refused_and_nothing_changes(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _build(lance, uri, "l2")
    lance.write_dataset(_table(4, 300, ROWS), uri, mode="append")
    dataset = ll.dataset(uri)
    before = dataset.version
    with pytest.raises(UnsupportedIndexError, match="legacy"):
        dataset.optimize.optimize_indices()
    assert ll.dataset(uri).version == before


def test_unknown_file_version_refused(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    lance.write_dataset(_table(3, ROWS), uri)
    with pytest.raises(UnsupportedOptionError, match="index_file_version"):
        ll.dataset(uri).create_index(
            "vec", "IVF_PQ", num_partitions=4, num_sub_vectors=8, index_file_version="V4"
        )


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[:-8] + b"\x00" * 4 + data[-4:],  # footer's message position
        lambda data: data[:100] + data[-16:],  # the message cut away
        lambda data: data[:-16] + (10**9).to_bytes(8, "little") + data[-8:],
    ],
    ids=["version", "truncated", "position"],
)
def test_damaged_legacy_file_is_an_error(tmp_path: Path, damage: Any) -> None:
    uri = str(tmp_path / "ds")
    _build(lance, uri, "l2")
    path = _index_directory(uri) / "index.idx"
    path.write_bytes(damage(path.read_bytes()))
    query = np.zeros(DIMENSION, dtype=np.float32)
    with pytest.raises(CorruptIndexError):
        ll.dataset(uri).to_table(nearest={"column": "vec", "q": query, "k": 3, "nprobes": 2})
