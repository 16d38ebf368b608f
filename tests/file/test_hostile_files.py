"""Unusual and hostile files: read right, or refused with a lancelet error naming the file
and the column; never a foreign exception, an invalid array, or a crashed interpreter.

Forged files are built from a good one with :mod:`tests.file.surgery`.  Those that
used to abort the process are read in a child process through the fuzz harness.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

import lance.file as ref
import numpy as np
import pyarrow as pa
import pytest

from lancelet._proto import encodings_v2_0_pb2 as enc_pb
from lancelet.errors import CorruptFileError
from lancelet.file import LanceFileReader, LanceFileWriter
from tests.file import surgery
from tests.file.oracle import write_lancelet, write_reference
from tests.fuzz.data_file_checks import DATA, read_three_ways
from tests.fuzz.harness import Campaign, replacement

# --- Arrow dictionaries whose pages hold a null item (issue item 6) ---------------------


def dictionary_table(n: int = 20_000) -> pa.Table:
    rng = np.random.default_rng(6)
    indices = pa.array(rng.integers(0, 5, n).astype(np.int32), mask=rng.random(n) < 0.2)
    column = pa.DictionaryArray.from_arrays(indices, pa.array(["a", "b", "c", "d", "e"]))
    return pa.table({"d": column, "i": pa.array(np.arange(n))})


def as_values(arr: pa.Array | pa.ChunkedArray) -> list[object]:
    return arr.cast(arr.type.value_type).to_pylist()


def test_take_across_dictionary_pages_with_null_items(tmp_path: Path) -> None:
    table = dictionary_table()
    path = write_reference(tmp_path / "d.lance", table, data_cache_bytes=4096)
    ours = LanceFileReader(path)
    assert len(ours.metadata().columns[0].pages) > 3
    rows = np.array([3, 5000, 5001, 12_345, 19_999])
    want = as_values(table["d"].take(rows))
    assert as_values(ref.LanceFileReader(str(path)).take_rows(rows).to_table()["d"]) == want
    assert as_values(ours.take_rows(rows).to_table()["d"]) == want
    # Batches that straddle pages concatenate them too.
    batches = ours.read_range(100, 9000, batch_size=4000).to_batches()
    got = [v for b in batches for v in as_values(b.column(0))]
    assert got == as_values(table["d"].slice(100, 9000))


def test_writer_concatenates_dictionaries_with_null_items(tmp_path: Path) -> None:
    items = pa.array(["x", None, "y"])
    parts = [
        pa.DictionaryArray.from_arrays(pa.array(np.arange(300, dtype=np.int32) % 3), items)
        for _ in range(4)
    ]
    table = pa.Table.from_arrays([pa.chunked_array(parts)], names=["d"])
    path = write_lancelet(tmp_path / "w.lance", table, data_cache_bytes=64 * 1024)
    want = as_values(table["d"])
    assert as_values(ref.LanceFileReader(str(path)).read_all().to_table()["d"]) == want
    assert as_values(LanceFileReader(path).read_all().to_table()["d"]) == want


# --- structs without fields (issue item 7) ---------------------------------------------

EMPTY = pa.struct([])
EMPTY_TABLES = {
    "alone": pa.table({"e": pa.array([{}] * 10, EMPTY)}),
    "beside": pa.table({"i": pa.array(range(10)), "e": pa.array([{}] * 10, EMPTY)}),
    "nested": pa.table(
        {
            "st": pa.array(
                [{"a": i, "e": {}} for i in range(10)], pa.struct([("a", pa.int32()), ("e", EMPTY)])
            )
        }
    ),
}


@pytest.mark.parametrize("writer", ["lancelet", "pylance"])
@pytest.mark.parametrize("case", sorted(EMPTY_TABLES))
def test_struct_without_fields_keeps_its_rows(tmp_path: Path, writer: str, case: str) -> None:
    table = EMPTY_TABLES[case]
    write = write_lancelet if writer == "lancelet" else write_reference
    path = write(tmp_path / "e.lance", table)
    reader = LanceFileReader(path)
    assert reader.num_rows() == 10
    assert reader.read_all().to_table().equals(table)
    assert reader.take_rows([1, 2, 9]).to_table().equals(table.take([1, 2, 9]))
    assert reader.read_range(2, 5).to_table().equals(table.slice(2, 5))
    assert ref.LanceFileReader(str(path)).read_all().to_table().num_rows == 10


# --- string offsets and UTF-8 (issue item 11) -------------------------------------------

STRINGS = pa.table(
    {
        "s": pa.array([None if i % 7 == 0 else f"value {i}" for i in range(300)]),
        "b": pa.array([None if i % 7 == 0 else f"value {i}".encode() for i in range(300)]),
        "ls": pa.array([f"large {i}" for i in range(300)], pa.large_string()),
    }
)


def page_buffer(path: Path, column: int, buffer: int) -> tuple[int, int]:
    parts = surgery.parse(path.read_bytes())
    page = parts.page(column)
    return page.buffer_offsets[buffer], page.buffer_sizes[buffer]


def patch(path: Path, offset: int, data: bytes) -> Path:
    raw = bytearray(path.read_bytes())
    raw[offset : offset + len(data)] = data
    bad = path.with_name("bad.lance")
    bad.write_bytes(bytes(raw))
    return bad


def read_paths(path: Path) -> list[Callable[[], pa.Table]]:
    reader = LanceFileReader(path)
    return [
        lambda: reader.read_all().to_table(),
        lambda: reader.take_rows([5, 6]).to_table(),
        lambda: pa.Table.from_batches(list(reader.read_range(1, 20).to_batches())),
    ]


@pytest.mark.parametrize("column", [0, 1, 2])
def test_string_offset_past_the_bytes_is_refused(tmp_path: Path, column: int) -> None:
    path = write_reference(tmp_path / "s.lance", STRINGS)
    offsets_at, _ = page_buffer(path, column, 0)
    # Row 6's end offset (u64) forged far past the bytes: once read as a null.
    bad = patch(path, offsets_at + 8 * 6, struct.pack("<Q", 2**40))
    name = STRINGS.column_names[column]
    for read in read_paths(bad):
        with pytest.raises(CorruptFileError, match=rf"bad\.lance.*'{name}'"):
            read()


@pytest.mark.parametrize("column", [0, 2])
def test_invalid_utf8_is_refused(tmp_path: Path, column: int) -> None:
    path = write_reference(tmp_path / "s.lance", STRINGS)
    data_at, _ = page_buffer(path, column, 1)
    raw = path.read_bytes()
    text = b"value 6" if column == 0 else b"large 6"
    bad = patch(path, raw.index(text, data_at), b"\xff")
    with pytest.raises(pa.ArrowInvalid, match="utf-8"):  # pylance refuses it too
        ref.LanceFileReader(str(bad)).read_all().to_table()
    name = STRINGS.column_names[column]
    for read in read_paths(bad):
        with pytest.raises(CorruptFileError, match=rf"bad\.lance.*'{name}'.*UTF-8"):
            read()


def test_invalid_utf8_in_binary_is_just_bytes(tmp_path: Path) -> None:
    path = write_reference(tmp_path / "s.lance", STRINGS)
    data_at, _ = page_buffer(path, 1, 1)
    bad = patch(path, path.read_bytes().index(b"value 6", data_at), b"\xff")
    got = LanceFileReader(bad).read_all().to_table()
    assert got["b"][6].as_py() == b"\xffalue 6"
    got.validate(full=True)


def test_utf8_in_non_ascii_strings(tmp_path: Path) -> None:
    table = pa.table({"s": pa.array(["héllo", "日本", None, "🙂 ok"] * 100)})
    path = write_lancelet(tmp_path / "u.lance", table)
    assert LanceFileReader(path).read_all().to_table().equals(table)
    bad = patch(path, path.read_bytes().index("日".encode()) + 1, b"\x41")
    with pytest.raises(CorruptFileError, match="UTF-8"):
        LanceFileReader(bad).read_all().to_table()


# --- schemas, pages and encodings that disagree (issue items 13 and 14) -------------------

FIXTURE = pa.table(
    {
        "i": pa.array(range(300), pa.int32()),
        "s": pa.array([None if k % 5 == 0 else f"v{k}" for k in range(300)]),
        "st": pa.array(
            [{"a": k, "b": k / 2} for k in range(300)],
            pa.struct([("a", pa.int64()), ("b", pa.float64())]),
        ),
        "l": pa.array([[k] * (k % 4) for k in range(300)], pa.list_(pa.int64())),
        "d": pa.DictionaryArray.from_arrays(
            pa.array(np.arange(300, dtype=np.int32) % 3), pa.array(["p", "q", "r"])
        ),
    }
)
# Column indices: i 0, s 1, st 2 (a 3, b 4), l 5 (item 6), d 7.

Forge = Callable[[surgery.FileParts], None]


def retype(field: str, logical_type: str) -> Forge:
    def forge(parts: surgery.FileParts) -> None:
        parts.field(field).logical_type = logical_type

    return forge


def page_length(column: int, length: int) -> Forge:
    def forge(parts: surgery.FileParts) -> None:
        parts.page(column).length = length

    return forge


def edit_encoding(column: int, edit: Callable[[enc_pb.ArrayEncoding], None]) -> Forge:
    def forge(parts: surgery.FileParts) -> None:
        encoding = parts.encoding(column)
        edit(encoding)
        parts.set_encoding(column, 0, encoding)

    return forge


def drop_pages(column: int) -> Forge:
    def forge(parts: surgery.FileParts) -> None:
        del parts.columns[column].pages[:]

    return forge


def set_flat_bits(bits: int) -> Callable[[enc_pb.ArrayEncoding], None]:
    def edit(encoding: enc_pb.ArrayEncoding) -> None:
        encoding.nullable.no_nulls.values.flat.bits_per_value = bits

    return edit


def list_items(count: int) -> Callable[[enc_pb.ArrayEncoding], None]:
    def edit(encoding: enc_pb.ArrayEncoding) -> None:
        encoding.list.num_items = count

    return edit


def dictionary_items(count: int) -> Callable[[enc_pb.ArrayEncoding], None]:
    def edit(encoding: enc_pb.ArrayEncoding) -> None:
        encoding.dictionary.num_dictionary_items = count

    return edit


def buffer_index(index: int) -> Callable[[enc_pb.ArrayEncoding], None]:
    def edit(encoding: enc_pb.ArrayEncoding) -> None:
        encoding.nullable.no_nulls.values.flat.buffer.buffer_index = index

    return edit


# label -> (forge, the column the error must name)
FORGERIES: dict[str, tuple[Forge, str]] = {
    "dictionary type on an int column": (retype("i", "dict:int32:int32:false"), "'i'"),
    "dictionary type on a string column": (retype("s", "dict:string:int32:false"), "'s'"),
    "string type on an int column": (retype("i", "string"), "'i'"),
    "int type on a string column": (retype("s", "int64"), "'s'"),
    "bool type on an int column": (retype("i", "bool"), "'i'"),
    "null type on an int column": (retype("i", "null"), "'i'"),
    "fixed-size list on an int column": (retype("i", "fixed_size_list:int32:1"), "'i'"),
    "decimal type on a string column": (retype("s", "decimal:128:10:2"), "'s'"),
    "string item type under a list of ints": (retype("item", "string"), "'l.item'"),
    "struct with no fields on an int column": (retype("i", "struct"), "'i'"),
    "int type on a dictionary column": (retype("d", "int32"), "'d'"),
    "page length 2**64 - 1": (page_length(0, 2**64 - 1), "'i'"),
    "page length 0": (page_length(0, 0), "'i'"),
    "struct child page length 2**40": (page_length(3, 2**40), "'st.a'"),
    "struct child with no pages": (drop_pages(4), "'st.b'"),
    "list items column with no pages": (drop_pages(6), "'l.item'"),
    "list counts more items than exist": (edit_encoding(5, list_items(10_000)), "'l"),
    "flat of 0 bits": (edit_encoding(0, set_flat_bits(0)), "'i'"),
    "flat of 65 bits": (edit_encoding(0, set_flat_bits(65)), "'i'"),
    "flat of 64 bits for int32": (edit_encoding(0, set_flat_bits(64)), "'i'"),
    "flat of 16 bits for int32": (edit_encoding(0, set_flat_bits(16)), "'i'"),
    "buffer index out of range": (edit_encoding(0, buffer_index(7)), "'i'"),
    "dictionary item count too big": (edit_encoding(7, dictionary_items(1000)), "'d'"),
    "dictionary item count too small": (edit_encoding(7, dictionary_items(1)), "'d'"),
}


def forged_files(tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    root = tmp_path / "fixture"
    root.mkdir()
    write_reference(root / DATA, FIXTURE)
    pristine = (root / DATA).read_bytes()
    forged = {}
    for label, (forge, _) in FORGERIES.items():
        parts = surgery.parse(pristine)
        forge(parts)
        forged[label] = surgery.emit(parts)
    return root, forged


def test_the_fixture_reads_back(tmp_path: Path) -> None:
    root, _ = forged_files(tmp_path)
    assert read_three_ways(root).slice(0, 300).equals(FIXTURE)


def test_forged_schemas_pages_and_encodings_are_refused(tmp_path: Path) -> None:
    """Each forged file, read in a child process (some used to abort Arrow), ends in a
    CorruptFileError or UnsupportedEncodingError naming the file and the column."""
    root, forged = forged_files(tmp_path)
    mutants = [replacement(DATA, data, label) for label, data in forged.items()]
    outcomes = Campaign(root, "tests.fuzz.data_file_checks:read_three_ways", mutants, 120).run()
    assert len(outcomes) == len(mutants)
    wrong = []
    for outcome in outcomes:
        column = FORGERIES[outcome.mutant.label][1]
        kind, _, message = outcome.detail.partition(": ")
        named = DATA in message and column in message
        if outcome.kind != "error" or kind not in ERRORS or not named:
            wrong.append(f"{outcome.mutant.label}: {outcome.kind}: {outcome.detail[:300]}")
    assert not wrong, "\n".join(wrong)


ERRORS = ("CorruptFileError", "UnsupportedEncodingError")


def test_lancelet_writes_no_struct_without_rows(tmp_path: Path) -> None:
    """The writer's own empty-struct pages carry the row count the reader needs."""
    table = EMPTY_TABLES["beside"]
    path = tmp_path / "w.lance"
    with LanceFileWriter(path, table.schema, version="2.0") as writer:
        writer.write_batch(table.slice(0, 4))
        writer.write_batch(table.slice(4))
    assert LanceFileReader(path).read_all().to_table().equals(table)


