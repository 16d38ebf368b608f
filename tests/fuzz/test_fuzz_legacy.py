"""Fuzzing legacy (0.1) data files: every mutant reads as the original or fails with a
lancelet error; never a foreign exception, an invalid array, a hang or a crash.

The fixture is the larger data file of the checked-in legacy dataset (every kind of
legacy page: plain, booleans, strings, lists, a struct, a fixed-size list, a
dictionary, nulls; three batches).  Legacy files keep no redundancy for their values,
list and string positions, or the schema they embed (names, types, nullability), so
flips there are ``payload``.  The page table, the metadata and the footer must be
refused or harmless.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from lancelet._proto import file_pb2
from tests.file.legacy import FIXTURE, Parts
from tests.fuzz.data_file_checks import DATA
from tests.fuzz.data_file_mutants import REFUSED_TYPES
from tests.fuzz.harness import (
    Campaign,
    Mutant,
    assert_acceptable,
    byte_flips,
    replacement,
    truncations,
)

CHECK = "tests.fuzz.data_file_checks:read_three_ways"


def largest_fixture_file() -> Path:
    return max((FIXTURE / "data").iterdir(), key=lambda p: p.stat().st_size)


def sections(path: Path) -> tuple[list[range], list[range]]:
    """(payload, guarded) byte ranges: the page table, the metadata and the footer are
    guarded; everything else is payload."""
    raw = path.read_bytes()
    meta_pos = struct.unpack_from("<q", raw, len(raw) - 16)[0]
    (length,) = struct.unpack_from("<I", raw, meta_pos)
    meta = file_pb2.Metadata.FromString(raw[meta_pos + 4 : meta_pos + 4 + length])
    table = range(meta.page_table_position, meta.page_table_position + 16 * 12 * 3)
    assert list(meta.batch_offsets) == [0, 8, 16, 24]  # 12 field ids, 3 batches
    payload = [range(0, table.start), range(table.stop, meta_pos)]
    return payload, [table, range(meta_pos, len(raw))]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "legacy"
    root.mkdir()
    shutil.copy(largest_fixture_file(), root / DATA)
    return root


def mutants(folder: Path, seed: int) -> list[Mutant]:
    payload, guarded = sections(folder / DATA)
    # Flips anywhere (the payload marked), then more over the guarded sections.
    out = byte_flips(folder, DATA, 120, seed, payload=payload)
    rng = np.random.default_rng(seed + 1)
    offsets = np.concatenate([np.arange(r.start, r.stop) for r in guarded])
    for offset in rng.choice(offsets, 160):
        out.append(Mutant(DATA, "xor", int(offset), 1 << int(rng.integers(0, 8))))
    out += truncations(folder, DATA, 20, seed + 2)
    order = np.random.default_rng(seed).permutation(len(out))
    return [out[i] for i in order]


def test_legacy_file_mutants(folder: Path) -> None:
    outcomes = Campaign(folder, CHECK, mutants(folder, seed=2024), budget_s=25).run()
    assert_acceptable(outcomes, minimum=100)


def forged_types(path: Path) -> list[Mutant]:
    """Every field of the embedded schema given each type no reader may take."""
    out = []
    for index, field in enumerate(Parts.of(path).manifest.fields):
        for name in sorted(REFUSED_TYPES - {field.logical_type}):
            parts = Parts.of(path)
            parts.manifest.fields[index].logical_type = name
            forged = parts.write(path.with_name("forged.lance")).read_bytes()
            out.append(replacement(DATA, forged, f"field {field.name}: type {name!r}"))
    path.with_name("forged.lance").unlink()
    return out


def test_forged_logical_types_are_refused(folder: Path) -> None:
    """The embedded schema is stored once, so a type of the same shape read otherwise
    is undetectable; but a struct over a field with pages (which read as rows of empty
    structs) and widths no writer gives are errors."""
    mutants = forged_types(folder / DATA)
    outcomes = Campaign(folder, CHECK, mutants, budget_s=60).run()
    assert len(outcomes) == len(mutants)
    wrong = [o for o in outcomes if o.kind != "error"]
    assert not wrong, [(o.mutant.describe(), o.kind, o.detail[-200:]) for o in wrong[:5]]
