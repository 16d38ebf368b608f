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
from lancelet.cli.output import print_json, print_table
from lancelet.cli.values import cell_text, json_value, parse_columns


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
    rows = table.to_pylist()
    if as_json:
        print_json([{name: json_value(value) for name, value in row.items()} for row in rows])
        return
    print_table(
        None,
        table.column_names,
        [[cell_text(value) for value in row.values()] for row in rows],
    )


COMMANDS: list[click.Command] = [head]
