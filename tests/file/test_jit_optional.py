"""numba stays optional: lancelet imports, writes and reads files, kernels' modules
included, without importing numba when the kernels are turned off (``LANCELET_JIT=0``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

_SCRIPT = """
import sys
import numpy as np
import pyarrow as pa
import lancelet
from lancelet.file import LanceFileReader, LanceFileWriter
from lancelet.file.codecs.kernels import bitpacking, chunks, fsst

words = np.array([b"alpha", b"beta", b"gamma", b"delta"] * 5000, dtype=object)
table = pa.table({"s": pa.array(words.tolist(), pa.string()),
                  "i": pa.array(np.arange(20000) % 1000, pa.int32())})
for version in ("2.0", "2.1", "2.2"):
    path = f"{sys.argv[1]}/{version}.lance"
    with LanceFileWriter(path, table.schema, version=version) as writer:
        writer.write_batch(table)
    assert LanceFileReader(path).read_all().to_table().equals(table)
assert "numba" not in sys.modules, "numba was imported"
"""


def test_no_numba_without_the_jit(tmp_path: Path) -> None:
    src = Path(__file__).resolve().parents[2] / "src"
    env = {**os.environ, "LANCELET_JIT": "0", "PYTHONPATH": str(src)}
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
