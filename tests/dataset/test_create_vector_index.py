"""create_index(..., "IVF_FLAT"): lancelet builds the index, pylance 14 lists,
describes and queries it as one of its own, and its answers through the index equal
lancelet's for explicit nprobes; its recall is close to a pylance-built index's."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lancelet as ll
from lancelet.errors import (
    IndexExistsError,
    UnsupportedOptionError,
    UnsupportedVectorIndexError,
)
from tests.storage import copy_tree

ROWS = 3000
DIMENSION = 32
PARTITIONS = 8
METRICS = ("l2", "cosine", "dot")


def _vectors(seed: int, rows: int = ROWS) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 3, (16, DIMENSION))
    chosen = centres[rng.integers(0, 16, rows)]
    return np.asarray(chosen + rng.normal(0, 1, chosen.shape), dtype=np.float32)


def _table(vectors: np.ndarray, mask: np.ndarray | None = None) -> pa.Table:
    values = pa.array(vectors.ravel())
    column = pa.FixedSizeListArray.from_arrays(values, DIMENSION, mask=mask)
    return pa.table({"id": np.arange(len(vectors)), "vec": column})


@dataclass(frozen=True)
class Built:
    uri: str
    vectors: np.ndarray
    metric: str


@pytest.fixture(scope="module", params=METRICS)
def built(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Built:
    """lancelet's index over three fragments, built after rows were deleted."""
    metric = request.param
    vectors = _vectors(7)
    uri = str(tmp_path_factory.mktemp("ivf-build") / "ds")
    lance.write_dataset(_table(vectors), uri, max_rows_per_file=1000)
    dataset = ll.dataset(uri)
    dataset.delete("id % 13 = 5")
    dataset.create_index("vec", "IVF_FLAT", num_partitions=PARTITIONS, metric=metric)
    return Built(uri, vectors, metric)


def _query(built: Built, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = built.vectors[rng.integers(0, len(built.vectors))]
    return np.asarray(base + rng.normal(0, 1.5, base.shape), dtype=np.float32)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 40), nprobes=st.integers(1, PARTITIONS))
def test_pylance_answers_as_lancelet_through_lancelets_index(
    built: Built, seed: int, k: int, nprobes: int
) -> None:
    nearest = {"column": "vec", "q": _query(built, seed), "k": k, "nprobes": nprobes}
    want = lance.dataset(built.uri).to_table(nearest=nearest, with_row_id=True)
    got = ll.dataset(built.uri).to_table(nearest=nearest, with_row_id=True)
    assert got.schema == want.schema
    assert got["_rowid"].to_pylist() == want["_rowid"].to_pylist()
    assert got["id"].to_pylist() == want["id"].to_pylist()
    np.testing.assert_allclose(
        got["_distance"].to_numpy(), want["_distance"].to_numpy(), rtol=1e-6, atol=1e-5
    )


def test_probing_every_partition_is_pylances_exact_search(built: Built) -> None:
    """Every live row is in the index (deleted ones are not): probing all partitions
    gives pylance's flat search."""
    dataset = lance.dataset(built.uri)
    for seed in range(5):
        query = _query(built, seed)
        nearest = {"column": "vec", "q": query, "k": 25, "nprobes": PARTITIONS}
        through_index = dataset.to_table(nearest=nearest, columns=["id"])
        flat = {**nearest, "use_index": False, "metric": built.metric}
        exact = dataset.to_table(nearest=flat, columns=["id"])
        assert through_index["id"].to_pylist() == exact["id"].to_pylist()


def test_pylance_describes_it_as_its_own(built: Built, tmp_path: Path) -> None:
    theirs = str(tmp_path / "theirs")
    copy_tree(built.uri, theirs)
    reference = lance.dataset(theirs)
    for index in reference.list_indices():
        reference.drop_index(index["name"])
    reference.create_index("vec", "IVF_FLAT", num_partitions=PARTITIONS, metric=built.metric)
    ours_listed, theirs_listed = lance.dataset(built.uri).list_indices(), reference.list_indices()
    for entry in ours_listed + theirs_listed:
        del entry["uuid"], entry["version"]
    assert ours_listed == theirs_listed
    ours, theirs_described = (
        lance.dataset(built.uri).describe_indices()[0],
        reference.describe_indices()[0],
    )
    for attribute in ("name", "type_url", "index_type", "num_rows_indexed", "fields"):
        assert getattr(ours, attribute) == getattr(theirs_described, attribute)
    assert ours.field_names == theirs_described.field_names
    assert ours.details == theirs_described.details
    assert [s.index_version for s in ours.segments] == [
        s.index_version for s in theirs_described.segments
    ]
    ours_stats = _stats(built.uri)
    theirs_stats = _stats(theirs)
    for key in ("index_type", "metric_type", "num_partitions", "sub_index", "index_file_version"):
        assert ours_stats[key] == theirs_stats[key]
    assert _indexed(ours_stats) == _indexed(theirs_stats)


def _stats(uri: str) -> dict[str, Any]:
    stats: dict[str, Any] = lance.dataset(uri).stats.index_stats("vec_idx")["indices"][0]
    return stats


