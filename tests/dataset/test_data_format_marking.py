"""Old manifests' data format: without the field a dataset is read from its files (or as
legacy 0.1 when it has none), and a manifest wrongly marked 0.1 over newer files is
corrected by the next commit -- each checked against what pylance does with the same
bytes."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet._proto import table_pb2
from tests.dataset.util import keyed_table
from tests.storage import list_names, read_file, write_file

TABLE = keyed_table(0, 40)


def _rewrite_latest(
    uri: Path, version: str | None, *, v2_flag: bool = False, max_fragment_id: bool = True
) -> None:
    """Rewrite the dataset's only manifest with its data format set to ``version``, or
    without the field when None (as writers did before it existed); ``v2_flag`` sets
    the writer flag that marked v2 datasets before the field, and ``max_fragment_id``
    False leaves that field out, as writers before 0.16 did.  The manifest file
    layout: a length-prefixed message, then u64 offset, u16 major, u16 minor, b"LANC"."""
    versions = uri / "_versions"
    (name,) = [n for n in list_names(versions) if n.endswith(".manifest")]
    path = versions / name
    data = read_file(path)
    offset = struct.unpack_from("<Q", data, len(data) - 16)[0]
    (length,) = struct.unpack_from("<I", data, offset)
    pb = table_pb2.Manifest.FromString(data[offset + 4 : offset + 4 + length])
    assert not pb.HasField("index_section")
    if version is None:
        pb.ClearField("data_format")
    else:
        pb.data_format.file_format = "lance"
        pb.data_format.version = version
    if v2_flag:
        pb.writer_feature_flags |= 4
    if not max_fragment_id:
        pb.ClearField("max_fragment_id")
    pb.ClearField("transaction_section")  # it pointed into the bytes left behind
    body = pb.SerializeToString()
    write_file(path, struct.pack("<I", len(body)) + body + struct.pack("<QHH4s", 0, 0, 2, b"LANC"))


@pytest.mark.parametrize("written", ["2.0", "2.1"])
def test_missing_field_is_read_from_the_files(tmp_path: Path, written: str) -> None:
    uri = tmp_path / "ds"
    lance.write_dataset(TABLE, uri, data_storage_version=written)
    _rewrite_latest(uri, None)
    theirs, ours = lance.dataset(uri), ll.dataset(uri)
    assert theirs.data_storage_version == written
    assert ours.data_storage_version == theirs.data_storage_version
    assert ours.to_table().equals(theirs.to_table())


def test_missing_field_and_no_files_is_legacy(tmp_path: Path) -> None:
    uri = tmp_path / "empty"
    lance.write_dataset(TABLE.schema.empty_table(), uri, data_storage_version="2.0")
    assert lance.dataset(uri).get_fragments() == []
    _rewrite_latest(uri, None)
    theirs, ours = lance.dataset(uri), ll.dataset(uri)
    assert theirs.data_storage_version == "0.1"
    assert ours.data_storage_version == theirs.data_storage_version


def test_missing_field_no_files_and_the_v2_flag_is_the_stable_version(tmp_path: Path) -> None:
    """A dataset created empty by a writer that marked v2 datasets with a flag: pylance
    14 reads it as its stable version, and appends files of that version."""
    uri = tmp_path / "empty"
    lance.write_dataset(TABLE.schema.empty_table(), uri, data_storage_version="2.0")
    _rewrite_latest(uri, None, v2_flag=True)
    theirs, ours = lance.dataset(uri), ll.dataset(uri)
    assert theirs.data_storage_version == lance.file.stable_version()
    assert ours.data_storage_version == theirs.data_storage_version
    ll.write_dataset(TABLE, uri, mode="append")
    assert lance.dataset(uri).data_storage_version == theirs.data_storage_version
    assert lance.dataset(uri).to_table().equals(TABLE)


def test_missing_max_fragment_id_is_read_from_the_fragments(tmp_path: Path) -> None:
    """Manifests before 0.16 have no max_fragment_id: an append must not reuse the ids
    of the fragments they list."""
    uri = tmp_path / "old"
    lance.write_dataset(TABLE, uri, max_rows_per_file=15)
    _rewrite_latest(uri, None, max_fragment_id=False)
    ll.write_dataset(keyed_table(40, 50), uri, mode="append")
    ids = [f.fragment_id for f in lance.dataset(uri).get_fragments()]
    assert ids == [0, 1, 2, 3]
    assert lance.dataset(uri).to_table().equals(pa.concat_tables([TABLE, keyed_table(40, 50)]))


@pytest.mark.local_files("copies the dataset with shutil for both libraries")
@pytest.mark.parametrize("written", ["2.0", "2.1"])
def test_wrong_legacy_mark_is_corrected_on_commit(tmp_path: Path, written: str) -> None:
    """pylance's commit checks a legacy-marked manifest against its files and, when they
    all share a newer format, marks the new version with that format.  (pylance cannot
    delete from such a dataset before the correction -- it opens the files with its
    legacy reader -- so the correcting commit here changes only the config.)"""
    base = tmp_path / "base"
    lance.write_dataset(TABLE, base, data_storage_version=written)
    _rewrite_latest(base, "0.1")
    theirs_uri, ours_uri = tmp_path / "theirs", tmp_path / "ours"
    shutil.copytree(base, theirs_uri)
    shutil.copytree(base, ours_uri)
    # Until a commit, both report the mark as it is, and read the rows.
    assert lance.dataset(theirs_uri).data_storage_version == "0.1"
    assert ll.dataset(ours_uri).data_storage_version == "0.1"
    assert ll.dataset(ours_uri).to_table().equals(lance.dataset(theirs_uri).to_table())

    lance.dataset(theirs_uri).update_config({"x": "1"})
    ll.dataset(ours_uri).update_config({"x": "1"})
    for uri in (theirs_uri, ours_uri):
        for reader in (lance.dataset, ll.dataset):
            ds = reader(uri)
            assert ds.version == 2
            assert ds.data_storage_version == written
    # The corrected dataset takes changes and files of its format again.
    lance.dataset(theirs_uri).delete("k < 5")
    ll.dataset(ours_uri).delete("k < 5")
    more = keyed_table(100, 110)
    lance.write_dataset(more, theirs_uri, mode="append")
    ll.write_dataset(more, ours_uri, mode="append")
    theirs, ours = lance.dataset(theirs_uri), lance.dataset(ours_uri)
    ours.validate()
    assert ours.data_storage_version == theirs.data_storage_version == written
    assert ours.to_table().equals(theirs.to_table())


def test_commit_of_lancelet_alone_corrects_the_mark(tmp_path: Path) -> None:
    """A delete (which pylance cannot make here) corrects the mark too; pylance then
    reads the dataset as one of the files' format."""
    uri = tmp_path / "ds"
    lance.write_dataset(TABLE, uri, data_storage_version="2.0")
    _rewrite_latest(uri, "0.1")
    ll.dataset(uri).delete("k < 5")
    ds = lance.dataset(uri)
    ds.validate()
    assert ds.data_storage_version == "2.0"
    assert ds.to_table().equals(TABLE.filter(pa.compute.greater_equal(TABLE["k"], 5)))


def test_truly_legacy_files_keep_the_mark(tmp_path: Path) -> None:
    uri = tmp_path / "legacy"
    lance.write_dataset(TABLE, uri, data_storage_version="legacy")
    before = lance.dataset(uri).to_table()  # legacy files store some types otherwise
    ll.dataset(uri).delete("k < 3")
    assert lance.dataset(uri).data_storage_version == "0.1"
    assert (
        lance.dataset(uri)
        .to_table()
        .equals(before.filter(pa.compute.greater_equal(before["k"], 3)))
    )
