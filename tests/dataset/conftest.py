"""A dataset with a long pylance-written history, built once and copied per test."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import lance
import pyarrow as pa
import pytest

from tests.storage import copy_tree
from tests.versions import STORAGE_VERSION


@dataclass(frozen=True)
class History:
    uri: Path
    # Every version's full table, read by pylance before anyone cleaned up.
    tables: dict[int, pa.Table]

    def copy(self, dest: Path) -> Path:
        copy_tree(self.uri, dest)  # locally copy2 keeps mtimes, so copies age alike
        return dest


def _build(uri: Path) -> None:
    table = pa.table({"x": list(range(100)), "s": [str(i) for i in range(100)]})
    lance.write_dataset(table, uri, data_storage_version=STORAGE_VERSION, max_rows_per_file=50)
    lance.write_dataset(table, uri, mode="append")  # v2
    lance.dataset(uri).delete("x < 10")  # v3: deletion files
    lance.dataset(uri).delete("x < 20")  # v4: replacement deletion files
    lance.dataset(uri).create_scalar_index("x", "BTREE")  # v5: an index directory
    lance.dataset(uri).delete("x >= 90")  # v6
    lance.dataset(uri).create_scalar_index("x", "BTREE", replace=True)  # v7: a second one
    lance.write_dataset(table.slice(0, 30), uri, mode="overwrite")  # v8: all new data
    lance.dataset(uri, version=2).restore()  # v9: the files of v2 are live again
    lance.write_dataset(table.slice(0, 5), uri, mode="append")  # v10


@pytest.fixture(scope="session")
def history(tmp_path_factory: pytest.TempPathFactory) -> History:
    uri = tmp_path_factory.mktemp("history") / "ds"
    _build(uri)
    versions = [v["version"] for v in lance.dataset(uri).versions()]
    tables = {v: lance.dataset(uri, version=v).to_table() for v in versions}
    return History(uri, tables)