# --- damaged metadata that used to read as other data -----------------------------------


def xor_byte(data: bytes, offset: int, mask: int) -> bytes:
    out = bytearray(data)
    out[offset] ^= mask
    return bytes(out)


def no_nulls_made_all_nulls(raw: bytes) -> bytes:
    """One bit of a page encoding: the ``no_nulls`` tag becomes ``all_nulls`` (whose
    message then holds an unknown field, the values encoding)."""
    parts = surgery.parse(raw)
    wire = parts.encoding(0).SerializeToString()
    at = raw.index(wire, len(parts.prefix))
    # ArrayEncoding.nullable (0x12, length) then Nullable.no_nulls (0x0a).
    assert raw[at] == 0x12 and raw[at + 2] == 0x0A
    return xor_byte(raw, at + 2, 0x10)


def shifted_buffer(shift: int) -> Callable[[bytes], bytes]:
    def damage(raw: bytes) -> bytes:
        parts = surgery.parse(raw)
        parts.page(0).buffer_offsets[0] += shift  # the int32 column's values
        return surgery.emit(parts)

    return damage


def buffer_pointing_at_another(raw: bytes) -> bytes:
    parts = surgery.parse(raw)
    page = parts.page(1)
    page.buffer_offsets[0] = parts.page(3).buffer_offsets[0]
    page.buffer_sizes[0] = min(page.buffer_sizes[0], parts.page(3).buffer_sizes[0])
    return surgery.emit(parts)


