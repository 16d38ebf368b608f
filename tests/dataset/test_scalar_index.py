"""create_scalar_index, indexed scans and optimize_indices: results checked against an
independent evaluation of the filter (pyarrow on the source table) and against pylance,
which reads the indices lancelet builds and builds the ones lancelet reads."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelet as ll
from lancelet.dataset.read import index_plan
from lancelet.errors import (
    ArgumentError,
    CorruptIndexError,
    IndexExistsError,
    IndexTypeError,
    SchemaError,
    UnsupportedOptionError,
    UnsupportedTypeError,
)
from tests.expr.grammar import NEG_NAN
from tests.storage import file_names, list_names, read_file, remove_file, write_file
from tests.versions import STORAGE_VERSION

ROWS = 2000


def _table(start: int = 0, stop: int = ROWS) -> pa.Table:
    i = np.arange(start, stop)
    return pa.table(
        {
            "id": pa.array(i, pa.int64()),
            "k": pa.array(i % 50, pa.int32()),
            "s": pa.array([f"v{j % 7}" if j % 11 else None for j in i]),
            "f": pa.array(np.where(i % 13 == 0, np.nan, (i % 100) / 4.0)),
            "tags": pa.array([[f"t{j % 3}", f"u{j % 5}"] for j in i]),
            "st": pa.array([{"x": int(j % 9)} for j in i]),
        }
    )


# (column, type, filters it answers)
CASES = [
    ("id", "BTREE", ["id = 17", "id between 100 and 140", "id in (3, 1999, 5000)", "id < 5"]),
    ("k", "BITMAP", ["k = 3", "k in (1, 2)", "k >= 48", "k = 3 and id > 1000"]),
    ("s", "BTREE", ["s = 'v3'", "s is null", "s like 'v1%'", "s > 'v5'"]),
    ("s", "BITMAP", ["s = 'v3'", "s is null", "s in ('v1', 'v6')"]),
    ("f", "BTREE", ["f = 2.5", "f > 20", "f is null", "f < 1"]),
    ("id", "ZONEMAP", ["id = 17", "id between 100 and 140"]),
    ("k", "BLOOMFILTER", ["k = 3", "k in (1, 2)"]),
    ("st.x", "BTREE", ["st.x = 4", "st.x < 2"]),
]


def _expected(table: pa.Table, sql: str) -> pa.Table:
    """The filter, written by hand as an Arrow expression, applied to the source rows."""
    return table.filter(EXPRESSIONS[sql])


EXPRESSIONS: dict[str, pc.Expression] = {
    "id = 17": pc.field("id") == 17,
    "id between 100 and 140": (pc.field("id") >= 100) & (pc.field("id") <= 140),
    "id in (3, 1999, 5000)": pc.field("id").isin([3, 1999, 5000]),
    "id < 5": pc.field("id") < 5,
    "k = 3": pc.field("k") == 3,
    "k in (1, 2)": pc.field("k").isin([1, 2]),
    "k >= 48": pc.field("k") >= 48,
    "k = 3 and id > 1000": (pc.field("k") == 3) & (pc.field("id") > 1000),
    "s = 'v3'": pc.field("s") == "v3",
    "s is null": pc.field("s").is_null(),
    "s like 'v1%'": pc.starts_with(pc.field("s"), "v1"),
    "s > 'v5'": pc.field("s") > "v5",
    "s in ('v1', 'v6')": pc.field("s").isin(["v1", "v6"]),
    "f = 2.5": pc.field("f") == 2.5,
    # SQL orders NaN above every number, as pylance does
    "f > 20": (pc.field("f") > 20) | pc.is_nan(pc.field("f")),
    "f is null": pc.field("f").is_null(),
    "f < 1": pc.field("f") < 1,
    "st.x = 4": pc.field("st", "x") == 4,
    "st.x < 2": pc.field("st", "x") < 2,
    "id = 18": pc.field("id") == 18,
    "id = 19": pc.field("id") == 19,
    "id = 2100": pc.field("id") == 2100,
    "id in (700, 1500)": pc.field("id").isin([700, 1500]),
    "k = 3 and id > 1900": (pc.field("k") == 3) & (pc.field("id") > 1900),
}


@pytest.fixture
def path(tmp_path: Path) -> str:
    out = str(tmp_path / "ds")
    ll.write_dataset(_table(), out, max_rows_per_file=600)
    return out


class Spy:
    """Counts index searches that answered, so a test can tell an index was (not) used."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.searches = 0
        real = index_plan.opened

        def counting(*args: Any) -> Any:
            index = real(*args)
            spy = self

            class Counted:
                def search(self, query: Any) -> Any:
                    found = index.search(query)
                    spy.searches += found is not None
                    return found

                def __getattr__(self, name: str) -> Any:
                    return getattr(index, name)

            return Counted()

        monkeypatch.setattr(index_plan, "opened", counting)


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Spy:
    return Spy(monkeypatch)


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    """Rows as Python values, NaN spelled out so that equal rows compare equal."""
    return [
        {k: "NaN" if isinstance(v, float) and v != v else v for k, v in row.items()}
        for row in table.to_pylist()
    ]


