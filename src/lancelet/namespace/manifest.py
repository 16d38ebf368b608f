"""The ``__manifest`` table: the catalog a directory namespace keeps at its root.

pylance's DirectoryNamespace records every nested namespace and every table in a
Lance table named ``__manifest`` under the root, one row per object: its id (the
path of names joined by ``$``), its type (``namespace`` or ``table``), a table's
location relative to the root, and a namespace's properties as JSON.  The table is
created by the first object recorded; rows are added insert-if-absent on
``object_id`` and removed by delete, so two writers cannot record one id twice.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from lancelet import io
from lancelet.dataset import engine
from lancelet.dataset.dataset import LanceDataset
from lancelet.errors import DatasetAlreadyExistsError

MANIFEST_NAME = "__manifest"
DELIMITER = "$"
NAMESPACE = "namespace"
TABLE = "table"

# The schema pylance 14 gives the table; the key metadata marks object_id as the
# (unenforced) primary key.
SCHEMA = pa.schema(
    [
        pa.field(
            "object_id",
            pa.string(),
            nullable=False,
            metadata={"lance-schema:unenforced-primary-key:position": "0"},
        ),
        pa.field("object_type", pa.string(), nullable=False),
        pa.field("location", pa.string()),
        pa.field("metadata", pa.string()),
        pa.field("base_objects", pa.list_(pa.field("object_id", pa.string()))),
    ]
)


@dataclass(frozen=True)
class Entry:
    """One recorded object."""

    object_id: str
    object_type: str
    location: str | None = None
    metadata: str | None = None

    @property
    def properties(self) -> dict[str, str]:
        return dict(json.loads(self.metadata)) if self.metadata else {}


def namespace_entry(object_id: str, properties: Mapping[str, str] | None) -> Entry:
    metadata = json.dumps(dict(properties), separators=(",", ":")) if properties else None
    return Entry(object_id, NAMESPACE, None, metadata)


class ManifestTable:
    """The ``__manifest`` table of the namespace rooted at ``root``."""

    def __init__(self, root: str, file_io: io.FileIO) -> None:
        self.uri = f"{root}/{MANIFEST_NAME}"
        self._io = file_io

    def _open(self) -> LanceDataset | None:
        if not self._io.is_dir(self.uri):
            return None
        return engine.open_with_storage(self.uri, self._io)

    def _rows(self) -> pa.Table:
        found = self._open()
        if found is None:
            return SCHEMA.empty_table()
        return found.to_table(columns=["object_id", "object_type", "location", "metadata"])

    def get(self, object_id: str) -> Entry | None:
        rows = self._rows()
        match = rows.filter(pc.equal(rows["object_id"], object_id))
        return _entries(match)[0] if match.num_rows else None

    def children(self, parent: str, object_type: str | None = None) -> list[Entry]:
        """The objects directly inside the namespace ``parent`` ("" is the root)."""
        rows = self._rows()
        ids = rows["object_id"]
        if parent:
            prefix = parent + DELIMITER
            inside = pc.starts_with(ids, prefix)
            rest = pc.utf8_slice_codeunits(ids, len(prefix))
        else:
            inside = pa.scalar(True)
            rest = ids
        direct = pc.and_(inside, pc.invert(pc.match_substring(rest, DELIMITER)))
        if object_type is not None:
            direct = pc.and_(direct, pc.equal(rows["object_type"], object_type))
        return _entries(rows.filter(direct))

    def count_below(self, parent: str) -> int:
        """How many objects lie anywhere inside the namespace ``parent``."""
        rows = self._rows()
        return int(pc.sum(pc.starts_with(rows["object_id"], parent + DELIMITER)).as_py() or 0)

    def insert(self, entry: Entry) -> bool:
        """Record ``entry``; False (and nothing changed) when its id is recorded."""
        row = pa.Table.from_pylist(
            [
                {
                    "object_id": entry.object_id,
                    "object_type": entry.object_type,
                    "location": entry.location,
                    "metadata": entry.metadata,
                    "base_objects": None,
                }
            ],
            schema=SCHEMA,
        )
        found = self._open()
        if found is None:
            try:
                engine.create_with_storage(self.uri, self._io, row)
                return True
            except DatasetAlreadyExistsError:
                # Another writer created the table first: insert into theirs.
                found = engine.open_with_storage(self.uri, self._io)
        merge = found.merge_insert("object_id").when_not_matched_insert_all()
        return merge.execute(row)["num_inserted_rows"] == 1

    def remove(self, object_id: str) -> bool:
        """Forget ``object_id``; False when it was not recorded."""
        found = self._open()
        if found is None:
            return False
        quoted = object_id.replace("'", "''")
        return found.delete(f"object_id = '{quoted}'")["num_deleted_rows"] > 0


def _entries(rows: pa.Table) -> list[Entry]:
    return [
        Entry(r["object_id"], r["object_type"], r["location"], r["metadata"])
        for r in rows.select(["object_id", "object_type", "location", "metadata"]).to_pylist()
    ]
