"""Taking rows across files whose dictionary columns hold nulls in their own
dictionaries: Arrow cannot unify such dictionaries, so the take goes through the
decoded values (found by the random-schema test on legacy datasets)."""

from __future__ import annotations

import pyarrow as pa

from lancelet._arrow import dictionaries


def _nested(dictionary: pa.DictionaryArray) -> pa.Array:
    inner = pa.ListArray.from_arrays(pa.array([0, 1, 2], pa.int32()), dictionary)
    return pa.ListArray.from_arrays(pa.array([0, 2], pa.int32()), inner)


def test_take_across_chunks_with_nulls_in_their_dictionaries() -> None:
    first = pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int32()), pa.array(["a", None]))
    second = pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int32()), pa.array([None, "b"]))
    table = pa.concat_tables([pa.table({"x": _nested(first)}), pa.table({"x": _nested(second)})])
    taken = dictionaries.take(table, pa.array([1, 0]))
    assert taken.schema == table.schema
    assert taken["x"].to_pylist() == [[[None], ["b"]], [["a"], [None]]]
