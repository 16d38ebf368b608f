"""Which full-zip pages get FSST: pylance's choice, checked against pylance itself.

pylance tries FSST on full-zip pages of text and leaves binary values (a BITMAP
index's serialized bitmaps, say) as they are unless the field asks for FSST; lancelet
must choose alike, and pylance must read what it wrote.
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


def _values(count: int) -> list[bytes]:
    """Wide values (full-zip), each under 32 KiB (no per-value general compression),
    made of words a symbol table shrinks."""
    rng = np.random.default_rng(5)
    words = ["carefully", "ironic", "packages", "deposits", "the", "quickly"]
    return [" ".join(rng.choice(words, 2000)).encode() for _ in range(count)]


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
def test_fullzip_fsst_as_pylance(
    tmp_path: Path, version: str, dtype: pa.DataType, metadata: dict[str, str] | None
) -> None:
    values = _values(12)
    column = pa.array([v.decode() for v in values] if pa.types.is_unicode(dtype) or
                      pa.types.is_large_unicode(dtype) else values, dtype)  # fmt: skip
    schema = pa.schema([pa.field("x", dtype, metadata=metadata)])
    table = pa.table({"x": column}, schema=schema)
    ours, theirs = tmp_path / "ours.lance", tmp_path / "theirs.lance"
    with LanceFileWriter(ours, schema, version=version) as writer:
        writer.write_batch(table)
    with ref.LanceFileWriter(str(theirs), schema, version=version) as writer:
        writer.write_batch(table)
    assert "FullZipLayout" in ref.LanceFileReader(str(ours)).metadata().columns[0].pages[0].encoding
    assert _has_fsst(ours) == _has_fsst(theirs)
    assert_same(table, ref.LanceFileReader(str(ours)).read_all().to_table())
