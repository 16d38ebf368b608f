"""Small takes from pages without lists: rows in a few chunks are read chunk by chunk,
and value by value where the codec can (``MiniBlockPage._take_few``).

The quick path must give what the batched path gives (which the other read tests hold
against pylance) on every layout pylance writes, and on damaged chunks it must give
way to the batched path, so that the same error is raised."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import lance.file as ref
import numpy as np
import pyarrow as pa
import pytest

from lancelet.errors import LanceFileError
from lancelet.file import LanceFileReader
from lancelet.file.codecs import bitpacking
from lancelet.file.v2_1.read import fields, miniblock
from tests.file.v2_1 import page_bytes

N = 30_000
WORDS = ["AIR", "MAIL", "RAIL", "SHIP", "TRUCK", "FOB", "REG AIR"]


def table(n: int = N) -> pa.Table:
    rng = np.random.default_rng(3)
    keys = np.repeat(np.arange(n, dtype=np.int64) * 37 + 5, rng.integers(1, 8, n))[:n]
    phrase = ["carefully", "final", "deposits", "sleep", "quickly", "ironic", "pinto", "beans"]
    picks = rng.integers(0, len(phrase), (n, 6))
    data = pa.table(
        {
            "key": pa.array(keys),  # runs: run-length encoded
            "maybe": pa.array(
                [None if i % 7 == 3 else int(x) for i, x in enumerate(rng.integers(0, 999, n))],
                pa.int32(),
            ),
            "i64": pa.array(rng.integers(0, 2**40, n)),
            "neg": pa.array(rng.integers(-(2**62), 2**62, n)),
            "mode": pa.array([WORDS[int(x)] for x in rng.integers(0, len(WORDS), n)]),
            "maybe_mode": pa.array([None if i % 5 == 0 else WORDS[i % 7] for i in range(n)]),
            "text": pa.array([f"text {i} " + "x" * (i % 40) for i in range(n)]),
            "comment": pa.array([" ".join(phrase[j] for j in row) for row in picks]),
            "price": pa.array(
                [Decimal(int(x)) / 100 for x in rng.integers(0, 10**7, n)], pa.decimal128(15, 2)
            ),
            "f64": pa.array(rng.random(n)),
            "f32": pa.array([None if i % 11 == 0 else i / 7 for i in range(n)], pa.float32()),
            "date": pa.array(rng.integers(8000, 11000, n).astype(np.int32), pa.date32()),
            "flag": pa.array(rng.random(n) < 0.3),
            "packed": pa.array([f"{i % 977} lorem ipsum dolor" for i in range(n)]),
        }
    )
    schema = data.schema
    packed = schema.field("packed").with_metadata({"lance-encoding:compression": "zstd"})
    return data.cast(schema.set(schema.get_field_index("packed"), packed))


def write(path: Path, data: pa.Table, version: str, **kwargs: Any) -> Path:
    with ref.LanceFileWriter(str(path), data.schema, version=version, **kwargs) as writer:
        for batch in data.to_batches(max_chunksize=700):
            writer.write_batch(batch)
    return path


# Small pages (a few chunks each, many pages) and pages of many chunks.
LAYOUTS = {"small pages": {"data_cache_bytes": 64 * 1024}, "large pages": {}}


@pytest.fixture(scope="module", params=[(v, k) for v in ("2.1", "2.2") for k in LAYOUTS])
def written(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    version, layout = request.param
    data = table()
    path = tmp_path_factory.mktemp("small") / f"{version}-{layout.split()[0]}.lance"
    return data, write(path, data, version, **LAYOUTS[layout])


def row_lists(reader: LanceFileReader, column: int) -> list[list[int]]:
    """Rows in one chunk, in a few chunks, across a page boundary, and in many chunks."""
    leaf = reader._leaves[column]
    rng = np.random.default_rng(column)
    lists = [[0], [N - 1], [1, 2, 3], [5, 6, 900, 901], [N - 40, N - 3]]
    lists += [sorted(set(rng.integers(0, N, k).tolist())) for k in (1, 2, 7, 30, 300)]
    lists.append(list(range(12_000, 12_600)))
    if len(leaf.starts) > 2:
        edge = int(leaf.starts[1])
        lists.append([edge - 2, edge - 1, edge, edge + 1])
    return lists


def take(path: Path, name: str, rows: list[int]) -> pa.Array:
    got = LanceFileReader(path).take_rows(rows, columns=[name]).to_table().column(name)
    return got.combine_chunks()


def test_small_takes_match_the_batched_path_and_the_table(
    written: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, path = written
    picked: list[str] = []
    real = miniblock.MiniBlockPage._pick_chunks

    def spy(self: miniblock.MiniBlockPage, *args: Any) -> Any:
        found = real(self, *args)
        if found is not None:
            picked.append(self.ref.column)
        return found

    monkeypatch.setattr(miniblock.MiniBlockPage, "_pick_chunks", spy)
    reader = LanceFileReader(path)
    for index, name in enumerate(data.column_names):
        for rows in row_lists(reader, index):
            quick = take(path, name, rows)
            with monkeypatch.context() as m:
                m.setattr(miniblock, "FEW_CHUNKS", 0)  # every take batched
                batched = take(path, name, rows)
            expected = data.column(name).take(rows).combine_chunks()
            assert quick.equals(batched), (name, rows[:5])
            assert quick.to_pylist() == expected.to_pylist(), (name, rows[:5])
    # The quick path did run, for every codec that picks values.
    for name in ("key", "maybe", "i64", "mode", "maybe_mode", "text", "price", "f64", "packed"):
        assert f"column {name!r}" in picked, name


def test_positions_of_one_fastlanes_chunk() -> None:
    rng = np.random.default_rng(1)
    for dtype in (np.uint8, np.uint16, np.uint32, np.uint64):
        width = np.dtype(dtype).itemsize * 8
        for bits in sorted({0, 1, 3, width // 2 + 1, width - 1, width}):
            values = rng.integers(0, 2**bits, (1, 1024), dtype=np.uint64).astype(dtype)
            words = (
                bitpacking._pack_chunks(values, bits).reshape(-1) if bits else np.zeros(0, dtype)
            )
            positions = np.array(sorted(set(rng.integers(0, 1024, 40).tolist()) | {0, 1023}))
            got = bitpacking.unpack_positions(words, bits, positions)
            assert got.dtype == dtype
            assert got.tolist() == values[0, positions].tolist(), (dtype, bits)


# -- damaged chunks: the same error as the batched path ---------------------------------


def _first_chunk(path: Path, column: int, page: int) -> tuple[bytes, int, page_bytes.Chunk]:
    raw, columns = page_bytes.pages(path)
    entry = columns[column][page]
    layout = entry.layout.mini_block_layout
    chunk = page_bytes.miniblock_chunks(layout, *entry.buffers[:2])[0]
    return raw, int(entry.meta.buffer_offsets[1]), chunk


def _forge(path: Path, changes: dict[int, bytes]) -> Path:
    data = bytearray(path.read_bytes())
    for at, value in changes.items():
        data[at : at + len(value)] = value
    out = path.with_name(f"forged-{abs(hash(tuple(changes.items())))}.lance")
    out.write_bytes(bytes(data))
    return out


def _value_buffer(path: Path, column: int, which: int = -1) -> tuple[int, int, int]:
    """Where chunk 0 of page 0 of ``column`` keeps a value buffer: (file offset,
    size, the chunk's value count)."""
    _, chunks_at, chunk = _first_chunk(path, column, 0)
    at, size = chunk.buffers[which]
    return chunks_at + chunk.start + at, size, chunk.count


def _damages(path: Path, data: pa.Table) -> dict[str, tuple[str, Path]]:
    """Forged files, each with chunk 0 of page 0 of one column damaged."""
    names = data.column_names
    out: dict[str, tuple[str, Path]] = {}
    raw, chunks_at, chunk = _first_chunk(path, names.index("i64"), 0)
    # The header's value buffer size no longer fills the chunk.
    header = chunks_at + chunk.start + 2
    out["buffer size"] = ("i64", _forge(path, {header: bytes([raw[header] ^ 0x40])}))
    # A bit width wider than the values.
    at, _, _ = _value_buffer(path, names.index("i64"))
    out["bit width"] = ("i64", _forge(path, {at: (65).to_bytes(8, "little")}))
    # Variable-width offsets that run backwards, or out of their chunk.
    at, size, count = _value_buffer(path, names.index("text"))
    out["offsets decrease"] = ("text", _forge(path, {at + 8: (0).to_bytes(4, "little")}))
    end = at + 4 * count
    out["offsets overrun"] = ("text", _forge(path, {end: (size + 1).to_bytes(4, "little")}))
    # A run length of zero, and runs that stop short of the chunk.
    _, _, chunk = _first_chunk(path, names.index("key"), 0)
    at, size, _ = _value_buffer(path, names.index("key"), 1)
    out["zero run"] = ("key", _forge(path, {at + 1: b"\x00"}))
    out["short runs"] = ("key", _forge(path, {at + size - 1: b"\x01"}))
    # Definition levels above the page's maximum.
    raw, chunks_at, chunk = _first_chunk(path, names.index("maybe"), 0)
    at, size = chunk.buffers[0]
    levels = chunks_at + chunk.start + at
    out["levels"] = ("maybe", _forge(path, {levels: bytes([0xFF] * min(size, 16))}))
    return out


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_damaged_chunks_raise_what_the_batched_path_raises(
    version: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = table()
    path = write(tmp_path / "t.lance", data, version, data_cache_bytes=64 * 1024)
    rows_sets = [[0], [1, 2], [3, 650]]
    errors = 0
    for what, (name, forged) in _damages(path, data).items():
        for rows in rows_sets:
            quick: Any
            batched: Any
            try:
                quick = take(forged, name, rows).to_pylist()
            except LanceFileError as exc:
                quick = exc
            with monkeypatch.context() as m:
                m.setattr(miniblock, "FEW_CHUNKS", 0)
                try:
                    batched = take(forged, name, rows).to_pylist()
                except LanceFileError as exc:
                    batched = exc
            if isinstance(batched, Exception):
                errors += 1
                assert type(quick) is type(batched), (what, rows, quick)
                assert str(quick) == str(batched), (what, rows)
            else:
                assert quick == batched, (what, rows)
    assert errors >= 6  # most of the damage is found


def test_rows_on_a_few_pages_are_taken_page_by_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = table()
    path = write(tmp_path / "t.lance", data, "2.2", data_cache_bytes=64 * 1024)
    column = data.column_names.index("i64")
    starts = LanceFileReader(path)._leaves[column].starts
    assert len(starts) > 6
    batches: list[int] = []
    real = fields.LeafColumn._take_batch

    def spy(self: fields.LeafColumn, run: list[int], rows: Any) -> Any:
        batches.append(len(run))
        return real(self, run, rows)

    monkeypatch.setattr(fields.LeafColumn, "_take_batch", spy)
    edges = [int(starts[p]) for p in (1, 2, 3)]
    few = sorted({e + d for e in edges for d in (-1, 0, 1)})
    assert take(path, "i64", few).to_pylist() == data.column("i64").take(few).to_pylist()
    assert not batches
    # Rows on many pages still come in one batch.
    many = [int(s) for s in starts[:-1]]
    assert take(path, "i64", many).to_pylist() == data.column("i64").take(many).to_pylist()
    assert batches and max(batches) > fields._FEW_PAGES
