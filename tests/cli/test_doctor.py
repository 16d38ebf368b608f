"""``lancelet doctor``: sound datasets of both libraries give no finding; each kind of
damage, made here by hand, gives its finding with the versions, the explanation and
the fix; the exit status says how it went."""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest
from click.testing import CliRunner, Result

import lancelet
from lancelet._proto import rowids_pb2
from lancelet.cli.main import cli
from lancelet.table import deletion, naming
from lancelet.table.fragment import ExternalFile, Sequence
from lancelet.table.manifest import Manifest
from lancelet.table.manifest_file import decode_manifest, encode_manifest
from tests.s3server import S3Server
from tests.storage import file_names, list_names, read_file, remove_file, write_file

# The libraries' modules, whose functions are looked up at each call: the memory run
# patches pylance's once the session starts.
WRITERS: dict[str, Any] = {"lancelet": lancelet, "pylance": lance}


def _table(start: int = 0, rows: int = 100) -> pa.Table:
    ids = list(range(start, start + rows))
    return pa.table({"id": ids, "s": [f"row {i}" for i in ids]})


def _build(root: Path, writer: str = "lancelet", **options: Any) -> str:
    """Three versions: two fragments (60 and 40 rows), a BTREE index, a deletion."""
    uri = str(root / "ds")
    module = WRITERS[writer]
    module.write_dataset(_table(), uri, max_rows_per_file=60, **options)
    opened = module.dataset(uri)
    opened.create_scalar_index("id", "BTREE")
    opened.delete("id < 5")
    return uri


# Wide enough that tables do not wrap; storage options only from the arguments.
RUNNER_ENV = {"COLUMNS": "250", "LANCELET_STORAGE_OPTIONS": None}


def _doctor(uri: str, *args: str) -> Result:
    runner = CliRunner(env=RUNNER_ENV)
    return runner.invoke(cli, ["doctor", uri, *args], catch_exceptions=False)


def _report(uri: str) -> dict[str, Any]:
    result = _doctor(uri, "--json")
    report: dict[str, Any] = json.loads(result.output)
    assert result.exit_code == report["exit_status"]
    return report


def _only(report: dict[str, Any], code: str) -> dict[str, Any]:
    found = [f for f in report["findings"] if f["code"] == code]
    assert len(found) == 1, report["findings"]
    return found[0]


def _codes(report: dict[str, Any]) -> list[str]:
    return [f["code"] for f in report["findings"]]


def _files(uri: str, directory: str) -> list[str]:
    return sorted(f"{directory}/{name}" for name in file_names(f"{uri}/{directory}"))


def _fragment_files(uri: str, version: int) -> list[str]:
    """The data files of ``version``'s fragments, in fragment order."""
    fragments = lancelet.dataset(uri, version=version).get_fragments()
    return [f"data/{d.path}" for f in fragments for d in f.metadata.files]


def _manifest_path(uri: str, version: int) -> str:
    return f"{uri}/{naming.VERSIONS_DIR}/{naming.manifest_name(version)}"


def _rewrite_manifest(uri: str, version: int, change: Callable[[Manifest], Manifest]) -> None:
    """Replace ``version``'s manifest by ``change`` of it, bypassing every check a
    commit makes: the way damage gets in."""
    path = _manifest_path(uri, version)
    manifest = decode_manifest(read_file(path), path)
    write_file(path, encode_manifest(change(manifest)))


