"""Rows of several files read as one table (a compaction's small files): the same
rows as reading each file on its own, for files written by pylance and by lancelet,
and None where the files do not qualify."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from lance.file import LanceFileWriter as PylanceWriter

from lancelet.file.many import take_from_files
from lancelet.file.reader import LanceFileReader
from lancelet.file.writer import LanceFileWriter


def _table(rows: int, seed: int) -> pa.Table:
    """Integers, dictionary-worthy and FSST-worthy strings, nulls, a constant column."""
    rng = np.random.default_rng(seed)
    modes = np.array(["MAIL", "SHIP", "AIR", "RAIL", "TRUCK"])
    return pa.table(
        {
            "key": pa.array(rng.integers(0, 1 << 40, rows)),
            "small": pa.array(rng.integers(0, 7, rows), pa.int32()),
            "mode": pa.array(modes[rng.integers(0, len(modes), rows)]),
            "text": pa.array([f"comment {seed} number {i} " * int(1 + i % 5) for i in range(rows)]),
            "maybe": pa.array(
                [None if i % 3 == 0 else float(i) / 7 for i in range(rows)], pa.float64()
            ),
            "same": pa.array([7] * rows, pa.int16()),
            "none": pa.nulls(rows, pa.utf8()),
        }
    )


def _write(path: Path, table: pa.Table, writer: str, version: str) -> str:
    if writer == "pylance":
        with PylanceWriter(str(path), table.schema, version=version) as out:
            out.write_batch(table)
    else:
        with LanceFileWriter(str(path), table.schema, version=version) as out:
            out.write_batch(table)
    return str(path)


def _expected(readers: list[LanceFileReader], rows: list[np.ndarray]) -> pa.Table:
    parts = [r.take_rows(w).to_table() for r, w in zip(readers, rows, strict=True)]
    return pa.concat_tables(parts).combine_chunks()


def _wanted(size: int, density: str, rng: np.random.Generator) -> np.ndarray:
    """Most rows (a compaction's live rows), or a few with a long gap (whole chunks
    of a page not wanted)."""
    if density == "dense":
        return np.flatnonzero(rng.random(size) > 0.03)
    every = np.arange(0, size, 97)
    return every[(every < 100) | (every > 1600)]


@pytest.mark.parametrize("writer", ["pylance", "lancelet"])
@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("density", ["dense", "sparse"])
def test_rows_of_many_files_match_reading_each(
    tmp_path: Path, writer: str, version: str, density: str
) -> None:
    rng = np.random.default_rng(5)
    sizes = [1500, 1, 2000, 700, 4500, 300]
    paths = [
        _write(tmp_path / f"{i}.lance", _table(n, i), writer, version) for i, n in enumerate(sizes)
    ]
    readers = [LanceFileReader(p) for p in paths]
    # None of one file, all of another.
    rows = [_wanted(n, density, rng) for n in sizes]
    rows[1] = np.zeros(0, np.int64)
    rows[3] = np.arange(sizes[3])
    found = take_from_files(readers, rows)
    assert found is not None
    assert found.schema == readers[0].schema
    assert found.equals(_expected(readers, rows))


def test_files_of_other_schemas_or_nesting_are_not_read_together(tmp_path: Path) -> None:
    plain = _table(100, 1)
    nested = plain.append_column("tags", pa.array([[i] for i in range(100)]))
    one = LanceFileReader(_write(tmp_path / "a.lance", plain, "lancelet", "2.1"))
    other = LanceFileReader(_write(tmp_path / "b.lance", plain.drop(["same"]), "lancelet", "2.1"))
    lists = LanceFileReader(_write(tmp_path / "c.lance", nested, "lancelet", "2.1"))
    old = LanceFileReader(_write(tmp_path / "d.lance", plain, "lancelet", "2.0"))
    every = np.arange(100)
    assert take_from_files([one, other], [every, every]) is None
    assert take_from_files([lists, lists], [every, every]) is None
    assert take_from_files([old, old], [every, every]) is None
    assert take_from_files([one, one], [every, every]) is not None
