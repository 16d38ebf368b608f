"""Each kind of operation, read back by ``read_transaction`` and ``get_transactions``:
lancelet shows the ``LanceOperation`` class pylance shows, with the same field values,
whichever library wrote the dataset.

Every scenario is run by each library; then every version's transaction is read by
both and compared field by field, as plain values (fragments as their JSON, schemas
as pyarrow schemas, bitmaps as lists), on pylance's field names.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import lance
import lance.fragment
import pyarrow as pa
import pytest
from lance.dataset import Index as PylanceIndex
from lance.dataset import IndexFile as PylanceIndexFile

import lancelet as ll
from lancelet.dataset.versions.transactions import public_transaction
from lancelet.errors import UnsupportedOptionError
from lancelet.schema import LanceSchema
from lancelet.transaction import registry
from tests.versions import STORAGE_VERSION

Lib = Any
Scenario = Callable[[Lib, str], None]

# pylance's dataclasses by name: lancelet's are compared on their fields (lancelet's
# own extras, such as Overwrite's config_upsert_values, are left out).
_PYLANCE_CLASSES: dict[str, type] = {
    **{
        name: getattr(lance.LanceOperation, name)
        for name in dir(lance.LanceOperation)
        if not name.startswith("_")
    },
    "Index": PylanceIndex,
    "IndexFile": PylanceIndexFile,
    "DataFile": lance.fragment.DataFile,
}


def plain(value: Any) -> Any:
    """``value`` (from either library) as plain Python values, tagged with class names."""
    if isinstance(value, (bool, int, float, bytes, datetime, type(None))):
        return value
    if isinstance(value, str):
        return str(value)  # pylance's DataFile.path is a str subclass
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if hasattr(value, "to_json"):  # FragmentMetadata
        return value.to_json()
    if hasattr(value, "to_pyarrow"):  # LanceSchema
        return value.to_pyarrow()
    if type(value).__name__ == "DatasetBasePath":
        return ("DatasetBasePath", value.id, value.name, value.path, value.is_dataset_root)
    if hasattr(value, "issubset"):  # a bitmap of fragment ids
        return sorted(value)
    name = type(value).__name__
    if dataclasses.is_dataclass(value):
        names = [f.name for f in dataclasses.fields(_PYLANCE_CLASSES.get(name, value))]
        return {"class": name, **{n: plain(getattr(value, n.lstrip("_"))) for n in names}}
    return {"class": name}


def _assert_same(ours: Any, theirs: Any) -> None:
    """One transaction read by lancelet (``ours``) and by pylance (``theirs``)."""
    assert (ours.read_version, ours.uuid) == (theirs.read_version, theirs.uuid)
    assert ours.transaction_properties == (theirs.transaction_properties or {})
    if type(ours.operation) is ll.LanceOperation.ReserveFragments:
        # lancelet's own class for a kind pylance shows as a bare BaseOperation.
        assert type(theirs.operation) is lance.LanceOperation.BaseOperation
        assert isinstance(ours.operation, ll.LanceOperation.BaseOperation)
        return
    assert plain(ours.operation) == plain(theirs.operation)


def _kinds_and_compare(uri: str) -> list[str]:
    """The kinds of every version's operation as lancelet names them, after checking
    each against pylance's reading, one by one and through get_transactions."""
    ours, theirs = ll.dataset(uri), lance.dataset(uri)
    kinds = []
    for version in range(1, ours.version + 1):
        mine = ours.read_transaction(version)
        _assert_same(mine, theirs.read_transaction(version))
        assert isinstance(mine.operation, ll.LanceOperation.BaseOperation)
        kinds.append(type(mine.operation).__name__)
    listed = ours.get_transactions(ours.version)
    assert len(listed) == ours.version
    for mine, reference in zip(listed, theirs.get_transactions(ours.version), strict=True):
        _assert_same(mine, reference)
    return kinds


def _table(start: int, count: int) -> pa.Table:
    ids = range(start, start + count)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "v": pa.array([float(i) for i in ids]),
            "i": pa.array(ids, pa.int32()),
        }
    )


def _create(lib: Lib, uri: str, rows: int = 20, **kwargs: Any) -> Any:
    return lib.write_dataset(
        _table(0, rows), uri, max_rows_per_file=5, data_storage_version=STORAGE_VERSION, **kwargs
    )


