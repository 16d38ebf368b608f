"""Legacy (0.1) Lance files: read as pylance reads them, and refused when damaged."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest

from lancelet.errors import CorruptFileError, LanceFileError, SchemaError
from lancelet.file import LanceFileReader
from lancelet.file.v0_1.reader import LegacyFileReader
from tests.file.gen import ALL_TYPES, random_table
from tests.file.legacy import FIXTURE, Parts, write_dataset, write_file

ROWS = 2600


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """Every type pylance stores in legacy files, in two files of several batches."""
    uri = tmp_path_factory.mktemp("legacy") / "wide"
    table = random_table(ALL_TYPES, ROWS, seed=11)
    files = write_dataset(uri, table, max_rows_per_file=1500, max_rows_per_group=400)
    assert len(files) == 2
    return uri, files


def test_files_read_as_pylance_reads_them(wide: tuple[Path, list[Path]]) -> None:
    uri, files = wide
    fragments = lance.dataset(uri).get_fragments()
    for path, fragment in zip(files, fragments, strict=True):
        reader = LanceFileReader(path)
        assert isinstance(reader, LegacyFileReader)
        want = fragment.to_table()
        got = reader.read_all().to_table()
        assert got.schema == want.schema
        for name in want.column_names:
            assert got[name].combine_chunks().equals(want[name].combine_chunks()), name
        assert reader.num_rows() == fragment.count_rows()
        assert reader.field_ids == tuple(fragment.metadata.files[0].fields)


def test_ranges_takes_and_projections(wide: tuple[Path, list[Path]]) -> None:
    uri, files = wide
    fragment = lance.dataset(uri).get_fragments()[0]
    want = fragment.to_table()
    reader = LanceFileReader(files[0])
    n = reader.num_rows()
    names = ["c45", "c49", "c40", "c38", "c1"]
    for start, count in [(0, n), (399, 2), (17, 800), (n - 1, 1), (n, 0), (400, 400)]:
        got = reader.read_range(start, count, columns=names).to_table()
        assert got.equals(want.select(names).slice(start, count)), (start, count)
    rows = np.array([n - 1, 0, 401, 401, 399, 17, 1200, 3])
    got = reader.take_rows(rows).to_table()
    assert got.equals(want.take(pa.array(rows)))
    ordered = np.unique(rows)  # pylance's own take returns rows sorted and once each
    assert reader.take_rows(ordered).to_table().equals(fragment.take(ordered.tolist()))
    assert reader.take_rows([], columns=["c45"]).to_table().num_rows == 0
    # Struct sub-fields by path, and a reader with default columns.
    sub = reader.read_all(columns=["c50.a.y", "c49.b"]).to_table()
    assert sub.column_names == ["c50.a.y", "c49.b"]
    structs = want["c50"].combine_chunks().field("a").field("y")
    assert sub["c50.a.y"].combine_chunks().equals(structs)
    assert sub["c49.b"].combine_chunks().equals(want["c49"].combine_chunks().field("b"))
    only = LanceFileReader(files[0], columns=["c12"]).read_all().to_table()
    assert only.equals(want.select(["c12"]))
    with pytest.raises(SchemaError, match="nope"):
        reader.read_all(columns=["nope"])
    with pytest.raises(IndexError):
        reader.take_rows([n])


def test_streamed_batches_match_the_table(wide: tuple[Path, list[Path]]) -> None:
    _, files = wide
    reader = LanceFileReader(files[1])
    whole = reader.read_all().to_table()
    assert reader.num_rows() == 1000  # batches of 400, 400, 200
    batches = list(reader.read_range(5, 900, batch_size=333).to_batches())
    assert [b.num_rows for b in batches] == [333, 333, 234]
    assert pa.Table.from_batches(batches).equals(whole.slice(5, 900))
    taken = list(reader.take_rows(np.arange(999, -1, -3), batch_size=100).to_batches())
    assert pa.Table.from_batches(taken).equals(whole.take(pa.array(np.arange(999, -1, -3))))


def fixture_rows(rows: range) -> list[dict[str, Any]]:
    """The fixture's rows as legacy readers return them: nothing stores validity, so an
    empty string of the nullable column reads as null (the column "n" is all null)."""
    words = ["lo", "mid", "hi"]
    return [
        {
            "i": 3 * r - 7,
            "f": r / 4,
            "b": r % 3 == 0,
            "s": None if r % 5 == 0 else f"s{r}",
            "l": list(range(r % 4)),
            "st": {"x": r, "y": f"y{r}"},
            "fsl": [r, -r],
            "d": words[r % 3],
            "n": None,
        }
        for r in rows
    ]


def test_the_checked_in_fixture_files() -> None:
    files = sorted((FIXTURE / "data").iterdir(), key=lambda p: -LanceFileReader(p).num_rows())
    first, second = (LanceFileReader(p) for p in files)
    assert (first.num_rows(), second.num_rows()) == (24, 16)
    assert first.read_all().to_table().to_pylist() == fixture_rows(range(24))
    assert second.read_all().to_table().to_pylist() == fixture_rows(range(24, 40))
    schema = first.schema
    assert schema.field("d").type == pa.dictionary(pa.int32(), pa.string())
    assert schema.field("fsl").type == pa.list_(pa.int16(), 2)
    taken = second.take_rows([15, 0, 9], columns=["s", "l", "st.y"]).to_table()
    expected = [{k: row[k] for k in ("s", "l")} for row in fixture_rows([39, 24, 33])]
    assert taken.select(["s", "l"]).to_pylist() == expected
    assert taken["st.y"].to_pylist() == ["y39", "y24", "y33"]
    meta = first.metadata()
    assert (meta.major_version, meta.minor_version) == (0, 2)
    assert [p.num_rows for p in meta.columns[0].pages] == [8, 8, 8]


# -- damaged files ------------------------------------------------------------------------

SMALL = pa.table(
    {
        "k": pa.array(range(100), pa.int64()),
        "s": [f"v{i}" for i in range(100)],
        "l": pa.array([[i] * (i % 3) for i in range(100)], pa.list_(pa.int32())),
        "d": pa.array(["a", "b", "c", "d"] * 25).dictionary_encode(),
    }
)
# Field ids: k 0, s 1, l 2, l.item 3, d 4.


@pytest.fixture
def small(tmp_path: Path) -> Path:
    return write_file(tmp_path / "small", SMALL, batch_rows=40)


def forged(small: Path, edit: Callable[[Parts], None]) -> Path:
    parts = Parts.of(small)
    edit(parts)
    return parts.write(small.with_name("forged.lance"))


def read_all_ways(path: Path) -> None:
    reader = LanceFileReader(path)
    reader.read_all().to_table()
    reader.take_rows(np.arange(reader.num_rows())[::7]).to_table()


def test_the_small_file_reads(small: Path) -> None:
    got = LanceFileReader(small).read_all().to_table()
    assert got["k"].to_pylist() == list(range(100))
    assert got["l"].to_pylist() == SMALL["l"].to_pylist()
    assert got["d"].to_pylist() == SMALL["d"].to_pylist()
    # What the forgeries start from.
    assert Parts.of(small).write(small.with_name("same.lance")).read_bytes() == small.read_bytes()


def _page_length(field: int, batch: int, value: int) -> Callable[[Parts], None]:
    def edit(parts: Parts) -> None:
        pages = parts.pages()
        pages[field, batch, 1] = value
        parts.set_pages(pages)

    return edit


def _page_position(field: int, batch: int, delta: int) -> Callable[[Parts], None]:
    def edit(parts: Parts) -> None:
        pages = parts.pages()
        pages[field, batch, 0] += delta
        parts.set_pages(pages)

    return edit


def _page_at_table(field: int, batch: int) -> Callable[[Parts], None]:
    """Move a page to just before the page table, so that it runs into the table."""

    def edit(parts: Parts) -> None:
        pages = parts.pages()
        pages[field, batch, 0] = parts.metadata.page_table_position - 8
        parts.set_pages(pages)

    return edit


def _last_position(field: int, batch: int, delta: int) -> Callable[[Parts], None]:
    """Move the last entry of a string page's positions."""

    def edit(parts: Parts) -> None:
        pos, length = parts.pages()[field, batch]
        at = int(pos + 8 * length)
        parts.set_i64(at, parts.i64(at) + delta)

    return edit