def _indexed(stats: dict[str, Any]) -> int:
    return sum(p["size"] for p in stats["partitions"])


def test_rows_join_their_nearest_centroid(built: Built) -> None:
    """Partition sizes pylance reports are those of assigning every live vector to its
    nearest centroid (l2; of the unit vector for cosine; largest product for dot)."""
    stats = _stats(built.uri)
    centroids = np.asarray(stats["centroids"], dtype=np.float64)
    live = lance.dataset(built.uri).to_table(columns=["vec"])["vec"]
    vectors = np.asarray(live.combine_chunks().values.to_numpy(), np.float64)
    vectors = vectors.reshape(-1, DIMENSION)
    if built.metric == "cosine":
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    if built.metric == "dot":
        chosen = np.argmax(vectors @ centroids.T, axis=1)
    else:
        chosen = np.argmin(((vectors[:, None, :] - centroids[None]) ** 2).sum(-1), axis=1)
    sizes = np.bincount(chosen, minlength=len(centroids))
    assert [p["size"] for p in stats["partitions"]] == sizes.tolist()


@pytest.mark.parametrize("metric", METRICS)
def test_recall_is_close_to_a_pylance_built_index(metric: str, tmp_path: Path) -> None:
    """recall@10 at nprobes=2 of 16 partitions on unclustered vectors, over 60
    queries, averaged over 3 builds (k-means starts at random, so one build's recall
    varies by about +-0.05 with either library): lancelet's is within 0.1 of
    pylance's, or better."""
    rng = np.random.default_rng(11)
    vectors = rng.normal(0, 1, (6000, DIMENSION)).astype(np.float32)
    queries = rng.normal(0, 1, (60, DIMENSION)).astype(np.float32)
    recalls = {}
    for builder in (lance, ll):
        uri = str(tmp_path / builder.__name__)
        lance.write_dataset(_table(vectors), uri)
        builds = []
        for _ in range(3):
            builder.dataset(uri).create_index(
                "vec", "IVF_FLAT", num_partitions=16, metric=metric, replace=True
            )
            builds.append(_recall(lance.dataset(uri), queries, metric))
        recalls[builder.__name__] = float(np.mean(builds))
    assert recalls["lancelet"] >= recalls["lance"] - 0.1, recalls


def _recall(dataset: Any, queries: np.ndarray, metric: str) -> float:
    found = 0
    for query in queries:
        nearest = {"column": "vec", "q": query, "k": 10, "nprobes": 2}
        approximate = dataset.to_table(nearest=nearest, columns=["id"])["id"].to_pylist()
        flat = {**nearest, "use_index": False, "metric": metric}
        exact = dataset.to_table(nearest=flat, columns=["id"])["id"].to_pylist()
        found += len(set(approximate) & set(exact))
    return found / (10 * len(queries))


def _footer_version(uri: str) -> list[tuple[int, int]]:
    found = []
    for path in sorted(Path(uri, "_indices").glob("*/*.idx")):
        major, minor = struct.unpack("<HH", path.read_bytes()[-8:-4])
        found.append((major, minor))
    return found


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_index_files_in_the_datasets_file_version(version: str, tmp_path: Path) -> None:
    vectors = _vectors(3, 500)
    footers = []
    for builder in (lance, ll):
        uri = str(tmp_path / builder.__name__)
        lance.write_dataset(_table(vectors), uri, data_storage_version=version)
        builder.dataset(uri).create_index("vec", "IVF_FLAT", num_partitions=2)
        footers.append(_footer_version(uri))
    assert footers[0] == footers[1]


def test_stable_row_ids_are_what_the_index_holds(tmp_path: Path) -> None:
    """On a dataset with stable row ids (rows deleted and moved by an update), the
    index keys rows by id: pylance's answers through it are its exact ones."""
    vectors = _vectors(5, 1200)
    uri = str(tmp_path / "ds")
    lance.write_dataset(_table(vectors), uri, max_rows_per_file=400, enable_stable_row_ids=True)
    lance.dataset(uri).delete("id < 40")
    lance.dataset(uri).update({"id": "id + 10000"}, where="id % 7 = 0")
    ll.dataset(uri).create_index("vec", "IVF_FLAT", num_partitions=4)
    dataset = lance.dataset(uri)
    for seed in range(4):
        query = _query(Built(uri, vectors, "l2"), seed)
        nearest = {"column": "vec", "q": query, "k": 20, "nprobes": 4}
        through_index = dataset.to_table(nearest=nearest, columns=["id"])
        exact = dataset.to_table(nearest={**nearest, "use_index": False}, columns=["id"])
        assert through_index["id"].to_pylist() == exact["id"].to_pylist()


def test_null_and_nan_vectors_are_left_out_as_pylance_leaves_them(tmp_path: Path) -> None:
    vectors = _vectors(9, 1000)
    vectors[::17, 4] = np.nan
    vectors[3] = 0  # no direction: cosine leaves it out
    mask = np.arange(1000) % 10 == 0
    for metric in ("l2", "cosine"):
        sizes = []
        for builder in (lance, ll):
            uri = str(tmp_path / f"{metric}-{builder.__name__}")
            lance.write_dataset(_table(vectors, pa.array(mask)), uri)
            builder.dataset(uri).create_index("vec", "IVF_FLAT", num_partitions=4, metric=metric)
            sizes.append(_indexed(_stats(uri)))
        assert sizes[0] == sizes[1]


