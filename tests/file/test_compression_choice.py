"""Which compression a string or binary page gets: pylance's choice, checked against
pylance itself.

pylance tries FSST on text only, unless the field asks for FSST, and not where the
field asks for lz4 or zstd; it leaves binary values (a BITMAP index's serialized
bitmaps, JSONB documents) as they are.  Wide values (full-zip pages) asking for a
general compression get zstd, each value on its own, lz4 asked for included.
lancelet must choose alike, and pylance must read what it wrote.
"""

from __future__ import annotations

from pathlib import Path

import lance.file as ref
import numpy as np
import pyarrow as pa
import pytest

from tests.file.oracle import assert_same, write_both_whole

COMPRESSION = "lance-encoding:compression"
LEVEL = "lance-encoding:compression-level"
# (rows, words a value): narrow values (mini-block); a small full-zip page (too
# little to compress each value); a large one.
SHAPES = {"miniblock": (20_000, 8), "small full-zip": (30, 300), "full-zip": (12, 2000)}


def _values(count: int, words_each: int) -> list[bytes]:
    """Values of words a symbol table shrinks."""
    rng = np.random.default_rng(5)
    words = ["carefully", "ironic", "packages", "deposits", "the", "quickly"]
    return [" ".join(rng.choice(words, words_each)).encode() for _ in range(count)]


def _choice(path: Path) -> tuple[str, bool, str | None]:
    """The page's layout, whether it has FSST, and its general compression (scheme
    and level as pylance describes them)."""
    encoding = ref.LanceFileReader(str(path)).metadata().columns[0].pages[0].encoding
    layout = "FullZipLayout" if "FullZipLayout" in encoding else "MiniBlockLayout"
    general = None
    if "BufferCompression" in encoding:
        general = encoding.split("BufferCompression", 1)[1].split("}", 1)[0]
        general = " ".join(general.split())
    return layout, "Fsst" in encoding, general


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("dtype", [pa.binary(), pa.large_binary(), pa.string(), pa.large_string()])
@pytest.mark.parametrize(
    "metadata",
    [
        {},
        {COMPRESSION: "none"},
        {COMPRESSION: "fsst"},
        {COMPRESSION: "lz4"},
        {COMPRESSION: "zstd"},
        {COMPRESSION: "zstd", LEVEL: "7"},
    ],
    ids=["default", "none", "fsst", "lz4", "zstd", "zstd-7"],
)
@pytest.mark.parametrize("shape", list(SHAPES))
def test_compression_as_pylance(
    tmp_path: Path, version: str, dtype: pa.DataType, metadata: dict[str, str], shape: str
) -> None:
    values = _values(*SHAPES[shape])
    text = pa.types.is_string(dtype) or pa.types.is_large_string(dtype)
    column = pa.array([v.decode() for v in values] if text else values, dtype)
    schema = pa.schema([pa.field("x", dtype, metadata=metadata)])
    table = pa.table({"x": column}, schema=schema)
    ours, theirs = write_both_whole(tmp_path, table, version)
    assert _choice(ours) == _choice(theirs)
    assert _choice(ours)[0] == ("MiniBlockLayout" if shape == "miniblock" else "FullZipLayout")
    assert_same(table, ref.LanceFileReader(str(ours)).read_all().to_table())
