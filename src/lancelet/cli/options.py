"""What every command that opens a dataset takes: the path, storage options, a
version, and ``--json``."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

import lancelet
from lancelet.dataset import LanceDataset
from lancelet.errors import TagNotFoundError, VersionNotFoundError

F = TypeVar("F", bound=Callable[..., Any])

# Storage options from the environment, as a JSON object; flags override its keys.
STORAGE_OPTIONS_ENV = "LANCELET_STORAGE_OPTIONS"


def _parse_storage_options(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> dict[str, str] | None:
    options: dict[str, str] = {}
    from_env = os.environ.get(STORAGE_OPTIONS_ENV)
    if from_env:
        try:
            loaded = json.loads(from_env)
        except json.JSONDecodeError as error:
            raise click.BadParameter(
                f"{STORAGE_OPTIONS_ENV} is not JSON: {error}", ctx=ctx, param=param
            ) from error
        if not isinstance(loaded, dict):
            raise click.BadParameter(
                f"{STORAGE_OPTIONS_ENV} must be a JSON object of strings", ctx=ctx, param=param
            )
        options.update({str(k): str(v) for k, v in loaded.items()})
    for value in values:
        key, sep, setting = value.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected KEY=VALUE, got {value!r}", ctx=ctx, param=param)
        options[key] = setting
    return options or None


def storage_options(function: F) -> F:
    """``--storage-option KEY=VALUE`` (repeatable), pylance's ``storage_options`` keys;
    the object stores also read their usual environment variables (``AWS_*``, ...)."""
    return click.option(
        "--storage-option",
        "-S",
        "storage_options",
        multiple=True,
        metavar="KEY=VALUE",
        callback=_parse_storage_options,
        help=f"An object-store option (repeatable); also a JSON object in ${STORAGE_OPTIONS_ENV}.",
    )(function)


def dataset_path(function: F) -> F:
    """The dataset's path or URI, the first argument."""
    return click.argument("path", metavar="PATH")(function)


def version_option(function: F) -> F:
    """``--version`` as a number or a tag name."""
    return click.option(
        "--version", "-v", "version", default=None, help="A version number or tag name."
    )(function)


def num_rows_option(default: int, what: str) -> Callable[[F], F]:
    """``--num-rows``/``-n``: how many ``what`` to show at most."""
    return click.option(
        "--num-rows",
        "-n",
        "num_rows",
        type=click.IntRange(min=0),
        default=default,
        show_default=True,
        help=f"How many {what} to show.",
    )


def json_option(function: F) -> F:
    """``--json``: machine-readable output instead of tables."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")(function)


def open_dataset(
    path: str, storage_options: dict[str, str] | None, version: str | None = None
) -> LanceDataset:
    """The dataset at ``path`` (at ``version``: digits are a number, else a tag)."""
    chosen: int | str | None = None
    if version is not None:
        chosen = int(version) if version.isdigit() else version
    try:
        return lancelet.dataset(path, version=chosen, storage_options=storage_options)
    except (VersionNotFoundError, TagNotFoundError):
        # With no dataset there at all, say that rather than "no version 3".
        lancelet.dataset(path, storage_options=storage_options)
        raise