# -- sound datasets ------------------------------------------------------------------------


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_sound_dataset_has_no_findings(tmp_path: Path, writer: str) -> None:
    uri = _build(tmp_path, writer, enable_stable_row_ids=True)
    WRITERS[writer].dataset(uri).tags.create("first", 1)
    result = _doctor(uri)
    assert result.exit_code == 0, result.output
    assert "No problems found." in result.output
    assert "Versions on disk: 1-3 (latest 3); reading in full: 1-3" in result.output
    report = _report(uri)
    assert report["healthy"] and report["findings"] == [] and report["notes"] == []
    assert report["versions"] == report["readable_versions"] == [1, 2, 3]


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_history_of_every_kind_of_commit_has_no_findings(tmp_path: Path, writer: str) -> None:
    uri = _build(tmp_path, writer, enable_stable_row_ids=True)
    module = WRITERS[writer]
    module.dataset(uri).update({"s": "'changed'"}, where="id = 50")
    merge = module.dataset(uri).merge_insert("id")
    merge.when_matched_update_all().when_not_matched_insert_all().execute(_table(95, 10))
    module.dataset(uri).add_columns({"twice": "id * 2"})
    module.dataset(uri).drop_columns(["s"])
    module.dataset(uri).optimize.compact_files(target_rows_per_fragment=1_000)
    module.dataset(uri).cleanup_old_versions(retain_versions=3)
    report = _report(uri)
    assert report["findings"] == [], report["findings"]
    assert report["exit_status"] == 0


@pytest.mark.parametrize("storage_version", ["legacy", "2.0", "2.1"])
@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_every_file_format_is_sound(tmp_path: Path, writer: str, storage_version: str) -> None:
    uri = _build(tmp_path, writer, data_storage_version=storage_version)
    WRITERS[writer].dataset(uri).add_columns({"twice": "id * 2"})
    report = _report(uri)
    assert report["findings"] == [] and report["notes"] == [], report


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_vector_and_full_text_indices_are_sound(tmp_path: Path, writer: str) -> None:
    uri, module = str(tmp_path / "ds"), WRITERS[writer]
    vectors = np.random.default_rng(0).random((300, 8), dtype=np.float32)
    table = _table(rows=300).append_column(
        "vec", pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), 8)
    )
    module.write_dataset(table, uri, max_rows_per_file=100)
    module.dataset(uri).create_index("vec", "IVF_PQ", num_partitions=2, num_sub_vectors=2)
    module.dataset(uri).create_scalar_index("s", "INVERTED")
    module.dataset(uri).delete("id < 150")
    module.dataset(uri).optimize.compact_files(target_rows_per_fragment=1_000)
    report = _report(uri)
    assert report["findings"] == [] and report["notes"] == [], report


def test_the_busy_dataset_of_the_other_commands_is_sound(busy_dataset: str) -> None:
    report = _report(busy_dataset)
    assert report["findings"] == [] and report["versions"] == [1, 2, 3, 4]


def test_no_dataset(tmp_path: Path) -> None:
    result = _doctor(str(tmp_path / "nothing"), "--json")
    assert result.exit_code == 1
    finding = _only(json.loads(result.output), "no-dataset")
    assert "no Lance dataset here" in finding["explanation"]
    assert "Check the path" in finding["fix"]


# -- fragments' files ----------------------------------------------------------------------


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_missing_data_file_breaks_every_version_using_it(tmp_path: Path, writer: str) -> None:
    uri = _build(tmp_path, writer)
    gone = _fragment_files(uri, 3)[1]
    remove_file(f"{uri}/{gone}")
    report = _report(uri)
    assert report["exit_status"] == 1
    assert report["readable_versions"] == []
    finding = _only(report, "missing-data-file")
    assert (finding["severity"], finding["versions"], finding["path"]) == ("error", [1, 2, 3], gone)
    assert "40 rows cannot be read" in finding["explanation"]
    assert "from a backup" in finding["fix"]
    assert "no version on disk reads in full" in finding["fix"]
    latest = _only(report, "latest-version-broken")
    assert latest["versions"] == [3]
    assert (
        "The latest version, 3, cannot be read in full (missing-data-file)"
        in (latest["explanation"])
    )


