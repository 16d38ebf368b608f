"""How a page's dictionary values are stored: pylance's choice, checked against
pylance itself.

In format 2.2 pylance bit-packs the values of an integer dictionary when that makes
them smaller, whatever compression the field names for dictionary values (up to
1,024 items in one inline block, more out of line at the widest item's width, the
last partial block packed or stored raw, whichever is smaller), and otherwise
compresses them as the field asks (lz4 unless told); format 2.1 stores them plain.
lancelet must choose alike, and pylance must read what it wrote.
"""

from __future__ import annotations

import re
from pathlib import Path

import lance.file as ref
import numpy as np
import pyarrow as pa
import pytest

from lancelet.file import container
from lancelet.io.local import LocalInputFile
from tests.file.oracle import assert_same, write_both_whole

ROWS = 50_000
_KINDS = (
    r"(InlineBitpacking|OutOfLineBitpacking|General|Flat|Variable|Fsst|CompressionAlgorithm\w+)"
)


def _columns() -> dict[str, pa.Array]:
    rng = np.random.default_rng(3)
    picks = rng.integers(0, 700, ROWS)
    return {
        "int64": pa.array(picks),
        "int64 wide": pa.array(picks * 10**12),
        "int64 negative": pa.array(picks - 350),
        "int64 nulls": pa.array(picks, mask=picks % 9 == 0),
        "uint64": pa.array(picks.astype(np.uint64)),
        "timestamp": pa.array(picks * 10**9).cast(pa.timestamp("ns")),
        "float64": pa.array(rng.normal(size=700)[picks]),
        "decimal": pa.array(picks).cast(pa.decimal128(24, 2)),
        "string": pa.array([f"v{i}" for i in picks]),
        # 1,024 items at most pylance packs inline; more it packs out of line.
        "int64 1024 items": pa.array(rng.permutation(np.arange(100_000) % 1024) * 7),
        "int64 2000 items": pa.array(rng.integers(0, 2000, 200_000) * 7),
        # Out of line: a last block of one item stored raw; floats two bits narrower.
        "int64 1025 items": pa.array(np.repeat(np.arange(1025) * 100, 40)),
        "float64 3000 items": pa.array(np.repeat(rng.random(3000), 30)),
        "int64 negative 3000 items": pa.array(np.repeat(np.arange(3000) - 1500, 30)),
    }


def _dictionary(path: Path) -> list[str]:
    """The encodings the page's dictionary is stored with, outermost first (none
    without a dictionary)."""
    encoding = ref.LanceFileReader(str(path)).metadata().columns[0].pages[0].encoding
    found = re.search(r"dictionary: Some\((.*?)num_dictionary_items", encoding, re.S)
    return [] if found is None else re.findall(_KINDS, found.group(1))


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize(
    "metadata",
    [
        {},
        {"lance-encoding:dict-values-compression": "zstd"},
        {"lance-encoding:dict-values-compression": "none"},
        {"lance-encoding:compression": "zstd"},
    ],
    ids=["default", "zstd", "none", "values zstd"],
)
@pytest.mark.parametrize("column", list(_columns()))
def test_dictionary_values_as_pylance(
    tmp_path: Path, version: str, metadata: dict[str, str], column: str
) -> None:
    values = _columns()[column]
    schema = pa.schema([pa.field("x", values.type, metadata=metadata)])
    table = pa.table({"x": values}, schema=schema)
    ours, theirs = write_both_whole(tmp_path, table, version)
    assert _dictionary(ours) == _dictionary(theirs)
    if version == "2.2" and column != "decimal":
        assert _dictionary(ours)  # the case is about a dictionary
    assert_same(table, ref.LanceFileReader(str(ours)).read_all().to_table())


def _dictionary_bytes(path: Path) -> int:
    source = LocalInputFile(str(path))
    page = container.read_columns(source, container.read_footer(source))[0].pages[0]
    return page.buffer_sizes[2]


@pytest.mark.parametrize("column", ["int64 2000 items", "int64 1025 items", "float64 3000 items"])
def test_dictionaries_packed_out_of_line_take_pylance_s_bytes(tmp_path: Path, column: str) -> None:
    """Same width and the same last block (packed, or raw when that is smaller): the
    dictionary buffers are as long as pylance's (their items' order may differ)."""
    table = pa.table({"x": _columns()[column]})
    ours, theirs = write_both_whole(tmp_path, table, "2.2")
    assert "OutOfLineBitpacking" in _dictionary(ours)
    assert _dictionary_bytes(ours) == _dictionary_bytes(theirs)
