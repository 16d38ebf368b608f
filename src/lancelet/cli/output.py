"""Output for humans (rich tables on the terminal) and for scripts (``--json``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import click
from rich.console import Console
from rich.table import Table


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
