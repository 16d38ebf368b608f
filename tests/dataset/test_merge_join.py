"""merge_insert's binary-search join for targets whose keys ascend, checked against a
join of Python tuples (every pair of equal non-null keys), and against pylance's merge
on a target with repeated keys."""

from __future__ import annotations

import itertools
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

import lancelet as ll
from lancelet.dataset.mutate.merge_join import sorted_target_pairs
from tests.dataset.util import read_by_both

ROW, ADDRESS = "row", "addr"
TYPES = [pa.int8(), pa.int32(), pa.int64(), pa.uint8(), pa.uint64()]


def _bounds(kind: pa.DataType) -> tuple[int, int]:
    info = np.iinfo(kind.to_pandas_dtype())
    return int(info.min), int(info.max)


@st.composite
def key_lists(draw: st.DrawFn, kind: pa.DataType, size: int) -> list[int | None]:
    low, high = _bounds(kind)
    # Mostly a narrow range (keys repeat and match), sometimes the type's extremes.
    narrow = st.integers(max(low, -5), min(high, 5))
    wide = draw(st.integers(0, 3)) == 0
    values = st.one_of(narrow, st.integers(low, high)) if wide else narrow
    if draw(st.integers(0, 9)) == 0:  # now and then a null key
        values = st.one_of(values, st.none())
    return draw(st.lists(values, max_size=size))


@st.composite
def tables(draw: st.DrawFn) -> tuple[pa.Table, pa.Table, list[str]]:
    kinds = draw(st.lists(st.sampled_from(TYPES), min_size=1, max_size=3))
    names = [f"k{i}" for i in range(len(kinds))]
    columns = [draw(key_lists(kind, 60)) for kind in kinds]
    keyed = list(zip(*columns, strict=False))  # as many rows as the shortest list
    rows = keyed[: draw(st.integers(0, len(keyed)))]
    if draw(st.integers(0, 4)):  # mostly ascending keys, the case the search serves
        rows.sort(key=lambda r: tuple((v is not None, v) for v in r))
    # Source rows: some keys of the target (matches), some of their own.
    picked = st.sampled_from(rows) if rows else st.nothing()
    wanted = draw(st.lists(st.one_of(picked, st.sampled_from(keyed or [()])), max_size=20))
    wanted = [r for r in wanted if r]

    def table(tuples: list[tuple[int | None, ...]]) -> pa.Table:
        return pa.table(
            {
                n: pa.array([t[i] for t in tuples], k)
                for i, (n, k) in enumerate(zip(names, kinds, strict=True))
            }
        )

    target = table(rows)
    addresses = draw(st.permutations(range(len(rows))))
    target = target.append_column(ADDRESS, pa.array(addresses, pa.uint64()))
    if draw(st.booleans()) and target.num_rows > 1:  # several chunks
        half = target.num_rows // 2
        target = pa.concat_tables([target.slice(0, half), target.slice(half)])
    return table(wanted), target, names


def _python_join(source: pa.Table, target: pa.Table, keys: list[str]) -> list[tuple[int, int]]:
    src = list(zip(*(source.column(k).to_pylist() for k in keys), strict=True))
    tgt = list(zip(*(target.column(k).to_pylist() for k in keys), strict=True))
    addresses = target.column(ADDRESS).to_pylist()
    return sorted(
        (i, addresses[j])
        for i, s in enumerate(src)
        for j, t in enumerate(tgt)
        if None not in s and s == t
    )


@settings(max_examples=300, deadline=None)
@given(tables())
def test_pairs_are_those_of_a_join(case: tuple[pa.Table, pa.Table, list[str]]) -> None:
    source, target, keys = case
    pairs = sorted_target_pairs(source, target, keys, ROW, ADDRESS)
    tuples = [tuple(k) for k in zip(*(target.column(k).to_pylist() for k in keys), strict=True)]
    nulls = any(None in t for t in tuples) or any(source.column(k).null_count for k in keys)
    ascending = all(a <= b for a, b in itertools.pairwise(tuples) if None not in a + b)
    if nulls or not ascending:
        assert pairs is None  # the hash join's case
        return
    if pairs is None:
        # Refused only when there are no rows, or the keys' ranges pass 63 bits.
        spans = 1
        for k in keys:
            values = source.column(k).to_pylist() + target.column(k).to_pylist()
            spans *= max(values) - min(values) + 1 if values else 1
        assert spans >= 2**63 or not source.num_rows + target.num_rows
        return
    assert pairs.column_names == [ROW, ADDRESS]
    got = list(zip(pairs[ROW].to_pylist(), pairs[ADDRESS].to_pylist(), strict=True))
    assert got == _python_join(source, target, keys)  # in (row, address) order


def test_repeated_target_keys_update_every_copy_as_pylance(tmp_path: Path) -> None:
    # Ascending keys, each twice, over three fragments: each source row updates both.
    keys = np.repeat(np.arange(30, dtype=np.int64), 2)
    target = pa.table({"k": keys, "j": keys % 3, "v": np.arange(60, dtype=np.int64)})
    source = pa.table(
        {
            "k": np.array([29, 3, 40, 7], dtype=np.int64),
            "j": np.array([2, 0, 1, 1], dtype=np.int64),
            "v": np.array([-1, -2, -3, -4], dtype=np.int64),
        }
    )
    results = []
    for lib, name in ((ll, "ours"), (lance, "theirs")):
        uri = str(tmp_path / name)
        ll.write_dataset(target, uri, max_rows_per_file=25)
        merge = lib.dataset(uri).merge_insert(["k", "j"]).when_matched_update_all()
        results.append(merge.when_not_matched_insert_all().execute(source))
    assert results[0] == results[1]
    assert results[0]["num_updated_rows"] == 6  # keys 29, 3 and 7, two rows each
    order = [("k", "ascending"), ("v", "ascending")]
    ours = read_by_both(str(tmp_path / "ours")).sort_by(order)
    theirs = lance.dataset(str(tmp_path / "theirs")).to_table().sort_by(order)
    assert ours.equals(theirs)


def test_a_large_target_is_left_to_the_hash_join() -> None:
    # Over 2**20 target rows, making the target's codes costs more than hashing.
    n = (1 << 20) + 1
    keys = np.arange(n, dtype=np.int64)
    target = pa.table({"k": keys, ADDRESS: pa.array(keys, pa.uint64())})
    source = pa.table({"k": np.array([5], dtype=np.int64)})
    assert sorted_target_pairs(source, target, ["k"], ROW, ADDRESS) is None
    small = target.slice(0, n - 1)
    pairs = sorted_target_pairs(source, small, ["k"], ROW, ADDRESS)
    assert pairs is not None and pairs.to_pylist() == [{ROW: 0, ADDRESS: 5}]
