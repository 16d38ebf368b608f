"""Zipping levels and values into full-zip buffers: pylance's own page bytes come back
byte for byte from the levels and values it zipped."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from lancelet.file.codecs.zipped import (
    Levels,
    bytepack,
    fixed_size_list_rows,
    zip_fixed,
    zip_variable,
)
from lancelet.file.v2_1.read import fullzip
from tests.file.v2_1.page_bytes import pages
from tests.file.v2_1.test_fullzip import CASES, Case, _decoders, _write

PLAIN = [
    c
    for c in CASES
    if c.name
    in {
        "binary",
        "large_binary",
        "string_2_1",
        "large_string",
        "vectors",
        "nested_vectors",
        "list_of_binary",
        "long_lists",
        "list_of_vectors",
        "struct_binary",
        "struct_list_binary",
        "struct_vector",
        "struct_list_vector",
        "forced_int32",
        "forced_short_strings",
        "list_of_binary_2_1",
        "forced_decimal",
        "forced_fixed_binary",
    }
]


def _fixed_bytes(values: pa.Array) -> np.ndarray:
    while pa.types.is_fixed_size_list(values.type):
        values = values.flatten()
    raw = np.frombuffer(values.buffers()[1], dtype=np.uint8)
    return raw.reshape(-1, 0) if not raw.size else raw


@pytest.mark.parametrize("case", PLAIN, ids=[c.name for c in PLAIN])
def test_rezipped_pages_are_pylance_bytes(tmp_path: Path, case: Case) -> None:
    path = _write(tmp_path, case)
    _, columns = pages(path)
    for page, decoder in zip(columns[0], _decoders(path, case), strict=True):
        layout = page.layout.full_zip_layout
        out = decoder.read(0, decoder.num_rows)
        shape = fullzip.Levels.of(out.layers, "test")
        levels = Levels(out.rep, out.defs, shape.max_rep, shape.max_visible)
        if layout.WhichOneof("details") == "bits_per_offset":
            values = out.values
            offsets = np.frombuffer(
                values.buffers()[1], dtype=np.int64 if "large" in str(values.type) else np.int32
            ).astype(np.int64)
            data = np.frombuffer(values.buffers()[2] or b"", dtype=np.uint8)
            zipped = zip_variable(
                offsets, data, levels, layout.num_items, length_bytes=layout.bits_per_offset // 8
            )
        else:
            raw = _fixed_bytes(out.values)
            width = layout.bits_per_value // 8
            zipped = zip_fixed(raw.reshape(-1, width), levels, layout.num_items)
        assert zipped.data == page.buffers[0]
        assert zipped.repetition_index == (page.buffers[1] if len(page.buffers) > 1 else None)
        assert (zipped.bits_rep, zipped.bits_def) == (layout.bits_rep, layout.bits_def)
        assert (zipped.num_items, zipped.num_visible_items) == (
            layout.num_items,
            layout.num_visible_items,
        )


def test_vectors_with_item_validity(tmp_path: Path) -> None:
    case = next(c for c in CASES if c.name == "vectors_null_items")
    path = _write(tmp_path, case)
    _, columns = pages(path)
    ((page,), (decoder,)) = columns[0], _decoders(path, case)
    out = decoder.read(0, decoder.num_rows)
    items = out.values.flatten()
    valid = np.asarray(items.is_valid()).reshape(len(out.values), -1)
    data = np.frombuffer(items.buffers()[1], np.uint8).reshape(len(out.values), -1)
    rows = fixed_size_list_rows([valid], data)
    zipped = zip_fixed(rows, Levels(out.rep, out.defs), page.layout.full_zip_layout.num_items)
    assert zipped.data == page.buffers[0]


def test_bytepack_widths() -> None:
    assert bytepack(np.array([0, 5]), 0) == b""
    assert bytepack(np.array([0, 255]), 255) == b"\x00\xff"
    assert bytepack(np.array([1]), 256) == b"\x01\x00"
    assert len(bytepack(np.array([1]), 1 << 32)) == 8
