"""``lancelet info PATH``: one version of a dataset at a glance (schema, storage,
indices, features, tags)."""

from __future__ import annotations

from typing import Any

import click

from lancelet.cli.options import (
    dataset_path,
    json_option,
    open_dataset,
    storage_options,
    version_option,
)
from lancelet.cli.output import print_json, print_table
from lancelet.cli.summary import describe
from lancelet.cli.values import byte_text


@click.command("info")
@dataset_path
@version_option
@json_option
@storage_options
def info(
    path: str, version: str | None, as_json: bool, storage_options: dict[str, str] | None
) -> None:
    """Schema, version, storage, indices, features and tags of the dataset at PATH."""
    summary = describe(open_dataset(path, storage_options, version))
    if as_json:
        print_json(summary)
        return
    print_overview(summary)
    print_table(
        "Schema",
        ["field", "type", "nullable"],
        [[f["name"], f["type"], "yes" if f["nullable"] else "no"] for f in summary["schema"]],
    )
    print_indices(summary["indices"])


def print_overview(summary: dict[str, Any]) -> None:
    latest = summary["latest_version"]
    version = f"{summary['version']}" + (
        "" if summary["version"] == latest else f" (latest {latest})"
    )
    unknown = summary["data_files_of_unknown_size"]
    size = byte_text(summary["data_bytes"])
    if summary["data_bytes"] is not None:
        size += f" ({summary['data_bytes']} bytes)"
    else:
        size += f" ({unknown} file(s) of unrecorded size)"
    on = [name for name, used in summary["features"].items() if used]
    tags = [f"{name} -> {v}" for name, v in summary["tags"].items()]
    rows: list[list[Any]] = [
        ["uri", summary["uri"]],
        ["version", version],
        ["committed", summary["timestamp"]],
        ["data storage version", summary["data_storage_version"]],
        ["fragments", summary["fragments"]],
        ["rows", summary["rows"]],
        ["deleted rows", summary["deleted_rows"]],
        ["data files", summary["data_files"]],
        ["data size", size],
        ["deletion files", summary["deletion_files"]],
        ["features", ", ".join(on) or "none"],
        ["tags", ", ".join(tags) or "none"],
    ]
    rows += [[f"config {key}", value] for key, value in summary["config"].items()]
    print_table("Dataset", ["property", "value"], rows, show_header=False)


def print_indices(indices: list[dict[str, Any]]) -> None:
    if not indices:
        click.echo("No indices.")
        return
    print_table(
        "Indices",
        ["name", "type", "columns", "segments", "fragments covered", "rows not indexed"],
        [
            [
                index["name"],
                index["type"],
                ", ".join(index["columns"]),
                index["segments"],
                _coverage(index),
                "-" if index["rows_not_indexed"] is None else index["rows_not_indexed"],
            ]
            for index in indices
        ],
    )


def _coverage(index: dict[str, Any]) -> str:
    if index["fragments_covered"] is None:
        return "-"
    return f"{index['fragments_covered']} / {index['fragments_total']}"


COMMANDS: list[click.Command] = [info]
