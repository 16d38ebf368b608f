"""explain_plan of a nearest scan, against pylance's on the same pylance-built
dataset: the steps users and pylance's tests look for (KNNVectorDistance for an
exact scoring, ANNSubIndex / ANNIvfPartition with the index, k, segments, metric and
probing bounds, a prefilter's scan under the index search), for flat, indexed, partly
indexed, refined, prefiltered, fast and batch searches."""

from __future__ import annotations

import re
import warnings
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelet as ll

DIMENSION = 16


def _table(rows: int, seed: int) -> pa.Table:
    vectors = np.random.default_rng(seed).standard_normal((rows, DIMENSION), np.float32)
    return pa.table(
        {
            "id": np.arange(rows),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIMENSION),
        }
    )


@pytest.fixture(scope="module")
def stages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """One pylance-built dataset at each stage: unindexed, indexed (cosine IVF_PQ),
    an unindexed fragment appended, a delta segment added."""
    root = tmp_path_factory.mktemp("plans")
    found = {}
    flat = root / "flat"
    lance.write_dataset(_table(1000, 0), flat, max_rows_per_file=500)
    found["flat"] = str(flat)
    indexed = root / "indexed"
    dataset = lance.write_dataset(_table(1000, 0), indexed, max_rows_per_file=500)
    dataset.create_index(
        "vector", index_type="IVF_PQ", num_partitions=4, num_sub_vectors=4, metric="cosine"
    )
    found["indexed"] = str(indexed)
    partly = root / "partly"
    dataset = lance.write_dataset(_table(1000, 0), partly, max_rows_per_file=500)
    dataset.create_index("vector", index_type="IVF_PQ", num_partitions=4, num_sub_vectors=4)
    lance.write_dataset(_table(200, 1), partly, mode="append")
    found["partly"] = str(partly)
    deltas = root / "deltas"
    dataset = lance.write_dataset(_table(1000, 0), deltas, max_rows_per_file=500)
    dataset.create_index("vector", index_type="IVF_PQ", num_partitions=4, num_sub_vectors=4)
    dataset = lance.write_dataset(_table(200, 1), deltas, mode="append")
    dataset.optimize.optimize_indices(num_indices_to_merge=0)
    found["deltas"] = str(deltas)
    return found


QUERY = np.linspace(-1, 1, DIMENSION, dtype=np.float32)


def _nearest(**tuning: Any) -> dict[str, Any]:
    return {"column": "vector", "q": QUERY, "k": 5, **tuning}


SCANS: list[tuple[str, dict[str, Any]]] = [
    ("flat", {"nearest": _nearest()}),
    ("flat", {"nearest": _nearest(metric="dot")}),
    ("flat", {"nearest": _nearest(), "filter": "id > 10", "prefilter": True}),
    ("flat", {"nearest": _nearest(), "filter": "id > 10"}),
    ("indexed", {"nearest": _nearest()}),
    ("indexed", {"nearest": _nearest(nprobes=3)}),
    ("indexed", {"nearest": _nearest(minimum_nprobes=2)}),
    ("indexed", {"nearest": _nearest(minimum_nprobes=2, maximum_nprobes=3)}),
    ("indexed", {"nearest": _nearest(maximum_nprobes=30)}),
    ("indexed", {"nearest": _nearest(refine_factor=3)}),
    ("indexed", {"nearest": _nearest(), "filter": "id > 10", "prefilter": True}),
    ("indexed", {"nearest": _nearest(), "filter": "id > 10"}),
    ("indexed", {"nearest": _nearest(use_index=False)}),
    ("indexed", {"nearest": {**_nearest(), "q": [QUERY, -QUERY]}}),
    ("partly", {"nearest": _nearest()}),
    ("partly", {"nearest": _nearest(refine_factor=2)}),
    ("partly", {"nearest": _nearest(), "filter": "id > 10", "prefilter": True}),
    ("partly", {"nearest": _nearest(), "fast_search": True}),
    ("partly", {"nearest": {**_nearest(nprobes=2), "q": [QUERY, -QUERY]}}),
    ("deltas", {"nearest": _nearest(nprobes=4)}),
]

# The lines naming a search step, with the attributes both print the same way.
_STEP = re.compile(r"^\s*(ANNSubIndex: .*|ANNIvfPartition: .*|KNNVectorDistance: \S+)$")


def _steps(plan: str) -> list[str]:
    return [m.group(1) for m in map(_STEP.match, plan.splitlines()) if m]


def _prefilter_scans(plan: str) -> int:
    """Scans that a prefilter runs for an index search (an empty projection)."""
    return plan.count("projection=[], ")


@pytest.mark.parametrize(("stage", "scan"), SCANS)
def test_search_steps_match_pylance(
    stages: dict[str, str], stage: str, scan: dict[str, Any]
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = lance.dataset(stages[stage]).scanner(**scan).explain_plan(verbose=True)
    got = ll.dataset(stages[stage]).scanner(**scan).explain_plan(verbose=True)
    assert _steps(got) == _steps(want), got
    assert _prefilter_scans(got) == _prefilter_scans(want), got


def test_analyze_plan_counts_the_rows(stages: dict[str, str]) -> None:
    scan = {"nearest": _nearest(maximum_nprobes=30)}
    got = ll.dataset(stages["indexed"]).scanner(**scan)
    assert "output_rows=5" in got.analyze_plan()
    assert "maximum_nprobes=Some(30)" in got.analyze_plan()
