"""``lancelet compact``, ``cleanup`` and ``restore`` (and the ``tag`` group, in
:mod:`lancelet.cli.tag`): thin calls of the dataset's maintenance methods that say
what they did."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

import click

from lancelet.cli.options import dataset_path, json_option, open_dataset, storage_options
from lancelet.cli.output import print_json, print_table
from lancelet.cli.tag import tag
from lancelet.cli.values import BadArgument, byte_text, parse_duration, version_reference
from lancelet.errors import TagError


def _report(title: str, facts: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print_json(facts)
        return
    rows = [
        [name.replace("_", " "), "-" if value is None else value] for name, value in facts.items()
    ]
    print_table(title, ["", ""], rows, show_header=False)


@click.command("compact")
@dataset_path
@click.option(
    "--target-rows-per-fragment",
    type=click.IntRange(min=1),
    help="Rows a compacted fragment aims at (default 1048576).",
)
@click.option("--max-rows-per-group", type=click.IntRange(min=1), help="Rows per row group.")
@click.option("--max-bytes-per-file", type=click.IntRange(min=1), help="Bytes a new file may hold.")
@click.option(
    "--materialize-deletions/--no-materialize-deletions",
    default=None,
    help="Rewrite fragments whose deleted rows pass the threshold (default: yes).",
)
@click.option(
    "--materialize-deletions-threshold",
    type=click.FloatRange(min=0.0, max=1.0),
    help="Share of deleted rows that makes a fragment be rewritten (default 0.1).",
)
@click.option(
    "--defer-index-remap/--no-defer-index-remap",
    default=None,
    help="Record moved rows in a Fragment Reuse Index instead of remapping indices.",
)
@json_option
@storage_options
def compact(
    path: str,
    as_json: bool,
    storage_options: dict[str, str] | None,
    **options: Any,
) -> None:
    """Merge the small fragments of the dataset at PATH and drop its deleted rows
    (optimize.compact_files); a new version when anything was rewritten."""
    ds = open_dataset(path, storage_options)
    before = ds.version
    given = {name: value for name, value in options.items() if value is not None}
    metrics = ds.optimize.compact_files(**given)
    facts = {
        "version_before": before,
        "version_after": ds.version,
        "committed": ds.version != before,
        **dataclasses.asdict(metrics),
    }
    _report("Compaction", facts, as_json)


@click.command("cleanup")
@dataset_path
@click.option(
    "--older-than",
    default=None,
    metavar="DURATION",
    help="Remove versions older than this, e.g. 7d, 12h, 1h30m (default 14d unless "
    "--retain-versions is given).",
)
@click.option(
    "--retain-versions",
    type=click.IntRange(min=1),
    default=None,
    help="Keep the newest N versions (with --older-than: remove what either selects).",
)
@click.option(
    "--delete-unverified",
    is_flag=True,
    help="Also delete unreferenced files younger than 7 days (only safe with no "
    "concurrent writers).",
)
@click.option(
    "--keep-tagged",
    is_flag=True,
    help="Keep old tagged versions and clean up the rest (default: refuse to run).",
)
@json_option
@storage_options
def cleanup(
    path: str,
    older_than: str | None,
    retain_versions: int | None,
    delete_unverified: bool,
    keep_tagged: bool,
    as_json: bool,
    storage_options: dict[str, str] | None,
) -> None:
    """Remove old versions of the dataset at PATH and the files only they use
    (cleanup_old_versions); the latest version and tagged ones are never removed."""
    age: timedelta | None = (
        None if older_than is None else parse_duration(older_than, "--older-than")
    )
    ds = open_dataset(path, storage_options)
    try:
        stats = ds.cleanup_old_versions(
            older_than=age,
            retain_versions=retain_versions,
            delete_unverified=delete_unverified,
            error_if_tagged_old_versions=not keep_tagged,
        )
    except TagError as error:
        if keep_tagged:
            raise
        # The library's message names its Python argument; say the flag instead.
        what = str(error).split(". Pass ", 1)[0]
        raise BadArgument(
            f"TagError: {what}; pass --keep-tagged to keep them and clean up the rest, "
            "or delete those tags"
        ) from error
    facts = dataclasses.asdict(stats)
    if not as_json:
        facts["bytes_removed"] = f"{byte_text(stats.bytes_removed)} ({stats.bytes_removed} bytes)"
    _report("Cleanup", facts, as_json)


@click.command("restore")
@dataset_path
@click.argument("version", metavar="VERSION")
@json_option
@storage_options
def restore(path: str, version: str, as_json: bool, storage_options: dict[str, str] | None) -> None:
    """Make VERSION (a number or a tag) of the dataset at PATH the latest, as a new
    version; the versions in between stay in its history."""
    reference = version_reference(version)
    ds = open_dataset(path, storage_options, str(reference))
    restored, latest_before = ds.version, ds.latest_version
    ds.restore()
    facts = {
        "restored_version": restored,
        "latest_before": latest_before,
        "new_version": ds.version,
    }
    _report("Restore", facts, as_json)


COMMANDS: list[click.Command] = [compact, cleanup, restore, tag]
