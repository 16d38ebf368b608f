"""The Fragment Reuse Index: compactions that defer index remapping, read and written
by both libraries.

Datasets come from ``test_compaction_indices`` (four fragments, five indices, every
row of fragment 1 deleted and a scattering elsewhere); results are checked against
the source rows filtered by Arrow expressions and against pylance, and lancelet's
reuse details against the ones pylance writes for a twin dataset.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.dataset.read import frag_reuse
from lancelet.errors import CorruptIndexError, RetryableCommitConflictError
from lancelet.table import frag_reuse as details_codec
from lancelet.table.index import FRAG_REUSE_INDEX
from lancelet.transaction import operations as ops
from tests.dataset.test_compaction_indices import (
    ROWS,
    Spy,
    _check,
    _indexed,
    _kept,
    _segments,
    _table,
)
from tests.storage import copy_tree, read_file, remove_file, write_file

DEFER = {"target_rows_per_fragment": 5000, "defer_index_remap": True}


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Spy:
    return Spy(monkeypatch)


def _library(name: str) -> Any:
    return ll if name == "lancelet" else lance


def _reuse_versions(uri: str) -> list[Any]:
    ds = ll.dataset(uri)
    index = frag_reuse.reuse_index(ds._manifest)
    return [] if index is None else list(frag_reuse.read_details(ds._store, index).versions)


def _deferred(uri: str) -> tuple[Any, Any]:
    """The indexed dataset after one deferred compaction, and its reuse index."""
    _indexed(uri, ll)
    ll.dataset(uri).optimize.compact_files(**DEFER)
    ds = ll.dataset(uri)
    reuse = frag_reuse.reuse_index(ds._manifest)
    assert reuse is not None
    return ds, reuse


def _rebuild_mapped(ds: Any) -> None:
    """Rebuild every index the reuse index maps, past its versions."""
    for column, kind in (("id", "BTREE"), ("k", "BITMAP"), ("s", "BTREE"), ("tags", "LABEL_LIST")):
        ds.create_scalar_index(column, kind, replace=True)


def _fragment_ids(uri: str) -> list[int]:
    return sorted(f.fragment_id for f in lance.dataset(uri).get_fragments())


@pytest.mark.parametrize("compactor", ["lancelet", "pylance"])
@pytest.mark.parametrize("builder", ["lancelet", "pylance"])
def test_deferred_compaction_read_by_both(
    tmp_path: Path, builder: str, compactor: str, spy: Spy
) -> None:
    uri = str(tmp_path / "ds")
    _indexed(uri, _library(builder))
    before = _segments(uri)
    _library(compactor).dataset(uri).optimize.compact_files(**DEFER)
    after = _segments(uri)
    # The segments stay as they were: the reuse index maps them.
    for name in ("id_idx", "k_idx", "s_idx"):
        assert after[name][0] == before[name][0]
    versions = _reuse_versions(uri)
    assert len(versions) == 1
    _check(uri, spy)
    # Both libraries see the segments covering the new fragment.
    new = _fragment_ids(uri)
    for name in ("id_idx", "k_idx", "s_idx"):
        ours = {d.name: d for d in ll.dataset(uri).describe_indices()}[name]
        assert set(new) <= set(ours.segments[0].fragment_ids)
        theirs = {d.name: d for d in lance.dataset(uri).describe_indices()}[name]
        assert set(new) <= set(theirs.segments[0].fragment_ids)
    # Listed alike, the reuse index included.
    assert _listing(ll.dataset(uri)) == _listing(lance.dataset(uri))
    assert FRAG_REUSE_INDEX in {i["name"] for i in ll.dataset(uri).list_indices()}
    stats = ll.dataset(uri).stats.index_stats(FRAG_REUSE_INDEX)
    assert stats == lance.dataset(uri).stats.index_stats(FRAG_REUSE_INDEX) == {"num_versions": 1}
    lance.dataset(uri).validate()


def _listing(ds: Any) -> list[tuple[Any, ...]]:
    return [
        (i["name"], i["type"], sorted(i["fragment_ids"]), i["version"], i["fields"])
        for i in ds.list_indices()
    ]


def _group_facts(version: Any) -> list[tuple[Any, ...]]:
    return [
        (
            g.changed.tolist(),
            [(f.id, f.physical_rows, f.num_deleted_rows) for f in g.old_fragments],
            [(f.id, f.physical_rows) for f in g.new_fragments],
        )
        for g in version.groups
    ]


def test_reuse_version_matches_pylance(tmp_path: Path) -> None:
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    _indexed(ours, lance)
    _indexed(theirs, lance)
    ll.dataset(ours).optimize.compact_files(**DEFER)
    lance.dataset(theirs).optimize.compact_files(**DEFER)
    (mine,), (reference,) = _reuse_versions(ours), _reuse_versions(theirs)
    assert _group_facts(mine) == _group_facts(reference)
    assert mine.dataset_version == reference.dataset_version
    # Independently: the surviving rows' old addresses, fragment by fragment.
    kept_ids = _kept().column("id").to_numpy()
    expected = ((kept_ids // 300).astype(np.uint64) << np.uint64(32)) | (kept_ids % 300).astype(
        np.uint64
    )
    assert mine.groups[0].changed.tolist() == expected.tolist()


def test_remap_row_addrs(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _indexed(uri, ll)
    assert ll.dataset(uri).remap_row_addrs(pa.array([0], pa.uint64())) is None
    ll.dataset(uri).optimize.compact_files(**DEFER)
    # id 1 (fragment 0, row 1) survived as the new fragment's row 0; id 0 and id 7 were
    # deleted; fragment 1 was deleted whole before the compaction.
    (new,) = _fragment_ids(uri)
    kept = _kept().column("id").to_pylist()
    addrs = pa.array([0, 1, 7, 1 << 32, (2 << 32) + 1, None], pa.uint64())
    ours = ll.dataset(uri).remap_row_addrs(addrs)
    expected = [None, new << 32, None, None, (new << 32) + kept.index(601), None]
    assert ours.to_pylist() == expected
    theirs = lance.dataset(uri).remap_row_addrs(addrs).to_pylist()
    # pylance passes an address of the vanished fragment 1 through, dangling.
    assert theirs[:3] + theirs[4:] == ours.to_pylist()[:3] + ours.to_pylist()[4:]
    assert theirs[3] == 1 << 32


def test_external_details_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    uri = str(tmp_path / "ds")
    _indexed(uri, ll)
    monkeypatch.setattr(details_codec, "INLINE_LIMIT", 64)
    ll.dataset(uri).optimize.compact_files(**DEFER)
    index = frag_reuse.reuse_index(ll.dataset(uri)._manifest)
    assert index is not None and index.files
    path = os.path.join(uri, "_indices", str(index.uuid), details_codec.DETAILS_FILE)
    assert len(read_file(path)) == index.files[0].size_bytes
    _check(uri)
    lance.dataset(uri).validate()


def test_missing_or_damaged_details_are_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = str(tmp_path / "ds")
    _indexed(uri, ll)
    monkeypatch.setattr(details_codec, "INLINE_LIMIT", 64)
    ll.dataset(uri).optimize.compact_files(**DEFER)
    index = frag_reuse.reuse_index(ll.dataset(uri)._manifest)
    assert index is not None
    path = os.path.join(uri, "_indices", str(index.uuid), details_codec.DETAILS_FILE)
    data = read_file(path)
    # One byte short: the file no longer holds what the manifest says.
    write_file(path, data[:-1])
    with pytest.raises(CorruptIndexError, match="details"):
        ll.dataset(uri).to_table(filter="id = 17")
    remove_file(path)
    with pytest.raises(CorruptIndexError, match="cannot read"):
        ll.dataset(uri).to_table(filter="id = 17")
    # Without the index the rows are still there.
    plain = ll.dataset(uri).to_table(filter="id = 17", use_scalar_index=False)
    assert plain.num_rows == 1


def test_group_that_does_not_add_up_is_refused() -> None:
    old = (details_codec.FragmentDigest(0, 4),)
    new = (details_codec.FragmentDigest(5, 3),)
    bad = [
        np.array([0, 1], np.uint64),  # two rows for a new fragment of three
        np.array([0, 1, 4], np.uint64),  # offset 4 of a four-row fragment
        np.array([0, 2, 1], np.uint64),  # not ascending
        np.array([0, 1, (3 << 32)], np.uint64),  # a row of another fragment
    ]
    for changed in bad:
        group = details_codec.ReuseGroup(changed, old, new)
        with pytest.raises(CorruptIndexError):
            group.check("test")
    details_codec.ReuseGroup(np.array([0, 1, 3], np.uint64), old, new).check("test")


def _index_changes(uri: str, version: int) -> list[Any]:
    operation = lance.dataset(uri).read_transaction(version).operation
    return [
        [(i.name, sorted(i.fragment_ids), i.dataset_version) for i in indices]
        for indices in (operation.new_indices, operation.removed_indices)
    ]


def test_optimize_indices_after_deferral_as_pylance(tmp_path: Path, spy: Spy) -> None:
    """As pylance's: only the zone map, which stopped claiming the rewritten fragments,
    is rebuilt, in one commit; the reuse versions stay for cleanup_frag_reuse_index."""
    base = str(tmp_path / "base")
    _indexed(base, ll)
    ll.dataset(base).optimize.compact_files(**DEFER)
    version = ll.dataset(base).version
    changes = []
    for lib, name in ((lance, "p"), (ll, "l")):
        uri = str(tmp_path / name)
        copy_tree(base, uri)
        lib.dataset(uri).optimize.optimize_indices()
        assert ll.dataset(uri).version == version + 1
        changes.append(_index_changes(uri, version + 1))
        assert len(_reuse_versions(uri)) == 1
        _check(uri, spy)
        lance.dataset(uri).validate()
    assert changes[1] == changes[0]


def test_trim_keeps_what_a_segment_needs(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _indexed(uri, ll)
    ll.dataset(uri).optimize.compact_files(**DEFER)
    version = ll.dataset(uri).version
    assert ll.dataset(uri).optimize.cleanup_frag_reuse_index() is False
    assert ll.dataset(uri).version == version and len(_reuse_versions(uri)) == 1
    # Rebuilt past it, every index: the version goes.
    ds = ll.dataset(uri)
    _rebuild_mapped(ds)
    assert ll.dataset(uri).optimize.cleanup_frag_reuse_index() is True
    assert frag_reuse.reuse_index(ll.dataset(uri)._manifest) is None
    _check(uri)


def test_chained_deferred_compactions(tmp_path: Path, spy: Spy) -> None:
    """Two deferred compactions, the second rewriting the first's output: segments
    built before both are mapped through both versions; then a compaction without
    deferral leaves no segment claiming a fragment that is gone (lance#6623)."""
    uri = str(tmp_path / "ds")
    _indexed(uri, ll)
    ll.dataset(uri).optimize.compact_files(**DEFER)
    lance.write_dataset(_table(ROWS, ROWS + 50), uri, mode="append")
    ll.dataset(uri).optimize.compact_files(**DEFER)
    assert ll.dataset(uri).count_rows() == _kept().num_rows + 50
    for sql in ("id = 17", "id = 1210", "k = 3"):
        expected = ll.dataset(uri).to_table(filter=sql, use_scalar_index=False)
        assert ll.dataset(uri).to_table(filter=sql).sort_by("id").equals(expected.sort_by("id"))
        assert lance.dataset(uri).to_table(filter=sql).sort_by("id").equals(expected.sort_by("id"))
    ll.dataset(uri).delete("id = 1")
    ll.dataset(uri).optimize.compact_files(target_rows_per_fragment=5000)
    present = set(_fragment_ids(uri))
    for description in lance.dataset(uri).describe_indices():
        if description.name != FRAG_REUSE_INDEX:
            for segment in description.segments:
                assert set(segment.fragment_ids) <= present | {1}
    assert ll.dataset(uri).to_table(filter="id = 1").num_rows == 0
    assert lance.dataset(uri).to_table(filter="id = 1").num_rows == 0
    lance.dataset(uri).validate()


def test_address_zero_is_not_kept(tmp_path: Path) -> None:
    """Fragment 0, row 0 is a real address (lance#9200): when its row was deleted
    before a deferred compaction, no index may find it afterwards."""
    uri = str(tmp_path / "ds")
    _indexed(uri, ll)
    ll.dataset(uri).delete("id < 300")  # all of fragment 0 too, so no group holds it
    ll.dataset(uri).optimize.compact_files(**DEFER)
    for library in (ll, lance):
        assert library.dataset(uri).to_table(filter="id = 0").num_rows == 0
        assert library.dataset(uri).to_table(filter="id = 1").num_rows == 0
    expected = _kept().filter(pa.compute.field("id") >= 300)
    got = ll.dataset(uri).to_table(filter="k = 3").sort_by("id")
    assert got.equals(expected.filter(pa.compute.field("k") == 3).sort_by("id"))


def test_deferred_compaction_and_index_build_both_commit(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _indexed(uri, ll)
    read = ll.dataset(uri)
    ll.dataset(uri).optimize.compact_files(**DEFER)
    # An index built from the version before the compaction commits after it.
    read.create_scalar_index("z", "BTREE", name="z_tree")
    assert ll.dataset(uri).version == read.version
    got = ll.dataset(uri).to_table(filter="z = 5").sort_by("id")
    assert got.equals(_kept().filter(pa.compute.field("z") == 5).sort_by("id"))
    assert lance.dataset(uri).to_table(filter="z = 5").sort_by("id").equals(got)


def test_concurrent_deferred_compactions_keep_both_versions(tmp_path: Path) -> None:
    """Two deferred compactions of different fragments from one version: the second
    finds the reuse index replaced, rebuilds its own on top and commits."""
    uri = str(tmp_path / "ds")
    _indexed(uri, ll)
    ds = ll.dataset(uri)
    plan = ll.optimize.Compaction.plan(ds, {"target_rows_per_fragment": 100, **_defer_only()})
    fragments = [f for t in plan.tasks for f in t.fragments]
    assert len(fragments) >= 2
    first = ll.optimize.Compaction.plan(
        ds, {**DEFER, "excluded_fragment_ids": [f.id for f in fragments[1:]]}
    )
    second = ll.optimize.Compaction.plan(ds, {**DEFER, "excluded_fragment_ids": [fragments[0].id]})
    results = [[t.execute(ds) for t in p.tasks] for p in (first, second)]
    for done in results:
        ll.optimize.Compaction.commit(ll.dataset(uri), done, {"defer_index_remap": True})
    assert len(_reuse_versions(uri)) == 2
    _check(uri)


def _defer_only() -> dict[str, Any]:
    return {"defer_index_remap": True, "materialize_deletions_threshold": 0.0}


def test_trim_conflicts_with_a_concurrent_index_build(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _indexed(uri, ll)
    ll.dataset(uri).optimize.compact_files(**DEFER)
    ds = ll.dataset(uri)
    _rebuild_mapped(ds)
    stale = ll.dataset(uri)
    # Another writer commits an index meanwhile: the trim must re-read.
    ll.dataset(uri).create_scalar_index("z", "BITMAP", name="z_bitmap")
    with pytest.raises(RetryableCommitConflictError):
        stale.optimize.cleanup_frag_reuse_index()
    assert ll.dataset(uri).optimize.cleanup_frag_reuse_index() is True


def test_rewrite_with_a_stale_reuse_base_is_retryable(tmp_path: Path) -> None:
    ds, current = _deferred(str(tmp_path / "ds"))
    old = ds._manifest.fragments[0]
    group = ops.RewriteGroup((old,), (old.with_id(ds._manifest.next_fragment_id()),))
    op = ops.Rewrite((group,), deferred=True, frag_reuse_index=current, frag_reuse_base=None)
    from lancelet.transaction.operations.rewrite import fold as fold_rewrite

    with pytest.raises(RetryableCommitConflictError, match="reuse index"):
        fold_rewrite(ds._manifest, op, None)  # type: ignore[arg-type]


def test_stable_row_ids_record_nothing(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _indexed(uri, ll, stable=True)
    ll.dataset(uri).optimize.compact_files(**DEFER)
    assert frag_reuse.reuse_index(ll.dataset(uri)._manifest) is None
    _check(uri)


def test_conflict_rows_for_trims_and_deferred_rewrites(tmp_path: Path) -> None:
    """The conflict table's cells, called as the commit loop calls them."""
    from lancelet.transaction import conflicts

    ds, reuse = _deferred(str(tmp_path / "ds"))
    trim = ops.Transaction(ds.version, ops.CreateIndex((), (reuse,)))
    fragment = ds._manifest.fragments[0]
    deferred = ops.Rewrite(
        (ops.RewriteGroup((fragment,), (fragment.with_id(99),)),),
        deferred=True,
        frag_reuse_index=reuse,
        frag_reuse_base=reuse.uuid,
    )
    other_index = ops.CreateIndex(tuple(i for i in ds._manifest.indices if i.name == "z_idx"), ())

    def outcome(mine: ops.Transaction, theirs: ops.Operation) -> str:
        rule = conflicts.rule_for(mine.operation, theirs)
        if isinstance(rule, conflicts.Outcome):
            return rule.name
        try:
            rule(mine, theirs, ds.version, ds._store)
        except RetryableCommitConflictError:
            return "RETRY"
        return "OK"

    # A trim meets a rewrite or any index commit: retry.
    assert outcome(trim, deferred) == "RETRY"
    assert outcome(trim, other_index) == "RETRY"
    # An index commit meets a trim: retry (it may need a version the trim dropped).
    assert outcome(ops.Transaction(ds.version, other_index), trim.operation) == "RETRY"
    # A deferred rewrite meets an index build: compatible; meets a trim: retry.
    mine = ops.Transaction(ds.version, deferred)
    assert outcome(mine, other_index) == "OK"
    assert outcome(mine, trim.operation) == "RETRY"
    # An index build meets a deferred rewrite: compatible (rebased).
    assert outcome(ops.Transaction(ds.version, other_index), deferred) == "OK"


@pytest.mark.parametrize("builder", ["lancelet", "pylance"])
def test_compaction_without_deferral_remaps_through_the_reuse_index(
    tmp_path: Path, builder: str, spy: Spy
) -> None:
    """A segment left to the reuse index is rewritten wholly current by a later
    compaction without deferral; the reuse versions then go at the next trim."""
    uri = str(tmp_path / "ds")
    _indexed(uri, _library(builder))
    ll.dataset(uri).optimize.compact_files(**DEFER)
    before = _segments(uri)
    ll.dataset(uri).delete("id = 1 or id = 601")
    ll.dataset(uri).optimize.compact_files(
        target_rows_per_fragment=5000, materialize_deletions_threshold=0.0
    )
    after = _segments(uri)
    new = _fragment_ids(uri)
    for name in ("id_idx", "k_idx", "s_idx"):
        assert after[name][0] != before[name][0], f"{name} was not rewritten"
        assert after[name][1] == new
    for library in (ll, lance):
        for sql in ("id = 1", "id = 601", "id = 603", "k = 1"):
            got = library.dataset(uri).to_table(filter=sql).sort_by("id")
            plain = ll.dataset(uri).to_table(filter=sql, use_scalar_index=False).sort_by("id")
            assert got.equals(plain), sql
    assert ll.dataset(uri).to_table(filter="id = 603").num_rows == 1
    # Only the label list still needs the reuse version; rebuilt, nothing does.
    ll.dataset(uri).create_scalar_index("tags", "LABEL_LIST", replace=True)
    assert ll.dataset(uri).optimize.cleanup_frag_reuse_index() is True
    assert frag_reuse.reuse_index(ll.dataset(uri)._manifest) is None
    lance.dataset(uri).validate()
