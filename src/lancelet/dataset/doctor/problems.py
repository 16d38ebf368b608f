"""Problems as the checks find them, gathered across versions.

Successive versions share most of their files, so one damaged file shows up in
every version that uses it.  Each check states a problem without a version; the
collector merges equal problems and remembers the versions they were seen in, so a
report says "data/x.lance is missing (versions 3-9)" once, not seven times.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lancelet.dataset.doctor.report import FINDING_KINDS


@dataclass(frozen=True)
class Problem:
    """What one check found: a finding code, the path at fault (relative to the
    dataset root where it is below it) and the explanation in plain words."""

    code: str
    path: str | None
    explanation: str

    def __post_init__(self) -> None:
        if self.code not in FINDING_KINDS:
            raise ValueError(f"unknown finding code {self.code!r}")


@dataclass
class Problems:
    """Problems by what they say, each with the versions it was seen in."""

    seen: dict[Problem, set[int]] = field(default_factory=dict)
    # What could not be decided, in plain words (no finding, no exit status).
    notes: list[str] = field(default_factory=list)

    def add(self, problem: Problem, version: int | None = None) -> None:
        versions = self.seen.setdefault(problem, set())
        if version is not None:
            versions.add(version)

    def add_all(self, problems: list[Problem], version: int) -> None:
        for problem in problems:
            self.add(problem, version)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def forget_versions(self, gone: set[int]) -> None:
        """Drop what was seen only in ``gone``: versions removed while they were being
        checked (by a concurrent cleanup, which removes their files too)."""
        for problem in list(self.seen):
            versions = self.seen[problem]
            if versions and versions <= gone:
                del self.seen[problem]
            else:
                versions -= gone

    def broken_versions(self) -> set[int]:
        """Versions an error touches."""
        out: set[int] = set()
        for problem, versions in self.seen.items():
            if FINDING_KINDS[problem.code].severity == "error":
                out |= versions
        return out

    def codes_of(self, version: int) -> list[str]:
        """The error codes seen in ``version``, in the order first found."""
        codes = []
        for problem, versions in self.seen.items():
            error = FINDING_KINDS[problem.code].severity == "error"
            if error and version in versions and problem.code not in codes:
                codes.append(problem.code)
        return codes
