"""A ``batch_udf``'s checkpoint file: results of batches already computed, kept in a
SQLite file so that an ``add_columns`` that failed part-way can resume.

The file records which computation it belongs to (dataset, version, columns read,
batch size); results of another are dropped rather than reused.
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing

import pyarrow as pa


def _to_bytes(batch: pa.RecordBatch) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    data: bytes = sink.getvalue().to_pybytes()
    return data


def _from_bytes(data: bytes) -> pa.RecordBatch:
    with pa.ipc.open_stream(data) as reader:
        return reader.read_next_batch()


class BatchCheckpoint:
    def __init__(self, path: str | os.PathLike[str], key: str) -> None:
        self.path = os.fspath(path)
        with closing(sqlite3.connect(self.path)) as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS owner (key TEXT)")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS batches "
                "(fragment_id INT, batch_index INT, result BLOB, "
                "PRIMARY KEY (fragment_id, batch_index))"
            )
            owners = [row[0] for row in conn.execute("SELECT key FROM owner")]
            if owners != [key]:
                conn.execute("DELETE FROM batches")
                conn.execute("DELETE FROM owner")
                conn.execute("INSERT INTO owner (key) VALUES (?)", (key,))
            conn.commit()

    def get(self, fragment_id: int, batch_index: int) -> pa.RecordBatch | None:
        with closing(sqlite3.connect(self.path)) as conn:
            row = conn.execute(
                "SELECT result FROM batches WHERE fragment_id = ? AND batch_index = ?",
                (fragment_id, batch_index),
            ).fetchone()
        return None if row is None else _from_bytes(row[0])

    def put(self, fragment_id: int, batch_index: int, batch: pa.RecordBatch) -> None:
        with closing(sqlite3.connect(self.path)) as conn:
            conn.execute(
                "INSERT OR REPLACE INTO batches (fragment_id, batch_index, result) "
                "VALUES (?, ?, ?)",
                (fragment_id, batch_index, _to_bytes(batch)),
            )
            conn.commit()
