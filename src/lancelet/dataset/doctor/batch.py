"""Checks gathered from every version, each run once, several at a time.

Versions share most of their files, so a check is keyed by what its verdict depends
on and runs once however many versions ask for it.  The checks wait on storage
(a footer read, an existence check: a request each on an object store), so they
run on a few threads.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from lancelet.dataset.doctor.problems import Problem, Problems

# Requests in flight at once: enough to hide an object store's latency.
WORKERS = 16

Check = Callable[[], list[Problem]]


@dataclass
class CheckBatch:
    """Checks by key, with the versions that asked for each."""

    _checks: dict[Hashable, Check] = field(default_factory=dict)
    _versions: dict[Hashable, set[int]] = field(default_factory=dict)

    def add(self, key: Hashable, version: int, check: Check) -> None:
        """Ask for ``check`` in ``version``; a check already asked for under ``key``
        is not asked again."""
        self._checks.setdefault(key, check)
        self._versions.setdefault(key, set()).add(version)

    def run(self, problems: Problems) -> None:
        """Run every check and record its problems in each version that asked."""
        keys = list(self._checks)
        if not keys:
            return
        with ThreadPoolExecutor(min(WORKERS, len(keys)), "lancelet-doctor") as pool:
            verdicts = list(pool.map(lambda key: self._checks[key](), keys))
        for key, found in zip(keys, verdicts, strict=True):
            for version in sorted(self._versions[key]):
                problems.add_all(found, version)
        self._checks.clear()
        self._versions.clear()
