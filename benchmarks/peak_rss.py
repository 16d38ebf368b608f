"""Peak memory of one measured step, in a fresh Python process (Linux only); or of a
stretch of the running process (:func:`reset_peak`, :func:`rise_since`).

The step's setup runs first; then the kernel's high-water mark is reset to the
current resident size (``/proc/self/clear_refs``), the step runs, and the rise of
the high-water mark over the resident size before it is the step's peak.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

_MEASURE = """
def _status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1])

with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # reset the high-water mark to the current RSS
_base = _status("VmRSS:")
{measured}
print((_status("VmHWM:") - _base) / 1024)
"""


def _status_kib(key: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(key):
                return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {key}")


def reset_peak() -> int:
    """Reset this process's high-water mark to its resident size; returns that size
    (KiB), the base of :func:`rise_since`."""
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")
    return _status_kib("VmRSS:")


def rise_since(base: int) -> float:
    """MiB this process's peak RSS rose above ``base`` (from :func:`reset_peak`)."""
    return (_status_kib("VmHWM:") - base) / 1024


def rise_mib(setup: str, measured: str) -> float:
    """MiB the peak RSS rises while ``measured`` runs, after ``setup`` (both Python
    source, run in one fresh interpreter)."""
    code = textwrap.dedent(setup) + _MEASURE.format(measured=textwrap.dedent(measured))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def warm_up(module: str) -> str:
    """Setup source that loads ``module`` (``lancelet`` or ``lance``) and has it write and
    read a small table first, so that a measured step's peak leaves out the one-time
    cost of loading a library's compiled kernels (numba's, for lancelet: about 100 MiB
    in the first write of a process)."""
    return f"""
import tempfile as _tempfile
import pyarrow as _pa
import {module} as _library
with _tempfile.TemporaryDirectory() as _scratch:
    _small = _pa.table({{"i": list(range(5000)), "s": [str(i) * 3 for i in range(5000)]}})
    _library.write_dataset(_small, _scratch + "/warm")
    _library.dataset(_scratch + "/warm").to_table()
"""
