"""compact_files on a dataset with an IVF_FLAT / IVF_PQ index, as pylance 14 does
it: the segment rewritten in the compaction's commit (rows under their new
addresses, deleted rows gone), left to a Fragment Reuse Index with
``defer_index_remap=True``, or following the rows on stable row ids.  The same
calls on two copies (pylance compacting one, lancelet the other) must leave
segments holding the same rows and answer the same; each library must answer on
the other's result as pylance does on its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelet as ll
from tests.dataset.test_optimize_vector_index import _segments
from tests.storage import copy_tree

DIMENSION = 16
ROWS = 6000
VECTORS = np.random.default_rng(11).normal(0, 1, (ROWS + 500, DIMENSION)).astype(np.float32)


def _table(vectors: np.ndarray, start: int) -> pa.Table:
    return pa.table(
        {
            "id": np.arange(start, start + len(vectors)),
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIMENSION),
        }
    )


def _base(tmp_path: Path, kind: str, metric: str, stable: bool) -> str:
    uri = str(tmp_path / "base")
    ds = lance.write_dataset(
        _table(VECTORS[:ROWS], 0), uri, max_rows_per_file=500, enable_stable_row_ids=stable
    )
    params: dict[str, Any] = {"num_sub_vectors": 4} if kind.endswith("_PQ") else {}
    ds.create_index("vec", index_type=kind, metric=metric, num_partitions=3, **params)
    ds.delete("id % 7 = 1")
    lance.write_dataset(_table(VECTORS[ROWS:], ROWS), uri, mode="append")
    return uri


def _compact(lib: Any, uri: str, defer: bool) -> None:
    lib.dataset(uri).optimize.compact_files(target_rows_per_fragment=2000, defer_index_remap=defer)


def _same_answers(reference: str, other: str) -> None:
    """lancelet and pylance on ``other`` answer as pylance on ``reference``."""
    rng = np.random.default_rng(5)
    for number in range(12):
        query = VECTORS[rng.integers(0, len(VECTORS))] + rng.normal(0, 1.5, DIMENSION)
        nearest: dict[str, Any] = {"column": "vec", "q": query.astype(np.float32), "k": 12}
        nearest["nprobes"] = 1 + number % 3
        if number % 3:
            nearest["refine_factor"] = number % 3
        # pylance's default breadth, given: lancelet's own default searches wider.
        nearest["ef"] = 12 * max(1, number % 3) * 3 // 2
        kw = {"columns": ["id"], "nearest": nearest, "filter": [None, "id % 2 = 0"][number % 2]}
        want = lance.dataset(reference).to_table(**kw)
        answers = {"pylance": lance.dataset(other), "lancelet": ll.dataset(other)}
        for reader, dataset in answers.items():
            got = dataset.to_table(**kw)
            assert got["id"].to_pylist() == want["id"].to_pylist(), (reader, nearest, kw["filter"])
            np.testing.assert_allclose(
                got["_distance"].to_numpy(), want["_distance"].to_numpy(), rtol=1e-6, atol=1e-5
            )


def _rows_by_id(uri: str) -> list[Any]:
    """Each segment's partitions as (id column value, stored payload), which do not
    depend on the addresses the compaction chose."""
    ids = lance.dataset(uri).to_table(columns=["id"], with_row_address=True)
    by_address = dict(zip(ids["_rowaddr"].to_pylist(), ids["id"].to_pylist(), strict=True))
    stable = lance.dataset(uri).to_table(columns=["id"], with_row_id=True)
    by_id = dict(zip(stable["_rowid"].to_pylist(), stable["id"].to_pylist(), strict=True))
    out = []
    for name, fragments, version, kind, metric, centroids, parts in _segments(uri):
        keyed = [
            sorted((by_address.get(k, by_id.get(k, -1)), payload) for k, payload in part)
            for part in parts
        ]
        out.append((name, len(fragments), version, kind, metric, centroids, keyed))
    return out


CASES = [
    ("IVF_FLAT", "l2", False, False),
    ("IVF_PQ", "cosine", False, False),
    ("IVF_PQ", "dot", False, True),
    ("IVF_FLAT", "cosine", False, True),
    ("IVF_PQ", "l2", True, False),
    ("IVF_FLAT", "dot", True, False),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(map(str, c)))
def test_compaction_matches_pylance(tmp_path: Path, case: tuple[str, str, bool, bool]) -> None:
    kind, metric, stable, defer = case
    base = _base(tmp_path, kind, metric, stable)
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    copy_tree(base, theirs)
    copy_tree(base, ours)
    _compact(lance, theirs, defer)
    _compact(ll, ours, defer)
    want, got = lance.dataset(theirs), lance.dataset(ours)
    assert [f.fragment_id for f in got.get_fragments()] == [
        f.fragment_id for f in want.get_fragments()
    ]
    listed = [(i["name"], sorted(i["fragment_ids"])) for i in got.list_indices()]
    assert listed == [(i["name"], sorted(i["fragment_ids"])) for i in want.list_indices()]
    assert _rows_by_id(ours) == _rows_by_id(theirs)
    _same_answers(theirs, ours)
    _same_answers(theirs, theirs)


@pytest.mark.parametrize(
    "case",
    [
        ("IVF_SQ", "l2"),
        ("IVF_HNSW_SQ", "cosine"),
        ("IVF_HNSW_PQ", "l2"),
        ("IVF_HNSW_FLAT", "dot"),
        ("IVF_RQ", "l2"),
        ("IVF_RQ", "cosine"),
    ],
    ids="-".join,
)
def test_compaction_rewrites_sq_and_hnsw_segments(tmp_path: Path, case: tuple[str, str]) -> None:
    """The segment rewritten as pylance rewrites it (the same rows and codes; an HNSW
    segment's graphs built anew, which are random: pylance and lancelet then answer
    alike on lancelet's)."""
    base = _base(tmp_path, *case, stable=False)
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    copy_tree(base, theirs)
    copy_tree(base, ours)
    _compact(lance, theirs, defer=False)
    _compact(ll, ours, defer=False)
    listed = [(i["name"], sorted(i["fragment_ids"])) for i in lance.dataset(ours).list_indices()]
    assert listed == [
        (i["name"], sorted(i["fragment_ids"])) for i in lance.dataset(theirs).list_indices()
    ]
    assert _rows_by_id(ours) == _rows_by_id(theirs)
    _same_answers(theirs if case[0] in ("IVF_SQ", "IVF_RQ") else ours, ours)


def _history(lib: Any, uri: str, steps: list[Any]) -> None:
    start = 5000
    for step in steps:
        if step == "append":
            lib.write_dataset(_table(VECTORS[start : start + 500], start), uri, mode="append")
            start += 500
        elif step == "delete":
            lib.dataset(uri).delete("id % 7 = 1")
        elif step in ("compact", "defer"):
            _compact(lib, uri, defer=step == "defer")
        else:
            lib.dataset(uri).optimize.optimize_indices(**step)


HISTORIES = [
    ("IVF_PQ", "l2", False, ["append", {"num_indices_to_merge": 0}, "delete", "compact"]),
    (
        "IVF_FLAT",
        "cosine",
        False,
        [
            "append",
            {"num_indices_to_merge": 0},
            "delete",
            "defer",
            "append",
            {"num_indices_to_merge": 2},
        ],
    ),
    ("IVF_PQ", "dot", False, ["delete", "defer", "append", {"num_indices_to_merge": 0}]),
    (
        "IVF_FLAT",
        "l2",
        True,
        ["append", {"num_indices_to_merge": 0}, "delete", "compact", "append", {}],
    ),
]


@pytest.mark.parametrize("case", HISTORIES, ids=lambda c: "-".join(map(str, c[:3])) + str(c[3]))
def test_segments_through_compactions(
    tmp_path: Path, case: tuple[str, str, bool, list[Any]]
) -> None:
    """Delta segments compacted, optimize_indices after a deferred compaction
    (segments merged through the Fragment Reuse Index): as pylance."""
    kind, metric, stable, steps = case
    uri = str(tmp_path / "base")
    ds = lance.write_dataset(
        _table(VECTORS[:5000], 0), uri, max_rows_per_file=500, enable_stable_row_ids=stable
    )
    params: dict[str, Any] = {"num_sub_vectors": 4} if kind.endswith("_PQ") else {}
    ds.create_index("vec", index_type=kind, metric=metric, num_partitions=3, **params)
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    copy_tree(uri, theirs)
    copy_tree(uri, ours)
    _history(lance, theirs, steps)
    _history(ll, ours, steps)
    assert _rows_by_id(ours) == _rows_by_id(theirs)
    _same_answers(theirs, ours)
