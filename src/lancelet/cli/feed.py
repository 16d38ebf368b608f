"""``lancelet changes PATH --from N``: the change data feed between versions, row by
row (``LanceDataset.changes``)."""

from __future__ import annotations

import click
import pyarrow as pa

from lancelet.cli.options import (
    dataset_path,
    json_option,
    num_rows_option,
    open_dataset,
    storage_options,
)
from lancelet.cli.output import console, print_rows
from lancelet.cli.values import parse_columns


@click.command("changes")
@dataset_path
@click.option(
    "--from",
    "start",
    type=click.IntRange(min=1),
    required=True,
    help="The first version whose changes to show.",
)
@click.option(
    "--to",
    "end",
    type=click.IntRange(min=1),
    default=None,
    help="The last version whose changes to show (default: the latest).",
)
@num_rows_option(20, "change rows at most")
@click.option(
    "--filter",
    "-f",
    "filter_sql",
    default=None,
    help="A SQL filter over the columns and _change_type, e.g. \"_change_type = 'delete'\".",
)
@click.option("--columns", "-c", default=None, help="Columns to show, comma-separated: a,b.")
@json_option
@storage_options
def changes(
    path: str,
    start: int,
    end: int | None,
    num_rows: int,
    filter_sql: str | None,
    columns: str | None,
    as_json: bool,
    storage_options: dict[str, str] | None,
) -> None:
    """The rows inserted, updated (before and after) and deleted by each version from
    --from to --to of the dataset at PATH (created with stable row ids), oldest
    first; with --json, a list of JSON objects."""
    ds = open_dataset(path, storage_options, None)
    reader = ds.changes(start, end, columns=parse_columns(columns), filter=filter_sql)
    table, more = _first_rows(reader, num_rows)
    table = table.drop_columns(["_commit_timestamp"])
    print_rows(table, as_json)
    if more and not as_json:
        console().print("(more change rows follow; raise --num-rows to see them)")


def _first_rows(reader: pa.RecordBatchReader, limit: int) -> tuple[pa.Table, bool]:
    """Up to ``limit`` rows of ``reader``, and whether any were left unread."""
    batches: list[pa.RecordBatch] = []
    taken = 0
    for batch in reader:
        if not batch.num_rows:
            continue
        if taken >= limit:
            return pa.Table.from_batches(batches, reader.schema), True
        part = batch.slice(0, limit - taken)
        batches.append(part)
        taken += part.num_rows
        if part.num_rows < batch.num_rows:
            return pa.Table.from_batches(batches, reader.schema), True
    return pa.Table.from_batches(batches, reader.schema), False


COMMANDS: list[click.Command] = [changes]
