"""``lancelet head PATH``: the first rows of a dataset, optionally filtered and
projected."""

from __future__ import annotations

import click

from lancelet.cli.options import (
    dataset_path,
    json_option,
    num_rows_option,
    open_dataset,
    storage_options,
    version_option,
)
from lancelet.cli.output import print_rows
from lancelet.cli.values import parse_columns


@click.command("head")
@dataset_path
@num_rows_option(10, "rows")
@click.option("--filter", "-f", "filter_sql", default=None, help="A SQL filter, e.g. 'x > 3'.")
@click.option("--columns", "-c", default=None, help="Columns to show, comma-separated: a,b.")
@version_option
@json_option
@storage_options
def head(
    path: str,
    num_rows: int,
    filter_sql: str | None,
    columns: str | None,
    version: str | None,
    as_json: bool,
    storage_options: dict[str, str] | None,
) -> None:
    """The first rows of the dataset at PATH (in its order), as a table or, with
    --json, as a list of JSON objects."""
    ds = open_dataset(path, storage_options, version)
    table = ds.to_table(columns=parse_columns(columns), filter=filter_sql, limit=num_rows)
    print_rows(table, as_json)


COMMANDS: list[click.Command] = [head]