@pytest.mark.parametrize(("column", "kind", "filters"), CASES, ids=lambda c: str(c))
def test_lancelet_index_answers_as_the_data_does(
    path: str, column: str, kind: str, filters: list[str], spy: Spy
) -> None:
    ds = ll.dataset(path)
    ds.create_scalar_index(column, kind)
    source = _table()
    for sql in filters:
        before = spy.searches
        got = ds.to_table(filter=sql)
        assert spy.searches > before, f"{kind} on {column} not used for {sql}"
        assert _rows(got) == _rows(_expected(source, sql)), sql
        # pylance lists the index and uses it, with the same rows
        py = lance.dataset(path)
        assert f"{column}_idx" in [i["name"] for i in py.list_indices()]
        if column != "st.x":
            assert "ScalarIndexQuery" in py.scanner(filter=sql).explain_plan() or kind in (
                "ZONEMAP",
                "BLOOMFILTER",
            )
        assert _rows(py.to_table(filter=sql)) == _rows(got), sql


@pytest.mark.parametrize(("column", "kind", "filters"), CASES, ids=lambda c: str(c))
def test_pylance_index_used_by_lancelet(
    tmp_path: Path, column: str, kind: str, filters: list[str], spy: Spy
) -> None:
    out = str(tmp_path / "py")
    lance.write_dataset(_table(), out, max_rows_per_file=600, data_storage_version=STORAGE_VERSION)
    lance.dataset(out).create_scalar_index(column, kind)
    ds = ll.dataset(out)
    source = _table()
    for sql in filters:
        before = spy.searches
        got = ds.to_table(filter=sql)
        assert spy.searches > before, f"{kind} on {column} not used for {sql}"
        assert _rows(got) == _rows(_expected(source, sql)), sql


def test_deletes_appends_and_compaction_never_change_results(path: str, spy: Spy) -> None:
    ds = ll.dataset(path)
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("k", "BITMAP")
    ds.delete("id % 3 = 0")
    ll.write_dataset(_table(ROWS, ROWS + 700), path, mode="append", max_rows_per_file=600)
    kept = _table().filter(pa.array(np.arange(ROWS) % 3 != 0))
    source = pa.concat_tables([kept, _table(ROWS, ROWS + 700)])

    def check() -> None:
        for sql in ["id = 18", "id = 19", "id = 2100", "k = 3", "k = 3 and id > 1900"]:
            got = ll.dataset(path).to_table(filter=sql)
            assert _rows(got) == _rows(_expected(source, sql)), sql
            assert _rows(lance.dataset(path).to_table(filter=sql)) == _rows(got)

    check()
    ll.dataset(path).optimize.compact_files(target_rows_per_fragment=5000)
    check()
    ll.dataset(path).optimize.optimize_indices()
    after = ll.dataset(path)
    frags = {f.id for f in after._manifest.fragments}
    assert all(set(i["fragment_ids"]) == frags for i in after.list_indices())
    check()


def test_new_fragments_are_scanned_then_optimize_adds_a_delta(path: str, spy: Spy) -> None:
    ds = ll.dataset(path)
    ds.create_scalar_index("id", "BTREE")
    ll.write_dataset(_table(ROWS, ROWS + 100), path, mode="append")
    ds = ll.dataset(path)
    assert _rows(ds.to_table(filter="id = 2050")) == [_table(2050, 2051).to_pylist()[0]]
    ds.optimize.optimize_indices(num_indices_to_merge=0)
    segments = [i for i in ds.list_indices() if i["name"] == "id_idx"]
    assert len(segments) == 2
    assert set(segments[1]["fragment_ids"]) == {max(f.id for f in ds._manifest.fragments)}
    py = lance.dataset(path)
    assert len(py.describe_indices()[0].segments) == 2
    for sql, want in [("id = 2050", 2050), ("id = 17", 17)]:
        assert ds.to_table(filter=sql)["id"].to_pylist() == [want]
        assert py.to_table(filter=sql)["id"].to_pylist() == [want]
    stats = ds.stats.index_stats("id_idx")
    assert stats["num_indexed_rows_per_delta"] == [ROWS, 100]
    assert stats["num_unindexed_rows"] == 0
    version = ds.version
    ds.optimize.optimize_indices()  # nothing new to index: as pylance, no commit
    assert ds.version == version
    assert len([i for i in ds.list_indices() if i["name"] == "id_idx"]) == 2
    ds.optimize.optimize_indices(num_indices_to_merge=2)
    assert len([i for i in ds.list_indices() if i["name"] == "id_idx"]) == 1


