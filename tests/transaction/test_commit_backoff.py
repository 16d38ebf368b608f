"""The commit loop's wait after a lost race: whole slots, each about one commit
window long, capped so that a busy machine's slow first window does not make every
writer that lost sleep for long."""

from __future__ import annotations

from lancelet.transaction.commit import CommitPolicy


def _waits(policy: CommitPolicy, attempt: int, window_s: float, local: bool) -> set[float]:
    return {round(policy.backoff(attempt, window_s, local), 6) for _ in range(2000)}


def test_a_slot_is_the_window_and_a_tenth() -> None:
    waits = _waits(CommitPolicy(), 0, 0.002, local=True)
    assert waits == {round(i * 0.0022, 6) for i in range(4)}


def test_slots_double_with_each_lost_attempt() -> None:
    assert len(_waits(CommitPolicy(), 1, 0.002, local=True)) == 8


def test_a_local_slot_lasts_at_most_5_ms() -> None:
    assert max(_waits(CommitPolicy(), 0, 0.040, local=True)) == 0.015


def test_an_object_store_slot_lasts_at_most_100_ms() -> None:
    assert max(_waits(CommitPolicy(), 0, 0.040, local=False)) == round(3 * 0.044, 6)
    assert max(_waits(CommitPolicy(), 0, 0.5, local=False)) == 0.3


def test_the_cap_can_be_chosen() -> None:
    assert max(_waits(CommitPolicy(max_slot_s=0.02), 0, 0.040, local=True)) == 0.06
