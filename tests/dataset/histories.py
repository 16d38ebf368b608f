"""Random histories of row operations for property tests: appends, deletes, updates,
upserts and compactions, each step applied by lancelet or pylance (the tests of row
lineage, ``delta()`` and the change feed share them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import lance
import pyarrow as pa
from hypothesis import strategies as st

import lancelet as ll

KINDS = ("append", "delete", "update", "upsert", "compact")


@dataclass(frozen=True)
class Step:
    kind: str
    arg: Any
    by_pylance: bool = False

    @property
    def library(self) -> Any:
        return lance if self.by_pylance else ll


def rows(keys: list[int], value: int = 0) -> pa.Table:
    return pa.table(
        {"k": pa.array(keys, pa.int64()), "v": pa.array([value] * len(keys), pa.int64())}
    )


@st.composite
def steps(
    draw: st.DrawFn,
    *,
    keys: int = 40,
    compact_targets: tuple[int, ...] = (4, 8, 1000),
    either_library: bool = True,
) -> list[Step]:
    """One to six steps over keys ``0..keys``; appends add keys of their own, above."""
    key = st.integers(0, keys)
    out: list[Step] = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(KINDS))
        arg: Any
        if kind == "append":
            start = draw(st.integers(100, 200)) * 10
            arg = list(range(start, start + draw(st.integers(1, 7))))
        elif kind in ("delete", "update"):
            arg = (draw(key), draw(st.integers(2, 5)))
        elif kind == "upsert":
            arg = sorted(draw(st.sets(key, min_size=1, max_size=6)))
        else:
            arg = draw(st.sampled_from(compact_targets))
        out.append(Step(kind, arg, draw(st.booleans()) if either_library else False))
    return out


def apply(step: Step, uri: str, value: int, library: Any = None) -> None:
    """Apply ``step`` with its own library (or ``library``); every update and upsert
    writes ``value``, which the caller keeps new to the history so that an updated
    row's values differ from its old ones."""
    lib = step.library if library is None else library
    ds = lib.dataset(uri)
    kind, arg = step.kind, step.arg
    if kind == "append":
        lib.write_dataset(rows(arg, value), uri, mode="append", max_rows_per_file=5)
    elif kind == "delete":
        ds.delete(f"k % {arg[1]} = {arg[0] % arg[1]}")
    elif kind == "update":
        ds.update({"v": str(value)}, where=f"k % {arg[1]} = {arg[0] % arg[1]}")
    elif kind == "upsert":
        builder = ds.merge_insert("k").when_matched_update_all().when_not_matched_insert_all()
        builder.execute(rows(arg, value))
    else:
        ds.optimize.compact_files(target_rows_per_fragment=arg)
