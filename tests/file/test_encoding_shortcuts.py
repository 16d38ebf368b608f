"""Whether a page is run-length or dictionary encoded, chosen as pylance chooses.

The writer settles some choices from cheap bounds before working out sizes (runs
cut at 255 are at least as many as the runs; a dictionary holds at least one value):
these pages, written by both libraries, must get the same encodings."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import lance.file as ref
import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.file.oracle import write_both_whole

_KINDS = re.compile(r"\b(Rle|Dictionary|InlineBitpacking|OutOfLineBitpacking|Flat|Fsst|Variable)\b")


def _kinds(path: Path) -> list[str]:
    encoding = ref.LanceFileReader(str(path)).metadata().columns[0].pages[0].encoding
    return sorted(set(_KINDS.findall(encoding)))


def _same_choice(table: pa.Table, version: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        ours, theirs = write_both_whole(Path(folder), table, version)
        assert _kinds(ours) == _kinds(theirs), table.column(0)[:20]


# Mostly short runs (where the choice is close: a run costs a value and a length
# byte), some longer than a length byte holds.
runs = st.lists(
    st.tuples(st.integers(0, 2**40), st.sampled_from([1, 1, 1, 2, 2, 3, 5, 300])),
    min_size=1,
    max_size=400,
)


@settings(max_examples=60, deadline=None)
@given(
    runs=runs,
    dtype=st.sampled_from(["int8", "int32", "int64"]),
    version=st.sampled_from(["2.1", "2.2"]),
)
def test_run_length_choice_as_pylance(
    runs: list[tuple[int, int]], dtype: str, version: str
) -> None:
    values = np.repeat([v for v, _ in runs], [n for _, n in runs])
    top = np.iinfo(dtype).max
    _same_choice(pa.table({"v": pa.array(values % top, type=dtype)}), version)


@settings(max_examples=40, deadline=None)
@given(
    distinct=st.integers(1, 300),
    width=st.integers(0, 6),
    rows=st.integers(100, 5000),
    seed=st.integers(0, 2**16),
)
def test_dictionary_choice_as_pylance(distinct: int, width: int, rows: int, seed: int) -> None:
    """Short strings of few values (one-byte flags: a dictionary's indices outweigh
    them) and wider ones."""
    rng = np.random.default_rng(seed)
    words = [f"{i:0{width}d}"[-width:] if width else "" for i in range(distinct)]
    picked = [words[i] for i in rng.integers(0, distinct, rows)]
    _same_choice(pa.table({"s": pa.array(picked, pa.string())}), "2.2")
