"""The ``lancelet report``: one self-contained HTML page of charts that show when a
dataset wants compacting, reindexing or cleaning up."""

from __future__ import annotations

from pathlib import Path

import click

from lancelet.cli import report_html
from lancelet.cli.options import dataset_path, open_dataset, storage_options, version_option
from lancelet.cli.report_data import DEFAULT_TARGET_ROWS, gather


@click.command("report")
@dataset_path
@click.option(
    "--output",
    "-o",
    "output",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    default=Path("report.html"),
    show_default=True,
    help="The HTML file to write.",
)
@click.option(
    "--target-rows",
    type=click.IntRange(min=1),
    default=DEFAULT_TARGET_ROWS,
    show_default=True,
    help="The rows per fragment a compaction aims for: fragments under it count as small.",
)
@storage_options
@version_option
def report_command(
    path: str,
    output: Path,
    target_rows: int,
    storage_options: dict[str, str] | None,
    version: str | None,
) -> None:
    """Write an HTML report of the dataset at PATH: fragment sizes, deletions, the
    version history and index coverage, with advice on what to do.

    The page works offline (plotly's script is inlined); plotly comes with
    pip install 'lancelet[report]'."""
    # Refused before any reading, so a missing extra costs nothing.
    report_html.plotly_modules()
    dataset = open_dataset(path, storage_options, version)
    facts = gather(dataset, target_rows)
    output.write_text(report_html.render(facts), encoding="utf-8")
    click.echo(f"Wrote {output}")
    for line in facts.advice:
        click.echo(f"  {line}")


COMMANDS: list[click.Command] = [report_command]
