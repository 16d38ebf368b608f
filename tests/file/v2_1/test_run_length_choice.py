"""When format 2.2 run-length encodes: levels and values, compared with the files
pylance writes for the same data (byte for byte where the choices are the whole story).

pylance 14 run-length encodes whenever that is smaller than the alternative: levels
when the runs (3 bytes each, plus the chunk's 8-byte size word) beat their bit-packed
or flat size, even for a handful of levels; values when the runs (a value and a length
byte each) beat bit packing and the flat values, whatever their share of the values.
"""

from __future__ import annotations

from pathlib import Path

import lance.file as ref
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from lancelet.file import LanceFileWriter
from tests.file.v2_1.page_bytes import pages


def _write_both(tmp_path: Path, table: pa.Table) -> tuple[Path, Path]:
    mine, theirs = tmp_path / "mine.lance", tmp_path / "theirs.lance"
    with LanceFileWriter(mine, table.schema, version="2.2") as writer:
        writer.write_batch(table)
    with ref.LanceFileWriter(str(theirs), table.schema, version="2.2") as writer:
        writer.write_batch(table)
    return mine, theirs


def _value_compression(path: Path) -> str:
    _, columns = pages(path)
    layout = columns[0][0].layout.mini_block_layout
    return str(layout.value_compression.WhichOneof("compression"))


FIXTURE_REUSED = HealthCheck.function_scoped_fixture  # each example overwrites the files
lists = st.lists(st.none() | st.lists(st.integers(0, 3), max_size=6), min_size=1, max_size=60)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=lists)
# 4 runs of 5 int32 values: runs and the flat values both take 20 bytes; flat wins.
@example(rows=[[0, 0, 1, 0, 1]])
# 52 runs of 66 two-bit values: runs and bit packing both take 260 bytes, and a tie
# goes to the runs.
@example(
    rows=[
        [0, 0, 0, 0, 1],
        [0, 0, 0, 1],
        [0, 0, 1, 0, 1],
        [0, 1, 0, 1],
        [0, 1, 2, 0],
        [1, 0, 1, 0, 1],
        [0, 0, 1, 0, 1],
        [0, 0, 0, 0, 0, 1],
        [0, 0, 0, 1, 0, 1],
        [0, 1, 0, 1, 0, 1],
        [0, 0, 1, 0, 1, 0],
        [1, 2, 0, 1, 0, 1],
        [0, 1, 2, 0],
    ]
)
def test_small_list_pages_are_pylance_bytes(tmp_path: Path, rows: list[list[int] | None]) -> None:
    """Small pages of lists: flat levels where a few runs would not pay for the
    run-length chunk's size word, runs where they do."""
    table = pa.table({"l": pa.array(rows, pa.list_(pa.int32()))})
    mine, theirs = _write_both(tmp_path, table)
    assert mine.read_bytes() == theirs.read_bytes()


@pytest.mark.parametrize("rows", [29, 100, 5000])
@pytest.mark.parametrize("share", [0.3, 0.55, 0.75])
def test_values_with_many_runs(tmp_path: Path, rows: int, share: float) -> None:
    """Runs of wide values for up to 3/4 of the values are still smaller than bit
    packing or the flat values: pylance run-length encodes them."""
    rng = np.random.default_rng(rows)
    starts = rng.choice(np.arange(1, rows), int(share * rows) - 1, replace=False)
    run = np.zeros(rows, dtype=np.int64)
    run[starts] = 1
    run = np.cumsum(run)
    values = (run % 2 * 2**30 + run % 3).astype(np.int32)
    mine, theirs = _write_both(tmp_path, pa.table({"v": values}))
    assert _value_compression(theirs) == "rle"
    assert _value_compression(mine) == "rle"
    assert mine.read_bytes() == theirs.read_bytes()
