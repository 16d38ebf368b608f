"""Index metadata: read as pylance writes it, listed as pylance lists it, and changed by
commits pylance sees (pylance is the oracle throughout)."""

from __future__ import annotations

import struct
import uuid
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest
from pyroaring import FrozenBitMap

import lancelet as ll
from lancelet._proto import table_pb2
from lancelet.dataset.indices import catalog as indices
from lancelet.errors import (
    CorruptDatasetError,
    IncompatibleTransactionError,
    IndexExistsError,
    IndexNotFoundError,
    RetryableCommitConflictError,
)
from lancelet.table import naming
from lancelet.table.index import IndexDetails, IndexMetadata
from lancelet.table.manifest_file import encode_manifest
from lancelet.transaction import operations as ops
from lancelet.transaction.commit import commit_transaction
from lancelet.transaction.store import DatasetStore
from tests.storage import copy_tree, list_names, present, read_file, write_file
from tests.versions import STORAGE_VERSION

ROWS = 1000


def _table(start: int = 0, stop: int = ROWS) -> pa.Table:
    ids = np.arange(start, stop)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "s": pa.array([f"x{i % 7}" for i in ids]),
            "l": pa.array([[f"a{i % 3}"] for i in ids]),
            "st": pa.array([{"x": int(i)} for i in ids]),
        }
    )


@pytest.fixture
def uri(tmp_path: Path) -> str:
    """Four fragments with pylance indices of several kinds, one replaced and one dropped."""
    path = str(tmp_path / "ds")
    lance.write_dataset(_table(), path, max_rows_per_file=300, data_storage_version=STORAGE_VERSION)
    ds = lance.dataset(path)
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("s", "BITMAP")
    ds.create_scalar_index("l", "LABEL_LIST")
    ds.create_scalar_index("id", "ZONEMAP", name="zm")
    ds.create_scalar_index("s", "BLOOMFILTER", name="bf")
    ds.create_scalar_index("st.x", "BTREE")
    ds.create_scalar_index("s", "BTREE", name="gone")
    ds.delete("id < 10")
    lance.write_dataset(_table(ROWS, ROWS + 50), path, mode="append")
    ds = lance.dataset(path)
    ds.create_scalar_index("s", "BITMAP", replace=True)  # covers the new fragment too
    ds.drop_index("gone")
    return path


def _listed(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**r, "fragment_ids": sorted(r["fragment_ids"])} for r in rows]


def _described(ds: Any) -> list[tuple[Any, ...]]:
    return [
        (
            d.name,
            d.type_url,
            d.num_rows_indexed,
            list(d.fields),
            list(d.field_names),
            len(d.segments),
            d.total_size_bytes,
            [
                (s.uuid, sorted(s.fragment_ids), s.dataset_version_at_last_update)
                for s in d.segments
            ],
        )
        for d in ds.describe_indices()
    ]


def test_pylance_indices_are_listed_and_described_as_pylance_does(uri: str) -> None:
    mine, theirs = ll.dataset(uri), lance.dataset(uri)
    assert _listed(mine.list_indices()) == _listed(theirs.list_indices())
    assert [r["type"] for r in mine.list_indices()] == [
        "BloomFilter", "BTree", "LabelList", "Bitmap", "BTree", "ZoneMap"
    ]  # fmt: skip
    assert _described(mine) == _described(theirs)
    for d in mine.describe_indices():
        assert d.details == {}


def test_index_statistics_match_pylance(uri: str) -> None:
    for name in ("id_idx", "s_idx", "zm"):
        mine = ll.dataset(uri).stats.index_stats(name)
        theirs = lance.dataset(uri).stats.index_stats(name)
        assert mine == theirs
    with pytest.raises(IndexNotFoundError, match="nope"):
        ll.dataset(uri).stats.index_stats("nope")


