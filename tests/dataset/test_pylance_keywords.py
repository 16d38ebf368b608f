"""Keywords lancelet takes by pylance's names, checked against pylance on the same
input: honoured where lancelet implements them, accepted where they only tune speed,
and refused by name (with nothing written) where a non-default value would change
the result."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import lance
import lance.fragment
import lance.query
import pyarrow as pa
import pytest

import lancelet as ll
import lancelet.fragment
import lancelet.query
from lancelet.errors import UnsupportedOptionError
from tests.dataset.util import keyed_table, snapshot
from tests.storage import copy_tree

TABLE = keyed_table(0, 30)


def _both(tmp_path: Path, **kwargs: Any) -> tuple[lance.LanceDataset, ll.LanceDataset]:
    theirs = lance.write_dataset(TABLE, tmp_path / "p", max_rows_per_file=10, **kwargs)
    ours = ll.write_dataset(TABLE, tmp_path / "l", max_rows_per_file=10, **kwargs)
    return theirs, ours


# -- opening ----------------------------------------------------------------------------


def test_open_keywords_that_only_tune_speed(tmp_path: Path) -> None:
    theirs, ours = _both(tmp_path)
    ll.write_dataset(TABLE, ours.uri, mode="append")
    lance.write_dataset(TABLE, theirs.uri, mode="append")
    tuned = ll.dataset(
        ours.uri,
        1,
        None,
        1 << 16,  # block_size, positional as in pylance
        None,
        16,  # index_cache_size
        metadata_cache_size_bytes=0,
        index_cache_size_bytes=0,
        read_params={"validate_on_decode": True},
    )
    assert tuned.version == 1
    assert tuned.to_table().equals(lance.dataset(theirs.uri, version=1).to_table())
    # LanceDataset(uri, version, block_size, index_cache_size, metadata_cache_size, ...)
    direct = ll.LanceDataset(ours.uri, 1, 4096, 10, 10)
    assert direct.version == 1 and direct.to_table().equals(tuned.to_table())


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"table_id": ["t"]}, {"namespace_client": object()}],
    ids=["no uri", "table_id alone", "namespace_client alone"],
)
def test_open_without_a_location_is_a_value_error(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError) as theirs:
        lance.dataset(**kwargs)
    with pytest.raises(ValueError) as ours:
        ll.dataset(**kwargs)
    assert str(theirs.value).split(":")[-1] in str(ours.value)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"namespace_client": object(), "table_id": ["t"]},
        {"base_store_params": {"b": {"region": "x"}}},
        {"serialized_manifest": b"\x00"},
        {"namespace_client_managed_versioning": True},
    ],
    ids=lambda kwargs: next(iter(kwargs)),
)
def test_open_keywords_lancelet_lacks_are_refused(tmp_path: Path, kwargs: dict[str, Any]) -> None:
    ours = ll.write_dataset(TABLE, tmp_path / "l")
    with pytest.raises(UnsupportedOptionError, match=next(iter(kwargs))):
        ll.LanceDataset(ours.uri, **kwargs)
    if "serialized_manifest" not in kwargs and "managed" not in next(iter(kwargs)):
        with pytest.raises(UnsupportedOptionError, match=next(iter(kwargs))):
            ll.dataset(ours.uri, **kwargs)


# -- writing ----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["append", "overwrite"])
@pytest.mark.parametrize("exists", [False, True], ids=["new", "existing"])
def test_write_fragments_transactions_as_pylance(tmp_path: Path, mode: str, exists: bool) -> None:
    # Appending where no dataset exists yet is an Overwrite that creates it, as in pylance.
    got = {}
    for module in (lance, ll):
        uri = tmp_path / module.__name__
        if exists:
            module.write_dataset(TABLE, uri)
        txn = module.fragment.write_fragments(
            TABLE.slice(0, 7), uri, mode=mode, return_transaction=True
        )
        assert isinstance(txn, module.Transaction)
        committed = module.LanceDataset.commit(uri, txn)
        got[module.__name__] = (
            type(txn.operation).__name__,
            txn.read_version,
            committed.version,
            committed.to_table(),
        )
    assert got["lancelet"] == got["lance"]


@pytest.mark.parametrize("legacy", [True, False])
def test_use_legacy_format_picks_pylance_format(tmp_path: Path, legacy: bool) -> None:
    # The deprecated flag overrides data_storage_version, with a DeprecationWarning.
    formats = {}
    for module in (lance, ll):
        uri = tmp_path / module.__name__
        with pytest.warns(DeprecationWarning, match="use_legacy_format"):
            written = module.write_dataset(
                TABLE, uri, use_legacy_format=legacy, data_storage_version="2.1"
            )
        with pytest.warns(DeprecationWarning, match="use_legacy_format"):
            fragments = module.fragment.write_fragments(
                TABLE, tmp_path / f"f_{module.__name__}", use_legacy_format=legacy
            )
        formats[module.__name__] = (
            written.data_storage_version,
            fragments[0].files[0].file_major_version,
        )
    assert formats["lancelet"] == formats["lance"]
    assert formats["lance"][0] == ("0.1" if legacy else "2.2")


REFUSED_WRITES: list[tuple[str, dict[str, Any]]] = [
    ("write_dataset", {"target_all_bases": True}),
    ("write_dataset", {"base_store_params": {"b": {}}}),
    ("write_dataset", {"allow_external_blob_outside_bases": True}),
    ("write_dataset", {"blob_pack_file_size_threshold": 1024}),
    ("write_dataset", {"namespace_client": object(), "table_id": ["t"]}),
    ("write_dataset", {"session": ll.Session()}),
    ("write_fragments", {"enable_stable_row_ids": True}),
    ("write_fragments", {"target_bases": ["b"]}),
    ("write_fragments", {"initial_bases": [ll.DatasetBasePath("/x", "b")]}),
    ("write_fragments", {"external_blob_mode": "ingest"}),
    ("write_fragments", {"session": ll.Session()}),
    ("commit", {"enable_stable_row_ids": True}),
    ("commit", {"namespace_client_managed_versioning": True}),
    ("commit", {"base_store_params": {"b": {}}}),
    ("commit_batch", {"commit_timeout": timedelta(seconds=5)}),
    ("commit_batch", {"base_store_params": {"b": {}}}),
]


@pytest.mark.parametrize(
    ("call", "kwargs"), REFUSED_WRITES, ids=[f"{c}-{next(iter(k))}" for c, k in REFUSED_WRITES]
)
def test_write_keywords_lancelet_lacks_are_refused(
    tmp_path: Path, call: str, kwargs: dict[str, Any]
) -> None:
    ds = ll.write_dataset(TABLE, tmp_path / "l")
    txn = ll.fragment.write_fragments(TABLE, ds.uri, return_transaction=True)
    before = snapshot(ds.uri)
    calls: dict[str, Callable[[], Any]] = {
        "write_dataset": lambda: ll.write_dataset(TABLE, ds.uri, mode="append", **kwargs),
        "write_fragments": lambda: ll.fragment.write_fragments(TABLE, ds.uri, **kwargs),
        "commit": lambda: ll.LanceDataset.commit(ds.uri, txn, **kwargs),
        "commit_batch": lambda: ll.LanceDataset.commit_batch(ds.uri, [txn], **kwargs),
    }
    with pytest.raises(UnsupportedOptionError, match=next(iter(kwargs))):
        calls[call]()
    assert snapshot(ds.uri) == before


def test_commit_takes_pylance_timeouts(tmp_path: Path) -> None:
    # lancelet's commit loop gives up within seconds, inside a timeout of a minute.
    ds = ll.write_dataset(TABLE, tmp_path / "l")
    txn = ll.fragment.write_fragments(TABLE, ds.uri, return_transaction=True)
    committed = ll.LanceDataset.commit(ds.uri, txn, commit_timeout=timedelta(minutes=2))
    assert committed.count_rows() == 2 * TABLE.num_rows
    again = ll.fragment.write_fragments(TABLE, ds.uri, return_transaction=True)
    result = ll.LanceDataset.commit_batch(ds.uri, [again], commit_timeout=None)
    assert result["dataset"].count_rows() == 3 * TABLE.num_rows


@pytest.mark.local_files("opens pylance's dataset again by its own uri")
def test_cleanup_pacing_keywords_change_nothing(tmp_path: Path) -> None:
    theirs, ours = _both(tmp_path)
    for module, ds in ((lance, theirs), (ll, ours)):
        module.write_dataset(TABLE, ds.uri, mode="overwrite")
    copy_tree(Path(ours.uri), tmp_path / "unpaced")
    paced = ll.dataset(ours.uri).cleanup_old_versions(
        timedelta(0), delete_rate_limit=3, delete_concurrency=2
    )
    unpaced = ll.dataset(tmp_path / "unpaced").cleanup_old_versions(timedelta(0))
    want = lance.dataset(theirs.uri).cleanup_old_versions(
        timedelta(0), delete_rate_limit=3, delete_concurrency=2
    )
    assert paced == unpaced
    assert (paced.old_versions, paced.data_files_removed) == (
        want.old_versions,
        want.data_files_removed,
    )


# -- indices and merge_insert -----------------------------------------------------------


def test_document_granularity_as_pylance(tmp_path: Path) -> None:
    theirs, ours = _both(tmp_path)
    for ds in (theirs, ours):
        with pytest.raises(TypeError, match="DocumentGranularity"):
            ds.create_scalar_index("k", "BTREE", document_granularity="row")
    with pytest.raises(UnsupportedOptionError, match="document_granularity"):
        ours.create_scalar_index(
            "k", "BTREE", document_granularity=ll.query.DocumentGranularity.LIST_ELEMENT
        )
    theirs.create_scalar_index(
        "k", "BTREE", document_granularity=lance.query.DocumentGranularity.ROW
    )
    ours.create_scalar_index("k", "BTREE", document_granularity=ll.query.DocumentGranularity.ROW)
    assert [i.name for i in ours.describe_indices()] == [i.name for i in theirs.describe_indices()]


def _upsert(module: ModuleType, uri: str, use_index: bool) -> tuple[dict[str, int], pa.Table]:
    source = keyed_table(20, 40, seed=1)
    builder = (
        module.dataset(uri)
        .merge_insert("k")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .use_index(use_index)
        .write_mode("auto")
    )
    stats = builder.execute_batches(source)
    return stats, module.dataset(uri).to_table().sort_by("k")


@pytest.mark.local_files("opens pylance's dataset again by its own uri")
@pytest.mark.parametrize("use_index", [True, False])
def test_merge_insert_batches_and_index_choice_as_pylance(tmp_path: Path, use_index: bool) -> None:
    theirs, ours = _both(tmp_path)
    for ds in (theirs, ours):
        ds.create_scalar_index("k", "BTREE")
    their_stats, their_rows = _upsert(lance, theirs.uri, use_index)
    our_stats, our_rows = _upsert(ll, ours.uri, use_index)
    keys = ("num_inserted_rows", "num_updated_rows", "num_deleted_rows")
    assert {k: our_stats[k] for k in keys} == {k: their_stats[k] for k in keys}
    assert our_rows.equals(their_rows)


@pytest.mark.local_files("opens pylance's dataset again by its own uri")
def test_merge_insert_uncommitted_batches(tmp_path: Path) -> None:
    theirs, ours = _both(tmp_path)
    results = {}
    for module, ds in ((lance, theirs), (ll, ours)):
        builder = module.dataset(ds.uri).merge_insert("k").when_not_matched_insert_all()
        assert isinstance(builder.analyze_plan_batches(keyed_table(25, 35)), str)
        txn, stats = builder.execute_uncommitted_batches(keyed_table(25, 35))
        assert isinstance(txn, module.Transaction)
        committed = module.LanceDataset.commit(ds.uri, txn)
        results[module.__name__] = (stats["num_inserted_rows"], committed.count_rows())
    assert results["lancelet"] == results["lance"]


@pytest.mark.parametrize(
    ("method", "args"),
    [
        ("write_mode", ("rewrite_rows",)),
        ("write_mode", ("rewrite_columns",)),
        ("data_storage_version", ("2.1",)),
        ("target_bases", (["b"],)),
        ("target_all_bases", ()),
    ],
)
def test_merge_insert_file_choices_are_refused(
    tmp_path: Path, method: str, args: tuple[Any]
) -> None:
    ds = ll.write_dataset(TABLE, tmp_path / "l")
    builder = ds.merge_insert("k").when_not_matched_insert_all()
    with pytest.raises(UnsupportedOptionError, match=method):
        getattr(builder, method)(*args)


# -- fragment scans ---------------------------------------------------------------------


def test_fragment_scans_take_pylance_forms(tmp_path: Path) -> None:
    theirs, ours = _both(tmp_path)
    their_fragment, our_fragment = theirs.get_fragments()[1], ours.get_fragments()[1]
    for fragment in (their_fragment, our_fragment):
        with pytest.raises(TypeError):
            fragment.scanner(["k"])  # keywords only
        with pytest.raises(TypeError):
            fragment.to_batches(["k"])
    positional = ("k", "v"), "k > 12", 5, 1, True
    assert our_fragment.to_table(list(positional[0]), *positional[1:]).equals(
        their_fragment.to_table(list(positional[0]), *positional[1:])
    )
    our_batches = our_fragment.to_batches(batch_size=3, with_row_address=True)
    their_batches = their_fragment.to_batches(batch_size=3, with_row_address=True)
    assert [b.num_rows for b in our_batches] == [b.num_rows for b in their_batches]
    # A fragment's scans keep pylance's defaults whatever the dataset's scan defaults.
    with_ids = ll.dataset(ours.uri, default_scan_options={"with_row_id": True})
    assert "_rowid" in with_ids.to_table().column_names
    assert "_rowid" not in with_ids.get_fragments()[0].to_table().column_names


def test_dataset_scans_pass_every_keyword_on(tmp_path: Path) -> None:
    theirs, ours = _both(tmp_path)
    kwargs: dict[str, Any] = {
        "with_row_address": True,
        "late_materialization": ["v"],
        "io_buffer_size": 1 << 20,
        "use_scalar_index": False,
        "include_deleted_rows": False,
    }
    assert ours.to_table(filter="k < 9", **kwargs).equals(theirs.to_table(filter="k < 9", **kwargs))
    ours_batches = pa.Table.from_batches(ours.to_batches(strict_batch_size=True, **kwargs))
    assert ours_batches.equals(pa.Table.from_batches(theirs.to_batches(**kwargs)))
    # Scan defaults still fill what a call leaves unset.
    defaulted = ll.dataset(ours.uri, default_scan_options={"with_row_id": True})
    assert defaulted.to_table(columns=["k"]).column_names == ["k", "_rowid"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert defaulted.to_table(columns=["k"], with_row_id=False).column_names == ["k"]
