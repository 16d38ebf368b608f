"""Full-zip pages written by pylance, decoded page by page: whole pages, row ranges and
takes, against levels and values computed from the rows themselves."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import lance.file as ref
import numpy as np
import pyarrow as pa
import pytest

from lancelet.file.v2_1.read import fullzip
from lancelet.file.v2_1.read.page import LevelledPage
from lancelet.io.local import LocalInputFile
from tests.file.v2_1.page_bytes import expected_levels, page_entry, pages

RNG = np.random.default_rng(2024)
FULLZIP = {"lance-encoding:structural-encoding": "fullzip"}
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "iota"]


def blob(size: int = 300) -> bytes:
    return bytes(RNG.integers(0, 256, size, dtype=np.uint8))


def text(words: int) -> str:
    return " ".join(RNG.choice(WORDS, words))


def vector(dim: int, nulls: bool = False) -> list[float | None]:
    values: list[float | None] = [float(x) for x in RNG.random(dim).astype(np.float32)]
    if nulls:
        for i in RNG.choice(dim, dim // 5, replace=False):
            values[int(i)] = None
    return values


@dataclass
class Case:
    name: str
    arrow_type: pa.DataType
    rows: list[object]
    steps: list[object] = field(default_factory=list)
    metadata: dict[str, str] | None = None
    version: str = "2.2"

    @property
    def leaf(self) -> pa.DataType:
        leaf = self.arrow_type
        for step in self.steps:
            leaf = leaf.value_type if step == "list" else leaf.field(step).type
        return leaf


def _fsl(dim: int, item: pa.DataType | None = None) -> pa.DataType:
    item = pa.float32() if item is None else item
    return pa.list_(item, dim)


CASES = [
    Case("binary", pa.binary(), [None if i % 4 == 1 else blob() for i in range(40)]),
    Case("large_binary", pa.large_binary(), [blob(500) for _ in range(9)] + [None]),
    Case("string_2_1", pa.string(), [text(80) for _ in range(20)] + [None], version="2.1"),
    Case("fsst_strings", pa.string(), [None if i == 7 else text(70) for i in range(300)]),
    Case("large_string", pa.large_string(), [text(90) for _ in range(30)]),
    Case("zstd_values", pa.string(), [text(7000), None, text(8000), "", text(6500)]),
    Case("vectors", _fsl(128), [vector(128) for _ in range(30)]),
    Case("null_vectors", _fsl(128), [None if i % 3 == 0 else vector(128) for i in range(30)]),
    Case("vectors_null_items", _fsl(128), [vector(128, nulls=True) for _ in range(12)]),
    Case("nested_vectors", _fsl(4, _fsl(32)), [[vector(32) for _ in range(4)] for _ in range(9)]),
    Case(
        "list_of_binary",
        pa.list_(pa.binary()),
        [[blob(), None], None, [], [blob()], [blob(), blob(), blob()]] * 8,
        ["list"],
    ),
    Case(
        "long_lists",
        pa.list_(pa.binary()),
        [[blob(260) for _ in range(int(n))] for n in RNG.integers(0, 90, 25)] + [[blob()] * 300],
        ["list"],
    ),
    Case(
        "list_of_vectors",
        pa.list_(_fsl(64)),
        [[vector(64), vector(64)], None, [vector(64)], [], [vector(64)] * 70] * 3,
        ["list"],
    ),
    Case(
        "struct_binary",
        pa.struct([("b", pa.binary())]),
        [{"b": blob()}, None, {"b": None}, {"b": blob()}] * 5,
        ["b"],
    ),
    Case(
        "struct_list_binary",
        pa.struct([("l", pa.list_(pa.binary()))]),
        [{"l": [blob()]}, None, {"l": None}, {"l": []}, {"l": [None, blob()]}] * 4,
        ["b" if False else "l", "list"],
    ),
    Case(
        "struct_vector",
        pa.struct([("v", _fsl(64))]),
        [{"v": vector(64)}, None, {"v": vector(64)}] * 4,
        ["v"],
    ),
    Case(
        "struct_list_vector",
        pa.struct([("l", pa.list_(_fsl(64)))]),
        [{"l": [vector(64)] * 2}, {"l": None}, {"l": [vector(64)]}, None, {"l": [vector(64)] * 3}],
        ["l", "list"],
    ),
    Case(
        "forced_int32",
        pa.int32(),
        [None if i % 5 == 0 else i * 7 for i in range(100)],
        metadata=FULLZIP,
    ),
    Case(
        "forced_short_strings",
        pa.string(),
        [None if i % 6 == 0 else f"s{i}" for i in range(60)],
        metadata=FULLZIP,
    ),
    Case(
        "list_of_binary_2_1",
        pa.list_(pa.binary()),
        [[blob(), None], None, [], [blob()] * 3] * 5,
        ["list"],
        version="2.1",
    ),
    *[
        Case(f"forced_{name}", arrow_type, rows, metadata=FULLZIP)
        for name, arrow_type, rows in [
            ("bool", pa.bool_(), [True, None, False, True] * 10),
            ("decimal", pa.decimal128(10, 2), [Decimal("1.25"), None, Decimal("-3.50")] * 5),
            ("fixed_binary", pa.binary(4), [b"abcd", None, b"wxyz"] * 5),
            ("float16", pa.float16(), [np.float16(1.5), None, np.float16(-2.0)] * 5),
        ]
    ],
    Case(
        "nested_vectors_null_items",
        _fsl(4, _fsl(32)),
        [[[1.0, None] * 16, None, [2.0] * 32, [None] * 32] for _ in range(6)],
    ),
    Case(
        "bool_vectors",
        _fsl(128, pa.bool_()),
        [[True, False, False] * 42 + [True, True]] * 9,
        metadata=FULLZIP,
    ),
    Case("int_vectors_null_items", _fsl(64, pa.int64()), [[1] * 64, None, [None] * 64] * 3),
    Case(
        "packed_struct_vector_child",
        pa.struct([("v", _fsl(4)), ("s", pa.string())]),
        [{"v": [1.0, 2.0, 3.0, 4.0], "s": "abc"}, None, {"v": [5.0] * 4, "s": ""}] * 3,
        metadata={"lance-encoding:packed": "true"},
    ),
    Case(
        "packed_struct_compressed_child",
        pa.struct([("a", pa.int32()), ("s", pa.large_string())]),
        [{"a": 1, "s": text(8000)}, None, {"a": 3, "s": text(9000)}],
        metadata={"lance-encoding:packed": "true"},
    ),
    Case(
        "packed_struct",
        pa.struct([("a", pa.int32()), ("s", pa.string()), ("b", pa.binary())]),
        [None if i % 5 == 3 else {"a": i, "s": "x" * i, "b": blob(i % 7)} for i in range(40)],
        metadata={"lance-encoding:packed": "true"},
    ),
]


def _write(tmp_path: Path, case: Case) -> Path:
    schema = pa.schema([pa.field("x", case.arrow_type, metadata=case.metadata)])
    table = pa.table({"x": pa.array(case.rows, case.arrow_type)}, schema=schema)
    path = tmp_path / f"{case.name}.lance"
    with ref.LanceFileWriter(str(path), schema, version=case.version) as writer:
        writer.write_batch(table)
    # The oracle reads back what it wrote.
    assert ref.LanceFileReader(str(path)).read_all().to_table().column(0).to_pylist() == case.rows
    return path


def _decoders(path: Path, case: Case) -> list[fullzip.FullZipPageDecoder]:
    _, columns = pages(path)
    (column,) = columns
    source = LocalInputFile(path)
    out = []
    for index, page in enumerate(column):
        assert page.layout.WhichOneof("layout") == "full_zip_layout", page.layout
        out.append(
            fullzip.decoder(
                source,
                page_entry(page),
                page.layout.full_zip_layout,
                f"column 0 ({case.name})",
                case.leaf,
                page_index=index,
            )
        )
    return out


def _check(page: LevelledPage, rows: list[object], case: Case) -> None:
    want = expected_levels(rows, list(page.layers), case.steps if not _packed(case) else [])
    n = len(want.rep)
    assert (page.rep.tolist() if page.rep is not None else [0] * n) == want.rep
    assert (page.defs.tolist() if page.defs is not None else [0] * n) == want.defs
    got = page.values.to_pylist()
    assert len(got) == len(want.values)
    for g, w in zip(got, want.values, strict=True):
        if w is not None:
            assert g == w


def _packed(case: Case) -> bool:
    return bool(case.metadata and "lance-encoding:packed" in case.metadata)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_whole_pages_ranges_and_takes(tmp_path: Path, case: Case) -> None:
    decoders = _decoders(_write(tmp_path, case), case)
    first = 0
    for decoder in decoders:
        rows = case.rows[first : first + decoder.num_rows]
        _check(decoder.read(0, decoder.num_rows), rows, case)
        n = decoder.num_rows
        a, b = n // 3, max(n // 3, 2 * n // 3)
        _check(decoder.read(a, b), rows[a:b], case)
        _check(decoder.read(n - 1, n), rows[n - 1 :], case)
        picks = np.sort(RNG.choice(n, min(n, 7), replace=False)).astype(np.int64)
        _check(decoder.take(picks), [rows[int(i)] for i in picks], case)
        _check(decoder.take(np.array([], np.int64)), [], case)
        first += n
    assert first == len(case.rows)


def test_large_lists_are_walked_by_doubling(tmp_path: Path) -> None:
    """A row of thousands of items finishes in a bounded number of numpy passes."""
    case = Case(
        "huge_row", pa.list_(pa.binary()), [[blob(256) for _ in range(3000)], [blob()]], ["list"]
    )
    (decoder,) = _decoders(_write(tmp_path, case), case)
    _check(decoder.read(0, 2), case.rows, case)
    _check(decoder.take(np.array([1], np.int64)), case.rows[1:], case)


def test_values_keep_the_leaf_type(tmp_path: Path) -> None:
    case = next(c for c in CASES if c.name == "packed_struct")
    (decoder,) = _decoders(_write(tmp_path, case), case)
    page = decoder.read(0, decoder.num_rows)
    assert page.values.type == case.arrow_type
    assert page.layers == (fullzip.pb.REPDEF_NULLABLE_ITEM,)


LIST_CASES = [c for c in CASES if "list" in c.steps]


@pytest.mark.parametrize("case", LIST_CASES, ids=[c.name for c in LIST_CASES])
def test_doubling_windows(tmp_path: Path, case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    """With tiny limits every list row goes through pointer doubling, in windows that
    cut rows apart; the items found are the same."""
    monkeypatch.setattr(fullzip, "_STEP_ROUNDS", 1)
    monkeypatch.setattr(fullzip, "_DOUBLING_BATCH", 700)
    calls = []
    original = fullzip._double_batch

    def counting(*args: object) -> object:
        calls.append(args)
        return original(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(fullzip, "_double_batch", counting)
    decoders = _decoders(_write(tmp_path, case), case)
    first = 0
    for decoder in decoders:
        rows = case.rows[first : first + decoder.num_rows]
        _check(decoder.read(0, decoder.num_rows), rows, case)
        first += decoder.num_rows
    assert calls


class CountingSource:
    """A file whose reads are recorded."""

    def __init__(self, path: Path) -> None:
        self.inner = LocalInputFile(path)
        self.path = str(path)
        self.size = self.inner.size
        self.reads: list[tuple[int, int]] = []

    def read(self, offset: int, length: int) -> pa.Buffer:
        self.reads.append((offset, length))
        return self.inner.read(offset, length)


@pytest.mark.parametrize("name", ["binary", "list_of_binary", "null_vectors"])
def test_reads_touch_only_the_rows_asked_for(tmp_path: Path, name: str) -> None:
    case = next(c for c in CASES if c.name == name)
    path = _write(tmp_path, case)
    _, columns = pages(path)
    (page,) = columns[0]
    source = CountingSource(path)
    decoder = fullzip.decoder(
        source, page_entry(page), page.layout.full_zip_layout, "c", case.leaf, page_index=0
    )
    data_size = len(page.buffers[0])
    picks = np.array([3, decoder.num_rows - 2], np.int64)
    _check(decoder.take(picks), [case.rows[int(i)] for i in picks], case)
    # Two rows' bytes (a few hundred each) and their index entries, not the page.
    assert sum(n for _, n in source.reads) < max(data_size // 5, 3000)
    source.reads.clear()
    _check(decoder.read(5, 7), case.rows[5:7], case)
    assert sum(n for _, n in source.reads) < max(data_size // 5, 3000)
