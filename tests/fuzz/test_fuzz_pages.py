"""Fuzzing the 2.1/2.2 page decoders of the full-zip work (full-zip and blob pages,
run-length, byte-stream-split and packed-struct chunks) page by page: every mutant
decodes as the original or fails with a lancelet error; never a foreign exception, an
invalid array, a hang or a crash.

Repetition indexes, the control words and value lengths that start full-zip rows, and
run lengths are structure: a change must be refused (or change nothing).  Everything
else in the page buffers (values, compressed bytes, blob descriptions) is payload.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.fuzz import page_checks
from tests.fuzz.harness import Campaign, Mutant, assert_acceptable

CHECK = "tests.fuzz.page_checks:read_pages"


def _flips(ranges: list[range], count: int, seed: int, payload: bool) -> list[Mutant]:
    offsets = np.concatenate([np.arange(r.start, r.stop) for r in ranges])
    rng = np.random.default_rng(seed)
    picks = rng.choice(offsets, min(count, offsets.size), replace=False)
    out = []
    for offset in picks.tolist():
        choice = int(rng.integers(0, 10))
        kind, value = ("xor", 1 << int(rng.integers(0, 8))) if choice < 8 else ("set", 0xFF)
        out.append(Mutant(page_checks.FILE, kind, offset, value, payload=payload))
    return out


@pytest.fixture(scope="module")
def fixture(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, page_checks.Regions]:
    root = tmp_path_factory.mktemp("pages")
    path = page_checks.build(root)
    return root, page_checks.regions(path)


def test_structure_mutants_are_refused(fixture: tuple[Path, page_checks.Regions]) -> None:
    root, where = fixture
    mutants = _flips(where.structure, 160, seed=11, payload=False)
    outcomes = Campaign(root, CHECK, mutants, budget_s=20).run()
    assert_acceptable(outcomes, minimum=40)
    assert sum(o.kind == "error" for o in outcomes) > len(outcomes) // 2


def test_payload_mutants_never_crash(fixture: tuple[Path, page_checks.Regions]) -> None:
    root, where = fixture
    mutants = _flips(where.payload, 160, seed=12, payload=True)
    assert_acceptable(Campaign(root, CHECK, mutants, budget_s=15).run(), minimum=40)