def test_a_missing_data_file_of_old_versions_only(tmp_path: Path) -> None:
    uri = _build(tmp_path)
    lancelet.dataset(uri).tags.create("release", 2)
    lancelet.write_dataset(_table(1_000), uri, mode="overwrite")  # version 4, new files
    gone = _fragment_files(uri, 1)[0]
    remove_file(f"{uri}/{gone}")
    report = _report(uri)
    finding = _only(report, "missing-data-file")
    assert finding["versions"] == [1, 2, 3]
    assert report["readable_versions"] == [4]
    assert "latest-version-broken" not in _codes(report)
    assert "the latest version does not need it" in finding["fix"]
    assert "`ds.cleanup_old_versions(retain_versions=1)` removes them" in finding["fix"]
    assert "Cleanup keeps tagged versions: delete the tags 'release' first." in finding["fix"]
    lancelet.dataset(uri).tags.delete("release")
    # The fix works: after it, nothing is left to report.
    lancelet.dataset(uri).cleanup_old_versions(retain_versions=1)
    assert _report(uri)["findings"] == []


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_truncated_data_file(tmp_path: Path, writer: str) -> None:
    uri = _build(tmp_path, writer)
    damaged = _fragment_files(uri, 3)[0]
    data = read_file(f"{uri}/{damaged}")
    write_file(f"{uri}/{damaged}", data[: len(data) - 20])
    report = _report(uri)
    finding = _only(report, "unreadable-data-file")
    assert finding["versions"] == [1, 2, 3] and finding["path"] == damaged
    assert "The data file is damaged" in finding["explanation"]
    assert "truncated" in finding["explanation"]


def _set_footer_format(path: str, major: int, minor: int) -> None:
    """Change the format a Lance file's footer names (its last 8 bytes are the major
    and minor version, then the magic)."""
    data = read_file(path)
    write_file(path, data[:-8] + struct.pack("<HH", major, minor) + data[-4:])


def test_a_data_file_footer_naming_another_format(tmp_path: Path) -> None:
    uri = _build(tmp_path)
    damaged = _fragment_files(uri, 3)[0]
    _set_footer_format(f"{uri}/{damaged}", 0, 0)
    finding = _only(_report(uri), "unreadable-data-file")
    assert "its footer names format 0.0, the manifest records" in finding["explanation"]


def test_an_index_file_of_a_newer_format_is_not_judged(tmp_path: Path) -> None:
    uri = _build(tmp_path)
    newer = _files(uri, naming.INDICES_DIR)[0]
    _set_footer_format(f"{uri}/{newer}", 9, 9)
    report = _report(uri)
    assert report["findings"] == [] and report["exit_status"] == 0
    (note,) = report["notes"]
    assert note.startswith(f"{newer}: lancelet cannot read this file, so it was not checked")


def test_a_data_file_of_another_fragment(tmp_path: Path) -> None:
    uri = _build(tmp_path)
    first, second = _fragment_files(uri, 3)
    write_file(f"{uri}/{first}", read_file(f"{uri}/{second}"))
    report = _report(uri)
    mismatches = [f for f in report["findings"] if f["code"] == "data-file-mismatch"]
    assert mismatches and all(f["path"] == first for f in mismatches)
    texts = " ".join(f["explanation"] for f in mismatches)
    assert "it holds 40 rows, the fragment says 60" in texts
    assert "does not match the manifest" in texts
    assert report["exit_status"] == 1


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_missing_deletion_file(tmp_path: Path, writer: str) -> None:
    uri = _build(tmp_path, writer)
    (gone,) = _files(uri, naming.DELETIONS_DIR)
    remove_file(f"{uri}/{gone}")
    report = _report(uri)
    finding = _only(report, "missing-deletion-file")
    assert (finding["versions"], finding["path"]) == ([3], gone)
    assert "Fragment 0's deletion file is not there" in finding["explanation"]
    assert "(5 of them)" in finding["explanation"]
    assert report["readable_versions"] == [1, 2]
    # Version 2 is the newest sound one: restoring it is the fix.
    assert "Without one: restore the newest version that reads in full, 2:" in finding["fix"]
    assert f"lancelet.dataset({uri!r}, version=2).restore()" in finding["fix"]


def test_a_garbled_deletion_file(tmp_path: Path) -> None:
    uri = _build(tmp_path)
    (damaged,) = _files(uri, naming.DELETIONS_DIR)
    write_file(f"{uri}/{damaged}", b"not an arrow file at all")
    finding = _only(_report(uri), "unreadable-deletion-file")
    assert (finding["versions"], finding["path"]) == ([3], damaged)
    assert (
        "Fragment 0's deletion file is damaged: deletion file does not parse"
        in (finding["explanation"])
    )


