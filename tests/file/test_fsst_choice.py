"""Which pages get FSST: pylance's choice, checked against pylance itself.

pylance tries FSST on full-zip and mini-block pages of text and leaves binary values
(a BITMAP index's serialized bitmaps, JSONB documents) as they are unless the field
asks for FSST; lancelet must choose alike, and pylance must read what it wrote.
"""

from __future__ import annotations

from pathlib import Path

import lance.file as ref
import numpy as np
import pyarrow as pa
import pytest

from lancelet.file import LanceFileWriter
from tests.file.oracle import assert_same

FSST = {"lance-encoding:compression": "fsst"}


def _values(count: int, words_each: int = 2000) -> list[bytes]:
    """Values of words a symbol table shrinks; wide ones (full-zip) under 32 KiB (no
    per-value general compression)."""
    rng = np.random.default_rng(5)
    words = ["carefully", "ironic", "packages", "deposits", "the", "quickly"]
    return [" ".join(rng.choice(words, words_each)).encode() for _ in range(count)]


def _has_fsst(path: Path) -> bool:
    meta = ref.LanceFileReader(str(path)).metadata()
    return "Fsst" in meta.columns[0].pages[0].encoding


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize(
    ("dtype", "metadata"),
    [
        (pa.binary(), None),
        (pa.large_binary(), None),
        (pa.string(), None),
        (pa.large_string(), None),
        (pa.binary(), FSST),
    ],
)
@pytest.mark.parametrize("layout", ["FullZipLayout", "MiniBlockLayout"])
def test_fsst_as_pylance(
    tmp_path: Path, version: str, dtype: pa.DataType, metadata: dict[str, str] | None, layout: str
) -> None:
    values = _values(12) if layout == "FullZipLayout" else _values(20_000, 8)
    column = pa.array([v.decode() for v in values] if pa.types.is_unicode(dtype) or
                      pa.types.is_large_unicode(dtype) else values, dtype)  # fmt: skip
    schema = pa.schema([pa.field("x", dtype, metadata=metadata)])
    table = pa.table({"x": column}, schema=schema)
    ours, theirs = tmp_path / "ours.lance", tmp_path / "theirs.lance"
    with LanceFileWriter(ours, schema, version=version) as writer:
        writer.write_batch(table)
    with ref.LanceFileWriter(str(theirs), schema, version=version) as writer:
        writer.write_batch(table)
    for path in (ours, theirs):
        assert layout in ref.LanceFileReader(str(path)).metadata().columns[0].pages[0].encoding
    assert _has_fsst(ours) == _has_fsst(theirs)
    assert_same(table, ref.LanceFileReader(str(ours)).read_all().to_table())
