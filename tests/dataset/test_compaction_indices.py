"""Compaction remaps index segments in the same commit (BTREE and BITMAP keyed by
row address), moves segments keyed by stable row id to the new fragments, and makes
the rest stop claiming the rewritten fragments.  Results are checked against the
source rows filtered by hand-written Arrow expressions and against pylance; layouts
against what pylance does to a twin dataset."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelet as ll
import lancelet.optimize
from lancelet.dataset.compaction import remap
from lancelet.errors import RetryableCommitConflictError
from lancelet.index import btree
from lancelet.transaction import operations as ops
from tests.dataset.test_scalar_index import Spy
from tests.storage import list_names, present
from tests.versions import STORAGE_VERSION

ROWS = 1200


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Spy:
    return Spy(monkeypatch)


def _table(start: int = 0, stop: int = ROWS) -> pa.Table:
    i = np.arange(start, stop)
    return pa.table(
        {
            "id": pa.array(i, pa.int64()),
            "k": pa.array(i % 50, pa.int32()),
            "s": pa.array([f"v{j % 7}" for j in i]),
            "z": pa.array(i % 97, pa.int64()),
            "tags": pa.array([[f"t{j % 3}"] for j in i]),
        }
    )


INDICES = [
    ("id", "BTREE"),
    ("k", "BITMAP"),
    ("s", "BTREE"),
    ("z", "ZONEMAP"),
    ("tags", "LABEL_LIST"),
]
FILTERS = {
    "id = 17": pc.field("id") == 17,
    "id = 18": pc.field("id") == 18,
    "id between 290 and 420": (pc.field("id") >= 290) & (pc.field("id") <= 420),
    "k = 3": pc.field("k") == 3,
    "k in (1, 2)": pc.field("k").isin([1, 2]),
    "s = 'v3'": pc.field("s") == "v3",
    "z = 5": pc.field("z") == 5,
    # every list holds one label
    "array_has_any(tags, ['t1'])": pc.list_element(pc.field("tags"), 0) == "t1",
}
# Rows deleted before compacting: every row of fragment 1 (offsets 300..599), and a
# scattering elsewhere.
DELETE = "(id >= 300 and id < 600) or id % 7 = 0"


def _kept() -> pa.Table:
    i = np.arange(ROWS)
    return _table().filter(pa.array(~(((i >= 300) & (i < 600)) | (i % 7 == 0))))


def _write(uri: str, library: Any, stable: bool = False) -> None:
    kwargs: dict[str, Any] = {"data_storage_version": STORAGE_VERSION}
    if stable:
        kwargs["enable_stable_row_ids"] = True
    for start in range(0, ROWS, 300):
        mode = "append" if start else "create"
        library.write_dataset(_table(start, start + 300), uri, mode=mode, **kwargs)


def _indexed(uri: str, builder: Any, stable: bool = False) -> None:
    _write(uri, builder, stable)
    ds = builder.dataset(uri)
    for column, kind in INDICES:
        ds.create_scalar_index(column, kind)
    ds.delete(DELETE)


def _check(uri: str, spy: Spy | None = None) -> None:
    kept = _kept()
    key = [("id", "ascending")]
    for sql, expression in FILTERS.items():
        expected = kept.filter(expression).sort_by(key)
        before = spy.searches if spy else 0
        got = ll.dataset(uri).to_table(filter=sql).sort_by(key)
        assert got.equals(expected), sql
        if spy is not None and not sql.startswith(("z ", "array")):
            assert spy.searches > before, f"no index answered {sql}"
        assert lance.dataset(uri).to_table(filter=sql).sort_by(key).equals(expected), sql


def _present(uri: str, fragment_ids: list[int]) -> list[int]:
    return sorted(set(fragment_ids) & {f.fragment_id for f in lance.dataset(uri).get_fragments()})


def _segments(uri: str) -> dict[str, tuple[str, list[int]]]:
    return {
        i["name"]: (i["uuid"], sorted(i["fragment_ids"])) for i in lance.dataset(uri).list_indices()
    }


@pytest.mark.parametrize("builder", ["lancelet", "pylance"])
def test_compaction_remaps_btree_and_bitmap_like_pylance(
    tmp_path: Path, builder: str, spy: Spy
) -> None:
    library = ll if builder == "lancelet" else lance
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    _indexed(ours, library)
    _indexed(theirs, library)
    before = _segments(ours)
    ll.dataset(ours).optimize.compact_files(target_rows_per_fragment=5000)
    lance.dataset(theirs).optimize.compact_files(target_rows_per_fragment=5000)
    after, pylance_after = _segments(ours), _segments(theirs)
    new_fragments = sorted(f.fragment_id for f in lance.dataset(ours).get_fragments())
    for name in ("id_idx", "k_idx", "s_idx"):
        assert after[name][0] != before[name][0], f"{name} was not rewritten"
        # pylance also keeps the id of fragment 1, whose rows were all deleted (gone
        # from the manifest); lancelet claims only fragments that exist.
        assert after[name][1] == new_fragments == _present(theirs, pylance_after[name][1])
        assert present(os.path.join(ours, "_indices", after[name][0]))
    # lancelet does not remap zone maps or label lists: they stop claiming the
    # rewritten fragments (pylance remaps the label list).
    for name in ("z_idx", "tags_idx"):
        assert not set(after[name][1]) & set(new_fragments)
    lance.dataset(ours).validate()
    _check(ours, spy)


def test_stable_row_ids_move_segments_keyed_by_row_id(tmp_path: Path, spy: Spy) -> None:
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    _indexed(ours, ll, stable=True)
    _indexed(theirs, lance, stable=True)
    before = _segments(ours)
    ll.dataset(ours).optimize.compact_files(target_rows_per_fragment=5000)
    lance.dataset(theirs).optimize.compact_files(target_rows_per_fragment=5000)
    after, pylance_after = _segments(ours), _segments(theirs)
    # BTREE (keyed by address) is rewritten; BITMAP and LABEL_LIST (keyed by row id)
    # keep their files and follow the rows, as pylance does.
    assert after["id_idx"][0] != before["id_idx"][0]
    for name in ("k_idx", "tags_idx"):
        assert after[name][0] == before[name][0]
    for name in ("id_idx", "k_idx", "s_idx", "tags_idx"):
        assert after[name][1] == _present(theirs, pylance_after[name][1]), name
    z_ours, z_theirs = after["z_idx"][1], pylance_after["z_idx"][1]
    assert _present(ours, z_ours) == _present(theirs, z_theirs) == []
    _check(ours, spy)


def test_rewrite_transactions_carry_the_remapped_segments(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _indexed(uri, ll)
    before = {i.uuid for i in ll.dataset(uri)._manifest.indices}
    ll.dataset(uri).optimize.compact_files(target_rows_per_fragment=5000)
    compacted = ll.dataset(uri)
    txn = compacted._store.read_transaction(compacted._manifest.transaction_file)
    assert isinstance(txn.operation, ops.Rewrite)
    assert {r.old_id for r in txn.operation.rewritten_indices} < before
    assert len(txn.operation.rewritten_indices) == 3
    # (pylance 14's get_transactions() cannot build a RewrittenIndex, even of its own
    # compactions, so the bytes are compared through lancelet's decoder only.)
    # And lancelet decodes pylance's, files included.
    theirs = str(tmp_path / "theirs")
    _indexed(theirs, lance)
    lance.dataset(theirs).optimize.compact_files(target_rows_per_fragment=5000)
    compacted = ll.dataset(theirs)
    txn = compacted._store.read_transaction(compacted._manifest.transaction_file)
    assert isinstance(txn.operation, ops.Rewrite)
    files = {f.path for r in txn.operation.rewritten_indices for f in r.files}
    assert {"page_data.lance", "page_lookup.lance", "bitmap_page_lookup.lance"} <= files


def _index_dirs(uri: str) -> set[str]:
    return set(list_names(os.path.join(uri, "_indices")))


def _data_files(uri: str) -> set[str]:
    return set(list_names(os.path.join(uri, "data")))


def test_a_failed_remap_leaves_the_dataset_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = str(tmp_path / "ds")
    _indexed(uri, ll)
    version, dirs, files = ll.dataset(uri).version, _index_dirs(uri), _data_files(uri)
    real = btree.BTreeIndex.remap
    calls = []

    def failing(self: btree.BTreeIndex, *args: Any, **kwargs: Any) -> int:
        calls.append(1)
        if len(calls) == 2:
            raise OSError("disk full")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(btree.BTreeIndex, "remap", failing)
    with pytest.raises(OSError, match="disk full"):
        ll.dataset(uri).optimize.compact_files(target_rows_per_fragment=5000)
    # Only the fragment-id reservation committed; no file written is left behind.
    assert (
        ll.dataset(uri)._manifest.fragments == ll.dataset(uri, version=version)._manifest.fragments
    )
    assert _index_dirs(uri) == dirs and _data_files(uri) == files
    _check(uri)


def _planned(uri: str) -> tuple[Any, list[Any]]:
    ds = ll.dataset(uri)
    plan = lancelet.optimize.Compaction.plan(ds, {"target_rows_per_fragment": 5000})
    return ds, [task.execute(ds) for task in plan.tasks]


def test_an_index_replaced_meanwhile_makes_the_compaction_retry(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _indexed(uri, ll)
    files = _data_files(uri)
    ds, results = _planned(uri)
    ll.dataset(uri).create_scalar_index("id", "BTREE", replace=True)
    dirs = _index_dirs(uri)
    with pytest.raises(RetryableCommitConflictError, match="replaced or dropped index"):
        lancelet.optimize.Compaction.commit(ds, results)
    # The new data files and remapped segments went; the new index is intact.
    assert _index_dirs(uri) == dirs
    assert _data_files(uri) == files
    _check(uri)


def test_an_unrelated_index_built_meanwhile_commits_with_the_compaction(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _write(uri, ll)
    ll.dataset(uri).create_scalar_index("id", "BTREE")
    ll.dataset(uri).delete(DELETE)
    ds, results = _planned(uri)
    ll.dataset(uri).create_scalar_index("k", "BITMAP")
    lancelet.optimize.Compaction.commit(ds, results)
    segments = _segments(uri)
    fragments = sorted(f.fragment_id for f in lance.dataset(uri).get_fragments())
    assert segments["id_idx"][1] == fragments  # remapped
    assert not set(segments["k_idx"][1]) & set(fragments)  # built on the old rows
    _check(uri)


def test_a_drop_read_before_the_compaction_drops_the_remapped_segment(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _indexed(uri, ll)
    stale = ll.dataset(uri)
    ll.dataset(uri).optimize.compact_files(target_rows_per_fragment=5000)
    stale.drop_index("id_idx")
    names = {i["name"] for i in lance.dataset(uri).list_indices()}
    assert "id_idx" not in names and "k_idx" in names
    _check(uri)


def test_remap_is_skipped_for_indices_it_does_not_cover(tmp_path: Path) -> None:
    """Segments whose fragments the rewrite does not touch are not rewritten."""
    uri = str(tmp_path / "ds")
    _write(uri, ll)
    ll.dataset(uri).create_scalar_index("id", "BTREE")
    manifest = ll.dataset(uri)._manifest
    assert remap.remappable(manifest, {999}) == []
    assert [i.name for i in remap.remappable(manifest, {0})] == ["id_idx"]
