"""Datasets built by lancelet are read by pylance at every version, and the reverse.

Expected contents are computed independently with numpy from the inputs, never
read back through the implementation under test.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa

import lancelet as ll
from tests.dataset.util import assert_versions_match, keyed_table
from tests.storage import list_names
from tests.versions import STORAGE_VERSION


def _deletion_kinds(uri: str) -> set[str]:
    return {name.rsplit(".", 1)[1] for name in list_names(os.path.join(uri, "_deletions"))}


def _drop(table: pa.Table, doomed: Callable[[np.ndarray], np.ndarray]) -> pa.Table:
    """``table`` without the rows whose key satisfies ``doomed``."""
    return table.filter(pa.array(~doomed(table["k"].to_numpy())))


def test_lancelet_history_is_read_by_pylance(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    expected: dict[int, pa.Table] = {}
    base = keyed_table(0, 30_000)
    ds = ll.write_dataset(base, uri, max_rows_per_file=12_000)
    expected[ds.version] = base
    assert len(ds.get_fragments()) == 3

    ds = ll.write_dataset(keyed_table(30_000, 33_000), uri, mode="append")
    current = pa.concat_tables([base, keyed_table(30_000, 33_000)])
    expected[ds.version] = current

    ds.delete("k % 97 = 0")  # sparse: Arrow deletion files
    current = _drop(current, lambda k: k % 97 == 0)
    expected[ds.version] = current
    assert _deletion_kinds(uri) == {"arrow"}

    ds.delete("k < 10000 AND k % 10 <> 3")  # dense within fragment 0: a Roaring bitmap
    current = _drop(current, lambda k: (k < 10_000) & (k % 10 != 3))
    expected[ds.version] = current
    assert "bin" in _deletion_kinds(uri)

    ds.delete("k BETWEEN 24000 AND 29999")  # every row of fragment 2: the fragment goes
    current = _drop(current, lambda k: (k >= 24_000) & (k < 30_000))
    expected[ds.version] = current
    assert 2 not in [f.fragment_id for f in ds.get_fragments()]
    tagged = ds.version
    ds.tags.create("before-overwrite", tagged)

    other = pa.table({"name": ["a", "b", None], "score": pa.array([1.5, None, 3.0], pa.float32())})
    ds = ll.write_dataset(other, uri, mode="overwrite")
    expected[ds.version] = other

    old = ll.dataset(uri, version="before-overwrite")
    old.restore()
    expected[old.version] = current
    assert old.version == ds.version + 1

    assert_versions_match(uri, expected)
    assert lance.dataset(uri).tags.list()["before-overwrite"]["version"] == tagged
    assert lance.dataset(uri, version="before-overwrite").to_table().equals(current)
    assert lance.dataset(uri).schema.equals(base.schema)


def test_pylance_history_is_read_by_lancelet(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    expected: dict[int, pa.Table] = {}
    base = keyed_table(0, 20_000, seed=1)
    ds = lance.write_dataset(
        base, uri, data_storage_version=STORAGE_VERSION, max_rows_per_file=8_000
    )
    expected[ds.version] = current = base
    ds = lance.write_dataset(keyed_table(20_000, 21_000), uri, mode="append")
    expected[ds.version] = current = pa.concat_tables([current, keyed_table(20_000, 21_000)])
    ds.delete("k % 31 = 0")
    expected[ds.version] = current = _drop(current, lambda k: k % 31 == 0)
    ds.delete("k < 7000")  # a bitmap in fragment 0
    expected[ds.version] = current = _drop(current, lambda k: k < 7000)
    ds.delete("k >= 8000 AND k < 16000")  # fragment 1 disappears
    expected[ds.version] = current = _drop(current, lambda k: (k >= 8000) & (k < 16_000))
    ds.update_config({"owner": "tests"})
    expected[ds.version] = current
    ds.tags.create("pylance-tag", ds.version)

    assert_versions_match(uri, expected)
    ours = ll.dataset(uri)
    theirs = lance.dataset(uri)
    assert ours.config() == {"owner": "tests"}
    assert ll.dataset(uri, version="pylance-tag").version == theirs.tags.get_version("pylance-tag")
    with_ids = theirs.to_table(columns=["k"], with_row_id=True, with_row_address=True)
    assert ours.to_table(columns=["k"], with_row_id=True, with_row_address=True).equals(with_ids)
    assert ours.count_rows("k > 18000 AND v IS NOT NULL") == theirs.count_rows(
        "k > 18000 AND v IS NOT NULL"
    )
    picks = [0, 5, ours.count_rows() - 1, 17]
    assert ours.take(picks).equals(theirs.take(picks))
    assert [v["version"] for v in ours.versions()] == [v["version"] for v in theirs.versions()]
    for mine, ref in zip(ours.versions(), theirs.versions(), strict=True):
        assert mine["metadata"] == ref["metadata"]


def test_alternating_writers_on_one_dataset(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    expected: dict[int, pa.Table] = {}
    current = keyed_table(0, 6000, seed=2)
    expected[ll.write_dataset(current, uri, max_rows_per_file=4000).version] = current

    lance.write_dataset(keyed_table(6000, 7000), uri, mode="append")
    current = pa.concat_tables([current, keyed_table(6000, 7000)])
    expected[lance.dataset(uri).version] = current

    ours = ll.dataset(uri)
    ours.delete("k % 5 = 0")
    expected[ours.version] = current = _drop(current, lambda k: k % 5 == 0)

    theirs = lance.dataset(uri)
    theirs.delete("k % 7 = 0")  # the same fragments again: a union of both deletions
    expected[theirs.version] = current = _drop(current, lambda k: k % 7 == 0)

    ours = ll.write_dataset(keyed_table(7000, 7500), uri, mode="append")
    expected[ours.version] = current = pa.concat_tables([current, keyed_table(7000, 7500)])

    ours.delete("k < 3000 OR k >= 7400")
    expected[ours.version] = current = _drop(current, lambda k: (k < 3000) | (k >= 7400))

    theirs = lance.dataset(uri)
    theirs.delete("k % 11 = 0")
    expected[theirs.version] = current = _drop(current, lambda k: k % 11 == 0)

    lance.dataset(uri, version=3).restore()
    expected[lance.dataset(uri).version] = expected[3]

    ours = ll.write_dataset(keyed_table(9000, 9100), uri, mode="append")
    expected[ours.version] = pa.concat_tables([expected[3], keyed_table(9000, 9100)])
    assert_versions_match(uri, expected)
    ids = [f.fragment_id for f in lance.dataset(uri).get_fragments()]
    assert len(ids) == len(set(ids))


def test_v1_manifest_names_are_read_and_kept(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    first = keyed_table(0, 100)
    lance.write_dataset(
        first, uri, data_storage_version=STORAGE_VERSION, enable_v2_manifest_paths=False
    )
    ll.write_dataset(keyed_table(100, 200), uri, mode="append")
    names = sorted(n for n in list_names(os.path.join(uri, "_versions")) if n.endswith("manifest"))
    assert names == ["1.manifest", "2.manifest"]
    both = pa.concat_tables([first, keyed_table(100, 200)])
    assert_versions_match(uri, {1: first, 2: both})


def test_new_datasets_can_use_v1_names(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    ll.write_dataset(keyed_table(0, 10), uri, enable_v2_manifest_paths=False)
    assert "1.manifest" in list_names(os.path.join(uri, "_versions"))
    assert lance.dataset(uri).to_table().equals(keyed_table(0, 10))


def test_input_kinds(tmp_path: Path) -> None:
    table = keyed_table(0, 50).select(["k", "v", "s"])
    inputs = {
        "table": table,
        "reader": table.to_reader(max_chunksize=7),
        "batches": table.to_batches(max_chunksize=9),
        "pandas": table.to_pandas(),
    }
    for name, data in inputs.items():
        uri = str(tmp_path / name)
        ll.write_dataset(data, uri)
        # pandas' own string dtype comes back from Arrow as large_string.
        want = table if name != "pandas" else pa.Table.from_pandas(data, preserve_index=False)
        assert lance.dataset(uri).to_table().equals(want), name


def test_distributed_write_then_one_commit(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    first = keyed_table(0, 1000)
    ll.write_dataset(first, uri)
    parts = [keyed_table(1000 + 500 * i, 1500 + 500 * i) for i in range(3)]
    fragments = []
    for part in parts:  # in a real job, each on its own machine
        fragments += ll.fragment.write_fragments(part, uri, max_rows_per_file=300)
    shipped = [ll.FragmentMetadata.from_json(f.to_json()) for f in fragments]
    ds = ll.LanceDataset.commit(uri, ll.LanceOperation.Append(shipped), read_version=1)
    assert ds.version == 2
    assert_versions_match(uri, {2: pa.concat_tables([first, *parts])})
    one = ll.LanceFragment.create(uri, keyed_table(5000, 5010))
    ll.LanceDataset.commit(uri, ll.LanceOperation.Append([one]), read_version=2)
    assert lance.dataset(uri).count_rows() == 2510