def test_a_deletion_file_deleting_rows_the_fragment_lacks(tmp_path: Path) -> None:
    uri = _build(tmp_path)
    (damaged,) = _files(uri, naming.DELETIONS_DIR)
    _kind, data = deletion.encode(np.array([1, 2, 3, 4, 500], dtype=np.uint32))
    write_file(f"{uri}/{damaged}", data)
    finding = _only(_report(uri), "unreadable-deletion-file")
    assert "deletes row 500 of a fragment with 60 rows" in finding["explanation"]


def test_a_deletion_file_with_another_count(tmp_path: Path) -> None:
    uri = _build(tmp_path)
    (damaged,) = _files(uri, naming.DELETIONS_DIR)
    _kind, data = deletion.encode(np.array([0, 1, 2], dtype=np.uint32))
    write_file(f"{uri}/{damaged}", data)
    finding = _only(_report(uri), "deletion-count-mismatch")
    assert finding["versions"] == [3]
    assert "deletes 3 rows, the manifest records 5" in finding["explanation"]


# -- row ids and lineage -------------------------------------------------------------------


def _with_first_fragment(manifest: Manifest, **changes: Any) -> Manifest:
    first = replace(manifest.fragments[0], **changes)
    return replace(manifest, fragments=(first, *manifest.fragments[1:]))


def test_row_ids_in_a_missing_file(tmp_path: Path) -> None:
    uri = _build(tmp_path, enable_stable_row_ids=True)
    external = Sequence(external=ExternalFile("_rowids/gone.bin", 0, 12))
    _rewrite_manifest(uri, 3, lambda m: _with_first_fragment(m, row_id_meta=external))
    report = _report(uri)
    finding = _only(report, "bad-row-ids")
    assert (finding["versions"], finding["path"]) == ([3], "_rowids/gone.bin")
    assert "Fragment 0's stable row ids cannot be read" in finding["explanation"]
    assert "latest-version-broken" in _codes(report)


def test_a_row_id_counter_behind_the_ids_in_use(tmp_path: Path) -> None:
    uri = _build(tmp_path, enable_stable_row_ids=True)
    _rewrite_manifest(uri, 3, lambda m: replace(m, next_row_id=50))
    report = _report(uri)
    finding = _only(report, "row-id-counter-behind")
    assert finding["versions"] == [3]
    says = "The version's next row id, 50, is not past the stable row ids"
    assert says in finding["explanation"]
    assert "do not write to the dataset until this is fixed" in finding["fix"]
    assert "restore the newest version that reads in full, 2" in finding["fix"]


def _versions_sequence(rows: int, version: int) -> bytes:
    sequence = rowids_pb2.RowDatasetVersionSequence()
    run = sequence.runs.add()
    run.span.range.start, run.span.range.end = 0, rows
    run.version = version
    return sequence.SerializeToString()


@pytest.mark.parametrize(
    ("rows", "version", "says"),
    [(59, 1, "lists 59 ids for 60 rows"), (60, 7, "it names version 7, after this version 3")],
)
def test_damaged_row_lineage(tmp_path: Path, rows: int, version: int, says: str) -> None:
    uri = _build(tmp_path, enable_stable_row_ids=True)
    created = Sequence(inline=_versions_sequence(rows, version))
    _rewrite_manifest(uri, 3, lambda m: _with_first_fragment(m, created_at_version_meta=created))
    finding = _only(_report(uri), "bad-row-versions")
    assert finding["versions"] == [3] and finding["path"] is None
    assert "Fragment 0's row lineage (created-at versions) is damaged" in finding["explanation"]
    assert says in finding["explanation"]


# -- indices -------------------------------------------------------------------------------


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_missing_index_file(tmp_path: Path, writer: str) -> None:
    uri = _build(tmp_path, writer)
    gone = _files(uri, naming.INDICES_DIR)[0]
    remove_file(f"{uri}/{gone}")
    report = _report(uri)
    finding = _only(report, "missing-index-file")
    assert (finding["versions"], finding["path"]) == ([2, 3], gone)
    assert "A file of index 'id_idx'" in finding["explanation"]
    assert "`ds.drop_index(name)`" in finding["fix"]
    assert report["readable_versions"] == [1]