def _index_section(path: Path) -> tuple[bytes, table_pb2.IndexSection]:
    data = read_file(path)
    (offset,) = struct.unpack_from("<Q", data, len(data) - 16)
    (length,) = struct.unpack_from("<I", data, offset)
    pb = table_pb2.Manifest.FromString(data[offset + 4 : offset + 4 + length])
    (size,) = struct.unpack_from("<I", data, pb.index_section)
    raw = data[pb.index_section + 4 : pb.index_section + 4 + size]
    return raw, table_pb2.IndexSection.FromString(raw)


def _latest_manifest(uri: str) -> Path:
    location = DatasetStore(uri).latest_location()
    assert location is not None
    return Path(uri, naming.VERSIONS_DIR, location.name)


def test_index_metadata_round_trips_pylance_bytes(uri: str) -> None:
    raw, section = _index_section(_latest_manifest(uri))
    for pb in section.indices:
        index = IndexMetadata.from_proto(pb, "m")
        assert index.to_proto().SerializeToString() == pb.SerializeToString()
    manifest = DatasetStore(uri).read_manifest(ll.dataset(uri).version)
    out = Path(uri) / "reencoded"
    write_file(out, encode_manifest(manifest))
    assert _index_section(out)[0] == raw


def test_sparse_fragment_bitmaps_serialize_as_pylance_writes_them(tmp_path: Path) -> None:
    path = str(tmp_path / "ds")
    lance.write_dataset(_table(0, 3000), path, max_rows_per_file=100)
    ds = lance.dataset(path)
    ds.delete("id % 300 < 100 OR (id >= 1500 AND id < 2600)")  # removes many fragments
    ds.create_scalar_index("id", "BTREE")
    _, section = _index_section(_latest_manifest(path))
    (pb,) = section.indices
    assert len(list(IndexMetadata.from_proto(pb, "m").fragment_bitmap or [])) > 3
    assert IndexMetadata.from_proto(pb, "m").to_proto().fragment_bitmap == pb.fragment_bitmap


def test_drop_index_is_seen_by_pylance_and_cleanup_removes_its_files(uri: str) -> None:
    ds = ll.dataset(uri)
    (dropped,) = [i["uuid"] for i in ds.list_indices() if i["name"] == "zm"]
    ds.drop_index("zm")
    assert "zm" not in [i["name"] for i in lance.dataset(uri).list_indices()]
    assert len(lance.dataset(uri).list_indices()) == 5
    directory = Path(uri, naming.INDICES_DIR, dropped)
    assert present(directory)  # until cleanup
    with pytest.raises(IndexNotFoundError, match="zm"):
        ds.drop_index("zm")
    kept = {i["uuid"] for i in lance.dataset(uri).list_indices()}
    ll.dataset(uri).cleanup_old_versions(older_than=timedelta(0))
    assert not present(directory)
    on_disk = set(list_names(Path(uri, naming.INDICES_DIR)))
    assert on_disk == kept
    assert lance.dataset(uri).to_table(filter="id = 500").num_rows == 1


def _pylance_uses_index(uri: str, name: str, filter: str) -> bool:
    plan = lance.dataset(uri).scanner(filter=filter).explain_plan()
    return "ScalarIndexQuery" in plan and name in plan


def test_a_lancelet_committed_index_is_listed_and_used_by_pylance(uri: str) -> None:
    source = next(i for i in ll.dataset(uri).list_indices() if i["name"] == "id_idx")
    details = ll.dataset(uri).describe_indices()
    btree = next(d for d in details if d.name == "id_idx")
    fresh = uuid.uuid4()
    copy_tree(
        Path(uri, naming.INDICES_DIR, source["uuid"]), Path(uri, naming.INDICES_DIR, str(fresh))
    )
    ds = ll.dataset(uri)
    ds.drop_index("id_idx")
    ds.drop_index("zm")  # with two indices on a column pylance uses neither
    built_from = ds.version
    committed = indices.commit_index(
        ds.snapshot, "ids", [0], fresh, IndexDetails(btree.type_url), source["fragment_ids"]
    )
    assert committed.version == built_from + 1
    listed = {i["name"]: i for i in lance.dataset(uri).list_indices()}
    assert listed["ids"]["uuid"] == str(fresh)
    assert listed["ids"]["version"] == built_from
    assert sorted(listed["ids"]["fragment_ids"]) == sorted(source["fragment_ids"])
    assert _pylance_uses_index(uri, "ids", "id = 500")
    assert lance.dataset(uri).to_table(filter="id = 500")["id"].to_pylist() == [500]
    assert lance.dataset(uri).to_table(filter="id = 1020")["id"].to_pylist() == [1020]


