"""``lancelet doctor``: checks every version of a dataset still on disk and explains
each problem with its safe fix; the exit status tells scripts how it went."""

from __future__ import annotations

import click

import lancelet
from lancelet.cli.options import dataset_path, json_option, storage_options
from lancelet.cli.output import console, print_json, print_table
from lancelet.dataset.doctor import DoctorReport, Finding, format_versions


def _versions(versions: tuple[int, ...], none: str = "none") -> str:
    return format_versions(versions) or none


def _say(text: str = "") -> None:
    # Paths and code may hold "[...]": printed as they are, never as rich markup,
    # and never wrapped, so a suggested call can be copied whole.
    console().print(text, markup=False, highlight=False, soft_wrap=True)


def _print_summary(report: DoctorReport) -> None:
    _say(f"Dataset: {report.uri}")
    if not report.versions:
        return
    _say(
        f"Versions on disk: {_versions(report.versions)} (latest {report.latest_version}); "
        f"reading in full: {_versions(report.readable_versions)}"
    )


def _print_finding(number: int, finding: Finding) -> None:
    where = f" {finding.path}" if finding.path else ""
    count = len(finding.versions)
    versions = (
        f" (version{'s' if count > 1 else ''} {_versions(finding.versions)})" if count else ""
    )
    _say()
    _say(f"{number}. {finding.severity.upper()} {finding.code}{versions}{where}")
    _say(f"   {finding.explanation}")
    _say(f"   Fix: {finding.fix}")


def _print_report(report: DoctorReport) -> None:
    _print_summary(report)
    if report.healthy:
        _say("No problems found.")
    else:
        _say()
        print_table(
            None,
            ["#", "severity", "code", "versions", "path"],
            [
                (n, f.severity, f.code, _versions(f.versions, "-"), f.path)
                for n, f in enumerate(report.findings, 1)
            ],
        )
        for number, finding in enumerate(report.findings, 1):
            _print_finding(number, finding)
    for note in report.notes:
        _say(f"Not checked: {note}")
    _say()
    _say(
        f"{len(report.errors)} error(s), {len(report.warnings)} warning(s); "
        f"exit status {report.exit_status}."
    )


@click.command("doctor")
@dataset_path
@storage_options
@json_option
@click.pass_context
def doctor_command(
    ctx: click.Context, path: str, storage_options: dict[str, str] | None, as_json: bool
) -> None:
    """Check every version of the dataset at PATH still on disk.

    Checks each manifest; each fragment's data files (present, sound footer, the
    rows and fields the manifest lists), deletion files, stable row id and row
    lineage sequences; index files; transaction files; tags; and files no version
    uses.  Each finding is explained in plain words with its safe fix (which
    version to restore, what cleanup_old_versions would remove).

    \b
    Exit status:
      0  no problems found
      1  errors: some version cannot be read in full, or a tag is broken
      2  warnings only (orphaned files, missing transaction files, versions
         lancelet cannot check)
    """
    report = lancelet.diagnose(path, storage_options=storage_options)
    if as_json:
        print_json(report.as_dict())
    else:
        _print_report(report)
    ctx.exit(report.exit_status)


COMMANDS: list[click.Command] = [doctor_command]