def test_limit_offset_and_row_columns_match_a_scan(path: str) -> None:
    ds = ll.dataset(path)
    ds.create_scalar_index("k", "BITMAP")
    ds.delete("id < 100")
    for kwargs in [dict(limit=7), dict(limit=5, offset=30), dict(offset=35)]:
        args: dict[str, Any] = dict(filter="k = 3", with_row_id=True, with_row_address=True)
        got = ds.to_table(**args, **kwargs)
        want = ds.to_table(**args, **kwargs, use_scalar_index=False)
        assert _rows(got) == _rows(want), kwargs
        assert got.schema == want.schema
        assert _rows(got) == _rows(lance.dataset(path).to_table(**args, **kwargs)), kwargs


def test_use_scalar_index_false_opens_no_index(path: str, spy: Spy) -> None:
    ds = ll.dataset(path)
    ds.create_scalar_index("id", "BTREE")
    assert ds.to_table(filter="id = 3", use_scalar_index=False)["id"].to_pylist() == [3]
    assert spy.searches == 0
    assert ds.to_table(filter="id = 3")["id"].to_pylist() == [3]
    assert spy.searches == 1


@pytest.mark.parametrize("builder", ["lancelet", "pylance"])
@pytest.mark.parametrize(("column", "kind"), [("id", "BTREE"), ("k", "BITMAP"), ("id", "ZONEMAP")])
def test_stable_row_ids(tmp_path: Path, builder: str, column: str, kind: str, spy: Spy) -> None:
    """Indices keyed by row id (pylance's BITMAP) and by address (its BTREE) alike,
    after rows moved: compaction before the index, an update after it."""
    out = str(tmp_path / "stable")
    ll.write_dataset(_table(), out, max_rows_per_file=600, enable_stable_row_ids=True)
    ds = ll.dataset(out)
    ds.delete("id < 600")
    ds.optimize.compact_files()
    (ll if builder == "lancelet" else lance).dataset(out).create_scalar_index(column, kind)
    ll.dataset(out).update({"s": "'moved'"}, where="id >= 1500")
    sql = "id in (700, 1500)" if column == "id" else "k = 3"
    args: dict[str, Any] = dict(filter=sql, with_row_id=True, with_row_address=True)
    got = ll.dataset(out).to_table(**args)
    assert spy.searches > 0
    want = ll.dataset(out).to_table(**args, use_scalar_index=False)
    assert _rows(got) == _rows(want)
    assert _rows(lance.dataset(out).to_table(**args)) == _rows(want)
    source = _table(600, ROWS)
    assert got["_rowid"].to_pylist() == source.filter(EXPRESSIONS[sql])["id"].to_pylist()


def test_default_names_follow_pylance(path: str) -> None:
    ds = ll.dataset(path)
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("id", "BTREE")  # same kind: replaced
    ds.create_scalar_index("id", "BITMAP")  # another kind: a new name
    ds.create_scalar_index("ID", "zonemap", name="z")
    assert [(i["name"], i["type"]) for i in ds.list_indices()] == [
        ("id_idx", "BTree"),
        ("id_idx_2", "Bitmap"),
        ("z", "ZoneMap"),
    ]
    assert ds.version == 5


def _unchanged(path: str, version: int) -> None:
    ds = ll.dataset(path)
    assert ds.version == version
    indices_dir = os.path.join(path, "_indices")
    listed = {str(i["uuid"]) for i in ds.list_indices()}
    on_disk = set(list_names(indices_dir))
    assert on_disk == listed


