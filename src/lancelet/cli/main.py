"""The ``lancelet`` entry point: one click group, its commands each in their module."""

from __future__ import annotations

import click

from lancelet._version import __version__
from lancelet.cli import doctor, feed, head, history, info, maintain, report
from lancelet.errors import LanceletError


class _Group(click.Group):
    """Turns lancelet's own errors into one line on stderr and exit status 1, the way
    a shell user expects; anything else is a bug and keeps its traceback."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except LanceletError as error:
            raise click.ClickException(f"{type(error).__name__}: {error}") from error


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="lancelet")
def cli() -> None:
    """Look at, check and maintain Lance datasets (local paths or object-store URIs)."""


for _module in (info, history, head, feed, doctor, report, maintain):
    for _command in _module.COMMANDS:
        cli.add_command(_command)


def main() -> None:
    """The console script."""
    cli(prog_name="lancelet")


if __name__ == "__main__":
    main()
