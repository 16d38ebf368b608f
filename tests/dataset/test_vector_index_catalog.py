"""describe_indices, list_indices, stats.index_stats, prewarm_index and drop_index on
vector indices, as pylance 14 shows and does them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelet as ll

DIMENSION = 16
VECTORS = np.random.default_rng(4).normal(0, 1, (5000, DIMENSION)).astype(np.float32)


def _table(vectors: np.ndarray, start: int) -> pa.Table:
    return pa.table(
        {
            "id": np.arange(start, start + len(vectors)),
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIMENSION),
        }
    )


def _bits(rows: int) -> pa.Table:
    codes = np.random.default_rng(5).integers(0, 255, rows * DIMENSION).astype(np.uint8)
    return pa.table(
        {"id": np.arange(rows), "vec": pa.FixedSizeListArray.from_arrays(pa.array(codes), 16)}
    )


BUILDS: list[tuple[str, dict[str, Any]]] = [
    ("IVF_FLAT", {"num_partitions": 2}),
    ("IVF_FLAT", {"metric": "dot", "num_partitions": 2}),
    ("IVF_FLAT", {"target_partition_size": 1000}),
    ("IVF_FLAT", {"metric": "hamming", "num_partitions": 2}),
    ("IVF_PQ", {"metric": "cosine", "num_partitions": 2, "num_sub_vectors": 4}),
    ("IVF_PQ", {"num_partitions": 2, "num_sub_vectors": 4, "num_bits": 4}),
    ("IVF_SQ", {"num_partitions": 2}),
    ("IVF_RQ", {"num_partitions": 2}),
    ("IVF_HNSW_SQ", {"num_partitions": 2, "m": 10, "ef_construction": 50}),
    ("IVF_HNSW_PQ", {"num_partitions": 2, "num_sub_vectors": 4}),
]


@pytest.mark.parametrize("build", BUILDS, ids=lambda b: f"{b[0]}-{sorted(b[1].items())}")
def test_describe_indices_details(tmp_path: Path, build: tuple[str, dict[str, Any]]) -> None:
    kind, params = build
    uri = str(tmp_path / "ds")
    data = _bits(2000) if params.get("metric") == "hamming" else _table(VECTORS[:2000], 0)
    lance.write_dataset(data, uri).create_index("vec", index_type=kind, **params)
    want = lance.dataset(uri).describe_indices()
    got = ll.dataset(uri).describe_indices()
    assert [d.details for d in got] == [d.details for d in want]
    assert [d.index_type for d in got] == [d.index_type for d in want]
    assert ll.dataset(uri).list_indices() == lance.dataset(uri).list_indices()


def _stats_dataset(tmp_path: Path, kind: str, metric: str) -> str:
    """An index with a delta segment, rows deleted and an unindexed fragment."""
    uri = str(tmp_path / "ds")
    ds = lance.write_dataset(_table(VECTORS[:3000], 0), uri, max_rows_per_file=1000)
    params: dict[str, Any] = {"num_sub_vectors": 4} if kind.endswith("_PQ") else {}
    ds.create_index("vec", index_type=kind, metric=metric, num_partitions=3, **params)
    lance.write_dataset(_table(VECTORS[3000:4000], 3000), uri, mode="append")
    lance.dataset(uri).optimize.optimize_indices(num_indices_to_merge=0)
    lance.dataset(uri).delete("id % 9 = 2")
    lance.write_dataset(_table(VECTORS[4000:], 4000), uri, mode="append")
    return uri


@pytest.mark.parametrize("centroids", [None, "false", "true"])
@pytest.mark.parametrize(
    "kind",
    [
        ("IVF_FLAT", "cosine"),
        ("IVF_PQ", "dot"),
        ("IVF_PQ", "l2"),
        ("IVF_SQ", "cosine"),
        ("IVF_HNSW_SQ", "l2"),
        ("IVF_HNSW_FLAT", "dot"),
        ("IVF_HNSW_PQ", "cosine"),
        ("IVF_RQ", "l2"),
    ],
    ids=str,
)
def test_index_stats(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: tuple[str, str], centroids: str | None
) -> None:
    if centroids is not None:
        monkeypatch.setenv("LANCE_INCLUDE_VECTOR_CENTROIDS", centroids)
    uri = _stats_dataset(tmp_path, *kind)
    want = _located(lance.dataset(uri).stats.index_stats("vec_idx"))
    got = _located(ll.dataset(uri).stats.index_stats("vec_idx"))
    assert got == want
    assert list(got) == list(want)
    assert [list(s) for s in got["segments"]] == [list(s) for s in want["segments"]]
    sub_indices = [list(s.get("sub_index", {})) for s in got["segments"]]
    assert sub_indices == [list(s.get("sub_index", {})) for s in want["segments"]]


def _located(stats: dict[str, Any]) -> dict[str, Any]:
    """The statistics with each segment's ``uri`` cut to its part below the dataset
    (the memory-store run gives pylance a local copy of the dataset elsewhere)."""
    for key in ("indices", "segments"):
        for segment in stats.get(key, []):
            if "uri" in segment:
                segment["uri"] = segment["uri"][segment["uri"].index("/_indices/") :]
    return stats


def test_stats_of_lancelet_maintained_index(tmp_path: Path) -> None:
    """lancelet builds, extends (delta) and compacts; both libraries describe the
    result alike."""
    uri = str(tmp_path / "ds")
    ll.write_dataset(_table(VECTORS[:3000], 0), uri, max_rows_per_file=500)
    ll.dataset(uri).create_index("vec", index_type="IVF_FLAT", num_partitions=2)
    ll.write_dataset(_table(VECTORS[3000:3500], 3000), uri, mode="append")
    ll.dataset(uri).optimize.optimize_indices(num_indices_to_merge=0)
    ll.dataset(uri).delete("id % 5 = 1")
    ll.dataset(uri).optimize.compact_files(target_rows_per_fragment=1500)
    want = _located(lance.dataset(uri).stats.index_stats("vec_idx"))
    assert _located(ll.dataset(uri).stats.index_stats("vec_idx")) == want
    assert [d.details for d in ll.dataset(uri).describe_indices()] == [
        d.details for d in lance.dataset(uri).describe_indices()
    ]


@pytest.mark.parametrize("kind", ["IVF_PQ", "IVF_SQ", "IVF_HNSW_SQ", "IVF_RQ"])
def test_prewarm_and_drop(tmp_path: Path, kind: str) -> None:
    uri = _stats_dataset(tmp_path, kind, "l2")
    ds = ll.dataset(uri)
    ds.prewarm_index("vec_idx")
    segment = lance.dataset(uri).describe_indices()[0].segments[1].uuid
    ds.prewarm_index("vec_idx", index_segments=[segment])
    nearest = {"column": "vec", "q": VECTORS[7], "k": 5, "nprobes": 2}
    want = lance.dataset(uri).to_table(columns=["id"], nearest=nearest)
    got = ds.to_table(columns=["id"], nearest=nearest)
    distances = want["_distance"].to_numpy()
    if not np.allclose(got["_distance"].to_numpy(), distances, rtol=1e-6, atol=0):
        # pylance's candidates count rows deleted since the index was built (see
        # test_nearest_index_segments), so now and then it returns a farther row than
        # lancelet: lancelet's rows are then never farther, and pylance finds them,
        # at the same distances, among more neighbours.
        assert (got["_distance"].to_numpy() <= distances * (1 + 1e-6)).all()
        wide = lance.dataset(uri).to_table(columns=["id"], nearest={**nearest, "k": 20})
        known = dict(zip(wide["id"].to_pylist(), wide["_distance"].to_pylist(), strict=True))
        for row, distance in zip(got["id"].to_pylist(), got["_distance"].to_pylist(), strict=True):
            assert distance == pytest.approx(known[row], rel=1e-6)
    else:
        # Rows at the same distance may come in either order (and one of a tie at the
        # k-th place may be left out): ids must agree where the distance is not shared.
        gap = np.diff(distances) > 1e-6 * np.maximum(np.abs(distances[1:]), 1e-12)
        alone = np.concatenate(([True], gap)) & np.concatenate((gap, [False]))
        ids, theirs = got["id"].to_numpy(), want["id"].to_numpy()
        assert list(ids[alone]) == list(theirs[alone])
    ds.drop_index("vec_idx")
    assert lance.dataset(uri).describe_indices() == []
    exact = lance.dataset(uri).to_table(columns=["id"], nearest=nearest)
    assert ll.dataset(uri).to_table(columns=["id"], nearest=nearest)["id"] == exact["id"]
