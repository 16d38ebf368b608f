"""ordering.Ranked places literals among ranked values in the order Python's own
comparisons give (an independent ordering of the same values)."""

from __future__ import annotations

import datetime
import decimal
import random

import numpy as np
import pyarrow as pa
import pytest

from lancelet.index import ordering

_D = decimal.Decimal


def _values(kind: str, rng: random.Random) -> tuple[pa.DataType, list[object]]:
    if kind == "int64":
        return pa.int64(), [rng.randint(-(2**62), 2**62) for _ in range(40)] + [2**63 - 1]
    if kind == "uint64":
        return pa.uint64(), [rng.randint(0, 2**64 - 1) for _ in range(40)]
    if kind == "string":
        alphabet = ["a", "b", "é", "\U0010ffff", "Z", "", "\x00"]
        return pa.string(), ["".join(rng.choices(alphabet, k=rng.randint(0, 3))) for _ in range(40)]
    if kind == "binary":
        return pa.binary(), [bytes(rng.choices(range(256), k=rng.randint(0, 3))) for _ in range(40)]
    if kind == "decimal":
        return pa.decimal128(10, 3), [
            _D(rng.randint(-(10**6), 10**6)).scaleb(-3) for _ in range(40)
        ]
    if kind == "timestamp":
        base = datetime.datetime(2000, 1, 1)
        return pa.timestamp("us"), [
            base + datetime.timedelta(microseconds=rng.randint(0, 10**12)) for _ in range(40)
        ]
    assert kind == "date"
    start = datetime.date(1970, 1, 1)
    days = [rng.randint(-1000, 1000) for _ in range(40)]
    return pa.date32(), [start + datetime.timedelta(days=d) for d in days]


@pytest.mark.parametrize(
    "kind", ["int64", "uint64", "string", "binary", "decimal", "timestamp", "date"]
)
@pytest.mark.parametrize("seed", range(5))
def test_placed_literals_compare_as_the_values_do(kind: str, seed: int) -> None:
    rng = random.Random(seed)
    dtype, pool = _values(kind, rng)
    lows = [rng.choice(pool) if rng.random() > 0.1 else None for _ in range(15)]
    highs = [rng.choice(pool) for _ in range(15)]
    literals = [rng.choice(pool) for _ in range(10)] + [None]
    ranked = ordering.Ranked([pa.array(lows, dtype), pa.array(highs, dtype)])
    placed = ranked.place(pa.array(literals, dtype))
    values = [v for v in lows + highs]
    ranks = np.concatenate(ranked.ranks).tolist()
    for lit, lit_rank in zip(literals, placed.tolist(), strict=True):
        if lit is None:
            assert lit_rank == -1
            continue
        for value, rank in zip(values, ranks, strict=True):
            if value is None:
                assert rank == -1
                continue
            key_a = value.encode() if isinstance(value, str) else value
            key_b = lit.encode() if isinstance(lit, str) else lit
            assert (rank < lit_rank) == (key_a < key_b)  # type: ignore[operator]
            assert (rank == lit_rank) == (key_a == key_b)


def test_nothing_ranked_places_every_literal_below_all() -> None:
    ranked = ordering.Ranked([pa.array([None], pa.int32())])
    assert ranked.place(pa.array([5, None], pa.int32())).tolist() == [0, -1]
