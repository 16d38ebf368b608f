"""``lancelet.diagnose``: checks every version of a dataset still on disk and
explains each problem with its safe fix (``lancelet doctor`` prints it)."""

from lancelet.dataset.doctor.advice import format_versions
from lancelet.dataset.doctor.report import (
    EXIT_ERRORS,
    EXIT_HEALTHY,
    EXIT_WARNINGS,
    FINDING_KINDS,
    DoctorReport,
    Finding,
    FindingKind,
    Severity,
)
from lancelet.dataset.doctor.run import diagnose

__all__ = [
    "EXIT_ERRORS",
    "EXIT_HEALTHY",
    "EXIT_WARNINGS",
    "FINDING_KINDS",
    "DoctorReport",
    "Finding",
    "FindingKind",
    "Severity",
    "diagnose",
    "format_versions",
]
