"""Checks that misbehave on purpose, to show the harness catches each kind of failure."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa

from lancelet.errors import CorruptFileError


def by_first_byte(root: Path) -> pa.Table:
    """Byte 0 of ``data`` decides: 0 reads fine, 1 raises a lancelet error, 2 a foreign
    error, 3 aborts the interpreter, 4 returns other (valid) data, 5 hangs."""
    first = (root / "data").read_bytes()[0]
    if first == 1:
        raise CorruptFileError("damaged on purpose")
    if first == 2:
        raise KeyError("leaked")
    if first == 3:
        os.abort()
    if first == 4:
        return pa.table({"x": [2]})
    if first == 5:
        while True:
            pass
    return pa.table({"x": [1]})
