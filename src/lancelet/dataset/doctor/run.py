"""``diagnose``: every check over every version on disk, as one report."""

from __future__ import annotations

import os
from typing import Any

from lancelet import io
from lancelet.dataset.doctor import advice
from lancelet.dataset.doctor.batch import CheckBatch
from lancelet.dataset.doctor.fragments import FragmentChecks
from lancelet.dataset.doctor.manifests import (
    LoadedVersion,
    check_hint,
    decode_file,
    load_versions,
)
from lancelet.dataset.doctor.problems import Problem, Problems
from lancelet.dataset.doctor.references import ReferenceChecks, check_orphans, check_tags
from lancelet.dataset.doctor.report import FINDING_KINDS, DoctorReport, Finding
from lancelet.table import naming
from lancelet.table.manifest import Manifest
from lancelet.transaction.store import DatasetStore

_CODE_ORDER = {code: n for n, code in enumerate(FINDING_KINDS)}


def diagnose(
    uri: str | os.PathLike[str], *, storage_options: dict[str, Any] | None = None
) -> DoctorReport:
    """Check every invariant of every version of the dataset at ``uri`` still on disk:
    manifests, data files and their footers, deletion files, row id and lineage
    sequences, index files, transaction files, tags, and files no version uses.

    Damage is reported, never raised; a store that fails (credentials, network)
    raises, as nothing can be said about the dataset then."""
    shown = os.fspath(uri)
    store = DatasetStore(uri, storage_options)
    problems = Problems()
    loaded = load_versions(store, problems)
    if not loaded:
        return _no_dataset(shown, problems)
    _check_versions(store, loaded, problems)
    listed = {location.version for location in store.list_versions()}
    loaded = _still_on_disk(loaded, listed, problems)
    if not loaded:  # removed as a whole meanwhile
        return _no_dataset(shown, Problems())
    newcomers = _committed_meanwhile(store, loaded, listed, problems)
    on_disk = {v.version for v in loaded} | {m.version for m in newcomers or []}
    check_hint(store, sorted(on_disk), problems)
    tags = check_tags(store, on_disk, problems)
    manifests = [v.manifest for v in loaded if v.manifest is not None]
    all_read = len(manifests) == len(loaded) and newcomers is not None
    check_orphans(store, manifests + (newcomers or []), all_read, problems)
    return _report(shown, loaded, tags, problems)


def _check_versions(store: DatasetStore, loaded: list[LoadedVersion], problems: Problems) -> None:
    """Each readable version's fragments, indices and transaction file."""
    batch = CheckBatch()
    fragments = FragmentChecks(store, problems, batch)
    references = ReferenceChecks(store, problems, batch)
    for version in loaded:
        if version.manifest is not None:
            fragments.check(version.manifest)
            references.check(version.manifest)
    batch.run(problems)


def _still_on_disk(
    loaded: list[LoadedVersion], listed: set[int], problems: Problems
) -> list[LoadedVersion]:
    """The versions still on disk after their checks.  A cleanup that ran meanwhile
    removed some, and their files with them: what was missing is no damage then."""
    gone = {v.version for v in loaded} - listed
    if not gone:
        return loaded
    problems.forget_versions(gone)
    problems.note(
        f"version(s) {advice.format_versions(gone)} were removed while being checked "
        "(a cleanup running at the same time); run the doctor again for a steady view"
    )
    return [v for v in loaded if v.version not in gone]


def _committed_meanwhile(
    store: DatasetStore, loaded: list[LoadedVersion], listed: set[int], problems: Problems
) -> list[Manifest] | None:
    """The manifests of versions committed while the checks ran: not checked, but
    their files are in use.  None if one of them cannot be read."""
    new = sorted(listed - {v.version for v in loaded})
    if not new:
        return []
    problems.note(
        f"version(s) {advice.format_versions(new)} were committed while the others were "
        "checked, and were not checked themselves"
    )
    manifests = []
    for version in new:
        location = store.manifest_location(version)
        path = "" if location is None else io.join(naming.VERSIONS_DIR, location.name)
        manifest = decode_file(store, path, Problems(), version) if path else None
        if manifest is None:
            return None
        manifests.append(manifest)
    return manifests


def _no_dataset(uri: str, problems: Problems) -> DoctorReport:
    problems.add(
        Problem(
            "no-dataset",
            naming.VERSIONS_DIR,
            "No manifest is under _versions/, so there is no Lance dataset here "
            "(or the path is wrong).",
        )
    )
    return _report(uri, [], {}, problems)


def _report(
    uri: str, loaded: list[LoadedVersion], tags: dict[str, int], problems: Problems
) -> DoctorReport:
    versions = tuple(v.version for v in loaded)
    broken = problems.broken_versions()
    readable = tuple(
        v.version for v in loaded if v.manifest is not None and v.version not in broken
    )
    latest = versions[-1] if versions else None
    latest_codes = [] if latest is None else problems.codes_of(latest)
    context = advice.Context(
        uri,
        versions,
        readable,
        tags,
        latest_manifest_damaged=bool(advice.MANIFEST_DAMAGE.intersection(latest_codes)),
    )
    if latest is not None and latest_codes:
        problems.add(_latest_broken(latest, latest_codes, readable), latest)
    findings = [
        _finding(problem, tuple(sorted(seen)), context) for problem, seen in problems.seen.items()
    ]
    findings.sort(key=_order)
    return DoctorReport(uri, versions, readable, tuple(findings), tuple(problems.notes))


def _latest_broken(latest: int, codes: list[str], readable: tuple[int, ...]) -> Problem:
    sound = advice.format_versions(readable) if readable else "none"
    return Problem(
        "latest-version-broken",
        None,
        f"The latest version, {latest}, cannot be read in full ({', '.join(codes)}): "
        f"reading it stops with an error. Versions that read in full: {sound}.",
    )


def _finding(problem: Problem, versions: tuple[int, ...], context: advice.Context) -> Finding:
    kind = FINDING_KINDS[problem.code]
    return Finding(
        code=problem.code,
        severity=kind.severity,
        versions=versions,
        path=problem.path,
        explanation=problem.explanation,
        fix=advice.fix_for(problem, versions, context),
    )


def _order(finding: Finding) -> tuple[int, int, tuple[int, ...], str]:
    return (
        0 if finding.severity == "error" else 1,
        _CODE_ORDER[finding.code],
        finding.versions,
        finding.path or "",
    )
