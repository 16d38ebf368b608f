"""The flights pipeline that `make demo` runs, on a sample, so that it cannot rot."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import lance
import pyarrow.compute as pc
from pyspark.sql import SparkSession

EXAMPLE = Path(__file__).parents[2] / "examples" / "flights_pipeline.py"


def test_the_pipeline_checks_itself_on_a_sample(spark: SparkSession, tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("flights_pipeline", EXAMPLE)
    assert spec is not None and spec.loader is not None
    pipeline = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pipeline)
    path = str(tmp_path / "flights.lance")
    assert pipeline.run(path, sample=4000, master="local[2]") == 0
    # pylance reads the pipeline's result: every id once, first version intact.
    final = lance.dataset(path)
    final.validate()
    ids = final.to_table(columns=["id"])["id"]
    assert pc.count_distinct(ids).as_py() == len(ids)
    assert lance.dataset(path, version=1).count_rows() == 4000