def test_commit_index_refuses_a_duplicate_name_unless_replacing(uri: str) -> None:
    ds = ll.dataset(uri)
    (source,) = [i for i in ds.list_indices() if i["name"] == "id_idx"]
    details = IndexDetails("/lance.table.BTreeIndexDetails")
    fresh = uuid.uuid4()
    copy_tree(
        Path(uri, naming.INDICES_DIR, source["uuid"]), Path(uri, naming.INDICES_DIR, str(fresh))
    )
    with pytest.raises(IndexExistsError, match="already exists, please specify"):
        indices.commit_index(ds.snapshot, "id_idx", [0], fresh, details, [0, 1])
    with pytest.raises(IndexExistsError, match="different fields"):
        indices.commit_index(ds.snapshot, "id_idx", [1], fresh, details, [0, 1], replace=True)
    version = ds.version
    assert lance.dataset(uri).version == version  # nothing committed
    indices.commit_index(ds.snapshot, "id_idx", [0], fresh, details, [0, 1], replace=True)
    (now,) = [i for i in lance.dataset(uri).list_indices() if i["name"] == "id_idx"]
    assert now["uuid"] == str(fresh) and sorted(now["fragment_ids"]) == [0, 1]


def test_pylance_create_index_transactions_decode(uri: str) -> None:
    store = DatasetStore(uri)
    seen = 0
    for version in range(2, ll.dataset(uri).version + 1):
        manifest = store.read_manifest(version)
        txn = store.read_transaction(manifest.transaction_file)
        if isinstance(txn.operation, ops.CreateIndex):
            seen += 1
            ids = {i.uuid for i in manifest.indices}
            assert {i.uuid for i in txn.operation.new_indices} <= ids
            assert not {i.uuid for i in txn.operation.removed_indices} & ids
    assert seen == 9  # seven builds, a replacement and a drop


# -- folds of other operations ---------------------------------------------------------


def _bitmaps(uri: str) -> dict[str, list[int]]:
    return {i["name"]: sorted(i["fragment_ids"]) for i in lance.dataset(uri).list_indices()}


def test_operations_fold_indices_as_pylance_reads_them(uri: str) -> None:
    before = _bitmaps(uri)
    ll.write_dataset(_table(5000, 5010), uri, mode="append")
    assert _bitmaps(uri) == before  # new fragments are not indexed
    ll.dataset(uri).delete("id < 300")  # removes fragment 0 whole
    assert _bitmaps(uri) == before
    ll.dataset(uri).drop_columns(["l"])
    assert set(_bitmaps(uri)) == set(before) - {"l_idx"}
    ll.dataset(uri).optimize.compact_files(target_rows_per_fragment=100_000)
    assert lance.dataset(uri).to_table(filter="id = 700")["id"].to_pylist() == [700]
    ll.write_dataset(_table(0, 5), uri, mode="overwrite")
    assert lance.dataset(uri).list_indices() == []


# -- conflicts ---------------------------------------------------------------------------


def _create(uri: str, name: str, fields: tuple[int, ...], fragments: list[int]) -> ops.CreateIndex:
    """An index of another's files (the metadata is all a conflict rule reads)."""
    listed = {i["name"]: i for i in ll.dataset(uri).list_indices()}
    any_index = listed.get("id_idx", listed["s_idx"])
    fresh = uuid.uuid4()
    copy_tree(
        Path(uri, naming.INDICES_DIR, any_index["uuid"]), Path(uri, naming.INDICES_DIR, str(fresh))
    )
    return ops.CreateIndex(
        (
            IndexMetadata(
                fresh,
                fields,
                name,
                ll.dataset(uri).version,
                _frozen(fragments),
                IndexDetails("/lance.table.BTreeIndexDetails"),
                0,
            ),
        )
    )