def test_an_index_directory_gone_when_the_manifest_lists_no_files(tmp_path: Path) -> None:
    """Older writers list no index files: then the index's directory must hold some."""
    uri = _build(tmp_path)
    _rewrite_manifest(
        uri, 3, lambda m: replace(m, indices=tuple(replace(i, files=()) for i in m.indices))
    )
    assert _report(uri)["findings"] == []
    (uuid,) = list_names(f"{uri}/{naming.INDICES_DIR}")
    for name in list_names(f"{uri}/{naming.INDICES_DIR}/{uuid}"):
        remove_file(f"{uri}/{naming.INDICES_DIR}/{uuid}/{name}")
    report = _report(uri)
    missing = [f for f in report["findings"] if f["code"] == "missing-index-file"]
    listed_dir = [f for f in missing if f["path"] == f"{naming.INDICES_DIR}/{uuid}"]
    assert len(listed_dir) == 1 and listed_dir[0]["versions"] == [3]
    assert "The directory of index 'id_idx'" in listed_dir[0]["explanation"]
    assert "is empty or gone" in listed_dir[0]["explanation"]


def test_an_index_file_of_another_size(tmp_path: Path) -> None:
    uri = _build(tmp_path)
    damaged = _files(uri, naming.INDICES_DIR)[0]
    write_file(f"{uri}/{damaged}", read_file(f"{uri}/{damaged}") + b"extra")
    finding = _only(_report(uri), "index-file-size-mismatch")
    assert finding["path"] == damaged and finding["versions"] == [2, 3]
    assert "the manifest records" in finding["explanation"]


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_garbled_index_file(tmp_path: Path, writer: str) -> None:
    uri = _build(tmp_path, writer)
    damaged = _files(uri, naming.INDICES_DIR)[0]
    data = read_file(f"{uri}/{damaged}")
    write_file(f"{uri}/{damaged}", b"\0" * (len(data) - 4) + data[-4:])
    report = _report(uri)
    finding = _only(report, "unreadable-index-file")
    assert (finding["path"], finding["versions"]) == (damaged, [2, 3])
    assert "A file of index 'id_idx'" in finding["explanation"]
    assert "is damaged" in finding["explanation"]
    assert "`ds.drop_index(name)`" in finding["fix"]


# -- manifests -----------------------------------------------------------------------------


def test_a_garbled_latest_manifest(tmp_path: Path) -> None:
    uri = _build(tmp_path)
    path = _manifest_path(uri, 3)
    data = bytearray(read_file(path))
    data[-4:] = b"JUNK"
    write_file(path, bytes(data))
    report = _report(uri)
    finding = _only(report, "unreadable-manifest")
    assert finding["versions"] == [3]
    assert finding["path"] == f"_versions/{naming.manifest_name(3)}"
    assert "The manifest does not decode" in finding["explanation"]
    assert "version 2 is then the latest again" in finding["fix"]
    assert report["readable_versions"] == [1, 2]
    assert "Move the damaged manifest aside" in _only(report, "latest-version-broken")["fix"]
    # A manifest that does not decode may name any file: orphans are not guessed.
    assert any("orphaned files were not looked for: a manifest" in n for n in report["notes"])


def test_a_manifest_under_another_versions_name(tmp_path: Path) -> None:
    uri = _build(tmp_path)
    write_file(_manifest_path(uri, 2), read_file(_manifest_path(uri, 1)))
    report = _report(uri)
    finding = _only(report, "manifest-version-mismatch")
    assert finding["versions"] == [2]
    assert (
        "named for version 2, but the manifest in it describes version 1"
        in (finding["explanation"])
    )
    assert "cleanup_old_versions refuses to run" in finding["fix"]
    assert report["readable_versions"] == [1, 3]


