"""numba stays optional: lancelet imports, writes and reads files, kernels' modules
included, without importing numba when the kernels are turned off (``LANCELET_JIT=0``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lancelet.file.codecs import jit

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


def _sum_into(values: np.ndarray, out: np.ndarray) -> None:
    total = 0
    for value in values:
        total += value
    out[0] = total


def test_an_uncounted_kernel_compiles_counted_where_numba_has_no_switch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``_nrt`` is numba's private option: a numba without it still runs the kernel,
    with reference counting."""
    if not jit.enabled():
        pytest.skip("kernels are off (LANCELET_JIT=0)")
    made: list[dict[str, object]] = []
    import numba

    real = numba.njit

    def njit(*args: object, **options: object) -> object:
        if not args:  # lancelet's call (numba's own modules pass the function)
            made.append(options)
        return real(*args, **options)

    class Without:
        pass

    monkeypatch.setattr(numba, "njit", njit)
    for options_class, expected in ((Without, None), (jit._numba_options(), False)):
        monkeypatch.setattr(jit, "_numba_options", lambda c=options_class: c)
        kernel = jit.uncounted_kernel(_sum_into)
        out = np.zeros(1, dtype=np.int64)
        kernel(np.arange(10, dtype=np.int64), out)
        assert int(out[0]) == 45
        assert made[-1].get("_nrt") is expected
