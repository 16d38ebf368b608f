"""create_index's ``target_partition_size`` (and the default partition count),
given ``ivf_centroids`` / ``pq_codebook``: lancelet builds as pylance 14 does, pylance
reads lancelet's index and answers as lancelet does, and bad models are refused
with pylance's exception types."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet._proto import index_pb2
from lancelet.file import LanceFileReader
from lancelet.index import files
from lancelet.index.vector import layout
from tests.vector_checks import assert_same_neighbours

DIMENSION = 16
SUB_VECTORS = 4
pytestmark = pytest.mark.local_files("reads the index files lancelet and pylance write on disk")


def _vectors(seed: int, rows: int, dtype: Any = np.float32) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 3, (8, DIMENSION))
    chosen = centres[rng.integers(0, 8, rows)]
    return np.asarray(chosen + rng.normal(0, 1, chosen.shape), dtype=dtype)


def _write(uri: str, vectors: np.ndarray, nulls: int = 0) -> None:
    mask = pa.array(np.arange(len(vectors)) < nulls)
    column = pa.FixedSizeListArray.from_arrays(
        pa.array(vectors.ravel()), vectors.shape[1], mask=mask
    )
    lance.write_dataset(pa.table({"id": np.arange(len(vectors)), "vec": column}), uri)


def _partitions(dataset: Any) -> list[int]:
    stats = dataset.stats.index_stats("vec_idx")["indices"][0]
    return [p["size"] for p in stats["partitions"]]


def _same_answers(uri: str, vectors: np.ndarray, nprobes: int, queries: int = 10) -> None:
    """pylance and lancelet answer alike on the index at ``uri``."""
    rng = np.random.default_rng(5)
    for _ in range(queries):
        base = vectors[rng.integers(0, len(vectors))].astype(np.float32)
        query = base + rng.normal(0, 1, base.shape).astype(np.float32)
        nearest = {"column": "vec", "q": query, "k": 10, "nprobes": nprobes}
        want = lance.dataset(uri).to_table(nearest=nearest, with_row_id=True)
        got = ll.dataset(uri).to_table(nearest=nearest, with_row_id=True)
        found = got["_distance"].to_numpy()
        np.testing.assert_allclose(found, want["_distance"].to_numpy(), rtol=1e-6, atol=1e-5)
        assert_same_neighbours(
            got["_rowid"].to_numpy(), found, want["_rowid"].to_numpy(), rtol=1e-6, atol=1e-5
        )


def _type_args(index_type: str) -> dict[str, Any]:
    return {"num_sub_vectors": SUB_VECTORS} if index_type == "IVF_PQ" else {}


# (index type, rows, null vectors, deleted rows, target_partition_size or None)
PARTITION_CASES = [
    ("IVF_FLAT", 9000, 0, 0, None),  # 9000 // 4096
    ("IVF_PQ", 17000, 0, 0, None),  # 17000 // 8192
    ("IVF_SQ", 17000, 0, 0, None),
    ("IVF_PQ", 1000, 0, 0, 500),
    ("IVF_PQ", 1000, 0, 0, 1000),
    ("IVF_PQ", 3000, 0, 0, 30),  # not bounded by one partition per 256 rows
    ("IVF_FLAT", 3000, 0, 0, 10**9),  # at least one partition
    ("IVF_FLAT", 9000, 1000, 0, 4500),  # null vectors count
    ("IVF_FLAT", 9000, 0, 1000, 4500),  # deleted rows do not
]


@pytest.mark.parametrize(("index_type", "rows", "nulls", "deleted", "target"), PARTITION_CASES)
def test_partition_count_is_pylances(
    tmp_path: Path, index_type: str, rows: int, nulls: int, deleted: int, target: int | None
) -> None:
    vectors = _vectors(1, rows)
    args: dict[str, Any] = {"index_type": index_type, **_type_args(index_type)}
    if target is not None:
        args["target_partition_size"] = target
    counts, details = [], []
    for name, module in (("theirs", lance), ("ours", ll)):
        uri = str(tmp_path / name)
        _write(uri, vectors, nulls)
        if deleted:
            lance.dataset(uri).delete(f"id < {deleted}")
        dataset = module.dataset(uri)
        dataset.create_index("vec", **args)
        counts.append(len(_partitions(lance.dataset(uri))))
        # The target given is recorded in the details (field 2), as pylance does.
        details.append(lance.dataset(uri).describe_indices()[0].details)
    assert counts[1] == counts[0]
    assert details[1] == details[0]
    if index_type != "IVF_SQ":  # lancelet refuses some IVF_SQ searches (see the format doc)
        _same_answers(str(tmp_path / "ours"), vectors, nprobes=min(counts[1], 3), queries=3)


def test_num_partitions_wins_over_target(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _write(uri, _vectors(2, 1000))
    ll.dataset(uri).create_index(
        "vec", "IVF_PQ", num_partitions=2, num_sub_vectors=4, target_partition_size=1000
    )
    assert len(_partitions(lance.dataset(uri))) == 2


@pytest.mark.parametrize(("target", "error"), [(0, ValueError), (1.5, TypeError)])
def test_bad_target_is_refused(tmp_path: Path, target: object, error: type) -> None:
    uri = str(tmp_path / "ds")
    _write(uri, _vectors(2, 300))
    with pytest.raises(error, match="target_partition_size"):
        ll.dataset(uri).create_index("vec", "IVF_FLAT", target_partition_size=target)
    assert ll.dataset(uri).list_indices() == []


def _centroids(seed: int, count: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.asarray(rng.normal(0, 3, (count, DIMENSION)), dtype=np.float32)


def _directory(uri: str) -> Path:
    (directory,) = Path(uri, "_indices").iterdir()
    return directory


def _stored_centroids(uri: str) -> np.ndarray:
    reader = LanceFileReader(str(_directory(uri) / layout.INDEX_FILE))
    ivf = index_pb2.IVF.FromString(reader.read_global_buffer(1))
    return np.frombuffer(ivf.centroids_tensor.data, "<f4").reshape(-1, DIMENSION)


@pytest.mark.parametrize("metric", ["l2", "cosine", "dot"])
@pytest.mark.parametrize("index_type", ["IVF_FLAT", "IVF_PQ", "IVF_SQ"])
def test_given_centroids_partition_as_pylances(
    tmp_path: Path, index_type: str, metric: str
) -> None:
    """Given centroids are kept as they are, the rows join the same partitions as in
    pylance's index, the loss is pylance's, and pylance answers as lancelet does."""
    vectors = _vectors(3, 1500)
    centroids = _centroids(4, 7)
    args = {"metric": metric, "ivf_centroids": centroids, **_type_args(index_type)}
    stats = []
    for name, module in (("theirs", lance), ("ours", ll)):
        uri = str(tmp_path / name)
        _write(uri, vectors)
        module.dataset(uri).create_index("vec", index_type, **args)
        stats.append(lance.dataset(uri).stats.index_stats("vec_idx")["indices"][0])
    ours = str(tmp_path / "ours")
    np.testing.assert_array_equal(_stored_centroids(ours), centroids)
    assert stats[1]["partitions"] == stats[0]["partitions"]
    assert stats[1]["loss"] == pytest.approx(stats[0]["loss"], rel=1e-6)
    if index_type != "IVF_SQ":
        _same_answers(ours, vectors, nprobes=3)


def _codebook(seed: int, bits: int = 8) -> np.ndarray:
    rng = np.random.default_rng(seed)
    shape = (SUB_VECTORS, 1 << bits, DIMENSION // SUB_VECTORS)
    return np.asarray(rng.normal(0, 1, shape), dtype=np.float32)


@pytest.mark.parametrize("metric", ["l2", "cosine", "dot"])
@pytest.mark.parametrize("form", ["numpy", "tensor", "fixed_size_list"])
def test_given_codebook_writes_pylances_bytes(tmp_path: Path, metric: str, form: str) -> None:
    """Given centroids and codebook, lancelet's auxiliary file is pylance's, byte for
    byte in its rows, codes, codebook and metadata; pylance answers as lancelet."""
    vectors = _vectors(5, 1200)
    codebook = _codebook(6)
    given: object = codebook
    if form == "tensor":
        given = pa.FixedShapeTensorArray.from_numpy_ndarray(codebook)
    elif form == "fixed_size_list":
        given = pa.FixedSizeListArray.from_arrays(pa.array(codebook.ravel()), codebook.shape[2])
    args = {
        "metric": metric,
        "num_sub_vectors": SUB_VECTORS,
        "ivf_centroids": _centroids(7, 3),
        "pq_codebook": given,
    }
    for name, module in (("theirs", lance), ("ours", ll)):
        uri = str(tmp_path / name)
        _write(uri, vectors)
        module.dataset(uri).create_index("vec", "IVF_PQ", **args)
    readers = [
        LanceFileReader(str(_directory(str(tmp_path / n)) / layout.AUXILIARY_FILE))
        for n in ("ours", "theirs")
    ]
    assert readers[0].read_all().to_table().equals(readers[1].read_all().to_table())
    assert files.metadata(readers[0]) == files.metadata(readers[1])
    assert readers[0].read_global_buffer(2) == readers[1].read_global_buffer(2)
    _same_answers(str(tmp_path / "ours"), vectors, nprobes=2)


def test_given_centroids_in_arrow_and_lists(tmp_path: Path) -> None:
    vectors = _vectors(8, 600)
    centroids = _centroids(9, 4)
    forms = [
        pa.FixedSizeListArray.from_arrays(pa.array(centroids.ravel()), DIMENSION),
        pa.FixedShapeTensorArray.from_numpy_ndarray(centroids),
        centroids.tolist(),
        centroids.astype(np.float64),
    ]
    for number, form in enumerate(forms):
        uri = str(tmp_path / f"ds{number}")
        _write(uri, vectors)
        ll.dataset(uri).create_index("vec", "IVF_FLAT", ivf_centroids=form)
        np.testing.assert_array_equal(_stored_centroids(uri), centroids)
        assert len(_partitions(lance.dataset(uri))) == 4


# (arguments, pylance's exception type): each refused before anything is written.
BAD_MODELS: list[tuple[dict[str, Any], type[Exception]]] = [
    ({"ivf_centroids": _centroids(1, 5), "num_partitions": 4}, ValueError),
    ({"ivf_centroids": _centroids(1, 5)[0]}, ValueError),
    ({"ivf_centroids": _centroids(1, 5)[:, :8]}, ValueError),
    ({"ivf_centroids": _centroids(1, 5).astype(np.int32)}, TypeError),
    ({"ivf_centroids": np.full((2, DIMENSION), np.nan, np.float32)}, ValueError),
    ({"pq_codebook": _codebook(1)}, ValueError),
    ({"ivf_centroids": _centroids(1, 2), "pq_codebook": _codebook(1)[:2]}, ValueError),
    ({"ivf_centroids": _centroids(1, 2), "pq_codebook": _codebook(1)[:, :, :2]}, ValueError),
    (
        {"ivf_centroids": _centroids(1, 2), "pq_codebook": _codebook(1).astype(np.int16)},
        TypeError,
    ),
]


@pytest.mark.parametrize(("args", "error"), BAD_MODELS)
def test_bad_models_are_refused_as_pylance_refuses_them(
    tmp_path: Path, args: dict[str, Any], error: type[Exception]
) -> None:
    uri = str(tmp_path / "ds")
    _write(uri, _vectors(2, 600))
    full = {"num_sub_vectors": SUB_VECTORS, **args}
    with pytest.raises(error):
        lance.dataset(uri).create_index("vec", "IVF_PQ", **full)
    with pytest.raises(error):
        ll.dataset(uri).create_index("vec", "IVF_PQ", **full)
    assert ll.dataset(uri).list_indices() == []
    assert not Path(uri, "_indices").exists() or not any(Path(uri, "_indices").iterdir())


@pytest.mark.parametrize("metric", ["l2", "cosine", "dot"])
def test_4bit_pq_both_ways(tmp_path: Path, metric: str) -> None:
    """lancelet's 4-bit IVF_PQ index is one pylance lists as nbits 4 and answers on as
    lancelet does; lancelet answers on pylance's 4-bit index as pylance does."""
    vectors = _vectors(10, 3000)
    args = {"num_partitions": 3, "num_sub_vectors": SUB_VECTORS, "num_bits": 4, "metric": metric}
    for name, module in (("theirs", lance), ("ours", ll)):
        uri = str(tmp_path / name)
        _write(uri, vectors)
        lance.dataset(uri).delete("id % 17 = 3")
        module.dataset(uri).create_index("vec", "IVF_PQ", **args)
        stats = lance.dataset(uri).stats.index_stats("vec_idx")["indices"][0]
        assert stats["sub_index"]["nbits"] == 4
        assert (
            ll.dataset(uri).stats.index_stats("vec_idx")["indices"][0]["sub_index"]
            == (stats["sub_index"])
        )
        _same_answers(uri, vectors, nprobes=2)
    described = [lance.dataset(str(tmp_path / n)).describe_indices()[0] for n in ("ours", "theirs")]
    assert described[0].type_url == described[1].type_url
    assert described[0].num_rows_indexed == described[1].num_rows_indexed