# -- scenarios: each performed the same way with either library -------------------------


def _writes(lib: Lib, uri: str) -> None:
    _create(lib, uri)
    lib.write_dataset(_table(20, 5), uri, mode="append")
    lib.write_dataset(_table(100, 3), uri, mode="overwrite")


def _rows(lib: Lib, uri: str) -> None:
    ds = _create(lib, uri)
    ds.delete("id = 7")
    ds.delete("id < 5")  # a whole fragment goes: deleted_fragment_ids
    ds.update({"v": "v + 1"}, where="id = 12")
    ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(
        _table(18, 4)
    )


def _columns(lib: Lib, uri: str) -> None:
    ds = _create(lib, uri)
    ds.add_columns({"w": "id * 2"})
    ds.merge(pa.table({"id": pa.array([1, 2], pa.int64()), "m": [5, 6]}), "id")
    ds.alter_columns({"path": "w", "name": "w2"})
    ds.alter_columns({"path": "v", "nullable": False})  # preserves_nullability False
    ds.drop_columns(["w2"])
    ds.alter_columns({"path": "i", "data_type": pa.int64()})  # a cast: a Merge


def _indices(lib: Lib, uri: str) -> None:
    ds = _create(lib, uri)
    ds.create_scalar_index("id", "BTREE")
    ds = lib.write_dataset(_table(20, 5), uri, mode="append")
    ds.optimize.optimize_indices()


def _compaction(lib: Lib, uri: str) -> None:
    ds = _create(lib, uri)
    ds.delete("id = 3")
    ds.optimize.compact_files(target_rows_per_fragment=100)


def _deferred_compaction(lib: Lib, uri: str) -> None:
    ds = _create(lib, uri)
    ds.create_scalar_index("id", "BTREE")
    ds.optimize.compact_files(target_rows_per_fragment=100, defer_index_remap=True)


def _config(lib: Lib, uri: str) -> None:
    ds = _create(lib, uri)
    ds.update_config({"k": "v", "k2": "v2"})
    ds.replace_schema_metadata({"a": "b"})
    ds.replace_field_metadata("id", {"c": "d"})
    ds.delete_config_keys(["k"])


def _restore(lib: Lib, uri: str) -> None:
    _create(lib, uri)
    lib.write_dataset(_table(20, 5), uri, mode="append")
    lib.dataset(uri, version=1).restore()


def _commits(lib: Lib, uri: str) -> None:
    """Operations committed by hand, their flags as given."""
    ds = _create(lib, uri, rows=4)
    op = lib.LanceOperation
    fragment, schema = ds.get_fragments()[0].merge_columns(
        lambda b: pa.record_batch([pa.array([1] * b.num_rows)], names=["z"]), columns=["id"]
    )
    ds = lib.LanceDataset.commit(uri, op.Merge([fragment], schema, True), read_version=1)
    ds = lib.LanceDataset.commit(uri, op.Project(ds.lance_schema), read_version=2)
    ds = lib.LanceDataset.commit(uri, op.Update(update_mode="rewrite_rows"), read_version=3)
    ds = lib.LanceDataset.commit(uri, op.Update(), read_version=4)


def _data_replacement(lib: Lib, uri: str) -> None:
    _create(lib, uri, rows=4)
    new = lib.LanceFragment.create(uri, _table(50, 4))
    op = lib.LanceOperation
    replacement = op.DataReplacement([op.DataReplacementGroup(0, new.files[0])])
    lib.LanceDataset.commit(uri, replacement, read_version=1)


def _bases(lib: Lib, uri: str) -> None:
    other = lib.DatasetBasePath(uri + "-other", name="other", is_dataset_root=False)
    ds = _create(lib, uri, initial_bases=[other], target_bases=["other"])
    ds.add_bases([lib.DatasetBasePath(uri + "-more", name="more")])  # no class: opaque


