"""Writing the same table with lancelet and with pylance, and comparing what comes back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lance.file as ref
import pyarrow as pa

from lancelet.file import LanceFileWriter

BATCH_ROWS = 700


def write_lancelet(path: Path, table: pa.Table, **kwargs: Any) -> Path:
    """A lancelet-written file of ``table`` (format 2.0 unless ``version`` says)."""
    kwargs.setdefault("version", "2.0")
    with LanceFileWriter(path, table.schema, **kwargs) as writer:
        for batch in table.to_batches(max_chunksize=BATCH_ROWS):
            writer.write_batch(batch)
    return path


def write_reference(path: Path, table: pa.Table, **kwargs: Any) -> Path:
    with ref.LanceFileWriter(str(path), table.schema, version="2.0", **kwargs) as writer:
        # pylance cuts at most one page per batch, so feed it several; and it panics on
        # some sliced nested structs, so each batch is copied to offset zero first.
        for batch in table.to_batches(max_chunksize=BATCH_ROWS):
            columns = [pa.concat_arrays([column]) for column in batch.columns]
            writer.write_batch(pa.RecordBatch.from_arrays(columns, schema=batch.schema))
    return path


def write_both_whole(folder: Path, table: pa.Table, version: str) -> tuple[Path, Path]:
    """lancelet's and pylance's files of ``table`` in format ``version``, each written
    in one batch (so that each library chooses the pages' encodings for all of it)."""
    ours, theirs = folder / "ours.lance", folder / "theirs.lance"
    with LanceFileWriter(ours, table.schema, version=version) as writer:
        writer.write_batch(table)
    with ref.LanceFileWriter(str(theirs), table.schema, version=version) as writer:
        writer.write_batch(table)
    return ours, theirs


def assert_same(expected: pa.Table, actual: pa.Table) -> None:
    """Equal schemas (with metadata), types and values, column by column."""
    assert actual.schema.equals(expected.schema, check_metadata=True), (
        f"schema differs:\n{actual.schema}\nvs\n{expected.schema}"
    )
    for name in expected.column_names:
        want, got = expected[name], actual[name]
        assert got.type == want.type, name
        if pa.types.is_dictionary(want.type):
            # Only the values count: the reference adds a null item for null rows.
            want, got = want.cast(want.type.value_type), got.cast(got.type.value_type)
        want, got = want.combine_chunks(), got.combine_chunks()
        assert got.equals(want), f"column {name}: {got.diff(want)}"
