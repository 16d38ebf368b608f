"""Fragment metadata in pylance's JSON form, checked against pylance."""

from __future__ import annotations

import inspect
import json
import pickle
import warnings
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelet as ll
from lancelet.errors import (
    ArgumentError,
    UnsupportedFeatureError,
    UnsupportedOptionError,
)
from tests.dataset.util import keyed_table
from tests.versions import STORAGE_VERSION


def _pylance_dataset(uri: str, stable: bool) -> lance.LanceDataset:
    """Deletions, an update (a new fragment) and an added column (a second data file)."""
    ds = lance.write_dataset(
        keyed_table(0, 100), uri, max_rows_per_file=40, enable_stable_row_ids=stable
    )
    ds.delete("k % 7 = 0")
    ds.update({"k": "k + 1000"}, "k < 3")
    ds.add_columns({"double_k": "k * 2"})
    return lance.dataset(uri)


@pytest.mark.parametrize("stable", [False, True])
def test_to_json_is_pylances(tmp_path: Path, stable: bool) -> None:
    uri = str(tmp_path / "ds")
    theirs = _pylance_dataset(uri, stable)
    ours = ll.dataset(uri)
    expected = [f.metadata.to_json() for f in theirs.get_fragments()]
    got = [f.metadata.to_json() for f in ours.get_fragments()]
    assert json.loads(json.dumps(got)) == json.loads(json.dumps(expected))
    assert any(e["deletion_file"] for e in expected)
    assert any(len(e["files"]) == 2 for e in expected)
    assert all((e["row_id_meta"] is not None) == stable for e in expected)