def test_4bit_given_codebook_writes_pylances_bytes(tmp_path: Path) -> None:
    """Codes packed two to a byte (sub-vector 2j low), each partition's bytes
    column-major, the codebook tensor [16, D]: the same bytes as pylance's."""
    vectors = _vectors(11, 1500)
    args = {
        "num_sub_vectors": SUB_VECTORS,
        "num_bits": 4,
        "ivf_centroids": _centroids(12, 3),
        "pq_codebook": _codebook(13, bits=4),
    }
    for name, module in (("theirs", lance), ("ours", ll)):
        uri = str(tmp_path / name)
        _write(uri, vectors)
        module.dataset(uri).create_index("vec", "IVF_PQ", **args)
    readers = [
        LanceFileReader(str(_directory(str(tmp_path / n)) / layout.AUXILIARY_FILE))
        for n in ("ours", "theirs")
    ]
    assert readers[0].read_all().to_table().equals(readers[1].read_all().to_table())
    assert files.metadata(readers[0]) == files.metadata(readers[1])
    assert readers[0].read_global_buffer(2) == readers[1].read_global_buffer(2)


@pytest.mark.parametrize(("args", "error"), [({"num_sub_vectors": 3}, RuntimeError)])
def test_4bit_odd_sub_vectors_refused(
    tmp_path: Path, args: dict[str, Any], error: type[Exception]
) -> None:
    uri = str(tmp_path / "ds")
    _write(uri, (np.zeros((300, 12)) + np.arange(300)[:, None]).astype(np.float32))
    for module in (lance, ll):
        with pytest.raises(error, match="divisible by 2"):
            module.dataset(uri).create_index("vec", "IVF_PQ", num_partitions=1, num_bits=4, **args)


def test_4bit_delta_segment_reads_in_pylance(tmp_path: Path) -> None:
    """optimize_indices on lancelet's 4-bit index writes a delta segment of 4-bit codes
    that pylance reads and answers on as lancelet does."""
    vectors = _vectors(14, 2000)
    uri = str(tmp_path / "ds")
    _write(uri, vectors[:1500])
    ll.dataset(uri).create_index(
        "vec", "IVF_PQ", num_partitions=2, num_sub_vectors=SUB_VECTORS, num_bits=4
    )
    more = pa.FixedSizeListArray.from_arrays(pa.array(vectors[1500:].ravel()), DIMENSION)
    lance.write_dataset(pa.table({"id": np.arange(1500, 2000), "vec": more}), uri, mode="append")
    ll.dataset(uri).optimize.optimize_indices(num_indices_to_merge=0)
    segments = lance.dataset(uri).stats.index_stats("vec_idx")["indices"]
    assert len(segments) == 2
    assert all(s["sub_index"]["nbits"] == 4 for s in segments)
    _same_answers(uri, vectors, nprobes=2)
