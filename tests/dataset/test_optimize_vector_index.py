"""optimize_indices on IVF_FLAT / IVF_PQ indices as pylance 14 does it: the same
calls on two copies of a pylance-built dataset (one optimized by pylance, the other
by lancelet) must leave the same segments (fragments, dataset versions, details,
partitions, the rows in each partition and what they store), and both libraries
must answer the same on lancelet's result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.errors import UnsupportedIndexError
from lancelet.index.vector import IvfIndex
from lancelet.index.vector.hnsw import TiedCutError
from lancelet.index.vector.storage import FlatStorage
from tests.storage import copy_tree, local

DIMENSION = 16
APPENDED = 600
MERGE0 = {"num_indices_to_merge": 0}


def _table(vectors: np.ndarray, start: int) -> pa.Table:
    return pa.table(
        {
            "id": np.arange(start, start + len(vectors)),
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIMENSION),
        }
    )


# Unclustered, so that 4 partitions of 12,000 rows are about even and none is small
# enough for pylance to join it.
VECTORS = (
    np.random.default_rng(7).normal(0, 1, (12000 + 8 * APPENDED, DIMENSION)).astype(np.float32)
)
BASE = 12000


def _base(tmp_path: Path, kind: str, metric: str, stable: bool, partitions: int = 4) -> str:
    """pylance's index of 12,000 rows: in 4 partitions, each large enough that
    pylance neither joins nor splits partitions; in 8 or more, small enough that it
    joins some."""
    uri = str(tmp_path / "base")
    ds = lance.write_dataset(
        _table(VECTORS[:BASE], 0), uri, max_rows_per_file=3000, enable_stable_row_ids=stable
    )
    params: dict[str, Any] = {"num_sub_vectors": 4} if kind.endswith("_PQ") else {}
    ds.create_index("vec", index_type=kind, metric=metric, num_partitions=partitions, **params)
    return uri


def _run(lib: Any, uri: str, steps: list[Any]) -> None:
    appended = 0
    for step in steps:
        if step == "append":
            start = BASE + appended * APPENDED
            lib.write_dataset(_table(VECTORS[start : start + APPENDED], start), uri, mode="append")
            appended += 1
        elif step == "delete":
            lib.dataset(uri).delete("id % 13 = 5")
        else:
            lib.dataset(uri).optimize.optimize_indices(**step)


def _segments(uri: str) -> list[tuple[Any, ...]]:
    ds = lance.dataset(uri)
    out = []
    for segment in ds.list_indices():
        if segment["name"].startswith("__"):
            continue  # a system index (the Fragment Reuse Index)
        index = IvfIndex.open(local(f"{uri}/_indices/{segment['uuid']}"))
        payload = (
            index.storage.vectors if isinstance(index.storage, FlatStorage) else index.storage.codes  # type: ignore[union-attr]
        )
        parts = []
        for number in range(index.num_partitions):
            keys = index.partition_row_ids(number).tolist()
            stored = payload[index.partition(number)].tolist()
            parts.append(sorted(zip(keys, stored, strict=True)))
        out.append(
            (
                segment["name"],
                sorted(segment["fragment_ids"]),
                segment["version"],
                index.index_type,
                index.metric,
                index.centroids.tolist(),
                parts,
            )
        )
    return out


def _details(uri: str) -> list[Any]:
    ds = lance.dataset(uri)
    new = getattr(ds.read_transaction(ds.version).operation, "new_indices", [])
    return [(i.index_details, i.index_version, i.fields) for i in new]


def _answers(uri: str) -> None:
    """Both libraries answer alike; lancelet may refuse (TiedCutError) a few queries
    whose index distances tie across the cut, as random HNSW graphs can make them."""
    rng = np.random.default_rng(3)
    refused = 0
    for number in range(12):
        query = VECTORS[rng.integers(0, len(VECTORS))] + rng.normal(0, 1.5, DIMENSION)
        nearest: dict[str, Any] = {"column": "vec", "q": query.astype(np.float32), "k": 15}
        nearest["nprobes"] = 1 + number % 4
        if number % 3:
            nearest["refine_factor"] = number % 3
        # pylance's default breadth, given: lancelet's own default searches wider.
        nearest["ef"] = 15 * max(1, number % 3) * 3 // 2
        kw = {"columns": ["id"], "nearest": nearest, "with_row_id": True}
        want = lance.dataset(uri).to_table(**kw)
        try:
            got = ll.dataset(uri).to_table(**kw)
        except TiedCutError:
            refused += 1
            assert refused <= 3
            continue
        if _same_up_to_near_ties(got, want):
            np.testing.assert_allclose(
                got["_distance"].to_numpy(), want["_distance"].to_numpy(), rtol=1e-6, atol=1e-5
            )
            continue
        # pylance now and then leaves out a nearer row (seen once in a full run, IVF_PQ
        # dot after an append): lancelet's rows must then be no farther, and pylance
        # must report each of them at the same distance among more neighbours.
        wide = lance.dataset(uri).to_table(**{**kw, "nearest": {**nearest, "k": 60}})
        ours, theirs = got["_distance"].to_numpy(), want["_distance"].to_numpy()
        assert (ours <= theirs + 1e-5 + 1e-6 * np.abs(theirs)).all(), (ours, theirs)
        known = dict(zip(wide["id"].to_pylist(), wide["_distance"].to_pylist(), strict=True))
        for row, distance in zip(got["id"].to_pylist(), ours.tolist(), strict=True):
            assert distance == pytest.approx(known[row], rel=1e-6, abs=1e-5), row


def _same_up_to_near_ties(got: pa.Table, want: pa.Table) -> bool:
    """Whether the same rows come in the same order, but where rows at the cut are
    within float32 rounding of each other (PQ distances summed in another order: seen
    once in CI on IVF_PQ dot): there the two may keep different ones of them."""
    ours, theirs = got["id"].to_pylist(), want["id"].to_pylist()
    if ours == theirs:
        return True
    first = next(i for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a != b)
    tail = want["_distance"].to_numpy()[first:]
    return bool(np.allclose(tail, tail[0], rtol=1e-6, atol=1e-5))


SCENARIOS = [
    ["append", MERGE0],
    ["append", {}],
    ["append", MERGE0, "append", MERGE0],
    ["append", MERGE0, "append", MERGE0, {}],
    ["append", MERGE0, MERGE0],
    ["append", MERGE0, "append", {"num_indices_to_merge": 2}],
    ["append", MERGE0, "append", MERGE0, {"num_indices_to_merge": 2}],
    ["append", MERGE0, "append", {"num_indices_to_merge": 1}],
    ["append", MERGE0, "delete", "append", {"num_indices_to_merge": 5}],
    ["append", {"index_names": ["vec_idx"]}],
    ["append", {"index_names": ["other"]}],
]
KINDS = [("IVF_FLAT", "l2", False), ("IVF_PQ", "cosine", False), ("IVF_PQ", "dot", True)]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: "-".join(map(str, k)))
@pytest.mark.parametrize("steps", SCENARIOS, ids=str)
def test_optimize_matches_pylance(
    tmp_path: Path, kind: tuple[str, str, bool], steps: list[Any]
) -> None:
    _same_as_pylance(_base(tmp_path, *kind), tmp_path, steps)


JOINS = [
    ["append", {}],
    ["append", MERGE0, "delete", "append", {}],
    ["append", MERGE0, "append", {"num_indices_to_merge": 1}],
    ["delete", {}],
]
JOIN_KINDS = [
    ("IVF_FLAT", "l2", False, 12),
    ("IVF_FLAT", "cosine", False, 16),
    ("IVF_FLAT", "dot", True, 12),
    ("IVF_PQ", "l2", False, 6),
    ("IVF_PQ", "cosine", True, 8),
    ("IVF_PQ", "dot", False, 7),
    ("IVF_RQ", "l2", False, 12),
]


# IVF_SQ keeps its bounds; IVF_HNSW_* graphs are built anew (random: only the
# storage is compared, and both libraries answer alike through lancelet's graphs).
# HNSW's target of 2**20 rows per partition makes pylance join every partition into
# one when num_indices_to_merge is not given.
OTHER_KINDS = [
    ("IVF_SQ", "cosine", False),
    ("IVF_HNSW_SQ", "l2", False),
    ("IVF_HNSW_FLAT", "dot", False),
    ("IVF_HNSW_PQ", "cosine", False),
    ("IVF_RQ", "l2", False),
    ("IVF_RQ", "cosine", True),
    ("IVF_RQ", "dot", False),
]
OTHER_SCENARIOS = [SCENARIOS[0], SCENARIOS[1], SCENARIOS[8]]


@pytest.mark.parametrize("kind", OTHER_KINDS, ids=lambda k: "-".join(map(str, k)))
@pytest.mark.parametrize("steps", OTHER_SCENARIOS, ids=str)
def test_optimize_sq_and_hnsw_match_pylance(
    tmp_path: Path, kind: tuple[str, str, bool], steps: list[Any]
) -> None:
    _same_as_pylance(_base(tmp_path, *kind), tmp_path, steps)


@pytest.mark.parametrize("kind", JOIN_KINDS, ids=lambda k: "-".join(map(str, k)))
@pytest.mark.parametrize("steps", JOINS, ids=str)
def test_joins_match_pylance(
    tmp_path: Path, kind: tuple[str, str, bool, int], steps: list[Any]
) -> None:
    """Partitions under a quarter of the target size (IVF_FLAT 1,024 rows, IVF_PQ
    2,048) are joined into the others, every segment merged, when
    num_indices_to_merge is not given (not when it is)."""
    _same_as_pylance(_base(tmp_path, *kind), tmp_path, steps)


def _same_as_pylance(base: str, tmp_path: Path, steps: list[Any]) -> None:
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    copy_tree(base, theirs)
    copy_tree(base, ours)
    _run(lance, theirs, steps)
    _run(ll, ours, steps)
    assert lance.dataset(ours).version == lance.dataset(theirs).version
    _assert_same_segments(_segments(ours), _segments(theirs))
    assert _details(ours) == _details(theirs)
    _answers(ours)


def _assert_same_segments(ours: list[tuple[Any, ...]], theirs: list[tuple[Any, ...]]) -> None:
    """Equal segments, rows and stored vectors or codes; centroids equal up to float32
    rounding (a centroid recomputed by a join is a sum whose order pylance's threads
    may change from run to run: seen once in CI, IVF_FLAT l2)."""
    assert len(ours) == len(theirs)
    for mine, their in zip(ours, theirs, strict=True):
        assert mine[:5] == their[:5]
        np.testing.assert_allclose(mine[5], their[5], rtol=1e-6, atol=1e-6, err_msg=mine[0])
        for number, (a, b) in enumerate(zip(mine[6], their[6], strict=True)):
            assert a == b, f"{mine[0]}: partition {number}"


def test_what_lancelet_does_not_reproduce_is_refused(tmp_path: Path) -> None:
    """A join among more than 65 partitions is refused; merging off, a delta is
    added."""
    uri = str(tmp_path / "small")
    ds = lance.write_dataset(_table(VECTORS[:3000], 0), uri)
    ds.create_index("vec", index_type="IVF_FLAT", num_partitions=70)
    _run(ll, uri, ["append"])
    with pytest.raises(UnsupportedIndexError, match="would join partitions"):
        ll.dataset(uri).optimize.optimize_indices()
    ll.dataset(uri).optimize.optimize_indices(**MERGE0)
    assert len(lance.dataset(uri).describe_indices()[0].segments) == 2


@pytest.mark.parametrize("element", [pa.float16(), pa.float64()], ids=str)
def test_other_element_types_are_left_or_refused(tmp_path: Path, element: pa.DataType) -> None:
    """lancelet writes segments of float32 vectors only: an index of other vectors
    is left as it is (refused when named), and compaction uncovers its rewritten
    fragments instead of rewriting it."""
    uri = str(tmp_path / "ds")
    values = pa.array(VECTORS[:3000].ravel()).cast(element)
    table = pa.table(
        {"id": np.arange(3000), "vec": pa.FixedSizeListArray.from_arrays(values, DIMENSION)}
    )
    lance.write_dataset(table, uri, max_rows_per_file=1000).create_index(
        "vec", index_type="IVF_FLAT", num_partitions=2
    )
    ll.write_dataset(table.slice(0, 10), uri, mode="append")
    version = ll.dataset(uri).version
    ll.dataset(uri).optimize.optimize_indices()
    assert ll.dataset(uri).version == version
    with pytest.raises(UnsupportedIndexError, match="cannot rebuild index 'vec_idx'"):
        ll.dataset(uri).optimize.optimize_indices(index_names=["vec_idx"])
    ll.dataset(uri).delete("id % 3 = 0")
    ll.dataset(uri).optimize.compact_files()
    held = [sorted(i["fragment_ids"]) for i in lance.dataset(uri).list_indices()]
    assert held == [[]]
