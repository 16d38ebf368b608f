"""``DataFile.fields`` and ``column_indices`` are lists, as pylance's, and data files
stay values: equal whatever sequence built them, picklable, and (unlike pylance's,
which are mutable) read-only and hashable, since lancelet's manifests are shared."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
from pathlib import Path

import lance
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lancelet as ll
from lancelet.fragment import DataFile


def _layout(files: list[object]) -> list[tuple[list[int], list[int]]]:
    return [(f.fields, f.column_indices) for f in files]  # type: ignore[attr-defined]


def test_created_fragments_list_their_fields_as_pylance(tmp_path: Path) -> None:
    df = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    ours = ll.LanceFragment.create(tmp_path / "ours", df)
    theirs = lance.LanceFragment.create(tmp_path / "theirs", df)
    for file in ours.files:
        assert type(file.fields) is not tuple and isinstance(file.fields, list)
        assert isinstance(file.column_indices, list)
    assert _layout(ours.files) == _layout(theirs.files) == [([0, 1], [0, 1])]
    assert ours.files[0].fields == [0, 1]
    assert [0, 1] == ours.files[0].fields  # noqa: SIM300 - the list on the left too
    assert ours.to_json()["files"][0]["fields"] == theirs.to_json()["files"][0]["fields"]


def test_dataset_fragments_list_their_fields_as_pylance(tmp_path: Path) -> None:
    ll.write_dataset(pa.table({"a": [1, 2]}), tmp_path)
    ll.dataset(tmp_path).add_columns({"b": "a * 2"})
    ours = [f.metadata for f in ll.dataset(tmp_path).get_fragments()]
    theirs = [f.metadata for f in lance.dataset(tmp_path).get_fragments()]
    assert [_layout(m.files) for m in ours] == [_layout(m.files) for m in theirs]

    def listed(meta: object) -> str:
        files = meta.to_json()["files"]  # type: ignore[attr-defined]
        return json.dumps([[f["fields"], f["column_indices"]] for f in files])

    assert [listed(m) for m in ours] == [listed(m) for m in theirs]


@given(ids=st.lists(st.integers(0, 1000), max_size=6))
def test_data_files_are_values_whatever_built_them(ids: list[int]) -> None:
    positions = list(range(len(ids)))
    a = DataFile("f.lance", ids, positions)
    b = DataFile("f.lance", tuple(ids), tuple(positions))
    assert a == b and hash(a) == hash(b)
    assert a.fields == ids and isinstance(a.fields, list)
    for twin in (pickle.loads(pickle.dumps(a)), copy.deepcopy(a), copy.copy(a)):
        assert twin == a and twin.fields == ids
    assert dataclasses.asdict(a)["fields"] == ids
    assert a.fields + [1] == [*ids, 1]  # noqa: RUF005 - a new, ordinary list
    assert dataclasses.replace(a, fields=[*ids, 7]).fields == [*ids, 7]


def test_a_data_files_lists_refuse_changes_in_place() -> None:
    file = DataFile("f.lance", [0, 1], [0, 1])
    for change in (
        lambda: file.fields.append(2),
        lambda: file.fields.extend([2]),
        lambda: file.column_indices.__setitem__(0, 5),
        lambda: file.fields.sort(),
        lambda: file.fields.pop(),
    ):
        with pytest.raises(TypeError, match="cannot be changed in place"):
            change()
    assert file.fields == [0, 1] and file.column_indices == [0, 1]
