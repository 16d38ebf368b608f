"""``lancelet tag list|create|update|delete``: the dataset's tags (``ds.tags``)."""

from __future__ import annotations

from typing import Any

import click

from lancelet.cli.options import dataset_path, json_option, open_dataset, storage_options
from lancelet.cli.output import print_json, print_table
from lancelet.cli.values import utc, version_reference

_NAME = click.argument("name", metavar="NAME")


@click.group("tag")
def tag() -> None:
    """List, create, move and delete the tags (named versions) of a dataset."""


@tag.command("list")
@dataset_path
@json_option
@storage_options
def list_tags(path: str, as_json: bool, storage_options: dict[str, str] | None) -> None:
    """The tags of the dataset at PATH and the versions they name."""
    listed = open_dataset(path, storage_options).tags.list()
    entries = [tag_entry(name, entry) for name, entry in sorted(listed.items())]
    if as_json:
        print_json(entries)
        return
    if not entries:
        click.echo("No tags.")
        return
    print_table(
        None,
        ["tag", "version", "created (UTC)", "updated (UTC)"],
        [
            [e["name"], e["version"], _short(e["created_at"]), _short(e["updated_at"])]
            for e in entries
        ],
    )


def _short(iso_utc: str) -> str:
    return iso_utc[:19].replace("T", " ")


def tag_entry(name: str, entry: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "version": entry["version"],
        "created_at": utc(entry["created_at"]).isoformat(),
        "updated_at": utc(entry["updated_at"]).isoformat(),
        "metadata": dict(entry.get("metadata") or {}),
    }


def _say(message: str, facts: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print_json(facts)
    else:
        click.echo(message)


@tag.command("create")
@dataset_path
@_NAME
@click.argument("version", metavar="[VERSION]", required=False)
@json_option
@storage_options
def create_tag(
    path: str,
    name: str,
    version: str | None,
    as_json: bool,
    storage_options: dict[str, str] | None,
) -> None:
    """Name VERSION (a number or another tag; default: the latest) of the dataset at
    PATH as NAME."""
    ds = open_dataset(path, storage_options)
    target = ds.version if version is None else version_reference(version)
    ds.tags.create(name, target)
    tagged = ds.tags.get_version(name)
    message = f"Tagged version {tagged} of {path} as {name!r}."
    _say(message, {"name": name, "version": tagged}, as_json)


@tag.command("update")
@dataset_path
@_NAME
@click.argument("version", metavar="VERSION")
@json_option
@storage_options
def update_tag(
    path: str, name: str, version: str, as_json: bool, storage_options: dict[str, str] | None
) -> None:
    """Point the existing tag NAME of the dataset at PATH at VERSION (a number or
    another tag)."""
    tags = open_dataset(path, storage_options).tags
    before = tags.get_version(name)
    tags.update(name, version_reference(version))
    after = tags.get_version(name)
    message = f"Moved tag {name!r} of {path} from version {before} to {after}."
    _say(message, {"name": name, "version": after, "previous_version": before}, as_json)


@tag.command("delete")
@dataset_path
@_NAME
@json_option
@storage_options
def delete_tag(path: str, name: str, as_json: bool, storage_options: dict[str, str] | None) -> None:
    """Delete the tag NAME of the dataset at PATH (its version stays)."""
    tags = open_dataset(path, storage_options).tags
    version = tags.get_version(name)
    tags.delete(name)
    message = f"Deleted tag {name!r} of {path} (it named version {version})."
    _say(message, {"name": name, "deleted": True, "version": version}, as_json)
