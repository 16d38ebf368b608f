"""``import lancelet`` loads what every user needs and nothing a rare path needs: the
progress bars' terminal library, the compiled kernels' compiler, the CLI's argument
parser and Spark are imported when first used."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

_LATER = ("rich", "numba", "pyspark", "click")

_SCRIPT = f"""
import sys
import lancelet
loaded = [name for name in {_LATER!r} if name in sys.modules]
assert not loaded, f"import lancelet loaded {{loaded}}"
"""


def test_import_leaves_rare_paths_unloaded() -> None:
    src = Path(__file__).resolve().parents[2] / "src"
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
