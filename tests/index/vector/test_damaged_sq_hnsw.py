"""Damaged IVF_SQ / IVF_HNSW files are refused with lancelet errors naming the file,
never answered from: each case rewrites one file of a pylance-built index."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from lancelet import io
from lancelet.errors import CorruptIndexError, UnsupportedIndexError
from lancelet.file import LanceFileReader
from lancelet.index import files
from lancelet.index.vector import IvfIndex
from tests.index.vector import _built
from tests.index.vector._built import Built

Meta = dict[str, str]


@pytest.fixture(scope="module")
def hnsw_sq(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return _built.build(tmp_path_factory.mktemp("damaged"), "IVF_HNSW_SQ", "l2", 16, 4)


def _rewritten(
    built: Built,
    tmp_path: Path,
    name: str,
    meta: Callable[[Meta], Meta],
    table: Callable[[pa.Table], pa.Table] = lambda t: t,
) -> io.Place:
    """A copy of the index directory whose file ``name`` has other schema metadata
    or rows (the IVF message stays in its global buffer)."""
    copy = tmp_path / "index"
    shutil.copytree(built.directory.path, copy)
    source = LanceFileReader(str(copy / name), file_io=io.FileIO())
    original = files.metadata(source)
    ivf = source.read_global_buffer(int(original["lance:ivf"]))
    rows = source.read_all().to_table().replace_schema_metadata(None)
    found = source.metadata()
    version = f"{found.major_version}.{found.minor_version}"
    (copy / name).unlink()
    changed = meta({k: v for k, v in original.items() if k != "lance:ivf"})
    place = io.Place(io.FileIO(), str(copy / name))
    files.write_table(place, table(rows), version, changed, {"lance:ivf": ivf})
    return io.Place(io.FileIO(), str(copy))


def _sq_params(change: Callable[[dict[str, object]], None]) -> Callable[[Meta], Meta]:
    def edit(meta: Meta) -> Meta:
        params = json.loads(json.loads(meta["storage_metadata"])[0])
        change(params)
        return {**meta, "storage_metadata": json.dumps([json.dumps(params)])}

    return edit


def test_an_unchanged_rewrite_still_reads(hnsw_sq: Built, tmp_path: Path) -> None:
    directory = _rewritten(hnsw_sq, tmp_path, "auxiliary.idx", lambda m: m)
    query = hnsw_sq.vectors[3]
    ids, _ = IvfIndex.open(directory).search(query, 5, 2, ef=50)
    want, _ = hnsw_sq.open().search(query, 5, 2, ef=50)
    np.testing.assert_array_equal(ids, want)


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        (lambda p: p.pop("bounds"), CorruptIndexError, "SQ bounds"),
        (lambda p: p.update(bounds={"start": 3.0, "end": -3.0}), CorruptIndexError, "SQ bounds"),
        (lambda p: p.update(bounds={"start": "x", "end": 1}), CorruptIndexError, "SQ bounds"),
        (lambda p: p.update(num_bits=4), UnsupportedIndexError, "8-bit"),
        (lambda p: p.update(dim=15), CorruptIndexError, "dimension"),
    ],
)
def test_damaged_sq_parameters(
    hnsw_sq: Built,
    tmp_path: Path,
    change: Callable[[dict[str, object]], None],
    error: type[Exception],
    match: str,
) -> None:
    directory = _rewritten(hnsw_sq, tmp_path, "auxiliary.idx", _sq_params(change))
    with pytest.raises(error, match=match) as caught:
        IvfIndex.open(directory)
    assert "auxiliary.idx" in str(caught.value)


def _graph_entries(change: Callable[[list[str]], object]) -> Callable[[Meta], Meta]:
    def edit(meta: Meta) -> Meta:
        return {**meta, "lance:hnsw": json.dumps(change(json.loads(meta["lance:hnsw"])))}

    return edit


def _untiled(entries: list[str]) -> list[str]:
    first = json.loads(entries[0])
    first["level_offsets"][1] += 1
    return [json.dumps(first), *entries[1:]]


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (_graph_entries(lambda e: e[:-1]), "one graph per partition"),
        (_graph_entries(lambda e: ["{", *e[1:]]), "cannot be read"),
        (_graph_entries(lambda e: [json.dumps({"entry_point": 0}), *e[1:]]), "cannot be read"),
        (_graph_entries(_untiled), "level 0 does not hold"),
        (lambda m: {k: v for k, v in m.items() if k != "lance:hnsw"}, "lance:hnsw"),
    ],
)
def test_damaged_graph_metadata(
    hnsw_sq: Built, tmp_path: Path, edit: Callable[[Meta], Meta], match: str
) -> None:
    directory = _rewritten(hnsw_sq, tmp_path, "index.idx", edit)
    with pytest.raises(CorruptIndexError, match=match) as caught:
        IvfIndex.open(directory)
    assert "index.idx" in str(caught.value)


def _far_neighbour(table: pa.Table) -> pa.Table:
    listed = table.column("__neighbors").combine_chunks()
    values = listed.values.to_numpy().copy()
    values[0] = 1_000_000
    replaced = pa.ListArray.from_arrays(listed.offsets, pa.array(values, pa.uint32()))
    return table.set_column(table.schema.get_field_index("__neighbors"), "__neighbors", replaced)


def _far_node(table: pa.Table) -> pa.Table:
    ids = table.column("__vector_id").to_numpy().copy()
    ids[0] = 1_000_000
    return table.set_column(0, "__vector_id", pa.array(ids, pa.uint32()))


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (_far_neighbour, "links nodes it lacks"),
        (_far_node, "names nodes it lacks"),
        (lambda t: t.drop_columns(["__neighbors"]), "__neighbors"),
    ],
)
def test_damaged_graph_rows(
    hnsw_sq: Built, tmp_path: Path, edit: Callable[[pa.Table], pa.Table], match: str
) -> None:
    directory = _rewritten(hnsw_sq, tmp_path, "index.idx", lambda m: m, edit)
    with pytest.raises(CorruptIndexError, match=match):
        IvfIndex.open(directory)
