"""``lancelet history PATH``: the versions of a dataset, newest first, with what made
each and the rows it added and removed."""

from __future__ import annotations

from typing import Any

import click

from lancelet.cli.changes import history
from lancelet.cli.options import dataset_path, json_option, open_dataset, storage_options
from lancelet.cli.output import print_json, print_table


@click.command("history")
@dataset_path
@click.option(
    "--limit",
    "-n",
    type=click.IntRange(min=1),
    default=None,
    help="Show only the newest LIMIT versions.",
)
@json_option
@storage_options
def history_command(
    path: str, limit: int | None, as_json: bool, storage_options: dict[str, str] | None
) -> None:
    """The versions of the dataset at PATH, newest first: operation, commit time, rows
    added and removed versus the version before, and tags."""
    entries = history(open_dataset(path, storage_options), limit)
    if as_json:
        print_json(entries)
        return
    columns = ["version", "committed (UTC)", "operation", "rows", "added", "removed", "tags"]
    rows = [table_row(entry) for entry in entries]
    if any(entry["message"] for entry in entries):
        columns.append("message")
        rows = [[*row, entry["message"]] for row, entry in zip(rows, entries, strict=True)]
    print_table(None, columns, rows)


def table_row(entry: dict[str, Any]) -> list[Any]:
    version = str(entry["version"])
    compared = entry["compared_with"]
    if compared is not None and compared != entry["version"] - 1:
        version += f" (vs {compared})"  # the versions between were cleaned up
    committed = entry["timestamp"][:19].replace("T", " ")
    return [
        version,
        committed,
        entry["operation"] or "?",
        entry["rows"],
        f"+{entry['rows_added']}",
        f"-{entry['rows_removed']}",
        ", ".join(entry["tags"]),
    ]


COMMANDS: list[click.Command] = [history_command]
