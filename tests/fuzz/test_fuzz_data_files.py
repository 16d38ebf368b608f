"""Fuzzing Lance data files: every mutant reads as the original data or fails with a
lancelet error; never a foreign exception, an invalid array, a hang or a crash.

Fixtures are written by pylance (format 2.0) and by lancelet's writer, over every
type family (integers, floats, decimals, dates and times, strings and binaries large
and small, fixed-size binary, booleans, dictionaries, lists, nested structs,
fixed-size lists, nulls) and the encodings pylance picks by itself (dictionary,
FSST, zstd and lz4 buffers, packed structs).  Mutants (see
:mod:`tests.fuzz.data_file_mutants`):

* byte flips over the metadata (column metadata, offset tables, footer, file
  descriptor) must be refused or harmless;
* byte flips over the page buffers are ``payload``: the format keeps no checksum,
  so a different but valid result is acceptable there;
* truncations;
* structural mutants: protobufs re-encoded with hostile values.

Each campaign is seeded and has a time budget; a slow machine runs fewer mutants
rather than failing (down to a floor).  ``python -m tests.fuzz.test_fuzz_data_files N``
runs N times the mutants, without time limits, for a longer hunt; ``--pin`` rewrites the
pinned pylance fixture.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import lance.file as ref
import numpy as np
import pyarrow as pa
import pytest

from lancelet.file import LanceFileWriter
from tests.file.gen import random_array
from tests.fuzz import data_file_mutants as mut
from tests.fuzz.data_file_checks import DATA
from tests.fuzz.harness import Campaign, Mutant, assert_acceptable, truncations

CHECK = "tests.fuzz.data_file_checks:read_three_ways"

WIDE_TYPES: list[pa.DataType] = [
    pa.int8(),
    pa.int32(),
    pa.uint64(),
    pa.float32(),
    pa.float64(),
    pa.bool_(),
    pa.decimal128(12, 3),
    pa.date32(),
    pa.date64(),
    pa.time64("us"),
    pa.timestamp("us"),
    pa.duration("ms"),
    pa.string(),
    pa.large_string(),
    pa.binary(),
    pa.large_binary(),
    pa.binary(7),
    pa.dictionary(pa.int32(), pa.string()),
    pa.dictionary(pa.int8(), pa.int64()),
    pa.list_(pa.int32()),
    pa.large_list(pa.string()),
    pa.list_(pa.list_(pa.int64())),
    pa.struct([("a", pa.int32()), ("b", pa.string())]),
    pa.struct(
        [("a", pa.struct([("x", pa.float64()), ("y", pa.list_(pa.bool_()))])), ("z", pa.date32())]
    ),
    pa.list_(pa.struct([("k", pa.string()), ("v", pa.int64())])),
    pa.list_(pa.float32(), 4),
    pa.list_(pa.list_(pa.int16(), 2), 2),
    pa.null(),
]
SMALL_TYPES: list[pa.DataType] = [
    pa.int32(),
    pa.string(),
    pa.dictionary(pa.int32(), pa.string()),
    pa.list_(pa.int64()),
    pa.struct([("a", pa.int64()), ("b", pa.float64())]),
    pa.list_(pa.float32(), 3),
    pa.bool_(),
    pa.decimal128(9, 2),
]
PACKED = {"lance-encoding:packed": "true"}
PAGE_BYTES = 2048


def typed_table(types: list[pa.DataType], rows: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    columns = {f"c{i}": random_array(t, rows, rng, null_rate=0.2) for i, t in enumerate(types)}
    columns["all_null"] = pa.nulls(rows, pa.int64())
    return pa.table(columns)


def encodings_table(rows: int = 2400, seed: int = 5) -> pa.Table:
    """Columns pylance stores with its own encodings: dictionary (few distinct strings),
    FSST (pages over 32 KiB), zstd and lz4 buffers, and a packed struct."""
    rng = np.random.default_rng(seed)
    words = np.array([f"word {i} lorem ipsum dolor sit" for i in range(40)])
    text = words[rng.integers(0, len(words), rows)]
    unique = [f"{w} #{i} {'é' * (i % 3)}" for i, w in enumerate(text)]
    packed = pa.struct([("p", pa.int16()), ("q", pa.float64()), ("v", pa.list_(pa.int32(), 2))])
    schema = pa.schema(
        [
            pa.field("dict", pa.string()),
            pa.field("fsst", pa.string(), metadata={"lance-encoding:compression": "fsst"}),
            pa.field("zstd", pa.binary(), metadata={"lance-encoding:compression": "zstd"}),
            pa.field("lz4", pa.large_string(), metadata={"lance-encoding:compression": "lz4"}),
            pa.field("packed", packed, metadata=PACKED),
        ]
    )
    columns = [
        pa.array(text, mask=rng.random(rows) < 0.1),
        pa.array(unique, mask=rng.random(rows) < 0.1),
        pa.array([u.encode() for u in unique]),
        pa.array(unique, pa.large_string()),
        random_array(packed, rows, rng, null_rate=0.0),
    ]
    return pa.Table.from_arrays(columns, schema=schema)


def write_pylance(path: Path, table: pa.Table, batch_rows: int, cache: int) -> None:
    with ref.LanceFileWriter(str(path), table.schema, version="2.0", data_cache_bytes=cache) as w:
        for batch in table.to_batches(max_chunksize=batch_rows):
            # pylance cuts at most one page per batch and wants batches at offset zero.
            columns = [pa.concat_arrays([column]) for column in batch.columns]
            w.write_batch(pa.RecordBatch.from_arrays(columns, schema=batch.schema))


def write_lancelet(path: Path, table: pa.Table, batch_rows: int, cache: int) -> None:
    with LanceFileWriter(path, table.schema, data_cache_bytes=cache, version="2.0") as writer:
        for batch in table.to_batches(max_chunksize=batch_rows):
            writer.write_batch(batch)


@dataclass(frozen=True)
class Fixture:
    name: str
    build: Callable[[Path], None]


FIXTURES = {
    "pylance-wide": Fixture(
        "pylance-wide",
        lambda p: write_pylance(p, typed_table(WIDE_TYPES, 400, 1), 150, PAGE_BYTES),
    ),
    "lancelet-wide": Fixture(
        "lancelet-wide",
        lambda p: write_lancelet(p, typed_table(WIDE_TYPES, 400, 2), 150, PAGE_BYTES),
    ),
    # pylance samples strings at random to train FSST, so the file it writes differs from
    # run to run; CI mutates a copy written once (see write_pinned_fixtures).
    "pylance-encodings": Fixture("pylance-encodings", lambda p: shutil.copy(PINNED_ENCODINGS, p)),
    "lancelet-encodings": Fixture(
        "lancelet-encodings", lambda p: write_lancelet(p, encodings_table(), 1200, 16 << 10)
    ),
    "pylance-small": Fixture(
        "pylance-small", lambda p: write_pylance(p, typed_table(SMALL_TYPES, 120, 3), 60, 512)
    ),
    "lancelet-small": Fixture(
        "lancelet-small", lambda p: write_lancelet(p, typed_table(SMALL_TYPES, 120, 4), 60, 512)
    ),
}


PINNED_ENCODINGS = Path(__file__).parent / "fixtures" / "pylance-encodings.lance"


def write_pinned_fixtures() -> None:
    """Rewrite the pinned pylance file (after a pylance upgrade, say)."""
    write_pylance(PINNED_ENCODINGS, encodings_table(), 1200, 1 << 20)


def build(root: Path, fixture: str) -> Path:
    folder = root / fixture
    folder.mkdir(parents=True)
    FIXTURES[fixture].build(folder / DATA)
    return folder


def flip_mutants(folder: Path, metadata: int, data: int, cuts: int, seed: int) -> list[Mutant]:
    path = folder / DATA
    found = mut.regions(path)
    out = mut.flips(path, found.metadata, metadata, seed, found.unguarded)
    out += mut.flips(path, found.data, data, seed + 1, found.data)
    out += truncations(folder, DATA, cuts, seed + 2)
    order = np.random.default_rng(seed).permutation(len(out))
    return [out[i] for i in order]  # spread each kind over the time budget


def run(folder: Path, mutants: list[Mutant], budget_s: float, minimum: int) -> None:
    outcomes = Campaign(folder, CHECK, mutants, budget_s).run()
    print(f"{folder.name}: {len(outcomes)} of {len(mutants)} mutants ran")
    assert_acceptable(outcomes, minimum=minimum)


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tmp_path_factory.mktemp("fuzz-data-files")


@pytest.mark.parametrize("fixture", ["pylance-wide", "lancelet-wide"])
def test_byte_flips_and_truncations_wide(fixtures: Path, fixture: str) -> None:
    folder = build(fixtures, fixture)
    run(folder, flip_mutants(folder, 240, 80, 12, seed=11), budget_s=9, minimum=60)


@pytest.mark.parametrize("fixture", ["pylance-encodings", "lancelet-encodings"])
def test_byte_flips_and_truncations_encodings(fixtures: Path, fixture: str) -> None:
    folder = build(fixtures, fixture)
    run(folder, flip_mutants(folder, 200, 80, 10, seed=13), budget_s=5, minimum=60)


@pytest.mark.parametrize("fixture", ["pylance-small", "lancelet-small"])
def test_hostile_structures(fixtures: Path, fixture: str) -> None:
    folder = build(fixtures, fixture)
    mutants = mut.structural(folder / DATA, 300, seed=17)
    run(folder, mutants, budget_s=5, minimum=60)


@pytest.mark.parametrize("fixture", ["pylance-wide", "lancelet-small"])
def test_forged_logical_types_are_refused(fixtures: Path, fixture: str) -> None:
    """A struct over any other column, or a width, size or precision no writer gives
    (near 2**64, negative), is an error wherever it is forged: never pyarrow's
    OverflowError, another type, or rows of empty structs."""
    folder = build(fixtures / "forged", fixture)
    mutants = mut.forged_types(folder / DATA)
    outcomes = Campaign(folder, CHECK, mutants, budget_s=60).run()
    assert len(outcomes) == len(mutants)
    wrong = [o for o in outcomes if o.kind != "error"]
    assert not wrong, [(o.mutant.describe(), o.kind, o.detail[-200:]) for o in wrong[:5]]


def hunt(scale: int) -> None:
    """A long campaign over every fixture; prints each misbehaving mutant."""
    import tests.fuzz.harness as harness

    with tempfile.TemporaryDirectory() as tmp:
        for name in FIXTURES:
            folder = build(Path(tmp), name)
            mutants = flip_mutants(folder, 300 * scale, 100 * scale, 20 * scale, seed=scale)
            mutants += mut.structural(folder / DATA, 150 * scale, seed=scale)
            try:
                outcomes = Campaign(folder, CHECK, mutants, 10_000).run()
            except AssertionError as exc:  # the pristine fixture does not read
                print(f"{name}: {exc}")
                continue
            bad = [o for o in outcomes if not o.acceptable]
            kinds: dict[str, int] = {}
            for o in outcomes:
                kinds[o.kind] = kinds.get(o.kind, 0) + 1
            print(f"{name}: {len(outcomes)} mutants {kinds}; {len(bad)} misbehaved")
            for o in bad:
                print(f"  {o.kind}: {o.mutant.describe()}: {o.detail[-400:]!r}")
    del harness


if __name__ == "__main__":
    if sys.argv[1:] == ["--pin"]:
        write_pinned_fixtures()
    else:
        hunt(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
