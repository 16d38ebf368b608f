"""The fuzz harness tells apart every outcome, and survives a mutant that aborts."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz import harness
from tests.fuzz.harness import Campaign, Mutant


def test_each_outcome_is_classified(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Long enough for a worker on a loaded machine (8 s was not, with 2 busy cores).
    monkeypatch.setattr(harness, "STALL_S", 20.0)
    (tmp_path / "data").write_bytes(b"\x00\x00")
    mutants = [Mutant("data", "set", 0, value) for value in (0, 1, 2, 3, 4, 5)]
    mutants += [Mutant("data", "set", 0, 4, payload=True), Mutant("data", "set", 0, 1)]
    campaign = Campaign(tmp_path, "tests.fuzz._harness_checks:by_first_byte", mutants)
    outcomes = campaign.run()
    kinds = [o.kind for o in outcomes]
    # The worker is restarted after the abort and the hang, and carries on.
    assert kinds == ["same", "error", "foreign", "crash", "different", "hang", "different", "error"]
    assert [o.acceptable for o in outcomes] == [True, True, False, False, False, False, True, True]
    assert "KeyError" in outcomes[2].detail
    # The fixture itself was never touched.
    assert (tmp_path / "data").read_bytes() == b"\x00\x00"
    with pytest.raises(AssertionError, match="4 of 8 mutants misbehaved"):
        harness.assert_acceptable(outcomes)