def test_legacy_to_json_is_pylances(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    theirs = lance.write_dataset(keyed_table(0, 50), uri, data_storage_version="legacy")
    got = [f.metadata.to_json() for f in ll.dataset(uri).get_fragments()]
    assert got == [f.metadata.to_json() for f in theirs.get_fragments()]


@pytest.mark.parametrize("stable", [False, True])
def test_from_json_takes_pylances_form(tmp_path: Path, stable: bool) -> None:
    uri = str(tmp_path / "ds")
    theirs = _pylance_dataset(uri, stable)
    shipped = [json.dumps(f.metadata.to_json()) for f in theirs.get_fragments()]
    ours = [ll.FragmentMetadata.from_json(s) for s in shipped]
    assert [json.dumps(f.to_json()) for f in ours] == shipped
    # The same fragments as lancelet reads them from pylance's manifest.
    assert ours == [f.metadata for f in ll.dataset(uri).get_fragments()]


def test_pylance_written_fragments_committed_by_lancelet(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    lance.write_dataset(keyed_table(0, 10), uri)
    new = [lance.LanceFragment.create(uri, keyed_table(10 * i, 10 * i + 10)) for i in (1, 2)]
    shipped = [ll.FragmentMetadata.from_json(json.dumps(f.to_json())) for f in new]
    ll.LanceDataset.commit(uri, ll.LanceOperation.Append(shipped), read_version=1)
    parts = [keyed_table(10 * i, 10 * i + 10) for i in range(3)]
    assert lance.dataset(uri).to_table().equals(pa.concat_tables(parts))
    again = [ll.FragmentMetadata.from_json(f.to_json()) for f in new]
    ll.LanceDataset.commit(
        uri, ll.LanceOperation.Overwrite(ll.dataset(uri).schema, again), read_version=2
    )
    assert lance.dataset(uri).to_table().equals(pa.concat_tables(parts[1:]))


def test_pylance_takes_our_json(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    ll.write_dataset(keyed_table(0, 10), uri)
    fragment = ll.LanceFragment.create(uri, keyed_table(10, 30))
    theirs = lance.FragmentMetadata.from_json(json.dumps(fragment.to_json()))
    lance.LanceDataset.commit(uri, lance.LanceOperation.Append([theirs]), read_version=1)
    assert (
        lance.dataset(uri)
        .to_table()
        .equals(pa.concat_tables([keyed_table(0, 10), keyed_table(10, 30)]))
    )


def test_from_json_refuses_what_lancelet_cannot_carry(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    ds = lance.write_dataset(keyed_table(0, 10), uri)
    form = ds.get_fragments()[0].metadata.to_json()
    with pytest.raises(UnsupportedFeatureError):
        ll.FragmentMetadata.from_json({**form, "overlays": [{"data_file": {}, "offsets": []}]})


def test_deletion_file_is_pylances() -> None:
    # Same constructor (keywords and positions), asdict, JSON and pickling as pylance.
    kwargs: dict[str, Any] = {
        "read_version": 1, "id": 123, "file_type": "array", "num_deleted_rows": 10,
        "base_id": 456,
    }  # fmt: skip
    theirs = lance.fragment.DeletionFile(**kwargs)
    ours = ll.fragment.DeletionFile(**kwargs)
    assert ours.asdict() == theirs.asdict()
    assert ll.fragment.DeletionFile(2, 7, "bitmap", 3).asdict() == (
        lance.fragment.DeletionFile(2, 7, "bitmap", 3, None).asdict()
    )
    meta = {"id": 1, "files": [], "physical_rows": 1000}
    their_meta = lance.fragment.FragmentMetadata(**meta, deletion_file=theirs)
    our_meta = ll.FragmentMetadata(**meta, deletion_file=ours)
    assert our_meta.to_json() == their_meta.to_json()
    back = ll.FragmentMetadata.from_json(json.dumps(their_meta.to_json()))
    assert back == our_meta == pickle.loads(pickle.dumps(our_meta))
    with pytest.raises(ValueError, match="'array' or 'bitmap'"):
        ll.fragment.DeletionFile(1, 1, "roaring", 1)


# -- LanceFragment.create options ------------------------------------------------------------


def test_create_signature_is_pylances() -> None:
    theirs = inspect.signature(lance.LanceFragment.create).parameters
    ours = inspect.signature(ll.LanceFragment.create).parameters
    assert list(ours) == list(theirs)
    assert [p.kind for p in ours.values()] == [p.kind for p in theirs.values()]


@pytest.mark.parametrize(
    "options",
    [
        {"fragment_id": 5, "data_storage_version": "2.1"},
        {"mode": "overwrite", "max_rows_per_group": 7},
        {"use_legacy_format": False},
        {"data_storage_version": "2.2", "storage_options": {}},
    ],
    ids=str,
)
def test_create_options_as_pylance(tmp_path: Path, options: dict[str, Any]) -> None:
    data = pa.table({"k": list(range(20)), "s": [str(i) for i in range(20)]})
    fragments = []
    for name, module in (("theirs", lance), ("ours", ll)):
        uri = str(tmp_path / name)
        given = dict(options)
        if module is lance and not {"data_storage_version", "use_legacy_format"} & set(given):
            # lancelet's default is the format this test run covers; pylance's is 2.2.
            given["data_storage_version"] = STORAGE_VERSION
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fragment = module.LanceFragment.create(uri, data, **given)
        assert [w.category for w in caught] == (
            [DeprecationWarning] if "use_legacy_format" in options else []
        )
        form = fragment.to_json()
        lance.LanceDataset.commit(
            uri,
            lance.LanceOperation.Overwrite(
                data.schema, [lance.FragmentMetadata.from_json(json.dumps(form))]
            ),
        )
        assert lance.dataset(uri).to_table().equals(data)
        fragments.append(form)
    theirs, ours = fragments
    for form in fragments:
        for f in form["files"]:
            del f["path"], f["file_size_bytes"]  # names are random; sizes are encodings'
    assert ours == theirs


def test_create_refuses_what_lancelet_lacks(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    data = keyed_table(0, 5)
    for call in (lance.LanceFragment.create, ll.LanceFragment.create):
        with pytest.raises(ValueError, match="together"):
            call(uri, data, table_id=["t"])
    with pytest.raises(UnsupportedOptionError):
        ll.LanceFragment.create(uri, data, namespace_client=object(), table_id=["t"])
    with pytest.raises(TypeError, match="FragmentWriteProgress"):
        ll.LanceFragment.create(uri, data, progress=object())
    with pytest.raises(TypeError):
        ll.LanceFragment.create(uri, data, base_store_params={})
    # use_legacy_format gives a legacy file, as in pylance.
    with pytest.warns(DeprecationWarning):
        fragment = ll.LanceFragment.create(uri, data, use_legacy_format=True)
    assert (fragment.files[0].file_major_version, fragment.files[0].file_minor_version) == (0, 2)
    ll.LanceDataset.commit(uri, ll.LanceOperation.Overwrite(data.schema, [fragment]))
    assert lance.dataset(uri).data_storage_version == "0.1"
    assert lance.dataset(uri).to_table().equals(ll.dataset(uri).to_table())


# -- LanceFragment.merge_columns ---------------------------------------------------------------


def _double(batch: pa.RecordBatch) -> pa.RecordBatch:
    return pa.record_batch([pc.multiply(batch["k"], 2)], ["double_k"])


@pytest.mark.parametrize("batch_size", [None, 3])
def test_merge_columns_as_pylance(tmp_path: Path, batch_size: int | None) -> None:
    tables = []
    for name, module in (("theirs", lance), ("ours", ll)):
        uri = str(tmp_path / name)
        lance.write_dataset(keyed_table(0, 30), uri, max_rows_per_file=10)
        lance.dataset(uri).delete("k % 4 = 1")
        ds = module.dataset(uri)
        fragments = ds.get_fragments()
        merged, schema = fragments[1].merge_columns(_double, ["k"], batch_size)
        others = [f.metadata for f in fragments if f.fragment_id != merged.id]
        operation = module.LanceOperation.Merge([*others, merged], schema)
        module.LanceDataset.commit(uri, operation, read_version=ds.version)
        tables.append(lance.dataset(uri).to_table())
        assert ll.dataset(uri).to_table().equals(tables[-1])
    theirs, ours = tables
    assert ours.equals(theirs)
    assert ours.column("double_k").null_count == 14  # the live rows of fragments 0 and 2


def test_merge_columns_refusals(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    lance.write_dataset(keyed_table(0, 10), uri)
    fragment = ll.dataset(uri).get_fragments()[0]
    with pytest.raises(ArgumentError, match="reader_schema"):
        fragment.merge_columns(_double, ["k"], reader_schema=pa.schema([("k", pa.int64())]))
    # A pyarrow schema (deprecated) is refused unless its ids are the files' ids.
    with pytest.deprecated_call():
        merge = ll.LanceOperation.Merge([fragment.metadata], pa.schema([("k", pa.int64())]))
    with pytest.raises(UnsupportedOptionError, match="field ids"):
        ll.LanceDataset.commit(uri, merge, read_version=1)
