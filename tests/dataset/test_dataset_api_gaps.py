"""pylance 14's public LanceDataset, LanceFragment and LanceScanner methods all exist
in lancelet: implemented as pylance's (compared here on the same files), or refused
by name.
"""

from __future__ import annotations

import importlib
import inspect
import random
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import lance
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.dataset.pylance_only import PylanceOnlyMethods
from lancelet.dataset.version_info import commit_datetime
from lancelet.errors import UnsupportedFunctionError


def _public(cls: type) -> set[str]:
    return {n for n in dir(cls) if not n.startswith("_")}


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("dataset", "LanceDataset"),
        ("dataset", "LanceScanner"),
        ("fragment", "LanceFragment"),
    ],
)
def test_every_public_method_of_pylance_exists(module: str, name: str) -> None:
    theirs = getattr(importlib.import_module(f"lance.{module}"), name)
    ours = getattr(importlib.import_module(f"lancelet.{module}"), name)
    assert _public(theirs) - _public(ours) == set()


def test_pylance_public_classes_are_importable() -> None:
    names = ["Index", "IndexFile", "MergeInsertBuilder", "CleanupStats", "DataStatistics"]
    for name in names:
        assert hasattr(ll, name), name
    dataset_module = importlib.import_module("lancelet.dataset")
    for name in ["Tag", "Version", "VersionRef", "ExecuteResult", "LanceSchema", "Tags"]:
        assert hasattr(dataset_module, name), name
    fragment_module = importlib.import_module("lancelet.fragment")
    for name in ["FragmentSession", "FragmentWriteProgress", "BatchUDF"]:
        assert hasattr(fragment_module, name), name


@pytest.fixture
def written(tmp_path: Path) -> Path:
    """A pylance-written dataset with a few versions, an index and deletions."""
    uri = tmp_path / "ds"
    ds = lance.write_dataset(pa.table({"a": range(30)}), uri, max_rows_per_file=10)
    ds.create_scalar_index("a", "BTREE")
    ds.delete("a % 7 = 0")
    lance.write_dataset(pa.table({"a": range(30, 35)}), uri, mode="append")
    return uri


def test_version_facts_as_pylance(written: Path) -> None:
    theirs, ours = lance.dataset(written), ll.dataset(written)
    assert ours.get_version() == theirs.get_version()
    assert ours.versions() == theirs.versions()
    assert ours.version_refs() == theirs.version_refs()
    assert sorted(ours.fragment_ids()) == sorted(theirs.fragment_ids())
    old = ll.dataset(written, version=2)
    assert old.get_version() == lance.dataset(written, version=2).get_version()
    assert ours.initial_storage_options == theirs.initial_storage_options
    assert ours.latest_storage_options() == theirs.latest_storage_options()


@pytest.mark.parametrize("seed", range(3))
def test_version_timestamps_round_as_pylance(seed: int) -> None:
    # pylance converts commit nanoseconds in floating point, which can land one
    # microsecond away from the exact value: lancelet gives the same datetime.
    from lance.dataset import _convert_version_timestamp

    rng = random.Random(seed)
    for _ in range(3000):
        nanos = rng.randrange(1_700_000_000 * 10**9, 1_900_000_000 * 10**9)
        theirs = _convert_version_timestamp({"timestamp": nanos})["timestamp"]  # type: ignore[typeddict-item]
        assert commit_datetime(nanos) == theirs, nanos


def _transaction_kind(ds: Any) -> tuple[Any, ...]:
    operation = ds.read_transaction(ds.version).operation
    return (
        type(operation).__name__,
        list(operation.updated_fragments),
        sorted(operation.deleted_fragment_ids),
        operation.predicate,
    )


def test_truncate_table_as_pylance(tmp_path: Path) -> None:
    results = []
    for lib, name in ((lance, "p"), (ll, "l")):
        uri = tmp_path / name
        ds = lib.write_dataset(pa.table({"a": range(30)}), uri, max_rows_per_file=10)
        ds.create_scalar_index("a", "BTREE")
        ds.truncate_table()
        ds = lib.dataset(uri)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            names = [i["name"] for i in ds.list_indices()]
        results.append((ds.version, ds.count_rows(), ds.schema, names, _transaction_kind(ds)))
    assert results[1] == results[0]


DELETE_ROWS = [[], [1, 3], [3, 1, 1], [0, 2], list(range(6)), [6], [-1]]


@pytest.mark.parametrize("offsets", DELETE_ROWS, ids=str)
def test_fragment_delete_rows_as_pylance(tmp_path: Path, offsets: list[int]) -> None:
    def run(lib: ModuleType, uri: Path) -> Any:
        lib.write_dataset(pa.table({"a": range(6)}), uri)
        lib.dataset(uri).delete("a = 0")
        fragment = lib.dataset(uri).get_fragments()[0]
        try:
            result = fragment.delete_rows(iter(offsets))
        except Exception as exc:
            return exc
        if result is None:
            return None
        deletion = result.deletion_file
        return (result.id, result.physical_rows, deletion and deletion.num_deleted_rows)

    theirs, ours = run(lance, tmp_path / "p"), run(ll, tmp_path / "l")
    if isinstance(theirs, Exception):
        builtin = OverflowError if isinstance(theirs, OverflowError) else ValueError
        assert isinstance(ours, builtin) and isinstance(ours, ll.errors.LanceletError)
    else:
        assert ours == theirs


def test_fragment_delete_rows_commits(tmp_path: Path) -> None:
    uri = tmp_path / "l"
    ds = ll.write_dataset(pa.table({"a": range(6)}), uri)
    fragment = ds.get_fragments()[0].delete_rows([1, 4])
    ll.LanceDataset.commit(uri, ll.LanceOperation.Delete([fragment], [], "a in (1, 4)"), 1)
    assert ll.dataset(uri).to_table()["a"].to_pylist() == [0, 2, 3, 5]
    assert lance.dataset(uri).to_table()["a"].to_pylist() == [0, 2, 3, 5]


REFUSED = sorted(n for n in vars(PylanceOnlyMethods) if not n.startswith("_"))


@pytest.mark.parametrize("name", REFUSED)
def test_pylance_only_methods_refuse_by_name(tmp_path: Path, name: str) -> None:
    assert name in _public(lance.LanceDataset)
    ds = ll.write_dataset(pa.table({"a": range(3)}), tmp_path / "l")
    theirs = inspect.getattr_static(lance.LanceDataset, name)
    if isinstance(theirs, property):
        with pytest.raises(UnsupportedFunctionError, match=name):
            getattr(ds, name)
        return
    # Called with pylance's required arguments, it binds and refuses by name.
    member = getattr(ds, name)
    parameters = inspect.signature(getattr(lance.LanceDataset, name)).parameters.values()
    required = {
        p.name: "a"
        for p in parameters
        if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        and p.name != "self"
    }  # fmt: skip
    with pytest.raises(UnsupportedFunctionError, match=name):
        member(**required)
    if not any(p.kind == p.VAR_KEYWORD for p in parameters):
        with pytest.raises(TypeError):
            member(**required, no_such_keyword=1)
