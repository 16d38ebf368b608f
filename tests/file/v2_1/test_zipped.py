"""Zipping levels and values into full-zip buffers: pylance's own page bytes come back
byte for byte from the levels and values it zipped."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


# -- against a plain item-by-item description of the layout -----------------------------


def _reference_zip(
    rep: list[int], defs: list[int], max_visible: int | None, values: list[bytes],
    fixed_width: int | None, length_bytes: int,
) -> bytes:  # fmt: skip
    """The data buffer written item by item, straight from the module docstring."""
    bits_def = max(defs).bit_length() if defs else 0
    bits = (max(rep).bit_length() if rep else 0) + bits_def
    word_bytes = 0 if bits == 0 else 1 if bits <= 8 else 2 if bits <= 16 else 4
    out = bytearray()
    visible_values = iter(values)
    for r, d in zip(rep, defs, strict=True):
        out += ((r << bits_def) | d).to_bytes(4, "little")[:word_bytes]
        if max_visible is not None and d > max_visible:
            continue
        value = next(visible_values)
        if fixed_width is not None:
            out += value
        elif d == 0:
            out += len(value).to_bytes(length_bytes, "little") + value
    return bytes(out)


ZipCase = tuple[Levels, int | None, list[int], list[int], list[bytes]]


@st.composite
def _zip_cases(draw: st.DrawFn) -> ZipCase:
    """Levels (with or without list layers hiding items) and one value per visible
    item; null values are empty, or hold bytes that the page must leave out."""
    count = draw(st.integers(0, 30))
    max_def, max_rep = draw(st.integers(0, 3)), draw(st.integers(0, 2))
    defs = draw(st.lists(st.integers(0, max_def), min_size=count, max_size=count))
    rep = draw(st.lists(st.integers(0, max_rep), min_size=count, max_size=count))
    max_visible = draw(st.none() | st.integers(0, max_def))
    visible_defs = [d for d in defs if max_visible is None or d <= max_visible]
    garbage = draw(st.booleans())
    values = [
        value if d == 0 or garbage else b""
        for d in visible_defs
        for value in [draw(st.binary(max_size=9))]
    ]
    levels = Levels(np.asarray(rep), np.asarray(defs), max_rep, max_visible)
    return levels, max_visible, rep, defs, values


@settings(max_examples=150, deadline=None)
@given(case=_zip_cases(), length_bytes=st.sampled_from([4, 8]), width=st.integers(0, 5))
def test_zipping_matches_the_item_by_item_layout(
    case: ZipCase, length_bytes: int, width: int
) -> None:
    levels, max_visible, rep, defs, values = case
    count = len(defs)
    # Offsets that start past 0, into data with bytes before and after the values.
    offsets = np.concatenate(([5], 5 + np.cumsum([len(v) for v in values]))).astype(np.int64)
    data = np.frombuffer(b"\x01" * 5 + b"".join(values) + b"\x02" * 3, dtype=np.uint8)
    zipped = zip_variable(offsets, data, levels, count, length_bytes=length_bytes)
    assert zipped.data == _reference_zip(rep, defs, max_visible, values, None, length_bytes)
    rows = [bytes([i % 251]) * width for i in range(len(values))]
    fixed = np.frombuffer(b"".join(rows), np.uint8).reshape(len(values), width)
    zipped = zip_fixed(fixed, levels, count)
    assert zipped.data == _reference_zip(rep, defs, max_visible, rows, width, length_bytes)
