"""``LanceFileSession``, file statistics, ``stable_version`` and reader errors, checked
against pylance's ``lance.file``."""

from __future__ import annotations

import threading
from pathlib import Path

import lance.file as ref
import numpy as np
import pyarrow as pa
import pytest

import lancelet.file as ours
from lancelet import io

FILES = io.FileIO()


def _write_both(tmp_path: Path) -> tuple[ours.LanceFileSession, ref.LanceFileSession]:
    sessions = (
        ours.LanceFileSession(tmp_path / "ours"),
        ref.LanceFileSession(str(tmp_path / "ref")),
    )
    for session in sessions:
        for name, values in (("a.lance", [1, 2, 3]), ("sub/b.lance", [4, 5])):
            with session.open_writer(name) as writer:
                writer.write_batch(pa.table({"a": values}))
    return sessions


@pytest.mark.local_files("pylance's session writes the reference files to local disk")
def test_session_lists_reads_and_deletes_as_pylance(tmp_path: Path) -> None:
    mine, theirs = _write_both(tmp_path)
    assert mine.list() == sorted(theirs.list())
    assert mine.list("sub") == theirs.list("sub")
    got, expected = mine.list_with_delimiter(), theirs.list_with_delimiter()
    assert (got.common_prefixes, got.objects) == (expected.common_prefixes, expected.objects)
    assert mine.contains("a.lance") and not mine.contains("zz.lance")
    assert mine.open_reader("sub/b.lance").read_all().to_table() == pa.table({"a": [4, 5]})
    whole = FILES.read_bytes(io.join(io.normalize(tmp_path / "ours"), "a.lance"))
    assert mine.read_range("a.lance", 3, 20) == whole[3:23]
    with pytest.raises(OSError):
        mine.read_range("a.lance", 0, 10**9)
    mine.delete_file("a.lance")
    assert not mine.contains("a.lance")
    with pytest.raises(OSError):
        mine.delete_file("a.lance")


@pytest.mark.local_files("pylance writes the reference file to local disk")
def test_file_statistics_as_pylance(tmp_path: Path) -> None:
    table = pa.table(
        {
            "a": np.arange(10_000),
            "s": pa.array([f"v{i % 17}" for i in range(10_000)]),
        }
    )
    stats = []
    for lib in (ours, ref):
        path = str(tmp_path / f"{lib.__name__}.lance")
        with lib.LanceFileWriter(path, version="2.1") as writer:
            writer.write_batch(table)
        got = lib.LanceFileReader(path).file_statistics()
        stats.append([(c.num_pages, c.size_bytes) for c in got.columns])
    assert stats[0] == stats[1]


def test_stable_version_is_pylances() -> None:
    assert ours.stable_version() == ref.stable_version()


def test_take_out_of_range_is_a_value_error(tmp_path: Path) -> None:
    path = tmp_path / "f.lance"
    with ours.LanceFileWriter(path) as writer:
        writer.write_batch(pa.table({"a": range(10)}))
    with pytest.raises(ValueError):
        ours.LanceFileReader(path).take_rows([0, 10]).to_table()
    with pytest.raises(IndexError):
        ours.LanceFileReader(path).read_range(5, 10)


def test_no_schema_no_data_message_is_pylances(tmp_path: Path) -> None:
    for lib in (ours, ref):
        writer = lib.LanceFileWriter(str(tmp_path / f"{lib.__name__}.lance"))
        with pytest.raises(ValueError, match="Schema is unknown and file cannot be created"):
            writer.close()


def test_threads_sharing_a_writer_keep_rows_whole(tmp_path: Path) -> None:
    path = tmp_path / "shared.lance"
    schema = pa.schema([("thread", pa.int64()), ("value", pa.int64()), ("text", pa.string())])

    def write(writer: ours.LanceFileWriter, thread: int) -> None:
        for batch in range(20):
            values = np.arange(50) + 1000 * (thread * 20 + batch)
            table = pa.table(
                {
                    "thread": np.full(50, thread),
                    "value": values,
                    "text": [f"{thread}:{v}" for v in values],
                },
                schema=schema,
            )
            writer.write_batch(table)

    with ours.LanceFileWriter(path, schema) as writer:
        threads = [threading.Thread(target=write, args=(writer, t)) for t in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    got = ours.LanceFileReader(path).read_all().to_table().to_pydict()
    assert len(got["value"]) == 6 * 20 * 50
    rows = list(zip(got["thread"], got["value"], got["text"], strict=True))
    assert all(value // 1000 // 20 == thread for thread, value, _ in rows)
    assert all(text == f"{thread}:{value}" for thread, value, text in rows)
