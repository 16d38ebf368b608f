"""``lancelet.indices``: IVF training step by step, and the IVF / PQ model files,
which pylance and lancelet read from each other."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelet
from lancelet.indices import IndicesBuilder, IvfModel, PqModel

DIMENSION = 16


def _dataset(tmp_path: Path, dtype: Any = np.float32, nulls: bool = False) -> Any:
    rng = np.random.default_rng(4)
    centres = rng.normal(size=(8, DIMENSION)) * 6
    vectors = (centres[rng.integers(0, 8, 3000)] + rng.normal(size=(3000, DIMENSION))).astype(dtype)
    column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIMENSION)
    if nulls:
        mask = np.arange(3000) % 10 != 0
        column = pa.array(
            [None if m else v for m, v in zip(mask, column.to_pylist(), strict=True)],
            column.type,
        )
    lance.write_dataset(pa.table({"v": column}), tmp_path / "ds", max_rows_per_file=1000)
    return lancelet.dataset(str(tmp_path / "ds"))


def _matrix(array: pa.Array) -> np.ndarray:
    return np.stack(array.to_numpy(zero_copy_only=False)).astype(np.float64)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("distance_type", ["l2", "cosine", "dot"])
def test_train_ivf(tmp_path: Path, dtype: Any, distance_type: str) -> None:
    ds = _dataset(tmp_path, dtype)
    ivf = IndicesBuilder(ds, "v").train_ivf(8, distance_type=distance_type, sample_rate=16)
    theirs = lance.indices.IndicesBuilder(lance.dataset(ds.uri), "v").train_ivf(
        8, distance_type=distance_type, sample_rate=16
    )
    assert ivf.distance_type == theirs.distance_type == distance_type
    assert ivf.centroids.type == theirs.centroids.type
    assert ivf.num_partitions == 8
    norms = np.linalg.norm(_matrix(ivf.centroids), axis=1)
    if distance_type == "dot":  # spherical: unit centroids, as pylance's
        assert np.allclose(norms, 1, atol=2e-3)
    elif distance_type == "cosine":  # means of unit vectors: inside the sphere
        assert (norms < 1 + 1e-3).all()


def test_default_partition_count_and_sampling_errors(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    assert IndicesBuilder(ds, "v").train_ivf(sample_rate=2, max_iters=3).num_partitions == 55
    for module, data in ((lancelet, ds), (lance, lance.dataset(ds.uri))):
        builder = module.indices.IndicesBuilder(data, "v")
        with pytest.raises(ValueError, match="16000 rows needed and there are 3000"):
            builder.train_ivf(1000, sample_rate=16)
        with pytest.raises(ValueError, match="Fragment id does not exist: 7"):
            builder.train_ivf(10, sample_rate=16, fragment_ids=[7])
        with pytest.raises(ValueError, match="sample_rate must be an int greater than 1"):
            builder.train_ivf(10, sample_rate=1)
        with pytest.raises(ValueError, match="Distance type manhattan not supported"):
            builder.train_ivf(10, sample_rate=16, distance_type="manhattan")
        with pytest.raises(KeyError, match="nope not found in schema"):
            module.indices.IndicesBuilder(data, "nope")
    with pytest.raises(NotImplementedError, match="accelerator"):
        IndicesBuilder(ds, "v").train_ivf(10, sample_rate=16, accelerator="cuda")


def test_train_ivf_skips_null_vectors_and_takes_fragments(tmp_path: Path) -> None:
    ds = _dataset(tmp_path, nulls=True)  # 300 vectors left
    ivf = IndicesBuilder(ds, "v").train_ivf(20, sample_rate=16, fragment_ids=[0, 2])
    assert np.isfinite(_matrix(ivf.centroids)).all()
    assert ivf.num_partitions == 20


def test_model_files_read_both_ways(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    ivf = IndicesBuilder(ds, "v").train_ivf(8, distance_type="cosine", sample_rate=16)
    ivf.save(str(tmp_path / "mine.ivf"))
    theirs = lance.indices.IvfModel.load(str(tmp_path / "mine.ivf"))
    assert theirs.distance_type == "cosine" and theirs.centroids == ivf.centroids
    theirs.save(str(tmp_path / "theirs.ivf"))
    back = IvfModel.load(str(tmp_path / "theirs.ivf"))
    assert back.distance_type == "cosine" and back.centroids == ivf.centroids

    codebook = pa.FixedSizeListArray.from_arrays(
        pa.array(np.random.default_rng(1).random(256 * DIMENSION, dtype=np.float32)), DIMENSION
    )
    PqModel(4, codebook).save(str(tmp_path / "mine.pq"))
    loaded = lance.indices.PqModel.load(str(tmp_path / "mine.pq"))
    assert (loaded.num_subvectors, loaded.num_bits, loaded.dimension) == (4, 8, DIMENSION)
    assert loaded.codebook == codebook
    lance.indices.PqModel(2, codebook, num_bits=8).save(str(tmp_path / "theirs.pq"))
    mine = PqModel.load(str(tmp_path / "theirs.pq"))
    assert (mine.num_subvectors, mine.num_bits, mine.codebook) == (2, 8, codebook)


def _pq_codes(vectors: np.ndarray, centroids: np.ndarray, codebook: np.ndarray) -> tuple:
    """Partitions (nearest centroid) and PQ codes of the residuals, computed here."""
    d = ((vectors[:, None, :].astype(np.float64) - centroids[None]) ** 2).sum(-1)
    partitions = np.argmin(d, axis=1)
    residual = vectors - centroids[partitions]
    sub_vectors, _, width = codebook.shape
    codes = np.stack(
        [
            np.argmin(
                ((residual[:, None, s * width : (s + 1) * width] - codebook[s][None]) ** 2).sum(-1),
                axis=1,
            )
            for s in range(sub_vectors)
        ],
        axis=1,
    )
    return partitions, codes


def test_pq_steps_make_an_index_pylance_reads(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    builder = IndicesBuilder(ds, "v")
    ivf = builder.train_ivf(8, sample_rate=16)
    pq = builder.train_pq(ivf, 4, sample_rate=4)
    assert (pq.num_subvectors, pq.dimension, len(pq.codebook)) == (4, DIMENSION, 256)
    builder.transform_vectors(ivf, pq, str(tmp_path / "t1"), fragments=ds.get_fragments()[:2])
    builder.transform_vectors(ivf, pq, str(tmp_path / "t2"), fragments=ds.get_fragments()[2:])
    got = lance.file.LanceFileReader(str(tmp_path / "t1")).read_all().to_table()
    assert [f.name for f in got.schema] == ["_rowid", "__ivf_part_id", "__pq_code"]
    # Every row's partition and code as computed independently.
    vectors = np.stack(lance.dataset(ds.uri).to_table()["v"].to_numpy(zero_copy_only=False))
    rows = got["_rowid"].to_numpy().astype(np.int64)
    centroids = _matrix(ivf.centroids).astype(np.float32)
    codebook = _matrix(pq.codebook).astype(np.float32).ravel().reshape(4, 256, DIMENSION // 4)
    partitions, codes = _pq_codes(
        vectors[(rows >> 32) * 1000 + (rows & 0xFFFFFFFF)], centroids, codebook
    )
    assert np.array_equal(got["__ivf_part_id"].to_numpy(), partitions)
    mine = np.stack(got["__pq_code"].to_numpy(zero_copy_only=False))
    assert (mine == codes).mean() > 0.999  # float32 ties aside
    names = builder.shuffle_transformed_vectors(["t1", "t2"], str(tmp_path), ivf, "s")
    builder.load_shuffled_vectors(names, str(tmp_path), ivf, pq)
    theirs = lance.dataset(ds.uri)
    (index,) = theirs.list_indices()
    assert index["type"] == "IVF_PQ" and sorted(index["fragment_ids"]) == [0, 1, 2]
    for q in vectors[:5] + 0.1:
        nearest = {"column": "v", "q": q, "k": 5, "nprobes": 3}
        want = theirs.to_table(nearest=nearest, columns=[], with_row_id=True)
        found = lancelet.dataset(ds.uri).to_table(nearest=nearest, columns=[], with_row_id=True)
        assert found["_rowid"] == want["_rowid"]


def test_pylance_shuffled_files_load_in_lancelet(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    theirs = lance.indices.IndicesBuilder(lance.dataset(ds.uri), "v")
    ivf = theirs.train_ivf(8, sample_rate=16)
    pq = theirs.train_pq(ivf, 4, sample_rate=4)
    theirs.transform_vectors(ivf, pq, str(tmp_path / "t"))
    names = theirs.shuffle_transformed_vectors(["t"], str(tmp_path), ivf, "s")
    mine = IndicesBuilder(ds, "v")
    mine.load_shuffled_vectors(names, str(tmp_path), IvfModel(ivf.centroids, "l2"), pq, "idx")
    reloaded = lance.dataset(ds.uri)
    assert reloaded.list_indices()[0]["name"] == "idx"
    q = np.full(DIMENSION, 0.5, np.float32)
    nearest = {"column": "v", "q": q, "k": 8, "nprobes": 2}
    want = reloaded.to_table(nearest=nearest, columns=[], with_row_id=True)
    assert (
        lancelet.dataset(ds.uri).to_table(nearest=nearest, columns=[], with_row_id=True)["_rowid"]
        == want["_rowid"]
    )


def test_pq_errors_as_pylance(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    ivf = IndicesBuilder(ds, "v").train_ivf(8, sample_rate=16)
    for module, data in ((lancelet, ds), (lance, lance.dataset(ds.uri))):
        builder = module.indices.IndicesBuilder(data, "v")
        model = module.indices.IvfModel(ivf.centroids, "l2")
        with pytest.raises(ValueError, match="divisible by num_subvectors .* without remainder"):
            builder.train_pq(model, 5, sample_rate=2)
        with pytest.raises(ValueError, match="not enough rows"):
            builder.train_pq(model, 4, sample_rate=16)
        with pytest.raises(ValueError, match="non-empty list"):
            builder.transform_vectors(model, PqModel(4, ivf.centroids), str(tmp_path / "x"), [])
