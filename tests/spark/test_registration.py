"""``format("lance")`` without ``lancelet.spark.session()``: Spark's static
registration of Python data sources finds the installed ``pyspark_lancelet``."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.spark.source import LanceDataSource


def test_the_module_spark_looks_for() -> None:
    spec = importlib.util.find_spec("pyspark_lancelet")
    assert spec is not None, "pyspark_lancelet is not installed"
    module = importlib.import_module("pyspark_lancelet")
    assert module.DefaultSource is LanceDataSource


@pytest.mark.skipif(importlib.util.find_spec("pyspark_lancelet") is None, reason="not installed")
def test_plain_session_reads_and_writes(tmp_path: Path) -> None:
    path = str(tmp_path / "table")
    ids = np.arange(100, dtype=np.int64)
    ll.write_dataset(pa.table({"id": ids, "v": ids * 2}), path)
    job = Path(__file__).with_name("_plain_session_job.py")
    done = subprocess.run(
        [sys.executable, str(job), path],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"count": 100, "thread": [5]}
    assert lance.dataset(path).count_rows() == 101
