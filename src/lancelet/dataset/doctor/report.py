"""What ``diagnose`` reports: findings, each with a stable code, and the dataset's
versions sorted into those that read in full and those that do not."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Severity = Literal["error", "warning"]

# Exit statuses of ``lancelet doctor``, kept here so a script calling ``diagnose``
# can map a report the same way.
EXIT_HEALTHY = 0
EXIT_ERRORS = 1
EXIT_WARNINGS = 2


@dataclass(frozen=True)
class FindingKind:
    """One kind of problem: its code, how bad it is, and what it means in general."""

    code: str
    severity: Severity
    meaning: str


_KINDS = (
    FindingKind("no-dataset", "error", "No manifest under _versions/: there is no dataset here."),
    FindingKind(
        "latest-version-broken",
        "error",
        "The latest version cannot be read in full; says which version to restore.",
    ),
    FindingKind("unreadable-manifest", "error", "A version's manifest file does not decode."),
    FindingKind(
        "manifest-version-mismatch",
        "error",
        "A manifest's file name and its content name different versions.",
    ),
    FindingKind(
        "missing-manifest",
        "error",
        "The version hint names a version whose manifest is gone.",
    ),
    FindingKind(
        "unsupported-version",
        "warning",
        "A version uses a feature lancelet cannot read, so it was not checked.",
    ),
    FindingKind("missing-data-file", "error", "A fragment's data file is not there."),
    FindingKind(
        "unreadable-data-file",
        "error",
        "A data file's footer or metadata is damaged (for example a truncated file).",
    ),
    FindingKind(
        "data-file-mismatch",
        "error",
        "A data file holds another number of rows, or other fields, than the manifest says.",
    ),
    FindingKind("missing-deletion-file", "error", "A fragment's deletion file is not there."),
    FindingKind(
        "unreadable-deletion-file",
        "error",
        "A deletion file does not decode, or deletes rows the fragment does not have.",
    ),
    FindingKind(
        "deletion-count-mismatch",
        "error",
        "A deletion file deletes another number of rows than the manifest records.",
    ),
    FindingKind(
        "bad-row-ids",
        "error",
        "A fragment's stable row id sequence is missing, does not decode, or has the wrong length.",
    ),
    FindingKind(
        "row-id-counter-behind",
        "error",
        "A version's next row id is not past every stable row id its fragments hold.",
    ),
    FindingKind(
        "bad-row-versions",
        "error",
        "A fragment's row lineage (created-at or last-updated-at versions) is missing, "
        "does not decode, has the wrong length or names a later version.",
    ),
    FindingKind("missing-index-file", "error", "A file of an index is not there."),
    FindingKind(
        "index-file-size-mismatch",
        "error",
        "An index file's size differs from the size the manifest records.",
    ),
    FindingKind(
        "unreadable-index-file",
        "error",
        "An index file's footer or metadata is damaged.",
    ),
    FindingKind("dangling-tag", "error", "A tag points at a version that is not on disk."),
    FindingKind("unreadable-tag", "error", "A tag file does not decode."),
    FindingKind(
        "missing-transaction-file",
        "warning",
        "The transaction file a version records is gone; reads are unaffected.",
    ),
    FindingKind(
        "unreadable-transaction-file",
        "warning",
        "A version's transaction file does not decode; reads are unaffected.",
    ),
    FindingKind(
        "orphaned-file",
        "warning",
        "A data, deletion, transaction or index file that no version on disk uses.",
    ),
)

FINDING_KINDS: dict[str, FindingKind] = {kind.code: kind for kind in _KINDS}


@dataclass(frozen=True)
class Finding:
    """One problem: ``versions`` it affects (empty when it concerns none in particular),
    the ``path`` at fault relative to the dataset root (None: the dataset as a whole),
    what is wrong in plain words and the safe ``fix``."""

    code: str
    severity: Severity
    versions: tuple[int, ...]
    path: str | None
    explanation: str
    fix: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity,
            "versions": list(self.versions),
            "path": self.path,
            "explanation": self.explanation,
            "fix": self.fix,
        }


@dataclass(frozen=True)
class DoctorReport:
    """Every finding about the dataset at ``uri``, errors first.

    ``versions`` are those on disk; ``readable_versions`` those no error touches
    (a restore of one of them gives a sound latest version).  ``notes`` say which
    checks could not decide and why."""

    uri: str
    versions: tuple[int, ...]
    readable_versions: tuple[int, ...]
    findings: tuple[Finding, ...]
    notes: tuple[str, ...] = ()

    @property
    def latest_version(self) -> int | None:
        return self.versions[-1] if self.versions else None

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == "error")

    @property
    def warnings(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == "warning")

    @property
    def healthy(self) -> bool:
        return not self.findings

    @property
    def exit_status(self) -> int:
        """0 healthy, 1 any error, 2 warnings only."""
        if self.errors:
            return EXIT_ERRORS
        return EXIT_WARNINGS if self.findings else EXIT_HEALTHY

    def as_dict(self) -> dict[str, Any]:
        return {
            "uri": self.uri,
            "healthy": self.healthy,
            "exit_status": self.exit_status,
            "latest_version": self.latest_version,
            "versions": list(self.versions),
            "readable_versions": list(self.readable_versions),
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            "findings": [f.as_dict() for f in self.findings],
            "notes": list(self.notes),
        }
