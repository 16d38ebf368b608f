"""``columns`` as pylance takes it: names, nested paths, and SQL expressions by name.

Each result is compared with pylance's on the same data; a projection lancelet cannot
compute must raise, never come back as the unchanged column.
"""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.errors import FilterError, SchemaError, UnsupportedOptionError
from tests.versions import STORAGE_VERSION

TABLE = pa.table(
    {
        "b": pa.array([1, 2, 3, 4], pa.int64()),
        "a": pa.array([10, 20, 30, 40], pa.int32()),
        "s": pa.array(
            [{"x": 1, "y": "p"}, {"x": 2, "y": "q"}, {"x": 3, "y": None}, {"x": 4, "y": "r"}],
            pa.struct([("x", pa.int64()), ("y", pa.string())]),
        ),
        "l": pa.array(
            [[{"x": 1}], [{"x": 2}, {"x": 3}], [], None],
            pa.list_(pa.struct([("x", pa.int64())])),
        ),
        "m": pa.array([[1, 2], [3], None, [4, 5, 6]], pa.list_(pa.int64())),
    }
)


@pytest.fixture(scope="module")
def twins(tmp_path_factory: pytest.TempPathFactory) -> tuple[lance.LanceDataset, ll.LanceDataset]:
    root = tmp_path_factory.mktemp("projection")
    lance.write_dataset(TABLE, root / "p", data_storage_version=STORAGE_VERSION)
    ll.write_dataset(TABLE, root / "l", max_rows_per_file=3)  # two fragments
    return lance.dataset(root / "p"), ll.dataset(root / "l")


PROJECTIONS = [
    {"a": "b * 2"},  # a column of the dataset's name, given other values
    {"twice": "b * 2", "b": "b"},
    {"bb": "b", "b": "b + 1"},
    {"sx": "s.x", "sy": "s['y']"},
    {"first": "l[1]['x']", "dotted": "l[1].x", "last": "l[-1]"},
    {"m1": "m[1]", "m2": "m[2]", "m0": "m[0]", "back": "m[-1]", "far": "m[-4]", "big": "m[9]"},
    {"c": "cast(b as string)", "t": "b > 2", "sum": "a + b", "neg": "-a"},
    {"r": "_rowid", "v": "b"},
]


@pytest.mark.parametrize("columns", PROJECTIONS, ids=lambda c: ",".join(c))
def test_sql_projections_match_pylance(
    twins: tuple[lance.LanceDataset, ll.LanceDataset], columns: dict[str, str]
) -> None:
    theirs, ours = twins
    want = theirs.to_table(columns=columns)
    got = ours.to_table(columns=columns)
    if "r" in columns:  # row ids differ between the two layouts: compare the values only
        want, got = want.drop_columns(["r"]), got.drop_columns(["r"])
    assert got.equals(want), f"{got.to_pydict()} != {want.to_pydict()}"
    ours_schema = ours.scanner(columns=columns).projected_schema
    theirs_schema = theirs.scanner(columns=columns).projected_schema
    assert [(f.name, f.type) for f in ours_schema] == [(f.name, f.type) for f in theirs_schema]


def test_the_unchanged_column_never_comes_back(
    twins: tuple[lance.LanceDataset, ll.LanceDataset],
) -> None:
    _, ours = twins
    assert ours.to_table(columns={"b": "b * 2"})["b"].to_pylist() == [2, 4, 6, 8]
    assert ours.to_table(columns={"a": "b * 2"})["a"].to_pylist() == [2, 4, 6, 8]


def test_projection_with_filter_limit_and_row_ids(
    twins: tuple[lance.LanceDataset, ll.LanceDataset],
) -> None:
    theirs, ours = twins
    kwargs = {"columns": {"twice": "b * 2", "y": "s.y"}, "filter": "b >= 2", "limit": 2}
    assert ours.to_table(**kwargs).equals(theirs.to_table(**kwargs))
    got = ours.to_table(columns={"twice": "b * 2"}, filter="a > 15", with_row_id=True)
    assert got.column_names == ["twice", "_rowid"]
    assert got["twice"].to_pylist() == [4, 6, 8]
    batches = list(ours.to_batches(columns={"twice": "b * 2"}, batch_size=3))
    assert pa.Table.from_batches(batches)["twice"].to_pylist() == [2, 4, 6, 8]


def test_nested_paths_in_a_column_list(twins: tuple[lance.LanceDataset, ll.LanceDataset]) -> None:
    theirs, ours = twins
    columns = ["s.x", "b", "s.y"]
    assert ours.to_table(columns=columns).equals(theirs.to_table(columns=columns))


def test_take_with_a_projection(twins: tuple[lance.LanceDataset, ll.LanceDataset]) -> None:
    theirs, ours = twins
    columns = {"twice": "b * 2", "sx": "s.x"}
    assert ours.take([3, 0], columns=columns).equals(theirs.take([3, 0], columns=columns))


@pytest.mark.parametrize(
    ("columns", "error"),
    [
        ({"x": "nope + 1"}, FilterError),
        ({"x": "b +"}, FilterError),
        ({"x": "s['nope']"}, FilterError),
        ({"x": "b[1]"}, FilterError),
        (["s.nope"], SchemaError),
        (["b", "b"], SchemaError),
        (["s.x", "s.x"], SchemaError),
        (["_rowid", "_rowid"], SchemaError),
        (["nope"], SchemaError),
        ({"x": 1}, TypeError),
        ("b", TypeError),
        ([1], TypeError),
    ],
)
def test_bad_projections_are_refused(
    twins: tuple[lance.LanceDataset, ll.LanceDataset], columns: object, error: type[Exception]
) -> None:
    _, ours = twins
    with pytest.raises(error):
        ours.to_table(columns=columns)  # type: ignore[arg-type]


