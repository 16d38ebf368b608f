"""Fuzzing 2.1 / 2.2 data files written by pylance: every byte flip and truncation
reads, fails with a lancelet error, or (flips only) reads different values that are
still valid Arrow; never a crash, a hang, a foreign exception or an invalid array.

Every flip counts as ``payload``: 2.1 pages keep values, levels and structure side by
side with no checksum, and protobuf fields such as an inline constant or an FSST
symbol table are data too.  The targeted tests in ``tests/file/test_v2_1_bad_input.py``
check that structural damage is refused.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.file import v2_1_fixtures as fixtures
from tests.fuzz.data_file_checks import DATA
from tests.fuzz.harness import Campaign, assert_acceptable, byte_flips, truncations

CHECK = "tests.fuzz.data_file_checks:read_three_ways"


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_flips_and_cuts(tmp_path: Path, version: str) -> None:
    if version == "2.1":
        pytest.importorskip("lancelet.file.codecs.rle")  # its constant column needs it
    shutil.copy(fixtures.path(version), tmp_path / DATA)
    size = (tmp_path / DATA).stat().st_size
    mutants = byte_flips(tmp_path, DATA, 160, seed=11, payload=[range(size)])
    mutants += truncations(tmp_path, DATA, 20, seed=12)
    outcomes = Campaign(tmp_path, CHECK, mutants, budget_s=15).run()
    assert_acceptable(outcomes, minimum=40)
