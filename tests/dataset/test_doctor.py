"""``lancelet.diagnose``: the fixes it suggests work, it says what it cannot decide,
and no damage makes it raise."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pytest

import lancelet
from lancelet.dataset.doctor import FINDING_KINDS, DoctorReport, Finding, advice
from lancelet.dataset.doctor.batch import CheckBatch
from lancelet.dataset.doctor.fragments import FragmentChecks
from lancelet.dataset.doctor.problems import Problem, Problems
from lancelet.table import naming
from lancelet.table.manifest import Manifest
from tests.storage import file_names, read_file, remove_file, write_file

DOCS = Path(__file__).resolve().parents[2] / "docs" / "doctor.md"


def _build(root: Path) -> str:
    """Three versions: two fragments, a BTREE index, then a deletion."""
    uri = str(root / "ds")
    table = pa.table({"id": list(range(100)), "s": [str(i) for i in range(100)]})
    ds = lancelet.write_dataset(table, uri, max_rows_per_file=60)
    ds.create_scalar_index("id", "BTREE")
    ds.delete("id < 5")
    return uri


def _codes(report: DoctorReport) -> list[str]:
    return [f.code for f in report.findings]


def _one(report: DoctorReport, code: str) -> Finding:
    (found,) = [f for f in report.findings if f.code == code]
    return found


def _manifest_path(uri: str, version: int) -> str:
    return f"{uri}/{naming.VERSIONS_DIR}/{naming.manifest_name(version)}"


def test_the_report_for_scripts(tmp_path: Path) -> None:
    uri = _build(tmp_path)
    report = lancelet.diagnose(uri)
    assert isinstance(report, lancelet.DoctorReport)
    assert report.healthy and report.exit_status == 0 and report.latest_version == 3
    assert report.as_dict()["readable_versions"] == [1, 2, 3]


def test_following_the_restore_fix_gives_a_sound_latest_version(tmp_path: Path) -> None:
    uri = _build(tmp_path)
    (name,) = file_names(f"{uri}/{naming.DELETIONS_DIR}")
    remove_file(f"{uri}/{naming.DELETIONS_DIR}/{name}")
    report = lancelet.diagnose(uri)
    assert "latest-version-broken" in _codes(report)
    assert "version=2).restore()" in _one(report, "latest-version-broken").fix

    lancelet.dataset(uri, version=2).restore()
    after = lancelet.diagnose(uri)
    assert after.readable_versions == (1, 2, 4)
    assert _codes(after) == ["missing-deletion-file"]
    # Only an old version has the damage now, so the fix is to let it go.
    finding = _one(after, "missing-deletion-file")
    assert finding.versions == (3,)
    assert "`ds.cleanup_old_versions(retain_versions=1)`" in finding.fix
    lancelet.dataset(uri).cleanup_old_versions(retain_versions=1)
    assert lancelet.diagnose(uri).healthy


def test_following_the_fix_for_a_damaged_latest_manifest(tmp_path: Path) -> None:
    uri = _build(tmp_path)
    path = _manifest_path(uri, 3)
    write_file(path, read_file(path)[:-30])
    finding = _one(lancelet.diagnose(uri), "unreadable-manifest")
    assert f"Delete {naming.VERSIONS_DIR}/{naming.VERSION_HINT} too" in finding.fix

    remove_file(path)  # "move it aside"
    assert "missing-manifest" in _codes(lancelet.diagnose(uri))  # the hint still names it
    remove_file(f"{uri}/{naming.VERSIONS_DIR}/{naming.VERSION_HINT}")
    after = lancelet.diagnose(uri)
    # Only the files version 3 alone used are left: its deletion and transaction files.
    assert after.exit_status == 2
    assert set(_codes(after)) == {"orphaned-file"}
    paths = {f.path or "" for f in after.findings}
    assert any(p.startswith(naming.DELETIONS_DIR) for p in paths)
    assert lancelet.dataset(uri).version == 2


def test_versions_removed_while_checked_are_no_damage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = _build(tmp_path)
    check = FragmentChecks.check

    def cleanup_meanwhile(self: FragmentChecks, manifest: Manifest) -> None:
        if manifest.version == 1:
            # A concurrent cleanup removes version 1's manifest, then a file only it used.
            remove_file(_manifest_path(uri, 1))
            for name in file_names(f"{uri}/{naming.TRANSACTIONS_DIR}"):
                if name.startswith("0-"):
                    remove_file(f"{uri}/{naming.TRANSACTIONS_DIR}/{name}")
        check(self, manifest)

    monkeypatch.setattr(FragmentChecks, "check", cleanup_meanwhile)
    report = lancelet.diagnose(uri)
    assert report.versions == (2, 3) and report.findings == ()
    assert any("removed while being checked" in note for note in report.notes)


def test_versions_committed_while_checked_keep_their_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = _build(tmp_path)
    run = CheckBatch.run

    def commit_meanwhile(self: CheckBatch, problems: Problems) -> None:
        lancelet.write_dataset(pa.table({"id": [7], "s": ["x"]}), uri, mode="append")
        run(self, problems)

    monkeypatch.setattr(CheckBatch, "run", commit_meanwhile)
    report = lancelet.diagnose(uri)
    # Version 4's new files are in use, and the hint naming it is right.
    assert report.versions == (1, 2, 3) and report.findings == ()
    assert any("4 were committed while the others were checked" in n for n in report.notes)


def test_branches_leave_orphans_undecided(tmp_path: Path) -> None:
    uri = _build(tmp_path)
    write_file(f"{uri}/_refs/branches/feature.json", b"{}")
    write_file(f"{uri}/data/stray.lance", b"x")
    report = lancelet.diagnose(uri)
    assert "orphaned-file" not in _codes(report)
    assert any("the dataset has branches" in note for note in report.notes)


def test_detached_versions_keep_their_files(tmp_path: Path) -> None:
    uri = _build(tmp_path)
    ds = lancelet.dataset(uri)
    extra = pa.table({"id": [1_000], "s": ["x"]})
    operation = lancelet.LanceOperation.Append(lancelet.fragment.write_fragments(extra, uri))
    lancelet.LanceDataset.commit(uri, operation, read_version=ds.version, detached=True)
    assert lancelet.diagnose(uri).healthy


def test_every_code_has_a_fix_and_a_row_in_the_docs() -> None:
    documented = DOCS.read_text()
    context = advice.Context("ds", (1, 2), (1,), {})
    for code in FINDING_KINDS:
        problem = Problem(code, "some/path", "what is wrong")
        assert advice.fix_for(problem, (2,), context), code
        assert f"`{code}`" in documented, code
    for status in ("| 0 |", "| 1 |", "| 2 |"):
        assert status in documented


def test_unknown_codes_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown finding code"):
        Problem("no-such-code", None, "")


@pytest.mark.parametrize("seed", range(3))
def test_no_damage_makes_it_raise(tmp_path: Path, seed: int) -> None:
    """Bytes changed at random in every file: each report is made, never an error."""
    uri = _build(tmp_path)
    chooser = random.Random(seed)
    names = sorted(file_names(uri))
    for name in names:
        path = f"{uri}/{name}"
        data = bytearray(read_file(path))
        if not data:
            continue
        for _ in range(1 + len(data) // 200):
            data[chooser.randrange(len(data))] = chooser.randrange(256)
        if chooser.random() < 0.3:
            data = data[: chooser.randrange(len(data))]
        write_file(path, bytes(data))
        report = lancelet.diagnose(uri)
        assert report.exit_status in (0, 1, 2)
    assert not lancelet.diagnose(uri).healthy