def _list_position(batch: int, index: int, value: int) -> Callable[[Parts], None]:
    def edit(parts: Parts) -> None:
        pos = int(parts.pages()[2, batch, 0])
        parts.data[pos + 4 * index : pos + 4 * index + 4] = value.to_bytes(4, "little", signed=True)

    return edit


def _key(batch: int, index: int, value: int) -> Callable[[Parts], None]:
    def edit(parts: Parts) -> None:
        pos = int(parts.pages()[4, batch, 0])
        parts.data[pos + 4 * index : pos + 4 * index + 4] = value.to_bytes(4, "little", signed=True)

    return edit


def _field_id(value: int) -> Callable[[Parts], None]:
    def edit(parts: Parts) -> None:
        parts.manifest.fields[-1].id = value

    return edit


def _batch_offsets(*values: int) -> Callable[[Parts], None]:
    def edit(parts: Parts) -> None:
        del parts.metadata.batch_offsets[:]
        parts.metadata.batch_offsets.extend(values)

    return edit


def _dictionary(offset: int, length: int) -> Callable[[Parts], None]:
    def edit(parts: Parts) -> None:
        field = parts.manifest.fields[4]
        field.dictionary.offset += offset
        field.dictionary.length += length

    return edit


def _table_position(delta: int) -> Callable[[Parts], None]:
    def edit(parts: Parts) -> None:
        parts.metadata.page_table_position += delta

    return edit