def test_a_removed_latest_manifest(tmp_path: Path) -> None:
    uri = _build(tmp_path)
    remove_file(_manifest_path(uri, 3))
    report = _report(uri)
    finding = _only(report, "missing-manifest")
    assert "the version hint says version 3 was committed" in finding["explanation"].lower()
    assert "Readers now see version 2 as the latest" in finding["explanation"]
    # The lost version's deletion and transaction files are left behind.
    orphans = {f["path"] for f in report["findings"] if f["code"] == "orphaned-file"}
    assert _files(uri, naming.DELETIONS_DIR)[0] in orphans


def test_a_version_lancelet_cannot_read(tmp_path: Path) -> None:
    uri = _build(tmp_path)
    unknown_flag = 1 << 40
    _rewrite_manifest(
        uri, 3, lambda m: replace(m, reader_feature_flags=m.reader_feature_flags | unknown_flag)
    )
    report = _report(uri)
    assert report["exit_status"] == 2
    finding = _only(report, "unsupported-version")
    assert finding["severity"] == "warning" and finding["versions"] == [3]
    assert "lancelet cannot read this version" in finding["explanation"]
    assert "check this version with pylance" in finding["fix"]


# -- tags, transactions, orphans -----------------------------------------------------------


def test_a_tag_of_a_version_no_longer_on_disk(tmp_path: Path) -> None:
    uri = _build(tmp_path)
    lancelet.dataset(uri).tags.create("release", 1)
    path = f"{uri}/{naming.TAGS_DIR}/release.json"
    contents = json.loads(read_file(path))
    contents["version"] = 99
    write_file(path, json.dumps(contents).encode())
    report = _report(uri)
    finding = _only(report, "dangling-tag")
    assert finding["path"] == "_refs/tags/release.json"
    assert "Tag 'release' points at version 99, which is not on disk" in finding["explanation"]
    assert "`ds.tags.delete('release')`" in finding["fix"]
    lancelet.dataset(uri).tags.delete("release")
    assert _report(uri)["findings"] == []


def test_a_tag_file_that_does_not_decode(tmp_path: Path) -> None:
    uri = _build(tmp_path)
    write_file(f"{uri}/{naming.TAGS_DIR}/broken.json", b"{not json")
    finding = _only(_report(uri), "unreadable-tag")
    assert finding["path"] == "_refs/tags/broken.json"
    assert "Tag 'broken' cannot be read" in finding["explanation"]
    assert "create the tag again" in finding["fix"]


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_missing_transaction_file(tmp_path: Path, writer: str) -> None:
    uri = _build(tmp_path, writer)
    manifest = lancelet.dataset(uri).latest_version
    transaction = [
        t for t in _files(uri, naming.TRANSACTIONS_DIR) if t.split("/")[-1].startswith("2-")
    ]
    assert manifest == 3 and len(transaction) == 1
    remove_file(f"{uri}/{transaction[0]}")
    report = _report(uri)
    assert report["exit_status"] == 2
    finding = _only(report, "missing-transaction-file")
    assert (finding["severity"], finding["versions"]) == ("warning", [3])
    assert "The version reads as before" in finding["explanation"]
    assert report["readable_versions"] == [1, 2, 3]


def test_a_garbled_transaction_file(tmp_path: Path) -> None:
    uri = _build(tmp_path)
    (name,) = [t for t in _files(uri, naming.TRANSACTIONS_DIR) if t.split("/")[-1][:2] == "2-"]
    write_file(f"{uri}/{name}", b"\xff\xff\xff garbage")
    report = _report(uri)
    assert report["exit_status"] == 2
    finding = _only(report, "unreadable-transaction-file")
    assert (finding["severity"], finding["versions"], finding["path"]) == ("warning", [3], name)
    assert "The version's transaction file does not decode" in finding["explanation"]
    assert "No repair is needed" in finding["fix"]


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_an_uncommitted_data_file_is_orphaned(tmp_path: Path, writer: str) -> None:
    uri = _build(tmp_path, writer)
    before = set(_files(uri, naming.DATA_DIR))
    fragments = lancelet.fragment.write_fragments(_table(500, 10), uri)
    assert fragments
    (orphan,) = set(_files(uri, naming.DATA_DIR)) - before
    report = _report(uri)
    assert report["exit_status"] == 2
    finding = _only(report, "orphaned-file")
    assert finding["path"] == orphan and finding["versions"] == []
    assert "A write still in progress also leaves such files" in finding["explanation"]
    assert "retain_versions=3, delete_unverified=True" in finding["fix"]
    lancelet.dataset(uri).cleanup_old_versions(retain_versions=3, delete_unverified=True)
    report = _report(uri)
    assert report["findings"] == [] and report["versions"] == [1, 2, 3]