@pytest.mark.parametrize(
    ("args", "kwargs", "error"),
    [
        (("id", "HASH"), {}, ArgumentError),
        (("id", "INVERTED"), {}, IndexTypeError),  # TypeError in pylance
        (("s", "INVERTED"), {"block_size": 256}, ArgumentError),
        (("s", "INVERTED"), {"tokenizer": "x"}, UnsupportedOptionError),
        (("nope", "BTREE"), {}, SchemaError),
        (("st", "BTREE"), {}, UnsupportedTypeError),
        (("tags", "BTREE"), {}, UnsupportedTypeError),
        (("id", "LABEL_LIST"), {}, UnsupportedTypeError),
        (("st", "BLOOMFILTER"), {}, UnsupportedTypeError),
        (("id", "BTREE"), {"train": "no"}, TypeError),  # as pylance
        (("id", "BTREE"), {"fragment_ids": [0]}, ArgumentError),  # ValueError in pylance
        (("id", "BTREE"), {"zone_size": 8}, UnsupportedOptionError),
        (("id", "ZONEMAP"), {"rows_per_zone": 0}, ArgumentError),
        (("id", "BLOOMFILTER"), {"probability": 1.5}, ArgumentError),
        (("id", "BTREE"), {"index_uuid": "not-a-uuid"}, ArgumentError),
        (("id", "BTREE", "k_idx"), {"replace": False}, IndexExistsError),
        (("id", "BTREE", "k_idx"), {}, IndexExistsError),  # same name, other field
    ],
)
def test_bad_requests_are_refused_and_change_nothing(
    path: str, args: tuple[str, ...], kwargs: dict[str, Any], error: type[Exception]
) -> None:
    ds = ll.dataset(path)
    ds.create_scalar_index("k", "BITMAP")
    with pytest.raises(error):
        ds.create_scalar_index(*args, **kwargs)
    _unchanged(path, 2)


def test_full_text_index_is_listed_and_not_used_by_filters(path: str, spy: Spy) -> None:
    lance.dataset(path).create_scalar_index("s", "INVERTED")
    ds = ll.dataset(path)
    assert [i["type"] for i in ds.list_indices()] == ["Inverted"]
    assert ds.to_table(filter="s = 'v3'").num_rows == _expected(_table(), "s = 'v3'").num_rows
    assert spy.searches == 0
    ds.optimize.optimize_indices(index_names=["s_idx"])  # nothing to add: no commit
    version = ds.version
    ds.optimize.optimize_indices(index_names=["nope"])  # as pylance: passed over
    assert ds.version == version


def _index_files(path: str) -> Iterator[str]:
    folder = os.path.join(path, "_indices")
    for name in sorted(file_names(folder)):
        yield os.path.join(folder, name)


