"""IVF_SQ and IVF_HNSW_* indices whose segments list stable row ids, or addresses
from before a deferred compaction remap, searched as pylance 14 searches them: each
segment ranked over the rows allowed, named by their keys, then pooled."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.errors import UnsupportedVectorIndexError

DIMENSION = 16
VECTORS = np.random.default_rng(0).normal(0, 1, (7000, DIMENSION)).astype(np.float32)


def _table(start: int, stop: int) -> pa.Table:
    values = pa.array(VECTORS[start:stop].ravel())
    return pa.table(
        {
            "id": np.arange(start, stop),
            "vec": pa.FixedSizeListArray.from_arrays(values, DIMENSION),
        }
    )


def _dataset(tmp_path: Path, kind: str, metric: str, mode: str) -> str:
    """pylance's index, then deletions, a delta segment, a compaction (deferred or
    not) and an unindexed fragment, all by pylance."""
    uri = str(tmp_path / "ds")
    stable = mode != "defer"
    ds = lance.write_dataset(
        _table(0, 6000), uri, max_rows_per_file=500, enable_stable_row_ids=stable
    )
    params: dict[str, Any] = {"num_sub_vectors": 4} if kind.endswith("_PQ") else {}
    ds.create_index("vec", index_type=kind, metric=metric, num_partitions=3, **params)
    lance.dataset(uri).delete("id % 7 = 1")
    lance.write_dataset(_table(6000, 6500), uri, mode="append")
    lance.dataset(uri).optimize.optimize_indices(num_indices_to_merge=0)
    if mode != "stable":
        lance.dataset(uri).optimize.compact_files(
            target_rows_per_fragment=2000, defer_index_remap=mode == "defer"
        )
    lance.write_dataset(_table(6500, 7000), uri, mode="append")
    return uri


def _queries() -> list[dict[str, Any]]:
    rng = np.random.default_rng(5)
    out = []
    for number in range(12):
        query = VECTORS[rng.integers(0, len(VECTORS))] + rng.normal(0, 1.5, DIMENSION)
        nearest: dict[str, Any] = {"column": "vec", "q": query.astype(np.float32), "k": 12}
        nearest["nprobes"] = 1 + number % 3
        if number % 3:
            nearest["refine_factor"] = number % 3
        # pylance's default breadth, given: lancelet's own default searches wider.
        nearest["ef"] = 12 * max(1, number % 3) * 3 // 2
        where = [None, "id % 2 = 0"][number % 2]
        out.append(
            {"columns": ["id"], "nearest": nearest, "filter": where, "prefilter": number % 4 < 2}
        )
    return out


CASES = [
    ("IVF_SQ", "l2", "stable"),
    ("IVF_SQ", "cosine", "defer"),
    ("IVF_SQ", "l2", "stable-compacted"),
    ("IVF_HNSW_SQ", "cosine", "stable"),
    ("IVF_HNSW_PQ", "l2", "stable-compacted"),
    ("IVF_HNSW_FLAT", "dot", "stable"),
]


@pytest.mark.parametrize("case", CASES, ids="-".join)
def test_answers_are_pylances(tmp_path: Path, case: tuple[str, str, str]) -> None:
    uri = _dataset(tmp_path, *case)
    for scan in _queries():
        want = lance.dataset(uri).to_table(**scan)
        got = ll.dataset(uri).to_table(**scan)
        assert got["id"].to_pylist() == want["id"].to_pylist()
        np.testing.assert_allclose(
            got["_distance"].to_numpy(), want["_distance"].to_numpy(), rtol=1e-6, atol=1e-5
        )


def test_graphs_through_a_reuse_index_are_refused_as_pylance_fails(tmp_path: Path) -> None:
    uri = _dataset(tmp_path, "IVF_HNSW_SQ", "l2", "defer")
    scan = _queries()[0]
    with pytest.raises((pa.ArrowInvalid, OSError), match="HNSW graph has"):
        lance.dataset(uri).to_table(**scan)
    with pytest.raises(UnsupportedVectorIndexError, match="Fragment Reuse Index"):
        ll.dataset(uri).to_table(**scan)
    exact = {**scan, "nearest": {**scan["nearest"], "use_index": False}}
    got, want = ll.dataset(uri).to_table(**exact), lance.dataset(uri).to_table(**exact)
    assert got["id"].to_pylist() == want["id"].to_pylist()
    np.testing.assert_allclose(
        got["_distance"].to_numpy(), want["_distance"].to_numpy(), rtol=1e-6, atol=1e-5
    )
