"""Read forged files in a child process whose address space is capped.

A forged count (``num_items = 2**40``) must be refused before anything is allocated
for it.  Reading in the test process would prove little: Linux grants huge lazy
allocations, so an unchecked ``np.zeros(count)`` could pass or take the machine
down.  The child caps its address space at what it uses after its imports plus
:data:`HEADROOM`, so such an allocation fails there as a ``MemoryError``, and reports,
per file, what the read raised, how long it took and the peak resident memory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
HEADROOM = 512 << 20

_CHILD = r"""
import json, resource, sys, time
import numpy as np
from lancelet.errors import LanceletError
from lancelet.file import LanceFileReader

def vm_size():
    for line in open("/proc/self/status"):
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize")

limit = vm_size() + int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
for line in sys.stdin:
    case = json.loads(line)
    start = time.monotonic()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kind, message = "ok", ""
    try:
        reader = LanceFileReader(case["path"])
        columns = case["columns"]
        reader.read_all(columns=columns).to_table()
        n = reader.num_rows()
        reader.take_rows(np.array([0, n // 2, n - 1]), columns=columns).to_table()
    except LanceletError as exc:
        kind, message = type(exc).__name__, str(exc)
    except BaseException as exc:
        kind, message = "foreign " + type(exc).__name__, repr(exc)[:2000]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({
        "name": case["name"], "kind": kind, "message": message,
        "seconds": time.monotonic() - start, "rss_growth_kib": rss - rss_before,
    }), flush=True)
"""


@dataclass(frozen=True)
class Result:
    kind: str  # the lancelet error's class name, "ok", or "foreign <class>"
    message: str
    seconds: float
    rss_growth_kib: int


@dataclass(frozen=True)
class Case:
    name: str
    path: Path
    columns: list[str]


def read_bounded(cases: list[Case], timeout_s: float = 240.0) -> dict[str, Result]:
    """Read every case's columns (whole, then three rows) in one capped child."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "src"), str(REPO)]))
    lines = "".join(
        json.dumps({"name": c.name, "path": str(c.path), "columns": c.columns}) + "\n"
        for c in cases
    )
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(HEADROOM)],
        input=lines,
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=timeout_s,
    )
    out: dict[str, Result] = {}
    for line in proc.stdout.splitlines():
        record = json.loads(line)
        name = record.pop("name")
        out[name] = Result(**record)
    if len(out) != len(cases):
        raise AssertionError(
            f"the capped reader stopped after {len(out)} of {len(cases)} cases "
            f"(exit {proc.returncode}): {proc.stderr[-2000:]}"
        )
    return out