def test_fragment_reads_take_projections_too(tmp_path: Path) -> None:
    ds = ll.write_dataset(TABLE, tmp_path / "d", max_rows_per_file=2)
    fragment = ds.get_fragments()[1]
    assert fragment.to_table(columns={"t": "b * 10"})["t"].to_pylist() == [30, 40]
    assert fragment.to_table(["b"], "b > 3", None, None, True).column_names == ["b", "_rowid"]


NARROW = pa.table(
    {
        "i8": pa.array([1, 100, -100], pa.int8()),
        "i16": pa.array([1, 2, 3], pa.int16()),
        "i32": pa.array([2**31 - 1, 5, -7], pa.int32()),
        "u8": pa.array([1, 200, 3], pa.uint8()),
        "f32": pa.array([1.5, 2.0, -1.0], pa.float32()),
        "s": pa.array([{"a": 1}, {"a": 2}, {"a": 3}], pa.struct([("a", pa.int16())])),
    }
)


@pytest.fixture(scope="module")
def narrow(tmp_path_factory: pytest.TempPathFactory) -> tuple[lance.LanceDataset, ll.LanceDataset]:
    root = tmp_path_factory.mktemp("narrow")
    return (
        lance.write_dataset(NARROW, root / "p", data_storage_version=STORAGE_VERSION),
        ll.write_dataset(NARROW, root / "l"),
    )


@pytest.mark.parametrize(
    "sql",
    [
        "i32 / 2",
        "i32 % 3",
        "i8 + i16",
        "f32 + 0.1",
        "f32 / 4",
        "i8 * -1",
        "-i8",
        "1 + i8",
        "i16 - 1",
        "(i16 + 1) * 2",
        "i16 + 1 + 1",
        "abs(i8) + 1",
        "s.a + 1",
        "2 * i16 * 3",
        "i8 + cast(1 as tinyint)",
    ],
)
def test_computed_values_are_typed_as_pylance_types_them(
    narrow: tuple[lance.LanceDataset, ll.LanceDataset], sql: str
) -> None:
    """A literal beside a column takes the column's type (int8 + 1 is int8, f32 + 0.1 is
    float32); beside a computed value it keeps its own."""
    theirs, ours = narrow
    assert ours.to_table(columns={"v": sql}).equals(theirs.to_table(columns={"v": sql}))


@pytest.mark.parametrize("sql", ["i8 + 100", "i32 + 1", "i32 * 2", "u8 + 100", "u8 - 2"])
def test_overflow_is_an_error_where_pylance_wraps_around(
    narrow: tuple[lance.LanceDataset, ll.LanceDataset], sql: str
) -> None:
    theirs, ours = narrow
    wrapped = theirs.to_table(columns={"v": sql})["v"]  # e.g. int8 100 + 100 = -56
    assert wrapped.type == NARROW.schema.field(sql.split()[0]).type
    with pytest.raises(FilterError, match="overflow"):
        ours.to_table(columns={"v": sql})


@pytest.mark.parametrize("sql", ["i8 + 1000", "i32 + 1.5"])
def test_literals_that_do_not_fit_the_column_are_refused(
    narrow: tuple[lance.LanceDataset, ll.LanceDataset], sql: str
) -> None:
    theirs, ours = narrow
    with pytest.raises(ValueError):
        theirs.to_table(columns={"v": sql})
    with pytest.raises(FilterError, match="does not fit"):
        ours.to_table(columns={"v": sql})


def test_new_columns_keep_pylances_types(tmp_path: Path) -> None:
    theirs = lance.write_dataset(NARROW, tmp_path / "p", data_storage_version=STORAGE_VERSION)
    ours = ll.write_dataset(NARROW, tmp_path / "l")
    for ds in (theirs, ours):
        ds.add_columns({"next": "i16 + 1", "half": "f32 / 2"})
    assert ll.dataset(tmp_path / "l").to_table().equals(lance.dataset(tmp_path / "p").to_table())
    assert lance.dataset(tmp_path / "l").schema == lance.dataset(tmp_path / "p").schema


@pytest.mark.parametrize(
    "kwargs",
    [
        {"columns": []},
        {"columns": {}},
        {"columns": [], "filter": "b > 1"},
        {"columns": ["_rowid", "b"]},
        {"columns": ["_rowaddr", "_rowid"]},
        {"columns": ["b"], "with_row_id": True},
        {"columns": ["_rowid"], "with_row_id": True},
        {"columns": {"_rowid": "b"}},
    ],
    ids=str,
)
def test_row_ids_and_empty_projections_as_pylance_shapes_them(
    tmp_path: Path, kwargs: dict[str, object]
) -> None:
    theirs = lance.write_dataset(TABLE, tmp_path / "p", data_storage_version=STORAGE_VERSION)
    ours = ll.write_dataset(TABLE, tmp_path / "l")  # one fragment each: the same ids
    want, got = theirs.to_table(**kwargs), ours.to_table(**kwargs)
    assert (got.num_rows, got.column_names) == (want.num_rows, want.column_names)
    assert got.equals(want)
    assert sum(b.num_rows for b in ours.to_batches(**kwargs)) == want.num_rows


def test_nested_paths_in_a_take_are_refused(
    twins: tuple[lance.LanceDataset, ll.LanceDataset],
) -> None:
    """pylance gives a take of ["s.y"] the nested shape and a scan the flat one; a dict
    says which is meant."""
    _, ours = twins
    with pytest.raises(UnsupportedOptionError, match="nested"):
        ours.take([1], columns=["s.y"])
    assert ours.take([1], columns={"s.y": "s.y"}).to_pydict() == {"s.y": ["q"]}