def _frozen(ids: list[int]) -> FrozenBitMap:
    return FrozenBitMap(ids)


def _commit(uri: str, read_version: int, op: ops.Operation) -> None:
    commit_transaction(DatasetStore(uri), ops.Transaction(read_version, op))


def test_two_index_commits_on_one_name_clash_and_on_other_names_commute(uri: str) -> None:
    read = ll.dataset(uri).version
    _commit(uri, read, _create(uri, "a", (0,), [0, 1]))
    with pytest.raises(RetryableCommitConflictError, match=r"\['a'\]"):
        _commit(uri, read, _create(uri, "a", (0,), [0, 1, 2]))
    _commit(uri, read, _create(uri, "b", (0,), [0, 1, 2]))
    assert {"a", "b"} <= set(_bitmaps(uri))


def test_an_index_build_meeting_a_compaction_stops_claiming_rewritten_fragments(
    uri: str,
) -> None:
    read = ll.dataset(uri).version
    fragments = [f.fragment_id for f in ll.dataset(uri).get_fragments()]
    build = _create(uri, "ids", (0,), fragments)
    ll.dataset(uri).delete("id >= 300 AND id < 600")  # fragment 1 removed whole
    ll.dataset(uri).optimize.compact_files(target_rows_per_fragment=100_000)
    _commit(uri, read, build)
    remaining = {f.fragment_id for f in lance.dataset(uri).get_fragments()}
    assert set(_bitmaps(uri)["ids"]) <= remaining
    assert lance.dataset(uri).to_table(filter="id = 700")["id"].to_pylist() == [700]
    assert lance.dataset(uri).to_table(filter="id = 400").num_rows == 0


def test_an_index_build_meeting_an_overwrite_or_a_dropped_field_is_incompatible(
    uri: str,
) -> None:
    read = ll.dataset(uri).version
    build = _create(uri, "ids", (0,), [0])
    ll.dataset(uri).drop_columns(["id"])
    with pytest.raises(IncompatibleTransactionError, match="field ids"):
        _commit(uri, read, build)
    read = ll.dataset(uri).version
    build = _create(uri, "xs", (ll.dataset(uri).lance_schema.fields()[0].id(),), [0])
    ll.write_dataset(_table(0, 5), uri, mode="overwrite")
    with pytest.raises(IncompatibleTransactionError):
        _commit(uri, read, build)


# -- damage ------------------------------------------------------------------------------


def _damage(uri: str, change: Any) -> Path:
    store = DatasetStore(uri)
    manifest = store.read_manifest(ll.dataset(uri).version)
    first, *rest = manifest.indices
    damaged = replace(manifest, indices=(change(first), *rest))
    path = _latest_manifest(uri)
    write_file(path, encode_manifest(damaged))
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda i: replace(i, fields=(99,)), "field ids \\[99\\], not in the schema"),
        (lambda i: replace(i, name=""), "empty name"),
        (lambda i: replace(i, dataset_version=10_000), "after this version"),
        (lambda i: replace(i, fragment_bitmap=_frozen([77])), "above max_fragment_id"),
    ],
)
def test_damaged_index_metadata_is_a_clear_error(uri: str, change: Any, message: str) -> None:
    path = _damage(uri, change)
    with pytest.raises(CorruptDatasetError, match=message) as caught:
        ll.dataset(uri)
    assert path.name in str(caught.value) and "index" in str(caught.value)


def test_a_fragment_bitmap_that_does_not_parse_is_a_clear_error(uri: str) -> None:
    path = _latest_manifest(uri)
    data = bytearray(read_file(path))
    _, section = _index_section(path)
    bitmap = section.indices[0].fragment_bitmap
    start = bytes(data).index(bitmap)
    data[start : start + 4] = b"\xff\xff\xff\xff"  # the cookie
    write_file(path, bytes(data))
    with pytest.raises(CorruptDatasetError, match="fragment bitmap does not parse"):
        ll.dataset(uri)