def test_an_unused_index_directory_is_one_finding(tmp_path: Path) -> None:
    uri = _build(tmp_path)
    for name in ("a.lance", "b.lance"):
        write_file(f"{uri}/_indices/00000000-0000-0000-0000-000000000000/{name}", b"x")
    finding = _only(_report(uri), "orphaned-file")
    assert finding["path"] == "_indices/00000000-0000-0000-0000-000000000000"
    assert "the directory of an index that no version on disk lists" in finding["explanation"]


def test_a_temporary_file_of_a_dead_writer(tmp_path: Path) -> None:
    uri = _build(tmp_path)
    name = f".x.lance.{'ab' * 16}.tmp"
    write_file(f"{uri}/data/{name}", b"half")
    finding = _only(_report(uri), "orphaned-file")
    assert finding["path"] == f"data/{name}"
    assert "a temporary file of a write that did not finish" in finding["explanation"]


# -- output for people ---------------------------------------------------------------------


def test_people_get_a_table_then_each_finding_in_words(tmp_path: Path) -> None:
    uri = _build(tmp_path)
    gone = _fragment_files(uri, 3)[1]
    remove_file(f"{uri}/{gone}")
    result = _doctor(uri)
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert "Versions on disk: 1-3 (latest 3); reading in full: none" in lines
    assert f"2. ERROR missing-data-file (versions 1-3) {gone}" in lines
    assert "1. ERROR latest-version-broken (version 3)" in lines
    assert any(line.startswith("   Fix: Put a good copy of the file back") for line in lines)
    assert "error(s), 0 warning(s); exit status 1." in lines[-1]


def test_the_help_documents_the_exit_statuses() -> None:
    result = CliRunner().invoke(cli, ["doctor", "--help"])
    assert result.exit_code == 0
    assert "0  no problems found" in result.output
    assert "1  errors" in result.output
    assert "2  warnings only" in result.output


def test_a_dataset_on_an_object_store(s3_server: S3Server, s3_bucket: str) -> None:
    uri = f"s3://{s3_bucket}/ds"
    options = s3_server.storage_options
    lancelet.write_dataset(_table(), uri, max_rows_per_file=60, storage_options=options)
    lancelet.dataset(uri, storage_options=options).delete("id < 5")
    flags = [arg for key, value in options.items() for arg in ("-S", f"{key}={value}")]
    result = _doctor(uri, *flags, "--json")
    assert result.exit_code == 0, result.output
    (deletion_file,) = s3_server.keys(s3_bucket, "ds/_deletions/")
    s3_server.client().delete_object(Bucket=s3_bucket, Key=deletion_file)
    result = _doctor(uri, *flags, "--json")
    assert result.exit_code == 1
    finding = _only(json.loads(result.output), "missing-deletion-file")
    assert finding["path"] == deletion_file.removeprefix("ds/")
    assert finding["versions"] == [2]


def test_without_its_storage_options_the_store_fails_with_a_message(
    s3_server: S3Server, s3_bucket: str
) -> None:
    uri = f"s3://{s3_bucket}/ds"
    lancelet.write_dataset(_table(), uri, storage_options=s3_server.storage_options)
    runner = CliRunner(env=RUNNER_ENV)
    result = runner.invoke(cli, ["doctor", uri, "-S", "endpoint=http://127.0.0.1:9"])
    assert result.exit_code == 1
    assert "Error:" in result.output and "Traceback" not in result.output
