"""Decoding on the shared pool: results in order, errors as a serial loop gives them,
and nothing left running once a read returns or raises."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future

import pytest

from lancelet.file import parallel

pytestmark = pytest.mark.skipif(parallel.WORKERS < 2, reason="one CPU: reads run serially")


def test_results_keep_their_order() -> None:
    def slow_first(i: int) -> int:
        time.sleep(0.05 if i == 0 else 0)
        return i * i

    assert parallel.map_columns(slow_first, list(range(10))) == [i * i for i in range(10)]


def test_a_failure_waits_for_running_jobs_and_skips_the_rest() -> None:
    running = threading.Event()
    finished: list[int] = []
    started: list[int] = []

    def job(i: int) -> int:
        started.append(i)
        if i == 0:
            running.set()
            time.sleep(0.2)
            finished.append(i)
            return i
        running.wait()
        if i == 1:
            raise ValueError("page 1 is damaged")
        time.sleep(0.05)
        finished.append(i)
        return i

    with pytest.raises(ValueError, match="page 1 is damaged"):
        parallel.map_columns(job, list(range(50)))
    # The slow job had finished before the error surfaced, and most never started.
    assert 0 in finished
    assert len(started) < 50
    snapshot = list(finished)
    time.sleep(0.3)
    assert finished == snapshot


def test_jobs_that_map_again_run_inline() -> None:
    def outer(i: int) -> list[int]:
        return parallel.map_columns(lambda j: i * 10 + j, [0, 1, 2])

    assert parallel.map_columns(outer, [1, 2, 3]) == [[10, 11, 12], [20, 21, 22], [30, 31, 32]]


def _slow_square(i: int) -> int:
    time.sleep(0.05)
    return i * i


def _slow_squares(items: list[int]) -> list[int]:
    return parallel.map_columns(_slow_square, items)


def test_a_forked_child_decodes_on_its_own_pool() -> None:
    """The parent's pool threads do not exist in a forked child; without a pool of
    its own the child would wait for them forever."""
    import multiprocessing

    assert _slow_squares([1, 2, 3, 4]) == [1, 4, 9, 16]  # every parent thread started
    context = multiprocessing.get_context("fork")
    with context.Pool(1) as pool:
        result = pool.apply_async(_slow_squares, ([5, 6, 7],))
        assert result.get(timeout=30) == [25, 36, 49]


class _TakenJob(Future[object]):
    """A job a pool thread has taken off its queue but not yet marked running: it can
    still be cancelled, and the thread then notifies its waiters."""

    def cancel(self) -> bool:
        cancelled = super().cancel()
        self.set_running_or_notify_cancel()
        return cancelled


class _QueuedFirstPool:
    """An executor whose first job is still being taken while the second fails."""

    def submit(self, fn: object, *args: object) -> Future[object]:
        job: Future[object] = _TakenJob()
        self.count = getattr(self, "count", 0) + 1
        if self.count == 2:
            job.set_exception(ValueError("page 2 is damaged"))
        elif self.count > 2:
            job.set_result(None)
        return job


def test_the_failure_is_raised_not_an_earlier_jobs_cancellation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(parallel, "WORKERS", 2)
    pool = _QueuedFirstPool()
    monkeypatch.setattr(parallel, "_pool", lambda: pool)
    with pytest.raises(ValueError, match="page 2 is damaged"):
        parallel.map_columns(lambda i: i, [0, 1, 2])