def unknown_time_zone(raw: bytes) -> bytes:
    parts = surgery.parse(raw)
    parts.field("b").logical_type = "timestamp:us:m"  # 64 bits, like the doubles there
    return surgery.emit(parts)


def cut_short_field(raw: bytes) -> bytes:
    """A list item's field message made 4 bytes shorter: its last two attributes,
    ``nullable`` and the legacy ``encoding``, fall out to the schema level, where they
    are unknown fields (read as the item's, the item type would change)."""
    parts = surgery.parse(raw)
    pos, size = parts.globals[0]
    descriptor = raw[pos : pos + size]
    at = descriptor.index(b"\x12\x04item") - 1  # the Field's length byte
    end = at + 1 + descriptor[at]
    assert descriptor[end - 4 : end] == b"\x30\x01\x38\x01"
    return xor_byte(raw, pos + at, descriptor[at] ^ (descriptor[at] - 4))


DAMAGE: dict[str, Callable[[bytes], bytes]] = {
    "no_nulls tag made all_nulls": no_nulls_made_all_nulls,
    "buffer offset off by 8": shifted_buffer(8),
    "buffer offset off by 1": shifted_buffer(1),
    "buffer inside another buffer": buffer_pointing_at_another,
    "unknown time zone": unknown_time_zone,
    "list item field cut short": cut_short_field,
}


@pytest.mark.parametrize("good_first", [False, True])
@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_damaged_metadata_is_refused(tmp_path: Path, damage: str, good_first: bool) -> None:
    """Also once the undamaged file was read: what a reader keeps of a file's
    descriptor and column metadata (by their bytes) never lets a damaged twin pass."""
    path = write_reference(tmp_path / "good.lance", FIXTURE)
    bad = tmp_path / "bad.lance"
    bad.write_bytes(DAMAGE[damage](path.read_bytes()))
    if good_first:
        assert LanceFileReader(path).read_all().to_table().equals(FIXTURE)
    with pytest.raises(CorruptFileError, match=r"bad\.lance"):
        LanceFileReader(bad).read_all().to_table()
