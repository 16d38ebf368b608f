"""Row lineage (``_row_created_at_version``, ``_row_last_updated_at_version``): read
as pylance 14 reads it, and written as it writes it, by every operation that creates
or carries rows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings

import lancelet as ll
from lancelet.dataset.read.lineage import fragment_lineage
from lancelet.errors import FilterError, SchemaError, UnsupportedOptionError
from lancelet.table.fragment import ExternalFile
from lancelet.table.fragment import Sequence as StoredSequence
from lancelet.table.manifest_file import encode_manifest
from lancelet.transaction.store import DatasetStore
from tests.dataset import histories
from tests.storage import write_file
from tests.versions import STORAGE_VERSION

LINEAGE = ["_row_created_at_version", "_row_last_updated_at_version"]
COLUMNS = ["k", "_rowid", *LINEAGE]


def _rows(keys: list[int], value: int = 0) -> pa.Table:
    return pa.table(
        {"k": pa.array(keys, pa.int64()), "v": pa.array([value] * len(keys), pa.int64())}
    )


def _lineage(ds: Any) -> pa.Table:
    return ds.to_table(columns=COLUMNS).sort_by("k")


# -- random histories, applied alike by both libraries -------------------------------


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=histories.steps(either_library=False))
# An upsert's updated and inserted rows share one fragment (else the next compaction
# differs, and so do later versions).
@example(
    steps=[
        histories.Step("compact", 8),
        histories.Step("upsert", [0, 12]),
        histories.Step("compact", 4),
        histories.Step("append", [1000]),
    ]
)
def test_random_histories_give_the_lineage_pylance_gives(
    tmp_path_factory: pytest.TempPathFactory, steps: list[histories.Step]
) -> None:
    """Appends, deletes, updates, upserts and compactions, each done by both libraries
    on a dataset of its own: after every step each reads the same lineage from both."""
    base = tmp_path_factory.mktemp("lineage")
    ours, theirs = str(base / "ours"), str(base / "theirs")
    first = _rows(list(range(12)))
    for library, uri in ((ll, ours), (lance, theirs)):
        library.write_dataset(
            first,
            uri,
            enable_stable_row_ids=True,
            max_rows_per_file=5,
            data_storage_version=STORAGE_VERSION,
        )
    for number, step in enumerate(steps):
        for library, uri in ((ll, ours), (lance, theirs)):
            histories.apply(step, uri, number + 1, library)
        want = _lineage(lance.dataset(theirs))
        assert _lineage(ll.dataset(ours)).equals(want), step
        # Each library reads the other's lineage as its writer does.
        assert _lineage(lance.dataset(ours)).equals(want), step
        assert _lineage(ll.dataset(theirs)).equals(want), step


# -- the bytes pylance writes --------------------------------------------------------


def _sequences(uri: str) -> list[tuple[int, bytes | None, bytes | None]]:
    """Per fragment: its rows and its two version sequences, as stored."""
    out = []
    for fragment in ll.dataset(uri).get_fragments():
        meta = fragment.metadata
        created, updated = meta.created_at_version_meta, meta.last_updated_at_version_meta
        out.append(
            (
                meta.physical_rows,
                None if created is None else created.inline,
                None if updated is None else updated.inline,
            )
        )
    return out


def _history(library: Any, uri: str) -> list[tuple[str, Any]]:
    """A history of every operation that creates or carries rows, with the sequences
    the dataset holds after each."""
    seen: list[tuple[str, Any]] = []

    def step(name: str, action: Callable[[], object]) -> None:
        action()
        seen.append((name, _sequences(uri)))

    library.write_dataset(
        _rows(list(range(40))),
        uri,
        enable_stable_row_ids=True,
        max_rows_per_file=20,
        data_storage_version=STORAGE_VERSION,
    )
    ds = lambda: library.dataset(uri)  # noqa: E731
    step("update", lambda: ds().update({"v": "1"}, where="k >= 5 and k < 8"))
    step("delete", lambda: ds().delete("k = 19 or k = 3 or (k >= 20 and k < 30)"))
    step("delete all of a fragment", lambda: ds().delete("k >= 30 and k < 40"))
    step("compact", lambda: ds().optimize.compact_files(target_rows_per_fragment=1000))
    step("delete in a compacted run", lambda: ds().delete("k = 0 or k = 6"))
    step("compact again", lambda: ds().optimize.compact_files(target_rows_per_fragment=1000))
    step("restore", lambda: library.dataset(uri, version=3).restore())
    step("append", lambda: library.write_dataset(_rows([50, 51]), uri, mode="append"))
    step("compact the restored", lambda: ds().optimize.compact_files(target_rows_per_fragment=1000))
    step("add_columns", lambda: ds().add_columns({"w": "k * 2"}))
    step("rename", lambda: ds().alter_columns({"path": "w", "name": "w2"}))
    step("retype", lambda: ds().alter_columns({"path": "w2", "data_type": pa.int32()}))
    step("drop", lambda: ds().drop_columns(["w2"]))
    step("merge", lambda: ds().merge(pa.table({"k": [1, 10], "z": [5, 7]}), "k"))
    step(
        "upsert",
        lambda: (
            ds()
            .merge_insert("k")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute(_rows([2, 60], 9))
        ),
    )
    step("overwrite", lambda: library.write_dataset(_rows([7, 8]), uri, mode="overwrite"))
    return seen


def test_version_sequences_are_the_bytes_pylance_writes(tmp_path: Path) -> None:
    ours = _history(ll, str(tmp_path / "ours"))
    theirs = _history(lance, str(tmp_path / "theirs"))
    for (name, mine), (_, want) in zip(ours, theirs, strict=True):
        assert mine == want, name
    want = _lineage(lance.dataset(str(tmp_path / "theirs")))
    assert _lineage(ll.dataset(str(tmp_path / "ours"))).equals(want)


@pytest.mark.parametrize(
    "keys",
    [
        [7, 12, 3, 100],  # updated rows of three versions, out of order, then one inserted
        [14, 15],  # ids that run on: a range
        [1, 2, 3, 4, 100, 101],  # a range with a bitmap
        [13, 6, 14],  # updated only
        [100, 101],  # inserted only
    ],
)
def test_upsert_fragments_are_the_bytes_pylance_writes(tmp_path: Path, keys: list[int]) -> None:
    """An upsert writes its updated rows, in the table's order, then its inserted ones
    into one fragment; the commit gives the inserted rows ids after the carried ones
    and stores them all as one segment, as pylance does."""
    stored = []
    for library, name in ((ll, "ours"), (lance, "theirs")):
        uri = str(tmp_path / name)
        library.write_dataset(_rows(list(range(5))), uri, enable_stable_row_ids=True)
        library.write_dataset(_rows(list(range(5, 10))), uri, mode="append")
        library.write_dataset(_rows(list(range(10, 15))), uri, mode="append")
        library.dataset(uri).delete("k = 0")
        builder = library.dataset(uri).merge_insert("k").when_matched_update_all()
        builder.when_not_matched_insert_all().execute(_rows(keys, 5))
        ds = ll.dataset(uri)
        metas = [f.metadata for f in ds.get_fragments()]
        assert ds.version == 5
        stored.append([(m.physical_rows, m.row_id_meta, *_versions(m)) for m in metas])
    assert stored[0] == stored[1]
    want = _lineage(lance.dataset(str(tmp_path / "theirs")))
    assert _lineage(ll.dataset(str(tmp_path / "ours"))).equals(want)


def _versions(meta: Any) -> tuple[Any, Any]:
    return meta.created_at_version_meta, meta.last_updated_at_version_meta


def test_upsert_lineage(tmp_path: Path) -> None:
    """Updated rows keep their creation version, inserted ones are created now."""
    for library, name in ((ll, "ours"), (lance, "theirs")):
        uri = str(tmp_path / name)
        library.write_dataset(_rows(list(range(6))), uri, enable_stable_row_ids=True)
        library.write_dataset(_rows([6, 7]), uri, mode="append")
        builder = library.dataset(uri).merge_insert("k").when_matched_update_all()
        builder.when_not_matched_insert_all().execute(_rows([1, 7, 20], 5))
    table = _lineage(ll.dataset(str(tmp_path / "ours")))
    assert table.equals(_lineage(lance.dataset(str(tmp_path / "theirs"))))
    by_key = {r["k"]: r for r in table.to_pylist()}
    assert (by_key[1]["_row_created_at_version"], by_key[1]["_row_last_updated_at_version"]) == (
        1,
        3,
    )
    assert (by_key[7]["_row_created_at_version"], by_key[7]["_row_last_updated_at_version"]) == (
        2,
        3,
    )
    assert (by_key[20]["_row_created_at_version"], by_key[20]["_row_last_updated_at_version"]) == (
        3,
        3,
    )
    assert by_key[0]["_row_last_updated_at_version"] == 1


# -- reading: the columns as pylance offers them ---------------------------------------


def _pylance_dataset(uri: str, stable: bool) -> None:
    lance.write_dataset(
        _rows(list(range(6))),
        uri,
        enable_stable_row_ids=stable,
        max_rows_per_file=3,
        data_storage_version=STORAGE_VERSION,
    )
    lance.write_dataset(_rows([10, 11]), uri, mode="append")
    ds = lance.dataset(uri)
    ds.update({"v": "1"}, where="k = 1")
    ds.delete("k = 4")


READS: list[dict[str, Any]] = [
    {"columns": COLUMNS},
    {"columns": ["k"], "filter": "_row_last_updated_at_version > 2"},
    {"columns": ["k", "_row_created_at_version"], "filter": "_row_created_at_version = 2"},
    {"columns": ["k", "_row_created_at_version"], "with_row_id": True},
    {"columns": ["_row_last_updated_at_version"]},
    {"columns": COLUMNS, "filter": "k > 2 and _row_created_at_version = 1"},
    {"columns": COLUMNS, "with_row_id": True, "include_deleted_rows": True},
]


@pytest.mark.parametrize("stable", [True, False])
def test_reads_answer_as_pylance(tmp_path: Path, stable: bool) -> None:
    """Without stable row ids pylance answers 1 for both columns, whatever the version."""
    uri = str(tmp_path / "ds")
    _pylance_dataset(uri, stable)
    ours, theirs = ll.dataset(uri), lance.dataset(uri)
    for kwargs in READS:
        want = theirs.to_table(**kwargs)
        assert ours.to_table(**kwargs).equals(want), kwargs
        batches = pa.Table.from_batches(list(ours.to_batches(**kwargs)), schema=want.schema)
        assert batches.equals(want), kwargs
    assert ours.take([0, 4, 6], columns=COLUMNS).equals(theirs.take([0, 4, 6], columns=COLUMNS))
    for mine, their in zip(ours.get_fragments(), theirs.get_fragments(), strict=True):
        assert mine.to_table(columns=COLUMNS).equals(their.to_table(columns=COLUMNS))
        filtered = {"columns": COLUMNS, "filter": "_row_last_updated_at_version = 3"}
        assert mine.scanner(**filtered).to_table().equals(their.scanner(**filtered).to_table())
    count = "_row_last_updated_at_version = 3"
    assert ours.count_rows(filter=count) == theirs.count_rows(filter=count)
    if not stable:
        assert set(ours.to_table(columns=LINEAGE).to_pandas().values.ravel()) == {1}


def test_lineage_is_no_column_of_the_schema_nor_of_expressions(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _pylance_dataset(uri, True)
    ours = ll.dataset(uri)
    assert ours.schema.names == ["k", "v"]
    # pylance refuses both (no field of that name in a computed column; no sort by it).
    with pytest.raises(FilterError, match="No field named _row_created_at_version"):
        ours.to_table(columns={"c": "_row_created_at_version + 1"})
    with pytest.raises(SchemaError):
        ours.to_table(columns=["k"], order_by=["_row_created_at_version"])


def test_fragments_recording_no_lineage_answer_version_one(tmp_path: Path) -> None:
    """Fragments written before lineage was recorded: pylance answers 1 for both."""
    uri = str(tmp_path / "ds")
    _pylance_dataset(uri, True)
    store = DatasetStore(uri)
    manifest = store.read_manifest(4)
    bare = tuple(
        replace(f, created_at_version_meta=None, last_updated_at_version_meta=None)
        for f in manifest.fragments
    )
    location = store.latest_location()
    assert location is not None
    write_file(
        store.path("_versions", location.name), encode_manifest(replace(manifest, fragments=bare))
    )
    want = lance.dataset(uri).to_table(columns=COLUMNS)
    assert ll.dataset(uri).to_table(columns=COLUMNS).equals(want)
    assert set(np.unique(want.select(LINEAGE).to_pandas().values)) == {1}
    # Compaction of such fragments records none either; the rows still answer 1.
    ll.dataset(uri).optimize.compact_files(target_rows_per_fragment=1000)
    fragments = ll.dataset(uri).get_fragments()
    assert all(f.metadata.created_at_version_meta is None for f in fragments)
    assert lance.dataset(uri).to_table(columns=COLUMNS).sort_by("k").equals(want.sort_by("k"))


def _fragment_merge(library: Any, uri: str) -> None:
    library.write_dataset(
        _rows(list(range(6))),
        uri,
        enable_stable_row_ids=True,
        max_rows_per_file=3,
        data_storage_version=STORAGE_VERSION,
    )
    ds = library.dataset(uri)
    # Columns rewritten in place by a fragment's update_columns: pylance records no
    # update of those rows (only moved rows and merges are recorded).
    changed, fields = ds.get_fragment(0).update_columns(_rows([1], 5), left_on="k", right_on="k")
    op = library.LanceOperation.Update(updated_fragments=[changed], fields_modified=fields)
    library.LanceDataset.commit(uri, op, read_version=ds.version)
    ds = library.dataset(uri)

    def column(batch: pa.RecordBatch) -> pa.RecordBatch:
        return pa.record_batch([pa.array([7] * batch.num_rows)], names=["z"])

    merged, schema = ds.get_fragment(1).merge_columns(column, columns=["k"])
    op = library.LanceOperation.Merge([ds.get_fragment(0).metadata, merged], schema)
    library.LanceDataset.commit(uri, op, read_version=ds.version)


def test_a_merge_records_the_rows_of_the_fragments_it_gave_files(tmp_path: Path) -> None:
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    _fragment_merge(ll, ours)
    _fragment_merge(lance, theirs)
    assert _sequences(ours) == _sequences(theirs)
    table = _lineage(ll.dataset(ours))
    assert table.equals(_lineage(lance.dataset(theirs)))
    assert table["_row_last_updated_at_version"].to_pylist() == [1, 1, 1, 3, 3, 3]


def test_fragment_lineage_lists_what_scans_answer(tmp_path: Path) -> None:
    """The internal per-fragment lineage (for the change feed) agrees with pylance's
    scan of each fragment, deleted rows left out unless asked for."""
    uri = str(tmp_path / "ds")
    _pylance_dataset(uri, True)
    store = DatasetStore(uri)
    for fragment in lance.dataset(uri).get_fragments():
        meta = ll.dataset(uri).get_fragment(fragment.fragment_id).metadata
        found = fragment_lineage(store, meta)
        want = fragment.to_table(columns=["_rowid", "_rowaddr", *LINEAGE])
        assert found.row_ids.tolist() == want["_rowid"].to_pylist()
        assert found.addresses.tolist() == want["_rowaddr"].to_pylist()
        assert found.created_at.tolist() == want["_row_created_at_version"].to_pylist()
        assert found.last_updated_at.tolist() == want["_row_last_updated_at_version"].to_pylist()
        every = fragment_lineage(store, meta, include_deleted=True)
        assert len(every.offsets) == meta.physical_rows


def test_searches_refuse_lineage_columns(tmp_path: Path) -> None:
    """pylance 14 fails on them in a nearest or full-text search; lancelet says so."""
    uri = str(tmp_path / "ds")
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(40, dtype=np.float32)), 4)
    table = pa.table({"k": np.arange(10), "vec": vectors, "t": [f"w{i}" for i in range(10)]})
    ll.write_dataset(table, uri, enable_stable_row_ids=True)
    ds = ll.dataset(uri)
    nearest = {"column": "vec", "q": np.zeros(4, np.float32), "k": 3}
    with pytest.raises(UnsupportedOptionError, match="_row_created_at_version"):
        ds.to_table(nearest=nearest, columns=["k", "_row_created_at_version"])
    ds.create_scalar_index("t", "INVERTED")
    with pytest.raises(UnsupportedOptionError, match="_row_last_updated_at_version"):
        ll.dataset(uri).to_table(full_text_query="w1", columns=["_row_last_updated_at_version"])
    with pytest.raises(UnsupportedOptionError, match="_row_created_at_version"):
        ll.dataset(uri)._take_rows([1], columns=["k", "_row_created_at_version"])


@pytest.mark.parametrize(
    "where",
    [
        "k < 50 AND _row_last_updated_at_version = 4",
        "k = 21 OR _row_created_at_version > 1",
        "_row_last_updated_at_version >= 3 AND k > 5",
        "k IN (0, 7, 21) AND _row_last_updated_at_version = 4",
    ],
)
def test_filters_on_lineage_beside_an_index(tmp_path: Path, where: str) -> None:
    uri = str(tmp_path / "ds")
    lance.write_dataset(
        _rows(list(range(100))),
        uri,
        enable_stable_row_ids=True,
        max_rows_per_file=30,
        data_storage_version=STORAGE_VERSION,
    )
    ds = lance.dataset(uri)
    ds.update({"v": "1"}, where="k % 7 = 0")
    ds.create_scalar_index("k", "BTREE")
    ds.update({"v": "2"}, where="k < 20")
    ds.delete("k = 14")
    columns = ["k", "_rowid", "_row_last_updated_at_version"]
    want = lance.dataset(uri).to_table(columns=columns, filter=where).sort_by("k")
    assert want.num_rows
    assert ll.dataset(uri).to_table(columns=columns, filter=where).sort_by("k").equals(want)


def _split_compaction(library: Any, uri: str) -> None:
    library.write_dataset(
        _rows(list(range(40))),
        uri,
        enable_stable_row_ids=True,
        max_rows_per_file=20,
        data_storage_version=STORAGE_VERSION,
    )
    library.dataset(uri).update({"v": "1"}, where="k >= 5 and k < 8 or k = 30")
    library.dataset(uri).delete("k % 3 = 1")
    library.dataset(uri).optimize.compact_files(target_rows_per_fragment=7)


def test_compaction_into_several_fragments_cuts_runs_as_pylance(tmp_path: Path) -> None:
    """Runs cut between new fragments (a bitmap span cut in two) are the same bytes."""
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    _split_compaction(ll, ours)
    _split_compaction(lance, theirs)
    assert len(_sequences(theirs)) == 3
    assert _sequences(ours) == _sequences(theirs)
    assert _lineage(ll.dataset(ours)).equals(_lineage(lance.dataset(theirs)))


def test_external_version_sequences_are_read(tmp_path: Path) -> None:
    """A sequence kept in a file (the format allows it; pylance 14 writes none) reads
    as the same sequence inline."""
    uri = str(tmp_path / "ds")
    _pylance_dataset(uri, True)
    want = ll.dataset(uri).to_table(columns=COLUMNS)
    store = DatasetStore(uri)
    manifest = store.read_manifest(4)
    moved, blob = [], b"header"
    for fragment in manifest.fragments:
        sequences = {}
        for name in ("created_at_version_meta", "last_updated_at_version_meta"):
            data = getattr(fragment, name).inline
            sequences[name] = StoredSequence(
                external=ExternalFile("lineage/versions.bin", len(blob), len(data))
            )
            blob += data
        moved.append(replace(fragment, **sequences))
    write_file(store.path("lineage", "versions.bin"), blob)
    location = store.latest_location()
    assert location is not None
    write_file(
        store.path("_versions", location.name),
        encode_manifest(replace(manifest, fragments=tuple(moved))),
    )
    assert ll.dataset(uri).get_fragments()[0].metadata.created_at_version_meta.external
    assert ll.dataset(uri).to_table(columns=COLUMNS).equals(want)
