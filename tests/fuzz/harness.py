"""Run mutated copies of Lance files in a child process and classify what each does.

A fuzz test builds a pristine fixture (a data file or a dataset folder), describes
mutants (which file, which bytes, how changed), and names a *check*: an importable
function ``check(root) -> pa.Table`` that reads the fixture the way a user would.  A
worker process (:mod:`tests.fuzz.worker`) runs the check on the pristine copy, then on
each mutant in turn, restoring the file between mutants.  Running in a child process
means a mutant that aborts the interpreter (a segfault or an abort inside Arrow) or
hangs is caught and named instead of taking the test run down; the worker is then
restarted after it.

Every mutant ends in one :class:`Outcome`:

* ``same``: the check returned the pristine result (column values and types; names
  and metadata may differ, since nothing in the format guards them);
* ``error``: a :class:`lancelet.errors.LanceletError` was raised;
* ``different``: a result that passes ``validate(full=True)`` but differs;
* ``invalid``: a result that fails ``validate(full=True)``;
* ``foreign``: any other exception;
* ``crash`` / ``hang``: the worker died or stopped making progress.

``crash``, ``hang``, ``foreign`` and ``invalid`` are always failures.  ``different`` is
acceptable only for a mutant marked ``payload``: bytes the format stores without any
redundancy (a value inside a plain data buffer), which no reader can tell from real
data.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
# Generous per mutant: one read of a small fixture takes milliseconds.
STALL_S = 20.0
# A worker's address-space ceiling.  A mutant that makes a reader allocate beyond this
# hit an unchecked size, and shows up as a ``foreign`` MemoryError rather than an OOM
# kill.  A quiet worker already maps about 2 GB (numba's LLVM, Arrow's allocator, a
# malloc arena per thread), so the ceiling leaves room above that: at 3 GB, a CI run
# once saw a foreign error on a mutant that allocates nothing unusual.
MEMORY_LIMIT = 6 << 30

FAILURES = frozenset({"crash", "hang", "foreign", "invalid"})


@dataclass(frozen=True)
class Mutant:
    """One change to one file of the fixture.

    ``kind`` is ``"xor"`` (``data[offset] ^= value``), ``"set"`` (``data[offset] = value``),
    ``"truncate"`` (keep ``offset`` bytes), ``"replace"`` (the whole file becomes
    ``blob``, hex-encoded) or ``"delete"`` (the file is removed).
    """

    file: str
    kind: str
    offset: int = 0
    value: int = 0
    blob: str = ""
    payload: bool = False
    label: str = ""

    def describe(self) -> str:
        return self.label or f"{self.file} {self.kind} @{self.offset} {self.value:#x}"


@dataclass(frozen=True)
class Outcome:
    mutant: Mutant
    kind: str
    detail: str = ""

    @property
    def acceptable(self) -> bool:
        if self.kind in FAILURES:
            return False
        return self.kind != "different" or self.mutant.payload


@dataclass
class Campaign:
    """Mutants of one fixture, checked by ``check`` (``"module:function"``)."""

    root: Path
    check: str
    mutants: list[Mutant] = field(default_factory=list)
    budget_s: float = 60.0

    def run(self) -> list[Outcome]:
        return run_campaign(self)


def byte_flips(
    root: Path, file: str, count: int, seed: int, *, payload: Iterable[range] = ()
) -> list[Mutant]:
    """``count`` single-byte changes at seeded random offsets of ``file``: a random bit
    flipped, or the byte set to 0x00 / 0xff.  Offsets inside a ``payload`` range are
    marked as such."""
    size = (root / file).stat().st_size
    rng = np.random.default_rng(seed)
    ranges = list(payload)
    out = []
    for _ in range(count):
        offset = int(rng.integers(0, size))
        choice = int(rng.integers(0, 10))
        if choice < 8:
            kind, value = "xor", 1 << int(rng.integers(0, 8))
        else:
            kind, value = "set", 0 if choice == 8 else 0xFF
        hit = any(offset in r for r in ranges)
        out.append(Mutant(file, kind, offset, value, payload=hit))
    return out


def truncations(root: Path, file: str, count: int, seed: int) -> list[Mutant]:
    """``count`` cuts of ``file`` at seeded random lengths (never the whole file)."""
    size = (root / file).stat().st_size
    rng = np.random.default_rng(seed)
    return [Mutant(file, "truncate", int(n)) for n in rng.integers(0, size, count)]


def replacement(file: str, data: bytes, label: str, *, payload: bool = False) -> Mutant:
    return Mutant(file, "replace", blob=data.hex(), label=label, payload=payload)


def run_campaign(campaign: Campaign) -> list[Outcome]:
    """Every mutant's outcome, in order; stops early (leaving mutants out) when the time
    budget runs out, so a slow machine shortens the campaign rather than failing it."""
    deadline = time.monotonic() + campaign.budget_s
    outcomes: list[Outcome] = []
    pending = list(campaign.mutants)
    while pending and time.monotonic() < deadline:
        done = _run_worker(campaign, pending, deadline)
        outcomes.extend(done)
        pending = pending[len(done) :]
    return outcomes


def _run_worker(campaign: Campaign, mutants: Sequence[Mutant], deadline: float) -> list[Outcome]:
    """Run a worker over ``mutants``; it reports each result as one JSON line.  If it
    dies or stalls, the mutant it had started is blamed and the rest are left."""
    # The worker's copy of the fixture lives here, removed below however it ends (a
    # worker that crashes or is killed cannot remove it itself).
    scratch = tempfile.mkdtemp(prefix="fuzz-")
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as spec:
        json.dump(
            {
                "root": str(campaign.root),
                "scratch": scratch,
                "check": campaign.check,
                "mutants": [asdict(m) for m in mutants],
                "deadline_s": max(deadline - time.monotonic(), 1.0),
                "memory_limit": MEMORY_LIMIT,
            },
            spec,
        )
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(REPO), str(REPO / "src")]),
        MALLOC_ARENA_MAX="2",  # glibc reserves 64 MB of address space per thread arena
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fuzz.worker", spec.name],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    outcomes: list[Outcome] = []
    try:
        outcomes = _collect(proc, mutants)
    finally:
        if proc.poll() is None:  # stopped reading it on an error: stop it too
            proc.kill()
            proc.wait()
        os.unlink(spec.name)
        shutil.rmtree(scratch, ignore_errors=True)
    return outcomes


def _collect(proc: subprocess.Popen[str], mutants: Sequence[Mutant]) -> list[Outcome]:
    import selectors

    assert proc.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    outcomes: list[Outcome] = []
    started = False
    while True:
        if not selector.select(timeout=STALL_S):
            proc.kill()
            proc.wait()
            if started:
                outcomes.append(Outcome(mutants[len(outcomes)], "hang", f"> {STALL_S} s"))
            return outcomes
        line = proc.stdout.readline()
        if not line:
            break
        message = json.loads(line)
        if message["event"] == "pristine-failed":
            proc.wait()
            raise AssertionError(f"the check fails on the pristine fixture: {message['detail']}")
        if message["event"] == "start":
            started = True
        elif message["event"] == "done":
            started = False
            outcomes.append(Outcome(mutants[len(outcomes)], message["kind"], message["detail"]))
    code = proc.wait()
    assert proc.stderr is not None
    stderr = proc.stderr.read()[-2000:]
    if started:
        outcomes.append(Outcome(mutants[len(outcomes)], "crash", f"exit {code}: {stderr}"))
    elif code != 0:
        raise AssertionError(f"fuzz worker failed outside any mutant (exit {code}): {stderr}")
    return outcomes


def assert_acceptable(outcomes: Sequence[Outcome], *, minimum: int = 1) -> None:
    """Fail, listing each offender, unless every outcome is acceptable; also fail when
    fewer than ``minimum`` mutants ran (a campaign that tests nothing proves nothing)."""
    bad = [o for o in outcomes if not o.acceptable]
    lines = [f"{o.kind}: {o.mutant.describe()}: {o.detail[-700:]}" for o in bad[:20]]
    assert not bad, f"{len(bad)} of {len(outcomes)} mutants misbehaved:\n" + "\n".join(lines)
    assert len(outcomes) >= minimum, f"only {len(outcomes)} mutants ran in the time budget"
