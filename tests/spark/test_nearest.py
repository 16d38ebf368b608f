"""k-nearest-neighbour reads from Spark: the ``nearest`` read option, with and
without a vector index (built from Spark with ``LanceTable.createIndex``), checked
against pylance's answers on the same dataset and against a numpy computation."""

from __future__ import annotations

import json
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from lancelet.spark.table import LanceTable

DIMENSION = 8


@pytest.fixture(scope="module")
def vectors() -> np.ndarray:
    return np.random.default_rng(9).normal(size=(3000, DIMENSION)).astype(np.float32)


@pytest.fixture
def uri(tmp_path: Path, vectors: np.ndarray) -> str:
    table = pa.table(
        {
            "id": np.arange(len(vectors)),
            "v": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIMENSION),
        }
    )
    path = str(tmp_path / "vectors")
    lance.write_dataset(table, path, max_rows_per_file=1000)
    return path


def _read(spark: SparkSession, uri: str, query: dict[str, object], **options: str) -> list[dict]:
    frame = spark.read.format("lance").option("nearest", json.dumps(query))
    for key, value in options.items():
        frame = frame.option(key, value)
    return [row.asDict() for row in frame.load(uri).select("id", "_distance").collect()]


def test_exact_search_is_numpy_nearest(spark: SparkSession, uri: str, vectors: np.ndarray) -> None:
    q = vectors[17] + 0.01
    got = _read(spark, uri, {"column": "v", "q": q.tolist(), "k": 5})
    distances = ((vectors.astype(np.float64) - q) ** 2).sum(axis=1)
    expected = np.argsort(distances, kind="stable")[:5]
    assert [r["id"] for r in got] == expected.tolist()
    assert np.allclose([r["_distance"] for r in got], distances[expected], rtol=1e-5)


def test_filters_before_and_after_the_search(
    spark: SparkSession, uri: str, vectors: np.ndarray
) -> None:
    query = {"column": "v", "q": vectors[3].tolist(), "k": 10}
    pre = _read(spark, uri, query, filter="id % 2 = 0", prefilter="true")
    theirs = lance.dataset(uri).to_table(
        nearest=dict(query, q=vectors[3]), filter="id % 2 = 0", prefilter=True
    )
    assert [r["id"] for r in pre] == theirs["id"].to_pylist()
    assert len(pre) == 10
    # Spark's own filter comes after the search: only the even ones of the 10 nearest.
    frame = spark.read.format("lance").option("nearest", json.dumps(query)).load(uri)
    post = [r.id for r in frame.where("id % 2 = 0").collect()]
    nearest = [r["id"] for r in _read(spark, uri, query)]
    assert post == [i for i in nearest if i % 2 == 0]


def test_index_built_from_spark_answers_as_pylance(
    spark: SparkSession, uri: str, vectors: np.ndarray
) -> None:
    LanceTable.forPath(spark, uri).createIndex("v", "IVF_FLAT", num_partitions=4)
    assert lance.dataset(uri).describe_indices()[0].index_type == "IVF_FLAT"
    for row in (5, 900, 2500):
        query = {"column": "v", "q": vectors[row].tolist(), "k": 7, "nprobes": 2}
        got = _read(spark, uri, query)
        theirs = lance.dataset(uri).to_table(nearest=dict(query, q=vectors[row]))
        assert [r["id"] for r in got] == theirs["id"].to_pylist()
        assert np.allclose([r["_distance"] for r in got], theirs["_distance"], atol=1e-5)


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        ("{not json", "not JSON"),
        ('{"q": [1, 2]}', '"column" and "q"'),
        ('{"column": "v", "q": [[1, 2], [3, 4]]}', "one query vector"),
    ],
)
def test_bad_options_are_refused(spark: SparkSession, uri: str, raw: str, match: str) -> None:
    with pytest.raises(Exception, match=match):
        spark.read.format("lance").option("nearest", raw).load(uri).collect()


def test_aggregates_over_a_search_count_its_rows(
    spark: SparkSession, uri: str, vectors: np.ndarray
) -> None:
    q = vectors[40] + 0.01
    query = {"column": "v", "q": q.tolist(), "k": 7}
    frame = spark.read.format("lance").option("nearest", json.dumps(query)).load(uri)
    distances = ((vectors.astype(np.float64) - q) ** 2).sum(axis=1)
    nearest = np.argsort(distances, kind="stable")[:7]
    # Pushed into the read with the bridge: the search's 7 rows, not the dataset's.
    assert frame.count() == 7
    got = frame.selectExpr("count(*) AS n", "min(id) AS lo", "max(id) AS hi", "sum(id) AS s")
    row = got.collect()[0]
    assert (row.n, row.lo, row.hi, row.s) == (7, nearest.min(), nearest.max(), nearest.sum())
    evens = frame.groupBy((frame.id % 2).alias("odd")).count().orderBy("odd").collect()
    assert [r["count"] for r in evens] == [
        int((nearest % 2 == 0).sum()),
        int((nearest % 2 == 1).sum()),
    ]
