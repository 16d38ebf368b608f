"""Manifests that break an invariant are refused on load, naming the file and the part.

Each case re-encodes the latest manifest of a small dataset with one hostile value (or
damages one byte of it) and checks that lancelet raises CorruptDatasetError rather than
reading other rows; and every manifest pylance writes passes the same checks.
"""

from __future__ import annotations

from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet._proto import table_pb2
from lancelet.errors import CorruptDatasetError
from lancelet.table import naming
from lancelet.transaction.store import DatasetStore
from tests.fuzz.data_file_mutants import REFUSED_TYPES
from tests.fuzz.hostile import CASES, Edit, edited, fragment, message_range
from tests.fuzz.wire import spans
from tests.storage import list_names, read_file, write_file
from tests.versions import STORAGE_VERSION


def _table(n: int = 300) -> pa.Table:
    k = np.arange(n, dtype=np.int64)
    return pa.table(
        {
            "k": k,
            "s": pa.StructArray.from_arrays(
                [pa.array(k.astype(np.int32)), pa.array([str(i) for i in k])], names=["x", "y"]
            ),
            "l": pa.array([[int(i)] * int(i % 3) for i in k], pa.list_(pa.int32())),
        }
    )


@pytest.fixture(params=["lancelet", "pylance"])
def uri(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """Three fragments of 100 rows; fragments 0 and 1 have deletion files."""
    lib: Any = ll if request.param == "lancelet" else lance
    path = tmp_path / request.param
    lib.write_dataset(_table(), path, max_rows_per_file=100, data_storage_version=STORAGE_VERSION)
    lib.dataset(path).delete("k < 5 OR (k >= 100 AND k < 103)")
    return path


def _manifest_path(uri: Path) -> Path:
    return uri / naming.VERSIONS_DIR / naming.manifest_name(DatasetStore(uri).latest_version())


def _rewrite(uri: Path, edit: Edit) -> Path:
    """Re-encode the latest manifest with ``edit`` applied; its path."""
    path = _manifest_path(uri)
    write_file(path, edited(read_file(path), edit))
    return path


def _refused(uri: Path, path: Path, match: str) -> None:
    with pytest.raises(CorruptDatasetError, match=match) as caught:
        ll.dataset(uri)
    assert path.name in str(caught.value)


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_manifest_is_refused(uri: Path, case: str) -> None:
    edit, match = CASES[case]
    _refused(uri, _rewrite(uri, edit), match)


def test_version_unlike_the_file_name_is_refused(uri: Path) -> None:
    path = _rewrite(uri, lambda pb: setattr(pb, "version", 7))
    _refused(uri, path, "file name says version 2, the manifest says 7")


def test_deleted_count_unlike_the_file_is_refused_on_read(uri: Path) -> None:
    _rewrite(uri, lambda pb: setattr(fragment(pb, 1).deletion_file, "num_deleted_rows", 2))
    with pytest.raises(CorruptDatasetError, match="holds 3 deleted rows, the manifest says 2"):
        ll.dataset(uri).to_table()


def _deletion_file(uri: Path, fragment_id: int) -> Path:
    folder = uri / naming.DELETIONS_DIR
    (found,) = (n for n in list_names(folder) if fnmatch(n, f"{fragment_id}-*.arrow"))
    return folder / found


def _write_arrow_deletions(path: Path, rows: list[int]) -> None:
    schema = pa.schema([pa.field("row_id", pa.uint32(), nullable=False)])
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, schema) as writer:
        writer.write_batch(pa.record_batch([pa.array(rows, pa.uint32())], schema=schema))
    write_file(path, sink.getvalue().to_pybytes())


@pytest.mark.parametrize(
    ("rows", "match"),
    [([0, 1, 100], "deletes row 100 of a fragment with 100 rows"), ([3, 1, 3], "more than once")],
)
def test_deletion_file_rows_out_of_range_or_repeated(
    uri: Path, rows: list[int], match: str
) -> None:
    path = _deletion_file(uri, 1)
    _write_arrow_deletions(path, rows)
    with pytest.raises(CorruptDatasetError, match=match):
        ll.dataset(uri).to_table()


def test_unsorted_deletion_file_is_read_as_pylance_writes_them(uri: Path) -> None:
    _write_arrow_deletions(_deletion_file(uri, 1), [2, 0, 1])
    want = lance.dataset(uri).to_table()
    assert ll.dataset(uri).to_table().equals(want)


def _flip_tag(uri: Path, field: str, new_tag: int) -> Path:
    """Change the tag byte of the first occurrence of ``field`` (a dotted path)."""
    path = _manifest_path(uri)
    data = bytearray(read_file(path))
    start, length = message_range(bytes(data))
    found = spans(bytes(data), table_pb2.Manifest.DESCRIPTOR, start, start + length)
    span = next(s for s in found if s.name == field)
    data[span.start] = new_tag
    write_file(path, bytes(data))
    return path


