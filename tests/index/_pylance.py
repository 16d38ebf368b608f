"""Datasets with ZONEMAP, LABEL_LIST and BLOOMFILTER indices built by pylance, and the
independent answers the tests hold lancelet's readers to."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lance.dataset import Index
from lance.indices import IndexConfig

ROWS = 3000
PER_FILE = 1100  # three fragments
ZONE = 256  # small zones: many per fragment


def table(seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    n = np.arange(ROWS)
    ints = rng.integers(-500, 500, ROWS)
    floats = rng.normal(0, 100, ROWS)
    floats[n % 37 == 0] = np.nan
    floats[n % 41 == 0] = -0.0
    floats[n % 43 == 0] = 0.0
    labels = np.array(["red", "green", "blue", "cyan", "lime"])
    tags: list[list[str | None] | None] = []
    for i in range(ROWS):
        if i % 17 == 0:
            tags.append(None)
        elif i % 13 == 0:
            tags.append([])
        else:
            picked = labels[rng.integers(0, 5, int(rng.integers(1, 4)))].tolist()
            tags.append([*picked, None] if i % 19 == 0 else picked)
    return pa.table(
        {
            "i": pa.array(ints, mask=n % 11 == 0),
            "f": pa.array(floats, mask=n % 29 == 0),
            "s": pa.array([f"k{v % 97}" for v in ints], mask=n % 23 == 0),
            "n32": pa.array((ints % 50).astype(np.int32)),
            "tags": pa.array(tags, pa.list_(pa.string())),
        }
    )


INDICES: dict[str, tuple[Any, dict[str, Any]]] = {
    "i": ("ZONEMAP", {"rows_per_zone": ZONE}),
    "f": ("ZONEMAP", {"rows_per_zone": ZONE}),
    "s": ("BLOOMFILTER", {"number_of_items": ZONE, "probability": 0.01}),
    "n32": ("BLOOMFILTER", {"number_of_items": ZONE, "probability": 0.01}),
    "tags": ("LABEL_LIST", {}),
}


@dataclass(frozen=True)
class Built:
    path: str
    version: str
    live: pa.Table  # every live row with its _rowaddr

    def index_dir(self, column: str) -> str:
        ds = lance.dataset(self.path)
        uuid = next(i["uuid"] for i in ds.list_indices() if i["fields"] == [column])
        return os.path.join(self.path, "_indices", uuid)

    def batches(self, column: str, chunk: int = 333) -> Iterator[tuple[pa.Array, np.ndarray]]:
        for batch in self.live.select([column, "_rowaddr"]).to_batches(max_chunksize=chunk):
            yield batch.column(0), batch.column(1).to_numpy()

    def matching(self, mask: pa.Array | pa.ChunkedArray) -> np.ndarray:
        keep = pc.fill_null(mask, False)
        return np.sort(self.live.filter(keep)["_rowaddr"].to_numpy())


def build(root: Path, version: str) -> Built:
    path = str(root / f"ds{version}")
    shutil.rmtree(path, ignore_errors=True)
    ds = lance.write_dataset(
        table(),
        path,
        max_rows_per_file=PER_FILE,
        data_storage_version=version,  # type: ignore[arg-type]
    )
    ds.delete("(i > 400) OR (n32 = 7)")
    for column, (kind, params) in INDICES.items():
        if params:
            config = IndexConfig(index_type=kind.lower(), parameters=params)
            ds.create_scalar_index(column, config)
        else:
            ds.create_scalar_index(column, kind)
    ds = lance.dataset(path)
    live = ds.to_table(with_row_address=True)
    return Built(path, version, live)


def swap_index(built: Built, column: str, write: Callable[[str], Any], root: Path) -> str:
    """A copy of the dataset whose index on ``column`` is replaced by the files
    ``write(directory)`` produces (it returns the manifest details), committed through
    pylance so it records the new files' sizes itself."""
    copy = str(root / "swapped")
    shutil.copytree(built.path, copy)
    ds = lance.dataset(copy)
    old = next(i for i in ds.list_indices() if i["fields"] == [column])
    field_id = ds.schema.get_field_index(column)
    new = str(uuid.uuid4())
    details = write(os.path.join(copy, "_indices", new))
    ds.drop_index(old["name"])
    ds = lance.dataset(copy)
    index = Index(
        uuid=new,
        name=old["name"],
        fields=[field_id],
        dataset_version=ds.version,
        fragment_ids={f.fragment_id for f in ds.get_fragments()},  # type: ignore[arg-type]
        index_version=details.index_version,
        index_details=(details.type_url, details.value),
    )
    lance.LanceDataset.commit(
        copy, lance.LanceOperation.CreateIndex([index], []), read_version=ds.version
    )
    return copy


def same_rows(path: str, sql: str) -> None:
    """pylance answers ``sql`` through the index, with the rows a full scan finds."""
    ds = lance.dataset(path)
    assert "ScalarIndexQuery" in ds.scanner(filter=sql).explain_plan(), sql
    with_index = ds.to_table(filter=sql, with_row_address=True)["_rowaddr"].to_numpy()
    without = ds.to_table(filter=sql, with_row_address=True, use_scalar_index=False)
    assert np.array_equal(np.sort(with_index), np.sort(without["_rowaddr"].to_numpy())), sql
