"""The commit loop's wait after a lost race: anywhere within a number of slots, each
about one commit window long, capped so that a busy machine's slow first window does
not make every writer that lost sleep for long."""

from __future__ import annotations

from lancelet.transaction.commit import CommitPolicy


def _waits(policy: CommitPolicy, attempt: int, window_s: float, local: bool) -> list[float]:
    return [policy.backoff(attempt, window_s, local) for _ in range(4000)]


def _spans(waits: list[float], width: float) -> bool:
    """Whether ``waits`` cover [0, width) evenly: every tenth of it is drawn from."""
    tenths = {min(int(10 * w / width), 9) for w in waits}
    return min(waits) >= 0 and max(waits) <= width and tenths == set(range(10))


def test_the_first_wait_spans_four_slots_of_the_window_and_a_tenth() -> None:
    waits = _waits(CommitPolicy(), 0, 0.002, local=True)
    assert _spans(waits, 4 * 0.0022)
    # Drawn anywhere, not at slot starts: writers that lost together do not restart
    # together.
    assert len({round(w, 6) for w in waits}) > 100


def test_slots_double_with_each_lost_attempt() -> None:
    assert _spans(_waits(CommitPolicy(), 1, 0.002, local=True), 8 * 0.0022)
    assert _spans(_waits(CommitPolicy(), 3, 0.002, local=True), 32 * 0.0022)


def test_slots_stop_doubling_at_max_slots() -> None:
    assert _spans(_waits(CommitPolicy(), 12, 0.002, local=True), 128 * 0.0022)
    assert _spans(_waits(CommitPolicy(max_slots=16), 6, 0.002, local=True), 16 * 0.0022)


def test_a_local_slot_lasts_at_most_5_ms() -> None:
    assert _spans(_waits(CommitPolicy(), 0, 0.040, local=True), 4 * 0.005)


def test_an_object_store_slot_lasts_at_most_100_ms() -> None:
    assert _spans(_waits(CommitPolicy(), 0, 0.040, local=False), 4 * 0.044)
    assert _spans(_waits(CommitPolicy(), 0, 0.5, local=False), 4 * 0.1)


def test_the_cap_can_be_chosen() -> None:
    assert _spans(_waits(CommitPolicy(max_slot_s=0.02), 0, 0.040, local=True), 4 * 0.02)


def test_no_wait_is_longer_than_max_backoff_s() -> None:
    waits = _waits(CommitPolicy(max_backoff_s=0.05), 20, 0.5, local=False)
    assert max(waits) <= 0.05 and min(waits) >= 0
