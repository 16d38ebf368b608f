"""``lancelet.util.KMeans``: pylance's clustering model, checked against an
independent assignment rule and against pylance's errors."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lancelet


def _blobs(seed: int, rows: int = 600, dimension: int = 8) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(6, dimension)) * 8
    return (centres[rng.integers(0, 6, rows)] + rng.normal(size=(rows, dimension))).astype(
        np.float32
    )


def _nearest(data: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    d = ((data[:, None, :].astype(np.float64) - centroids[None].astype(np.float64)) ** 2).sum(-1)
    return np.argmin(d, axis=1)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**16), k=st.integers(1, 12))
def test_predict_is_the_nearest_centroid(seed: int, k: int) -> None:
    data = _blobs(seed)
    model = lancelet.util.KMeans(k)
    model.fit(data)
    assert model.centroids is not None
    centroids = np.stack(model.centroids.to_numpy(zero_copy_only=False))
    assert centroids.shape == (k, data.shape[1])
    predicted = model.predict(data)
    assert predicted.type == pa.uint32()
    assert np.array_equal(predicted.to_numpy(), _nearest(data, centroids))


def test_centroids_are_their_members_means() -> None:
    """Lloyd's iterations (stopped once the loss improves by < 1e-4 of itself): each
    centroid is near the mean of the rows it gets."""
    data = _blobs(3)
    model = lancelet.util.KMeans(6, max_iters=200)
    model.fit(data)
    assert model.centroids is not None
    centroids = np.stack(model.centroids.to_numpy(zero_copy_only=False))
    members = model.predict(data).to_numpy()
    for cluster in np.unique(members):
        mean = data[members == cluster].mean(axis=0)
        assert np.allclose(centroids[cluster], mean, atol=0.25)


def test_dot_centroids_are_unit_vectors_and_predict_by_product() -> None:
    data = _blobs(5)
    model = lancelet.util.KMeans(4, metric_type="dot")
    model.fit(data)
    assert model.centroids is not None
    centroids = np.stack(model.centroids.to_numpy(zero_copy_only=False))
    assert np.allclose(np.linalg.norm(centroids, axis=1), 1, atol=1e-5)
    assert np.array_equal(model.predict(data).to_numpy(), np.argmax(data @ centroids.T, axis=1))


def test_cosine_clusters_the_unit_vectors() -> None:
    data = _blobs(8)
    model = lancelet.util.KMeans(5, metric_type="cosine")
    model.fit(data)
    assert model.centroids is not None
    centroids = np.stack(model.centroids.to_numpy(zero_copy_only=False))
    unit = data / np.linalg.norm(data, axis=1, keepdims=True)
    assert np.array_equal(model.predict(data).to_numpy(), _nearest(unit, centroids))


def test_given_centroids_predict_like_pylance() -> None:
    data = _blobs(11)
    trained = lance.util.KMeans(8)
    trained.fit(data)
    values = np.stack(trained.centroids.to_numpy(zero_copy_only=False)).ravel()
    centroids = pa.FixedSizeListArray.from_arrays(pa.array(values), data.shape[1])
    mine = lancelet.util.KMeans(8, centroids=centroids)
    assert mine.predict(data) == lance.util.KMeans(8, centroids=centroids).predict(data)


def test_inputs_pylance_takes() -> None:
    data = _blobs(1)
    flat = pa.FixedSizeListArray.from_arrays(pa.array(data.ravel()), data.shape[1])
    tensor = pa.FixedShapeTensorArray.from_numpy_ndarray(data)
    for taken in (data, flat, tensor):
        model = lancelet.util.KMeans(3, max_iters=5)
        model.fit(taken)
        assert len(model.predict(taken)) == len(data)
    assert repr(lancelet.util.KMeans(3, "euclidean")) == repr(lance.util.KMeans(3, "euclidean"))


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda m: m.fit(np.zeros((10, 4, 2), np.float32)), ValueError, "2-D"),
        (lambda m: m.fit(np.zeros((10, 4), np.float64)), ValueError, "float32"),
        (
            lambda m: m.fit(pa.FixedShapeTensorArray.from_numpy_ndarray(np.zeros((5, 4, 2), "f4"))),
            ValueError,
            "must be a 1-D array",
        ),
        (lambda m: m.fit([[1.0, 2.0]]), ValueError, "FixedSizeListArray, Tensor or numpy"),
        (lambda m: m.fit(np.zeros((2, 4), np.float32)), RuntimeError, r"n\(2\) is smaller"),
        (lambda m: m.predict(np.zeros((10, 4), np.float32)), RuntimeError, "must fit"),
    ],
)
def test_errors_as_pylance(make: object, error: type[Exception], match: str) -> None:
    for module in (lancelet, lance):
        with pytest.raises(error, match=match):
            make(module.util.KMeans(3))  # type: ignore[operator]


def test_unknown_metric_and_dimension_mismatch() -> None:
    for module in (lancelet, lance):
        with pytest.raises(ValueError, match="Invalid metric_type: hamming"):
            module.util.KMeans(3, metric_type="hamming")
        model = module.util.KMeans(3)
        model.fit(_blobs(2))
        with pytest.raises(ValueError, match="Dimension mismatch"):
            model.predict(np.zeros((4, 3), np.float32))
    for module in (lancelet, lance):
        with pytest.raises(ValueError, match="Must be a FixedSizeList"):
            module.util.HNSW.build(iter([pa.array([1.0, 2.0], pa.float32())]))
