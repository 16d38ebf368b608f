"""``ds.sample``: rows drawn uniformly at random, without replacement."""

from __future__ import annotations

import random


def sample_indices(num_rows: int, total_rows: int, randomize_order: bool) -> list[int]:
    """``num_rows`` distinct row offsets below ``total_rows``; in drawing order, or
    ascending (cheaper to read) when ``randomize_order`` is false."""
    if isinstance(num_rows, bool) or not isinstance(num_rows, int):
        raise TypeError(f"sample: num_rows must be an int, not {num_rows!r}")
    if not 0 <= num_rows <= total_rows:
        # pylance's message (from random.sample) for the same mistake.
        raise ValueError("Sample larger than population or is negative")
    chosen = random.sample(range(total_rows), num_rows)
    return chosen if randomize_order else sorted(chosen)
