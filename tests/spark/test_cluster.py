"""On Spark's ``local-cluster`` master, with executors in their own JVMs and Python
workers, reads (through the bridge), a job's write and a ``LanceTable`` delete work
as in local mode.  Expected values are pylance's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet.spark.bridge import bridge_jar


def test_reads_writes_and_table_operations_on_a_cluster(tmp_path: Path) -> None:
    source, target = str(tmp_path / "source"), str(tmp_path / "target")
    ids = np.arange(5000, dtype=np.int64)
    lance.write_dataset(pa.table({"id": ids, "k": ids % 7}), source, max_rows_per_file=1200)
    job = Path(__file__).with_name("_cluster_job.py")
    # The worker writes its executors' folders under SPARK_WORKER_DIR.
    env = {**os.environ, "SPARK_WORKER_DIR": str(tmp_path / "work")}
    done = subprocess.run(
        [sys.executable, str(job), source, target],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    table = lance.dataset(source).to_table()
    assert out["count"] == table.num_rows
    assert out["filtered"] == sorted(table.filter(pc.field("k") == 3)["id"].to_pylist())
    assert out["limited"] == 4
    assert ("lancelet-spark-bridge" in str(out["jars"])) == (bridge_jar() is not None)
    written = lance.dataset(target).to_table()
    assert sorted(written["id"].to_pylist()) == sorted(
        table.filter(pc.field("k") != 5)["id"].to_pylist()
    )
