"""Vector indices pylance builds, for the reader's tests to open."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa

from lancelet import io
from lancelet.index.vector import IvfIndex

ROWS = 1500
ROWS_PER_FILE = 700  # three fragments: row ids carry fragment numbers


@dataclass(frozen=True)
class Built:
    uri: str
    vectors: np.ndarray  # row i of the table, in write order
    index_type: str
    metric: str
    partitions: int
    directory: io.Place

    def dataset(self) -> Any:
        return lance.dataset(self.uri)

    def open(self) -> IvfIndex:
        return IvfIndex.open(self.directory)

    def lookup(self, row_ids: np.ndarray) -> np.ndarray:
        """The original vectors of row addresses (fragment << 32 | offset)."""
        fragments = (row_ids >> np.uint64(32)).astype(np.int64)
        offsets = (row_ids & np.uint64(0xFFFFFFFF)).astype(np.int64)
        return np.asarray(self.vectors[fragments * ROWS_PER_FILE + offsets], dtype=np.float32)


def build(
    root: Path, index_type: str, metric: str, dimension: int, partitions: int, **params: Any
) -> Built:
    rng = np.random.default_rng(dimension * 31 + partitions)
    # A few clusters so that partitions differ, plus noise.
    centres = rng.normal(0, 3, (8, dimension))
    vectors = (centres[rng.integers(0, 8, ROWS)] + rng.normal(0, 1, (ROWS, dimension))).astype(
        np.float32
    )
    table = pa.table(
        {
            "id": np.arange(ROWS),
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), dimension),
        }
    )
    uri = str(root / f"{index_type}-{metric}-{dimension}-{partitions}")
    dataset = lance.write_dataset(table, uri, max_rows_per_file=ROWS_PER_FILE)
    dataset.create_index(
        "vec", index_type=index_type, metric=metric, num_partitions=partitions, **params
    )
    (index_dir,) = (Path(uri) / "_indices").iterdir()
    directory = io.Place(io.FileIO(), str(index_dir))
    return Built(uri, vectors, index_type, metric, partitions, directory)


def pylance_nearest(
    built: Built, query: np.ndarray, **nearest: Any
) -> tuple[np.ndarray, np.ndarray]:
    table = built.dataset().to_table(
        columns=["id"], nearest={"column": "vec", "q": query, **nearest}, with_row_id=True
    )
    return table["_rowid"].to_numpy(), table["_distance"].to_numpy()


def tie_at_cut(built: Built, query: np.ndarray, keep: int, nprobes: int, ef: int | None) -> bool:
    """Whether pylance's own index distances, asked for ``keep + 1`` rows, hold
    equal values: the ties behind lancelet's refusals (equal distances at a cut)."""
    if "HNSW" in built.index_type:
        ef = max(keep + keep // 2 if ef is None else ef, keep + 1)
    nearest: dict[str, Any] = {"k": keep + 1, "nprobes": nprobes}
    if ef is not None:
        nearest["ef"] = ef
    _, distances = pylance_nearest(built, query, **nearest)
    return bool(np.any(distances[1:] == distances[:-1]))