SCENARIOS: dict[str, tuple[Scenario, list[str]]] = {
    "writes": (_writes, ["Overwrite", "Append", "Overwrite"]),
    "rows": (_rows, ["Overwrite", "Delete", "Delete", "Update", "Update"]),
    "columns": (
        _columns,
        ["Overwrite", "Merge", "Merge", "Project", "Project", "Project", "Merge"],
    ),
    "indices": (_indices, ["Overwrite", "CreateIndex", "Append", "CreateIndex"]),
    "compaction": (_compaction, ["Overwrite", "Delete", "ReserveFragments", "Rewrite"]),
    "deferred": (_deferred_compaction, ["Overwrite", "CreateIndex", "ReserveFragments", "Rewrite"]),
    "config": (_config, ["Overwrite"] + ["UpdateConfig"] * 4),
    "restore": (_restore, ["Overwrite", "Append", "Restore"]),
    "commits": (_commits, ["Overwrite", "Merge", "Project", "Update", "Update"]),
    "data_replacement": (_data_replacement, ["Overwrite", "DataReplacement"]),
    "bases": (_bases, ["Overwrite", "BaseOperation"]),
}


# Base paths are local directories named in the manifest.
_LOCAL_ONLY = pytest.mark.local_files("base paths are local directories the manifest names")


@pytest.mark.parametrize("writer", [ll, lance], ids=["lancelet", "pylance"])
@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=_LOCAL_ONLY) if n == "bases" else n for n in SCENARIOS]
)
def test_operations_read_back_as_pylance_reads_them(name: str, writer: Lib, tmp_path: Path) -> None:
    scenario, kinds = SCENARIOS[name]
    uri = str(tmp_path / "ds")
    scenario(writer, uri)
    assert _kinds_and_compare(uri) == kinds


# -- the values themselves, beyond agreeing with pylance --------------------------------