@pytest.fixture
def small(tmp_path: Path) -> str:
    uri = str(tmp_path / "small")
    lance.write_dataset(_table(_vectors(1, 300)), uri)
    return uri


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({"index_type": "IVF_HNSW_RQ", "num_partitions": 2}, UnsupportedVectorIndexError),
        ({"num_partitions": 2, "accelerator": "cuda"}, UnsupportedOptionError),
        ({"num_partitions": 2, "precomputed_partition_dataset": "x"}, UnsupportedOptionError),
        ({"num_partitions": 2, "filter_nan": False}, UnsupportedOptionError),
        ({"num_partitions": 2, "num_bits": 4}, UnsupportedOptionError),
    ],
)
def test_what_lancelet_does_not_build_is_refused_by_name(
    small: str, args: dict[str, Any], error: type[Exception]
) -> None:
    args = {"index_type": "IVF_FLAT", **args}
    before = ll.dataset(small).version
    with pytest.raises(error) as raised:
        ll.dataset(small).create_index("vec", **args)
    # The option refused (the last given), or the index type.
    named = list(args)[-1] if len(args) > 1 else None
    if error is UnsupportedVectorIndexError:
        named = args["index_type"]
    if named is not None:
        assert named in str(raised.value)
    assert ll.dataset(small).version == before
    assert not Path(small, "_indices").exists() or not any(Path(small, "_indices").iterdir())


@pytest.mark.parametrize(
    ("column", "args", "error"),
    [
        ("vec", {"metric": "foo"}, ValueError),
        ("vec", {"metric": "hamming"}, ValueError),
        ("vec", {"num_partitions": 0}, ValueError),
        ("vec", {"sample_rate": 0}, ValueError),
        ("id", {}, TypeError),
    ],
)
def test_invalid_arguments_fail_as_in_pylance(
    small: str, column: str, args: dict[str, Any], error: type[Exception]
) -> None:
    args = {"num_partitions": 2, **args}
    with pytest.raises(error):
        lance.dataset(small).create_index(column, "IVF_FLAT", **args)
    with pytest.raises(error):
        ll.dataset(small).create_index(column, "IVF_FLAT", **args)


def test_an_existing_name_needs_replace(small: str) -> None:
    ll.dataset(small).create_index("vec", "IVF_FLAT", num_partitions=2)
    with pytest.raises(IndexExistsError, match="already exists"):
        ll.dataset(small).create_index("vec", "IVF_FLAT", num_partitions=2)
    with pytest.raises(RuntimeError, match="already exists"):
        lance.dataset(small).create_index("vec", "IVF_FLAT", num_partitions=2)
    dataset = ll.dataset(small)
    dataset.create_index("vec", "IVF_FLAT", num_partitions=3, replace=True)
    listed = lance.dataset(small).list_indices()
    assert len(listed) == 1
    assert _stats(small)["num_partitions"] == 3


def test_a_vector_inside_a_struct(tmp_path: Path) -> None:
    vectors = _vectors(4, 600)
    column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIMENSION)
    struct = pa.StructArray.from_arrays([column, pa.array(np.arange(600))], ["vec", "x"])
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"id": np.arange(600), "s": struct}), uri)
    ll.dataset(uri).create_index("s.vec", "IVF_FLAT", num_partitions=4)
    dataset = lance.dataset(uri)
    assert [(i["name"], i["fields"]) for i in dataset.list_indices()] == [("s.vec_idx", ["s.vec"])]
    for row in (3, 300):
        nearest = {"column": "s.vec", "q": vectors[row], "k": 10, "nprobes": 4}
        through_index = dataset.to_table(nearest=nearest, columns=["id"])
        exact = dataset.to_table(nearest={**nearest, "use_index": False}, columns=["id"])
        assert through_index["id"].to_pylist() == exact["id"].to_pylist()


def test_create_index_returns_the_dataset_and_takes_v3_files(tmp_path: Path) -> None:
    """As pylance: the dataset comes back (at the new version); index_file_version
    V3 is what both write by default; an unknown version is refused."""
    from lance.indices import IndexFileVersion

    vectors = np.random.default_rng(8).normal(size=(300, 8)).astype(np.float32)
    table = pa.table({"vec": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), 8)})
    ds = ll.write_dataset(table, str(tmp_path / "v"))
    returned = ds.create_index(
        "vec", "IVF_FLAT", num_partitions=2, index_file_version=IndexFileVersion.V3
    )
    assert returned is ds and ds.version == 2
    assert lance.dataset(str(tmp_path / "v")).describe_indices()[0].name == "vec_idx"
    with pytest.raises(NotImplementedError, match="V3 or Legacy"):
        ds.create_index("vec", "IVF_FLAT", num_partitions=2, name="b", index_file_version="V2")
