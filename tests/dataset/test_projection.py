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
from lancelet.errors import FilterError, SchemaError

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
    lance.write_dataset(TABLE, root / "p", data_storage_version="2.0")
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
    assert ours.take([1], columns=["s.y"]).to_pydict() == {"s.y": ["q"]}


@pytest.mark.parametrize(
    ("columns", "error"),
    [
        ({"x": "nope + 1"}, FilterError),
        ({"x": "b +"}, FilterError),
        ({"x": "s['nope']"}, FilterError),
        ({"x": "b[1]"}, FilterError),
        (["s.nope"], SchemaError),
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