@pytest.mark.parametrize(
    ("field", "tag", "match"),
    [
        # deletion_file (3, length-delimited) read as field 1 (the fragment id, a varint):
        # parsers skip it as unknown, and the deleted rows would come back.
        ("fragments.deletion_file", 0x0A, r"unknown field 1 \(wire type 2\) in a DataFragment"),
        # ... or as field 7, the row versions of stable row ids.
        ("fragments.deletion_file", 0x3A, "sequences, but the manifest does not declare"),
        # ... or as field 11, which does not exist.
        ("fragments.deletion_file", 0x5A, "unknown field 11"),
        # A whole fragment (2) read as field 3, the version.
        ("fragments", 0x1A, "field 'version' has wire type 2"),
        # Fragment 0's physical_rows (4) read as its id (1): a fragment 100 of no rows.
        ("fragments.physical_rows", 0x08, "fragment 100: has 0 rows"),
        # A data file's size (6) read as its major version (4), which it also has.
        ("fragments.files.file_size_bytes", 0x20, "a field occurs more than once"),
    ],
)
def test_flipped_tag_byte_is_refused(uri: Path, field: str, tag: int, match: str) -> None:
    _refused(uri, _flip_tag(uri, field, tag), match)


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_every_pylance_manifest_passes(tmp_path: Path, version: str) -> None:
    uri = tmp_path / "ds"
    data = _table(3000)
    lance.write_dataset(data, uri, max_rows_per_file=1000, data_storage_version=version)
    ds = lance.dataset(uri)
    ds.delete("k % 7 = 0")
    ds.update({"k": "k + 10000"}, where="k > 2900")
    ds.create_scalar_index("k", "BTREE")
    ds.add_columns({"c": "k * 2"})
    ds.drop_columns(["l"])
    ds.alter_columns({"path": "c", "name": "c2"})
    ds.merge_insert("k").when_matched_update_all().execute(
        lance.dataset(uri).to_table(filter="k < 50")
    )
    ds.update_config({"x": ""})
    ds.optimize.compact_files(target_rows_per_fragment=2000)
    ds.delete("k > 2500")
    lance.write_dataset(data.select(["k", "s"]).slice(0, 10), uri, mode="append")
    store = DatasetStore(uri)
    for info in lance.dataset(uri).versions():
        store.read_manifest(info["version"])
    if version == "2.0":
        assert ll.dataset(uri).to_table().equals(lance.dataset(uri).to_table())


def test_stable_row_id_manifests_pass(tmp_path: Path) -> None:
    uri = tmp_path / "ds"
    lance.write_dataset(
        _table(), uri, data_storage_version=STORAGE_VERSION, enable_stable_row_ids=True
    )
    lance.dataset(uri).delete("k < 3")
    assert ll.dataset(uri).to_table().equals(lance.dataset(uri).to_table())


def _mixed_dataset(uri: str) -> None:
    """A 2.0 dataset whose second fragment records itself as 2.2, committed by pylance
    (which then sets its mixed-versions feature flag)."""
    table = pa.table({"a": [1, 2, 3]})
    base = lance.write_dataset(table, uri, data_storage_version="2.0")
    frags = lance.fragment.write_fragments(table, uri, data_storage_version="2.0")
    for frag in frags:
        for data_file in frag.files:
            data_file.file_minor_version = 2  # as a 2.2 fragment records itself
    lance.LanceDataset.commit(uri, lance.LanceOperation.Append(frags), read_version=base.version)


def _flags(uri: str) -> tuple[int, int]:
    manifest = DatasetStore(uri).read_manifest(DatasetStore(uri).latest_version())
    return manifest.reader_feature_flags, manifest.writer_feature_flags


MIXED = 256  # pylance 14's reader and writer flag for data files of several 2.x versions


def test_a_2x_dataset_may_hold_files_of_another_2x_version(tmp_path: Path) -> None:
    """pylance appends a fragment written in another 2.x version when the manifest says
    versions mix; lancelet reads such a dataset, keeps the flag while files differ from
    the dataset's format, and drops it (as pylance does) once they no longer do."""
    uri = str(tmp_path / "mixed")
    _mixed_dataset(uri)
    lance.dataset(uri).validate()
    assert ll.dataset(uri).to_table()["a"].to_pylist() == [1, 2, 3, 1, 2, 3]
    ll.write_dataset(pa.table({"a": [4]}), uri, mode="append")
    assert _flags(uri) == (MIXED, MIXED)
    assert lance.dataset(uri).to_table()["a"].to_pylist() == [1, 2, 3, 1, 2, 3, 4]
    ll.dataset(uri).delete("a < 4")  # removes both fragments: only 2.0 files remain
    assert _flags(uri) == (0, 0)
    lance.dataset(uri).validate()
    assert lance.dataset(uri).to_table()["a"].to_pylist() == [4]


def test_another_2x_version_without_the_flag_is_damage(tmp_path: Path) -> None:
    uri = tmp_path / "unflagged"
    _mixed_dataset(str(uri))

    def clear_flags(pb: table_pb2.Manifest) -> None:
        pb.reader_feature_flags = pb.writer_feature_flags = 0

    _rewrite(uri, clear_flags)
    with pytest.raises(CorruptDatasetError, match="claims format 2.2 in a dataset of format 2.0"):
        ll.dataset(uri).to_table()


@pytest.mark.parametrize(
    "forged",
    [
        *sorted(REFUSED_TYPES),  # a set: its order differs between processes
        "",
        "int64",  # the file holds int32 values: a cast would change the type
        "double",
        "string",
        "decimal:256:70:2",
    ],
)
def test_forged_logical_types_are_refused(uri: Path, forged: str) -> None:
    """A field's logical type that the data files do not hold, or that no writer gives
    (widths near 2**64, negative, a struct over a leaf), is a CorruptDatasetError when
    the dataset is opened or read, never pyarrow's OverflowError or another type."""
    path = _manifest_path(uri)
    original = read_file(path)
    names = [f.name for f in table_pb2.Manifest.FromString(_message(original)).fields]
    for index, name in enumerate(names):
        if name not in ("x", "item"):  # the int32 leaves, in a struct and in a list
            continue

        def edit(pb: table_pb2.Manifest, index: int = index) -> None:
            pb.fields[index].logical_type = forged

        write_file(path, edited(original, edit))
        with pytest.raises(CorruptDatasetError, match=f"{name}|schema"):
            ll.dataset(uri).to_table()
    write_file(path, original)


def _message(data: bytes) -> bytes:
    start, length = message_range(data)
    return data[start : start + length]
