"""LanceTable's delete, update, merge and compaction under Spark Connect, where the
client has no SparkContext: run in a child process with a local Connect server, the
result read back by pylance and compared with a pyarrow computation."""

from __future__ import annotations

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

CONNECT = all(importlib.util.find_spec(m) for m in ("grpc", "grpc_status", "google.rpc"))


@pytest.mark.skipif(not CONNECT, reason="the Spark Connect client needs grpcio-status")
def test_table_jobs_under_spark_connect(tmp_path: Path) -> None:
    path = str(tmp_path / "table")
    ids = np.arange(100, dtype=np.int64)
    ll.write_dataset(pa.table({"id": ids, "v": ids * 2}), path, max_rows_per_file=40)
    job = Path(__file__).with_name("_connect_job.py")
    root = Path(__file__).parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "src"), str(root)])}
    done = subprocess.run(
        [sys.executable, str(job), path], capture_output=True, text=True, timeout=600, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["session"].startswith("pyspark.sql.connect")
    assert (result["deleted"], result["updated"], result["count"]) == (10, 10, 90)
    assert result["compacted"] >= 2  # fragments removed
    assert result["merged"] == [1, 1]  # id 50 updated; id 5 (deleted) inserted
    expected = {i: 2 * i + (1 if i < 20 else 0) for i in range(10, 100)}
    expected[50] = 5000
    expected[5] = 500
    got = lance.dataset(path).to_table()
    assert dict(zip(got["id"].to_pylist(), got["v"].to_pylist(), strict=True)) == expected
