"""Full-text reads from Spark: an INVERTED index built with
``LanceTable.createIndex``, and the ``full_text_query`` read option, checked against
pylance's answers on the same dataset."""

from __future__ import annotations

import json
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from lancelet.spark.table import LanceTable

WORDS = [
    "frodo",
    "sam",
    "ring",
    "gollum",
    "shire",
    "mordor",
    "hobbit",
    "elf",
    "dwarf",
    "wizard",
    "tower",
    "river",
]


@pytest.fixture
def uri(tmp_path: Path) -> str:
    rng = np.random.default_rng(4)
    texts = [" ".join(rng.choice(WORDS, int(rng.integers(2, 9)))) for _ in range(600)]
    path = str(tmp_path / "texts")
    lance.write_dataset(
        pa.table({"id": np.arange(len(texts)), "text": texts}), path, max_rows_per_file=200
    )
    return path


def _read(spark: SparkSession, uri: str, query: str, **options: str) -> list[tuple[int, float]]:
    frame = spark.read.format("lance").option("full_text_query", query)
    for key, value in options.items():
        frame = frame.option(key, value)
    rows = frame.load(uri).select("id", "_score").collect()
    return sorted((row.id, round(row._score, 5)) for row in rows)


def _pylance(uri: str, query: object, **kw: object) -> list[tuple[int, float]]:
    table = lance.dataset(uri).to_table(columns=["id"], full_text_query=query, **kw)
    scores = table["_score"].to_numpy().astype(np.float64).round(5).tolist()
    return sorted(zip(table["id"].to_pylist(), scores, strict=True))


def test_index_built_from_spark_answers_as_pylance(spark: SparkSession, uri: str) -> None:
    LanceTable.forPath(spark, uri).createIndex("text", "INVERTED", with_position=True)
    assert lance.dataset(uri).describe_indices()[0].index_type == "Inverted"
    for query in ("frodo", "ring gollum", "wizard tower river"):
        want = _pylance(uri, query)
        assert want
        assert _read(spark, uri, query) == want
    # The JSON form names the columns; limit keeps the best rows.
    as_json = json.dumps({"query": "sam shire", "columns": ["text"]})
    assert _read(spark, uri, as_json) == _pylance(uri, {"query": "sam shire", "columns": ["text"]})
    best = _read(spark, uri, "hobbit elf", limit="5", filter="id < 300", prefilter="true")
    assert best == _pylance(uri, "hobbit elf", limit=5, filter="id < 300", prefilter=True)
    assert len(best) == 5


def test_bad_options_are_refused(spark: SparkSession, uri: str) -> None:
    frame = spark.read.format("lance").option("full_text_query", '{"query": 3}')
    with pytest.raises(Exception, match="full_text_query as JSON"):
        frame.load(uri).collect()
    both = spark.read.format("lance").option("full_text_query", "sam")
    both = both.option("nearest", json.dumps({"column": "v", "q": [1.0]}))
    with pytest.raises(Exception, match="cannot be combined"):
        both.load(uri).collect()
    with pytest.raises(Exception, match="limit applies"):
        spark.read.format("lance").option("limit", "3").load(uri).collect()
