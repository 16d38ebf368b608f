"""LABEL_LIST indices answering array_has_any / array_has_all / array_has filters.

Built by lancelet and by pylance, on format 2.0 and 2.2 datasets; every indexed scan is
checked against the same scan without the index, against pylance, and against the
filter evaluated in plain Python on the source rows.  Filters whose meaning an index
cannot give (NULL values, no values, values the list type cannot hold) must not use it.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.dataset.read import index_plan
from lancelet.expr import HasAll, HasAny
from tests.dataset.test_scalar_index import Spy

ROWS = 300
_NEG_NAN = float(np.copysign(np.nan, -1))
_WORDS = ["a", "b", "c", "it's", ""]
_FLOATS = [0.0, -0.0, 1.5, np.nan, _NEG_NAN]


def _tags(i: int) -> list[str | None] | None:
    if i % 17 == 0:
        return None
    if i % 13 == 0:
        return []
    picked: list[str | None] = [_WORDS[(i * k) % len(_WORDS)] for k in range(1 + i % 4)]
    if i % 7 == 0:
        picked.append(None)
    return picked  # often with duplicates


def _table() -> pa.Table:
    ids = range(ROWS)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "tags": pa.array([_tags(i) for i in ids], pa.list_(pa.string())),
            "nums": pa.array(
                [None if i % 11 == 0 else [i % 5, (i * 3) % 7] for i in ids],
                pa.large_list(pa.int32()),
            ),
            "f": pa.array(
                [None if i % 19 == 0 else [_FLOATS[i % 5], _FLOATS[i % 3]] for i in ids],
                pa.list_(pa.float64()),
            ),
        }
    )


def _bits(value: Any) -> Any:
    return struct.pack("<d", value) if isinstance(value, float) else value


def _any(column: str, *wanted: Any) -> Callable[[dict[str, Any]], bool]:
    keys = {_bits(v) for v in wanted}
    return lambda row: row[column] is not None and bool(keys & {_bits(v) for v in row[column]})


def _all(column: str, *wanted: Any) -> Callable[[dict[str, Any]], bool]:
    keys = {_bits(v) for v in wanted}
    return lambda row: row[column] is not None and keys <= {_bits(v) for v in row[column]}


# filter -> (its meaning in plain Python, whether the index answers it)
FILTERS: dict[str, tuple[Callable[[dict[str, Any]], bool], bool]] = {
    "array_has_any(tags, ['a'])": (_any("tags", "a"), True),
    "array_has_any(tags, ['it''s', 'zz'])": (_any("tags", "it's", "zz"), True),
    "array_has_any(tags, [''])": (_any("tags", ""), True),
    "array_has_all(tags, ['a', 'b'])": (_all("tags", "a", "b"), True),
    "array_has_all(tags, ['a', 'zz'])": (lambda row: False, True),
    "array_has(tags, 'c')": (_any("tags", "c"), True),
    "list_has_any(nums, [1, 6])": (_any("nums", 1, 6), True),
    "array_has_all(nums, [0, 0])": (_all("nums", 0), True),
    "array_has_any(nums, [1, 3000000000])": (_any("nums", 1), True),
    "array_has_any(f, [0.0])": (_any("f", 0.0), True),
    "array_has_any(f, [-0.0])": (_any("f", -0.0), True),
    "array_has_all(f, [-0.0, 1.5])": (_all("f", -0.0, 1.5), True),
    "array_has_any(tags, ['a']) AND id > 100": (
        lambda row: _any("tags", "a")(row) and row["id"] > 100,
        True,
    ),
    "array_has(tags, 'b') OR array_has_any(nums, [4])": (
        lambda row: _any("tags", "b")(row) or _any("nums", 4)(row),
        True,
    ),
    # no index: NOT, NULL values, empty arrays, values no list holds, NaN
    "NOT array_has_any(tags, ['a'])": (
        lambda row: row["tags"] is not None and not _any("tags", "a")(row),
        False,
    ),
    "array_has_any(tags, ['a', NULL])": (_any("tags", "a", None), False),
    "array_has_all(tags, [NULL])": (_all("tags", None), False),
    "array_has_any(tags, [])": (lambda row: False, False),
    "array_has_all(tags, [])": (lambda row: True, False),
    "array_has_any(nums, [3000000000])": (lambda row: False, False),
    "array_has_any(f, [CAST('NaN' AS DOUBLE)])": (_any("f", np.nan), False),
    "array_has_any(f, [-CAST('NaN' AS DOUBLE)])": (_any("f", _NEG_NAN), False),
}


def _repr_rows(table: pa.Table) -> str:
    # repr keeps NaN and -0.0 comparable
    return repr(table.to_pylist())


@pytest.fixture(scope="module")
def source() -> pa.Table:
    return _table()


def _build(tmp_path: Path, builder: str, version: str) -> str:
    path = str(tmp_path / "ds")
    writer = ll if builder == "lancelet" else lance
    writer.write_dataset(_table(), path, data_storage_version=version, max_rows_per_file=100)
    indexer = ll.dataset(path) if builder == "lancelet" else lance.dataset(path)
    for column in ("tags", "nums", "f"):
        indexer.create_scalar_index(column, "LABEL_LIST")
    return path


@pytest.mark.parametrize("version", ["2.0", "2.2"])
@pytest.mark.parametrize("builder", ["lancelet", "pylance"])
def test_indexed_scans_match_scans_pylance_and_the_data(
    tmp_path: Path, builder: str, version: str, source: pa.Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _build(tmp_path, builder, version)
    spy = Spy(monkeypatch)
    ds, py = ll.dataset(path), lance.dataset(path)
    assert sorted(i.index_type for i in py.describe_indices()) == ["LabelList"] * 3
    rows = source.to_pylist()
    for sql, (meaning, indexed) in FILTERS.items():
        before = spy.searches
        got = ds.to_table(filter=sql)
        assert (spy.searches > before) == indexed, sql
        assert _repr_rows(got) == _repr_rows(ds.to_table(filter=sql, use_scalar_index=False)), sql
        assert _repr_rows(got) == _repr_rows(py.to_table(filter=sql)), sql
        assert got["id"].to_pylist() == [r["id"] for r in rows if meaning(r)], sql


def test_pylance_uses_the_index_lancelet_builds(tmp_path: Path) -> None:
    path = _build(tmp_path, "lancelet", "2.2")
    sql = "array_has_any(tags, ['a'])"
    assert "ScalarIndexQuery" in lance.dataset(path).scanner(filter=sql).explain_plan()


def test_index_after_deletes_and_appends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _build(tmp_path, "lancelet", "2.2")
    ll.dataset(path).delete("id % 4 = 0")
    extra = _table().slice(0, 50)
    ll.write_dataset(extra, path, mode="append")  # not indexed: scanned
    spy = Spy(monkeypatch)
    sql = "array_has_any(tags, ['a', 'b'])"
    got = ll.dataset(path).to_table(filter=sql)
    assert spy.searches > 0
    kept = [r for r in _table().to_pylist() if r["id"] % 4] + extra.to_pylist()
    meaning = _any("tags", "a", "b")
    assert got["id"].to_pylist() == [r["id"] for r in kept if meaning(r)]
    assert _repr_rows(got) == _repr_rows(lance.dataset(path).to_table(filter=sql))


def test_index_declines_queries_it_cannot_answer(tmp_path: Path) -> None:
    """A NULL value matches NULL items, and no values is FALSE even for NULL lists:
    neither is in the index, so the scan answers them."""
    path = _build(tmp_path, "pylance", "2.2")
    ds = ll.dataset(path)
    index = next(i for i in ds._manifest.indices if i.name == "tags_idx")
    opened = index_plan.opened(ds._store, index, pa.list_(pa.string()))
    assert opened.search(HasAny("tags", pa.array(["a", None]))) is None
    assert opened.search(HasAll("tags", pa.array([], pa.string()))) is None
    found = opened.search(HasAll("tags", pa.array(["a", "b"])))
    assert found is not None and found.exact
    meaning = _all("tags", "a", "b")
    assert sorted(int(a) for a in found.addresses) == [
        (r["id"] // 100) << 32 | r["id"] % 100 for r in _table().to_pylist() if meaning(r)
    ]
