"""k-means training for IVF indices, checked against direct computation: sampling,
seeded reproducibility, the loss, dot's unit centroids and empty clusters."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lancelet.errors import ArgumentError
from lancelet.index.vector import kmeans


def _blobs(seed: int, rows: int = 600, dimension: int = 8) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 4, (6, dimension))
    chosen = centres[rng.integers(0, 6, rows)]
    return np.asarray(chosen + rng.normal(0, 1, chosen.shape), dtype=np.float32)


def test_sample_rows_draws_without_replacement_or_takes_all() -> None:
    rng = np.random.default_rng(0)
    drawn = kmeans.sample_rows(1000, 100, rng)
    assert len(drawn) == 100 and len(set(drawn.tolist())) == 100
    assert np.all(np.diff(drawn) > 0) and drawn.max() < 1000
    assert kmeans.sample_rows(50, 100, rng).tolist() == list(range(50))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31), k=st.integers(1, 12), metric=st.sampled_from(["l2", "dot"]))
def test_assignment_and_loss_are_the_direct_computation(seed: int, k: int, metric: str) -> None:
    data = _blobs(seed)
    trained = kmeans.train(data, k, metric, 20, np.random.default_rng(seed))
    assert trained.centroids.shape == (k, data.shape[1])
    x, c = data.astype(np.float64), trained.centroids.astype(np.float64)
    if metric == "l2":
        distances = ((x[:, None, :] - c[None]) ** 2).sum(-1)
        best = distances.min(axis=1)
        expected_loss = best.sum()
        near_tie = np.sort(distances, axis=1)[:, :2] if k > 1 else None
    else:
        products = x @ c.T
        best = products.max(axis=1)
        expected_loss = -best.sum()
        near_tie = -np.sort(-products, axis=1)[:, :2] if k > 1 else None
        np.testing.assert_allclose(np.linalg.norm(c, axis=1), 1, rtol=1e-5)
    assert trained.loss == pytest.approx(expected_loss, rel=1e-4)
    chosen = kmeans.assign(data, trained.centroids, metric)
    direct = np.argmin(distances, axis=1) if metric == "l2" else np.argmax(products, axis=1)
    # Rounding may settle a near tie either way.
    clear = (
        np.ones(len(data), bool) if near_tie is None else np.abs(np.diff(near_tie)).ravel() > 1e-3
    )
    assert np.array_equal(chosen[clear], direct[clear])


def test_training_is_reproducible_with_a_seed() -> None:
    data = _blobs(3)
    first = kmeans.train(data, 5, "l2", 50, np.random.default_rng(42))
    again = kmeans.train(data, 5, "l2", 50, np.random.default_rng(42))
    assert np.array_equal(first.centroids, again.centroids)


def test_clusters_left_empty_restart_so_every_partition_has_vectors() -> None:
    """Mostly copies of one vector: random starts often pick several copies, and all
    but one of those clusters are left empty; they must restart elsewhere."""
    points = np.array([[0, 0], [10, 0], [0, 10]], dtype=np.float32)
    data = np.repeat(points, [200, 5, 5], axis=0)
    for seed in range(20):
        trained = kmeans.train(data, 3, "l2", 10, np.random.default_rng(seed))
        counts = np.bincount(kmeans.assign(data, trained.centroids, "l2"), minlength=3)
        assert counts.min() > 0, (seed, counts)
        assert sorted(map(tuple, trained.centroids.tolist())) == sorted(map(tuple, points.tolist()))


def test_zero_iterations_keeps_the_random_start() -> None:
    data = _blobs(1)
    trained = kmeans.train(data, 4, "l2", 0, np.random.default_rng(0))
    rows = {tuple(r) for r in data.tolist()}
    assert all(tuple(c) in rows for c in trained.centroids.tolist())


def test_more_centroids_than_vectors_is_refused() -> None:
    with pytest.raises(ArgumentError, match="3 centroids from 2 vectors"):
        kmeans.train(np.zeros((2, 4), np.float32), 3, "l2", 5, np.random.default_rng(0))