FORGERIES: dict[str, tuple[Callable[[Parts], None], str]] = {
    "page shorter than its batch": (_page_length(0, 1, 39), r"column 'k' page 1: holds 39"),
    "page length beyond 32 bits": (_page_length(1, 0, 2**40), r"column 's' page 0 position"),
    "page past the file": (_page_position(0, 2, 10**6), r"column 'k' page 2 position"),
    "page into the page table": (_page_at_table(0, 2), r"'k' page 2: values .* runs past"),
    "page over its neighbour": (_page_position(0, 1, -8), r"overlaps"),
    "string page moved": (_page_position(1, 1, 8), r"column 's' page 1"),
    "string bytes cut short": (_last_position(1, 2, -3), r"column 's' page 2: string positions"),
    "list positions fall": (_list_position(0, 5, 0), r"column 'l' page 0: positions do not rise"),
    "list ends past its items": (_list_position(1, 40, 10**6), r"column 'l.item' page 1"),
    "list starts after zero": (_list_position(2, 0, 1), r"column 'l' page 2: list positions"),
    "dictionary key out of range": (_key(0, 3, 4), r"column 'd' page 0: a key lies outside"),
    "dictionary moved": (_dictionary(-8, 0), r"column 'd'"),
    "dictionary longer": (_dictionary(0, 10**12), r"column 'd'"),
    "huge field id": (_field_id(2**30), r"page table .* runs past the end"),
    "more rows than pages": (_batch_offsets(0, 40, 80, 101), r"'k' page 2: holds 20 values"),
    "falling batch offsets": (_batch_offsets(0, 40, 30, 100), r"batch offsets"),
    "page table moved": (_table_position(8), r"small|forged"),
}


@pytest.mark.parametrize("name", list(FORGERIES))
def test_forged_files_are_refused(small: Path, name: str) -> None:
    edit, message = FORGERIES[name]
    path = forged(small, edit)
    with pytest.raises(CorruptFileError, match=message) as caught:
        read_all_ways(path)
    assert "forged.lance" in str(caught.value)


def test_truncated_files_are_refused(small: Path) -> None:
    data = small.read_bytes()
    for cut in [0, 3, 15, 16, len(data) // 3, len(data) // 2, len(data) - 17, len(data) - 1]:
        path = small.with_name("cut.lance")
        path.write_bytes(data[:cut])
        with pytest.raises(LanceFileError, match="cut.lance"):
            read_all_ways(path)


def test_a_file_without_its_schema_is_refused(small: Path) -> None:
    parts = Parts.of(small)
    path = parts.write(small.with_name("forged.lance"))
    raw = bytearray(path.read_bytes())
    # Point the metadata's manifest position at 0 (the writer never does).
    parts.metadata.manifest_position = 0
    body = parts.metadata.SerializeToString()
    raw += len(body).to_bytes(4, "little") + body
    raw += (len(raw) - 4 - len(body)).to_bytes(8, "little") + b"\x00\x00\x02\x00LANC"
    path.write_bytes(bytes(raw))
    with pytest.raises(LanceFileError, match="does not describe its schema"):
        LanceFileReader(path)


def test_fixture_copies_stay_readable(tmp_path: Path) -> None:
    """The forging helpers round-trip a checked-in file byte for byte."""
    copy = tmp_path / "fixture"
    shutil.copytree(FIXTURE, copy)
    for path in (copy / "data").iterdir():
        assert Parts.of(path).write(tmp_path / "again.lance").read_bytes() == path.read_bytes()


def _string_position(batch: int, index: int, delta: int) -> Callable[[Parts], None]:
    def edit(parts: Parts) -> None:
        at = int(parts.pages()[1, batch, 0]) + 8 * index
        parts.set_i64(at, parts.i64(at) + delta)

    return edit


@pytest.mark.parametrize(
    ("edit", "row", "message"),
    [
        (_string_position(1, 5, 10**4), 44, r"column 's' page 1: string positions do not rise"),
        (_string_position(1, 5, -(10**4)), 45, r"column 's' page 1: string positions"),
        (_list_position(2, 3, 10**6), 82, r"column 'l' page 2: list positions do not rise"),
        (_list_position(2, 3, -5), 83, r"column 'l' page 2: list positions do not rise"),
    ],
)
def test_takes_check_the_positions_they_read(
    small: Path, edit: Callable[[Parts], None], row: int, message: str
) -> None:
    """A take reads two positions per row, not the page; those two must lie in it."""
    reader = LanceFileReader(forged(small, edit))
    assert reader.take_rows([0, 99]).to_table().num_rows == 2  # other pages are fine
    with pytest.raises(CorruptFileError, match=message):
        reader.take_rows([row]).to_table()
    with pytest.raises(CorruptFileError, match=message.split(":")[0]):
        reader.read_all().to_table()
