"""A file opened again: its column metadata, parsed and checked once by the bytes it
was read from, serves the next reader of those bytes (a dataset opened anew), while
a file whose metadata differs in any byte is parsed and checked afresh."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from lancelet.errors import CorruptFileError
from lancelet.file import LanceFileReader, LanceFileWriter, container
from lancelet.file.v2_1.read import dictionaries
from tests.file import surgery
from tests.file.gen import repeated_keys


def _count_calls(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """A list that grows by one at each call of ``lancelet.file.container.<name>``."""
    calls: list[int] = []
    real = getattr(container, name)

    def spy(*args: Any) -> Any:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(container, name, spy)
    return calls


def table() -> pa.Table:
    n = 5000
    return pa.table(
        {
            "a": pa.array(np.arange(n, dtype=np.int64) * 7),
            "s": pa.array([f"v{i % 13}" for i in range(n)]),
        }
    )


@pytest.mark.parametrize("version", ["2.0", "2.1"])
def test_reopened_file_parses_its_metadata_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    data = table()
    path = tmp_path / "t.lance"
    with LanceFileWriter(str(path), data.schema, version=version) as writer:
        writer.write_batch(data)
    copy = tmp_path / "copy.lance"
    copy.write_bytes(path.read_bytes())
    parsed = _count_calls(monkeypatch, "_parse_columns")
    container._COLUMNS.clear()
    for opened in (path, path, copy):
        assert LanceFileReader(opened).read_all().to_table().equals(data)
    assert len(parsed) == 1

    # One page buffer moved by 8 bytes: refused, though the good file was opened first.
    parts = surgery.parse(path.read_bytes())
    parts.columns[0].pages[0].buffer_offsets[0] += 8
    bad = tmp_path / "bad.lance"
    bad.write_bytes(surgery.emit(parts))
    with pytest.raises(CorruptFileError, match=r"bad\.lance.*page 0 buffer"):
        LanceFileReader(bad).read_all().to_table()


def test_reopened_dictionary_is_decoded_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Sorted keys repeated 1-7 times, one page: lancelet stores them with a
    # dictionary of some 50,000 keys, compressed whole (negative keys, which bit
    # packing would not narrow), which a short read decodes whole.
    n = 200_000
    keys = repeated_keys(2, n).column("k").to_numpy() - 10**9
    data = pa.table({"k": keys})
    path = tmp_path / "k.lance"
    with LanceFileWriter(str(path), data.schema, version="2.2") as writer:
        writer.write_batch(data)
    layouts = [p.layout.mini_block_layout for p in LanceFileReader(path)._leaves[0].info.pages]
    assert any(m.HasField("dictionary") for m in layouts)
    copy = tmp_path / "copy.lance"
    copy.write_bytes(path.read_bytes())
    decodes: list[int] = []
    real = dictionaries.decoded

    def spy(encoding: bytes, buffer: Any, items: int, dtype: pa.DataType, decode: Any) -> Any:
        def counted() -> Any:
            decodes.append(items)
            return decode()

        return real(encoding, buffer, items, dtype, counted)

    monkeypatch.setattr(dictionaries, "decoded", spy)
    dictionaries._DECODED.clear()
    for opened in (path, copy, path):
        got = LanceFileReader(opened).read_range(100, 50).to_table().column("k")
        assert got.to_pylist() == keys[100:150].tolist()
    assert len(decodes) == len({*decodes}) > 0  # each page's dictionary once


@pytest.mark.parametrize("version", ["2.0", "2.1"])
def test_files_written_alike_share_a_columns_metadata_yet_each_is_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    # Two files whose first column is stored alike (same values, same offsets): its
    # metadata is read once.  Their second columns differ, so the files do too.
    n = 5000
    first = pa.array(np.arange(n, dtype=np.int64) * 7)
    # Strings of other lengths: the second columns' buffers differ in size.
    seconds = [[f"{i}" * k for i in range(n)] for k in (1, 3)]
    tables = [pa.table({"a": first, "b": pa.array(b)}) for b in seconds]
    paths = []
    for k, data in enumerate(tables):
        paths.append(tmp_path / f"f{k}.lance")
        with LanceFileWriter(str(paths[-1]), data.schema, version=version) as writer:
            writer.write_batch(data)
    read = _count_calls(monkeypatch, "_read_column")
    for memo in (container._COLUMNS, container._READ_COLUMNS, container._INFOS):
        memo.clear()
    for path, data in zip(paths, tables, strict=True):
        assert LanceFileReader(path).read_all().to_table().equals(data)
    assert len(read) == 3

    # The second file's "b" moved onto the shared column's bytes: the overlap is
    # still found, though "a" came from the first file's reading.
    parts = surgery.parse(paths[1].read_bytes())
    parts.columns[1].pages[0].buffer_offsets[0] = parts.columns[0].pages[0].buffer_offsets[0]
    bad = tmp_path / "bad.lance"
    bad.write_bytes(surgery.emit(parts))
    with pytest.raises(CorruptFileError, match=r"bad\.lance.*overlaps"):
        LanceFileReader(bad).read_all().to_table()
