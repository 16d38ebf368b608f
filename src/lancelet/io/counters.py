"""Process-wide counts of the read requests lancelet made of storage and of the bytes
they returned, over every backend (pylance's ``iops_counter`` and
``bytes_read_counter``).  Writes, listings and metadata requests are not counted,
as pylance does not count them.  A read of a local file is one range cut from its
memory map: counted as one request, though the operating system pages it in."""

from __future__ import annotations

import threading

from lancelet.io import accounting

_lock = threading.Lock()
_requests = 0
_bytes = 0


def count_read(requests: int, nbytes: int) -> None:
    global _requests, _bytes
    with _lock:
        _requests += requests
        _bytes += nbytes
    accounting.add_reads(requests, nbytes)


def iops_counter() -> int:
    """Read requests made since the process started."""
    return _requests


def bytes_read_counter() -> int:
    """Bytes those read requests returned."""
    return _bytes