@pytest.mark.parametrize("writer", [ll, lance], ids=["lancelet", "pylance"])
def test_schema_changes_record_preserves_nullability(writer: Lib, tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _columns(writer, uri)
    ds = ll.dataset(uri)
    flags = [ds.read_transaction(v).operation.preserves_nullability for v in range(2, 8)]
    # Only making "v" refuse nulls does not preserve nullability.
    assert flags == [True, True, True, False, True, True]
    assert isinstance(ds.read_transaction(4).operation.schema, LanceSchema)


@pytest.mark.parametrize("writer", [ll, lance], ids=["lancelet", "pylance"])
def test_a_compaction_reads_as_rewrite_groups(writer: Lib, tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _compaction(writer, uri)
    ds = ll.dataset(uri)
    op = ds.read_transaction(ds.version).operation
    assert type(op) is ll.LanceOperation.Rewrite
    assert op.rewritten_indices == []
    (group,) = op.groups
    assert type(group) is ll.LanceOperation.RewriteGroup
    before = ll.dataset(uri, version=2).get_fragments()
    assert [f.id for f in group.old_fragments] == [f.fragment_id for f in before]
    assert [f.to_json() for f in group.new_fragments] == [
        f.metadata.to_json() for f in ds.get_fragments()
    ]
    assert sum(f.physical_rows for f in group.new_fragments) == 19


@pytest.mark.parametrize("writer", [ll, lance], ids=["lancelet", "pylance"])
def test_a_compaction_that_remaps_an_index_lists_it(writer: Lib, tmp_path: Path) -> None:
    """pylance 14 cannot build its RewrittenIndex from such a transaction (it raises
    TypeError); lancelet fills pylance's fields from the transaction."""
    uri = str(tmp_path / "ds")
    ds = _create(writer, uri)
    ds.create_scalar_index("id", "BTREE")
    old = ds.describe_indices()[0].segments[0].uuid
    ds.optimize.compact_files(target_rows_per_fragment=100)
    ours = ll.dataset(uri)
    (new,) = (s.uuid for s in ours.describe_indices()[0].segments)
    op = ours.read_transaction(ours.version).operation
    assert type(op) is ll.LanceOperation.Rewrite
    assert op.rewritten_indices == [
        ll.LanceOperation.RewrittenIndex(old, new, "/lance.table.BTreeIndexDetails", b"", 0)
    ]
    try:
        theirs = lance.dataset(uri).read_transaction(ours.version)
    except TypeError:  # pylance 14's failure
        return
    assert plain(op) == plain(theirs.operation)


def test_update_mode_rewrite_columns_reads_back(tmp_path: Path) -> None:
    """Only pylance commits this mode; lancelet reads it and refuses to commit it."""
    uri = str(tmp_path / "ds")
    _create(lance, uri, rows=4)
    lance.LanceDataset.commit(
        uri, lance.LanceOperation.Update(update_mode="rewrite_columns"), read_version=1
    )
    assert _kinds_and_compare(uri) == ["Overwrite", "Update"]
    op = ll.dataset(uri).read_transaction(2).operation
    assert op.update_mode == "rewrite_columns"
    with pytest.raises(UnsupportedOptionError, match="update_mode"):
        ll.LanceDataset.commit(uri, op, read_version=2)


@pytest.mark.local_files("pylance's shallow clone writes the clone by its local path")
def test_a_shallow_clone_reads_as_clone(tmp_path: Path) -> None:
    """lancelet does not clone, but opens pylance's shallow clones (whose source is
    base path 0): the clone's transaction reads as pylance reads it."""
    source = str(tmp_path / "source")
    _create(lance, source).tags.create("t1", 1)
    clone = tmp_path / "clone"
    lance.dataset(source).shallow_clone(str(clone), "t1")
    (path,) = (clone / "_transactions").iterdir()
    txn = registry.decode_transaction(path.read_bytes(), str(path))
    ours = public_transaction(txn)
    _assert_same(ours, lance.dataset(str(clone)).read_transaction(1))
    _assert_same(
        ll.dataset(str(clone)).read_transaction(1), lance.dataset(str(clone)).read_transaction(1)
    )
    assert ours.operation == ll.LanceOperation.Clone(True, None, 1, source, None)
    # The clone's rows live under the source; an append lands in the clone.
    expected = lance.dataset(source, version=1).to_table()
    assert ll.dataset(str(clone)).to_table().equals(expected)
    ll.write_dataset(expected.slice(0, 2), str(clone), mode="append")
    both = pa.concat_tables([expected, expected.slice(0, 2)])
    assert lance.dataset(str(clone)).to_table().equals(both)
    assert ll.dataset(str(clone)).to_table().equals(both)
    with pytest.raises(UnsupportedOptionError, match="cannot commit"):
        ours.to_transaction()


@pytest.mark.parametrize("committer", [ll, lance], ids=["lancelet", "pylance"])
@pytest.mark.parametrize("writer", [ll, lance], ids=["lancelet", "pylance"])
def test_a_read_back_rewrite_commits_again(writer: Lib, committer: Lib, tmp_path: Path) -> None:
    """A compaction's Rewrite as lancelet reads it back is accepted by either library's
    commit: restored to the version before it, the dataset is compacted again."""
    uri = str(tmp_path / "ds")
    _compaction(writer, uri)
    compacted = ll.dataset(uri)
    read = compacted.read_transaction(compacted.version).operation
    ll.dataset(uri, version=compacted.version - 1).restore()
    groups = [
        committer.LanceOperation.RewriteGroup(
            _as_metadata(committer, g.old_fragments), _as_metadata(committer, g.new_fragments)
        )
        for g in read.groups
    ]
    again = committer.LanceDataset.commit(
        uri, committer.LanceOperation.Rewrite(groups, []), read_version=compacted.version + 1
    )
    assert [f.metadata.to_json() for f in ll.dataset(uri).get_fragments()] == [
        f.metadata.to_json() for f in compacted.get_fragments()
    ]
    assert again.to_table() == compacted.to_table()


def _as_metadata(lib: Lib, fragments: list[Any]) -> list[Any]:
    """Fragments as the committing library's FragmentMetadata."""
    return [lib.fragment.FragmentMetadata.from_json(json.dumps(f.to_json())) for f in fragments]


@pytest.mark.parametrize("writer", [ll, lance], ids=["lancelet", "pylance"])
def test_a_read_back_project_commits_again(writer: Lib, tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _create(writer, uri).drop_columns(["i"])
    read = ll.dataset(uri).read_transaction(2).operation
    assert type(read) is ll.LanceOperation.Project
    again = ll.LanceDataset.commit(uri, read, read_version=2)
    assert again.schema.names == ["id", "v"]
    assert lance.dataset(uri).read_transaction(3).operation.preserves_nullability is True
