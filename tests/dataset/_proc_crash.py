"""Subprocess entry point for tests/dataset/test_crash.py: a writer that dies mid-commit.

Run as ``python _proc_crash.py URI POINT``.  The named step of the commit path is
replaced by one that ends the process with ``os._exit(9)``: no ``finally`` blocks,
no ``atexit``, no flushing, exactly what ``kill -9`` at that instant would leave.
Exit status 9 tells the parent that the crash point was reached; any other status
means the operation went past it, which the test reports as a failure.

``POINT == "slow_append"`` patches nothing: it appends an endless, slowly produced
stream of batches, so the parent can SIGKILL it while data files are being written.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

import lancelet as ll
import lancelet.io
import lancelet.io.local
from lancelet.table import naming
from lancelet.transaction.store import DatasetStore

CRASH_STATUS = 9
# The rows of the append the crash points interrupt (the test imports these).
APPEND_WRITER = 7
APPEND_KEYS = list(range(500, 512))
APPEND_MAX_ROWS_PER_FILE = 5  # several data files, so a crash leaves several orphans


def die(*_args: Any, **_kwargs: Any) -> None:
    os._exit(CRASH_STATUS)


def die_halfway_through(suffix: str) -> Callable[..., str]:
    """A ``_write_temp`` that, for a target named ``*suffix``, writes half the bytes to
    the temporary file (under the name the real one uses) and then dies."""
    write_temp = lancelet.io.local._write_temp

    # Extra arguments (such as durable=) pass through, whatever the signature grows.
    def patched(path: str, data: bytes, *args: Any, **kwargs: Any) -> str:
        if os.path.basename(path).endswith(suffix):
            write_temp(path, data[: len(data) // 2], *args, **kwargs)
            die()
        return write_temp(path, data, *args, **kwargs)

    return patched


def die_halfway_through_in_place(suffix: str) -> Callable[..., None]:
    """A ``_write_in_place`` that, for a target named ``*suffix``, overwrites the file
    with half the bytes (a torn hint, as a reader could see it) and then dies."""
    write_in_place = lancelet.io.local._write_in_place

    def patched(path: str, data: bytes, *args: Any, **kwargs: Any) -> None:
        if os.path.basename(path).endswith(suffix):
            write_in_place(path, data[: len(data) // 2], *args, **kwargs)
            die()
        write_in_place(path, data, *args, **kwargs)

    return patched


def die_on_call(real: Callable[..., Any], fatal: int) -> Callable[..., Any]:
    """``real``, except that its ``fatal``-th call dies instead."""
    calls = [0]

    def patched(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == fatal:
            die()
        return real(*args, **kwargs)

    return patched


def table(keys: list[int]) -> pa.Table:
    n = len(keys)
    return pa.table(
        {
            "writer": pa.array([APPEND_WRITER] * n, pa.int64()),
            "seq": pa.array([0] * n, pa.int64()),
            "k": pa.array(keys, pa.int64()),
        }
    )


def append(uri: str) -> None:
    ll.write_dataset(
        table(APPEND_KEYS), uri, mode="append", max_rows_per_file=APPEND_MAX_ROWS_PER_FILE
    )


def slow_batches() -> Iterator[pa.RecordBatch]:
    # Far more than the parent ever waits for: it always kills the writer first.
    for i in range(100_000):
        yield table(list(range(10_000 + i * 100, 10_100 + i * 100))).to_batches()[0]
        time.sleep(0.005)


def run(uri: str, point: str) -> None:
    if point == "before_transaction":
        DatasetStore.write_transaction = die  # type: ignore[method-assign,assignment]
        append(uri)
    elif point == "mid_transaction_temp":
        lancelet.io.local._write_temp = die_halfway_through(".txn")
        append(uri)
    elif point == "before_publish":
        # store.py calls the name bound in lancelet.io, so that is the one to replace.
        lancelet.io.FileIO.put_if_not_exists = die  # type: ignore[method-assign]
        append(uri)
    elif point == "mid_manifest_temp":
        lancelet.io.local._write_temp = die_halfway_through(naming.MANIFEST_SUFFIX)
        append(uri)
    elif point == "after_manifest_link":
        # Between os.link publishing the manifest and the removal of its staging name.
        link = os.link

        def link_then_die(src: str, dst: str, *args: Any, **kwargs: Any) -> None:
            link(src, dst, *args, **kwargs)
            if dst.endswith(naming.MANIFEST_SUFFIX):
                die()

        os.link = link_then_die
        append(uri)
    elif point == "before_hint":
        DatasetStore._write_hint = die  # type: ignore[method-assign]
        append(uri)
    elif point == "mid_hint_write":
        lancelet.io.local._write_in_place = die_halfway_through_in_place(naming.VERSION_HINT)
        append(uri)
    elif point == "delete_before_transaction":
        DatasetStore.write_transaction = die  # type: ignore[method-assign,assignment]
        ll.dataset(uri).delete("k >= 10 AND k < 13")
    elif point == "rebased_delete_before_transaction":
        # Read version 2, so the commit must first merge with the delete that made
        # version 3 (same fragment): the merged deletion file is written, then death
        # as the rebased transaction is (its first form was written before the merge).
        DatasetStore.write_transaction = die_on_call(DatasetStore.write_transaction, 2)  # type: ignore[method-assign]
        ll.dataset(uri, version=2).delete("k >= 6 AND k < 8")
    elif point == "create_before_publish":
        lancelet.io.FileIO.put_if_not_exists = die  # type: ignore[method-assign]
        ll.write_dataset(table(APPEND_KEYS), uri, mode="create")
    elif point == "create_mid_manifest_temp":
        lancelet.io.local._write_temp = die_halfway_through(naming.MANIFEST_SUFFIX)
        ll.write_dataset(table(APPEND_KEYS), uri, mode="create")
    elif point == "slow_append":
        reader = pa.RecordBatchReader.from_batches(table([]).schema, slow_batches())
        ll.write_dataset(reader, uri, mode="append", max_rows_per_file=300)
    else:
        raise SystemExit(f"unknown crash point {point!r}")


def main() -> None:
    run(sys.argv[1], sys.argv[2])
    # Reaching this line means the crash point was never hit.
    sys.exit(0)


if __name__ == "__main__":
    main()
