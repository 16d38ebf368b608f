"""Indices lancelet writes, read by pylance: lancelet's files replace the ones pylance
built for the same rows, and pylance's indexed filters still find what an unindexed
scan finds.  The files also hold the same tables as pylance's."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from lancelet.file import LanceFileReader
from lancelet.index import write_bitmap, write_btree
from tests.index.fixtures import COLUMNS, Indexed, build
from tests.index.manifest_sizes import record_index_file_sizes
from tests.storage import local

FILTERS = {
    "i": ["i = 17", "i >= 100 AND i < 120", "i IN (1, 2, 200)", "i IS NULL", "i < -40"],
    "f": ["f = 0.0", "f > 30.0", "f IS NULL", "f < 0.0", "f IN (1.5, 2.0)"],
    "s": ["s = 'k017'", "s >= 'k100' AND s < 'k120'", "s IS NULL", "s IN ('é7', 'k001')"],
    "d": ["d = date '2000-01-05'", "d > date '2000-03-01'", "d IS NULL"],
    "ts": [
        "ts = timestamp '1970-01-01 00:00:05'",
        "ts < timestamp '1970-01-01 00:00:10'",
        "ts IS NULL",
    ],
    "b": ["b = true", "b = false", "b IS NULL"],
    "dec": ["dec = CAST(2.5 AS DECIMAL(10, 2))", "dec > CAST(5 AS DECIMAL(10, 2))", "dec IS NULL"],
}


@pytest.fixture(
    scope="module",
    params=[("BTREE", "2.0"), ("BTREE", "2.2"), ("BITMAP", "2.0"), ("BITMAP", "2.2")],
    ids=lambda p: f"{p[0]}-{p[1]}",
)
def rewritten(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Indexed, dict[str, Path]]:
    """A pylance dataset whose index files are replaced by lancelet's; also returns
    copies of pylance's own files."""
    kind, version = request.param
    root = tmp_path_factory.mktemp("interop")
    indexed = build(root, kind, version)
    originals: dict[str, Path] = {}
    for column in COLUMNS:
        target = indexed.index_dir(column)
        originals[column] = root / f"pylance-{column}"
        shutil.copytree(target, originals[column])
        values = indexed.indexed.column(column).combine_chunks()
        addresses = indexed.indexed.column("_rowaddr").to_numpy()
        mine = root / f"lancelet-{column}"
        batches = [
            (values.slice(i, 2500), addresses[i : i + 2500]) for i in range(0, len(values), 2500)
        ]
        if kind == "BTREE":
            write_btree(batches, local(mine), values.type, version, run_rows=5000)
        else:
            write_bitmap(batches, local(mine), values.type, version)
        assert sorted(os.listdir(mine)) == sorted(os.listdir(target))
        for name in os.listdir(mine):
            shutil.copyfile(mine / name, target / name)
    record_index_file_sizes(indexed.path)
    return indexed, originals


@pytest.mark.parametrize("column", COLUMNS)
def test_pylance_filters_with_lancelet_indices(
    rewritten: tuple[Indexed, dict[str, Path]], column: str
) -> None:
    indexed, _ = rewritten
    ds = indexed.dataset()
    for sql in FILTERS[column]:
        assert "ScalarIndexQuery" in ds.scanner(filter=sql).explain_plan(), sql
        with_index = ds.to_table(columns=[], filter=sql, with_row_address=True)["_rowaddr"]
        without = ds.to_table(
            columns=[], filter=sql, with_row_address=True, use_scalar_index=False
        )["_rowaddr"]
        assert np.array_equal(np.sort(with_index.to_numpy()), np.sort(without.to_numpy())), sql
        assert len(without) > 0 or sql.endswith("< -40"), sql


def _read(path: Path) -> LanceFileReader:
    return LanceFileReader(str(path))


def _as_bits(t: pa.Table) -> pa.Table:
    return pa.table({name: _bits(t.column(name)) for name in t.column_names})


def _by_id(t: pa.Table) -> pa.Table:
    return pa.table({"id": t.column("ids"), "v": _bits(t.column("values"))}).sort_by("id")


def _by_id(t: pa.Table) -> pa.Table:
    return pa.table({"id": t.column("ids"), "v": _bits(t.column("values"))}).sort_by("id")


def _bits(array: pa.ChunkedArray) -> pa.Array:
    # Floats compared by their bits: NaN equals NaN, -0.0 differs from 0.0.
    array = array.combine_chunks()
    if pa.types.is_floating(array.type):
        return array.view(pa.int64()) if array.type == pa.float64() else array.view(pa.int32())
    return array


@pytest.mark.parametrize("column", COLUMNS)
def test_files_hold_pylances_tables(
    rewritten: tuple[Indexed, dict[str, Path]], column: str
) -> None:
    indexed, originals = rewritten
    theirs_dir, mine_dir = originals[column], indexed.index_dir(column)
    for name in os.listdir(theirs_dir):
        theirs, mine = _read(theirs_dir / name), _read(mine_dir / name)
        assert mine.schema.equals(theirs.schema, check_metadata=True), name
        assert mine.metadata().major_version == theirs.metadata().major_version
        assert mine.metadata().minor_version == theirs.metadata().minor_version
        a, b = mine.read_all().to_table(), theirs.read_all().to_table()
        if name != "page_data.lance":
            assert _as_bits(a).equals(_as_bits(b)), name
            continue
        # Rows of equal value are in pylance's arbitrary order (even across a page
        # boundary), in address order in lancelet's: the same values in the same
        # places, and each id with the same value.
        assert _bits(a.column("values")).equals(_bits(b.column("values")))
        assert _by_id(a).equals(_by_id(b))