@pytest.mark.parametrize("damage", ["truncate", "remove"])
def test_damaged_index_is_an_error_not_other_rows(path: str, damage: str) -> None:
    ll.dataset(path).create_scalar_index("id", "BTREE")
    for file in _index_files(path):
        if damage == "remove":
            remove_file(file)
        else:
            data = read_file(file)
            write_file(file, data[: len(data) // 2])
    ds = ll.dataset(path)
    with pytest.raises(CorruptIndexError):
        ds.to_table(filter="id = 5")
    assert ds.to_table(filter="id = 5", use_scalar_index=False)["id"].to_pylist() == [5]


def test_index_statistics_match_pylance(path: str) -> None:
    ds = ll.dataset(path)
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("k", "BITMAP")
    ds.create_scalar_index("f", "ZONEMAP", rows_per_zone=256)
    ds.create_scalar_index("k", "BLOOMFILTER", name="bloom", number_of_items=512)
    py = lance.dataset(path)
    for name in ["id_idx", "k_idx", "f_idx", "bloom"]:
        mine = ds.stats.index_stats(name)
        theirs = py.stats.index_stats(name)
        assert mine == theirs, name
        assert ds.index_statistics(name) == mine


def test_drop_index_stops_its_use(path: str, spy: Spy) -> None:
    ds = ll.dataset(path)
    ds.create_scalar_index("id", "BTREE")
    ds.drop_index("id_idx")
    assert ds.to_table(filter="id = 5")["id"].to_pylist() == [5]
    assert spy.searches == 0
    assert lance.dataset(path).list_indices() == []


TRICKY = [
    "f >= 0.0 AND f >= -0.0",
    "f > -0.0 AND f < 0.5",
    "f >= -0.0 AND f <= 0.0",
    "f >= 1 AND f <= 1",
    "f > 3 AND f < 2",
    "f > 1 AND f > 2 AND f < 9 AND f <= 8.5",
    "f > 8.5 AND f >= 8.5",
    "f >= 0 AND f < 0",
    "f > 8 AND f <= 9 AND f >= 9",
    "(f > 1 AND f < 3) OR f IS NULL",
    "f > 1 AND NOT (f > 2)",
]


@pytest.mark.parametrize("kind", ["BTREE", "BITMAP"])
def test_ranges_joined_by_and_select_what_a_scan_does(tmp_path: Path, kind: str, spy: Spy) -> None:
    """An AND of ranges on one column is searched as one range: zeros of both signs,
    NaN bounds and empty ranges must still select exactly what the scan selects."""
    values = [-0.0, 0.0, 0.5, 1.0, 2.0, 2.5, 3.0, 8.5, 9.0, float("nan"), None, -1.0]
    out = str(tmp_path / "f")
    ll.write_dataset(pa.table({"f": pa.array(values * 20, pa.float64())}), out)
    ds = ll.dataset(out)
    ds.create_scalar_index("f", kind)
    py = lance.dataset(out)
    for sql in TRICKY:
        want = _rows(ds.to_table(filter=sql, use_scalar_index=False, with_row_address=True))
        assert _rows(ds.to_table(filter=sql, with_row_address=True)) == want, sql
        assert _rows(py.to_table(filter=sql, with_row_address=True)) == want, sql
    assert spy.searches > 0


PREFIXES = ["", "a", "ab", "b", "é", "\U0010ffff", "a\U0010ffff", "z", "A"]


@pytest.mark.parametrize("kind", ["BTREE", "BITMAP"])
def test_prefix_like_reads_through_the_index(tmp_path: Path, kind: str, spy: Spy) -> None:
    """LIKE 'p%' is searched as the strings from p up to p's successor; the rows must
    be those that start with p (checked in Python), the last code point included."""
    words = ["", "a", "ab", "abc", "ac", "b", "é", "éa", "\U0010ffff", "\U0010ffffx", "a\U0010ffff"]
    values = [*words, "a\U0010ffffb", "A", "ze", None] * 5
    out = str(tmp_path / "s")
    ll.write_dataset(pa.table({"s": pa.array(values, pa.string())}), out)
    ds = ll.dataset(out)
    ds.create_scalar_index("s", kind)
    for prefix in PREFIXES:
        sql = "s LIKE '" + prefix + "%'"
        want = [v for v in values if v is not None and v.startswith(prefix)]
        before = spy.searches
        assert ds.to_table(filter=sql)["s"].to_pylist() == want, prefix
        assert spy.searches > before
        assert lance.dataset(out).to_table(filter=sql)["s"].to_pylist() == want, prefix


# Row i's value; fragments (so zones) of two rows: (null, NaN), (NaN, -NaN), (1.5, null),
# (-0.0, -NaN), (NaN, null).  pylance records a zone whose values are all NaN with a null
# min and a NaN max.
NAN_ZONES = [None, np.nan, np.nan, NEG_NAN, 1.5, None, -0.0, NEG_NAN, np.nan, None]
NAN_ZONE_QUERIES = {
    "f > 0": [1, 2, 4, 8],  # NaN is above every number, -NaN below
    "f < 0": [3, 7],
    "f = CAST('NaN' AS DOUBLE)": [1, 2, 8],
    "f >= CAST('NaN' AS DOUBLE)": [1, 2, 8],
    "f is null": [0, 5, 9],
    "f = 0": [6],
    "f between -1 and 2": [4, 6],
    "f in (1.5, 0.0)": [4, 6],
}


@pytest.mark.parametrize("builder", ["lancelet", "pylance"])
def test_zone_map_zones_holding_only_nans(tmp_path: Path, builder: str, spy: Spy) -> None:
    out = str(tmp_path / "nans")
    table = pa.table({"i": pa.array(range(len(NAN_ZONES))), "f": pa.array(NAN_ZONES, pa.float64())})
    lance.write_dataset(table, out, max_rows_per_file=2, data_storage_version=STORAGE_VERSION)
    (ll if builder == "lancelet" else lance).dataset(out).create_scalar_index("f", "ZONEMAP")
    ds = ll.dataset(out)
    for sql, want in NAN_ZONE_QUERIES.items():
        before = spy.searches
        assert ds.to_table(filter=sql)["i"].to_pylist() == want, sql
        # A NaN literal is left to the scan (IEEE and total order disagree on it).
        assert spy.searches > before or "NaN" in sql, sql
        plain = lance.dataset(out).to_table(filter=sql, use_scalar_index=False)
        assert plain["i"].to_pylist() == want, sql
