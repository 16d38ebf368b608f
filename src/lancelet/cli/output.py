"""Output for humans (rich tables on the terminal) and for scripts (``--json``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import click
import pyarrow as pa
from rich.console import Console
from rich.table import Table

from lancelet.cli.values import cell_text, json_value


def console() -> Console:
    """A console on stdout; rich drops colour and styles when stdout is no terminal."""
    return Console(soft_wrap=False)


def print_table(
    title: str | None,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    show_header: bool = True,
) -> None:
    """A table of ``rows`` under ``columns``; values shown with ``str``."""
    table = Table(title=title, title_justify="left", show_header=show_header)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*("" if value is None else str(value) for value in row))
    console().print(table)


def print_json(value: Any) -> None:
    """``value`` as indented JSON on stdout (dates and other objects as strings)."""
    click.echo(json.dumps(value, indent=2, default=str))


def print_rows(table: pa.Table, as_json: bool) -> None:
    """A table's rows: a table for people, or a list of JSON objects with --json."""
    rows = table.to_pylist()
    if as_json:
        print_json([{name: json_value(value) for name, value in row.items()} for row in rows])
        return
    print_table(
        None, table.column_names, [[cell_text(value) for value in row.values()] for row in rows]
    )
