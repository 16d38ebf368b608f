"""Where pylance 14 reads nested data wrong, lancelet keeps its own (right) answer.

These tests document pylance's behaviour: if one fails, pylance changed, and the
tolerance in test_nested_roundtrip_property.py (``PYLANCE_STRUCT_BUG``) can go.
"""

from __future__ import annotations

from pathlib import Path

import lance.file as ref
import pyarrow as pa
import pytest

from lancelet.file import LanceFileReader, LanceFileWriter
from tests.file.test_nested_roundtrip_property import PYLANCE_STRUCT_BUG

STRUCT_OF_LIST = pa.struct([("f", pa.list_(pa.int64())), ("g", pa.int32())])


def _pages(path: Path, writer: type, pages: list[list[object]], version: str) -> str:
    """A file whose column pages are ``pages`` (a page per batch: a tiny data cache)."""
    schema = pa.schema([("s", STRUCT_OF_LIST)])
    with writer(str(path), schema, version=version, data_cache_bytes=1) as out:
        for rows in pages:
            out.write_batch(pa.table({"s": pa.array(rows, STRUCT_OF_LIST)}))
    return str(path)


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize(
    "pages",
    [
        [[None], [{"f": [], "g": 1}]],
        [[{"f": None, "g": 2}], [None]],
        [[None, {"f": [1], "g": 3}], [{"f": [2], "g": 4}], [{"f": [], "g": 5}]],
    ],
    ids=["null struct, then an empty list", "null list, then a null struct", "three pages"],
)
def test_pylance_misreads_structs_over_lists_whose_pages_differ(
    tmp_path: Path, version: str, pages: list[list[object]]
) -> None:
    """A struct whose first field is a list, in pages that differ in whether the struct
    has nulls while the list has null or empty lists: pylance cannot read the file,
    whichever library wrote it (it fails on its own files alike); lancelet reads both."""
    want = [row for page in pages for row in page]
    for writer in (ref.LanceFileWriter, LanceFileWriter):
        path = _pages(tmp_path / f"{writer.__module__}.lance", writer, pages, version)
        assert len(ref.LanceFileReader(path).metadata().columns[0].pages) == len(pages)
        with pytest.raises((OSError, ValueError), match=PYLANCE_STRUCT_BUG):
            ref.LanceFileReader(path).read_all().to_table()
        assert LanceFileReader(path).read_all().to_table().column(0).to_pylist() == want
