"""``LANCE_MEM_POOL_SIZE`` and ``LANCE_BYPASS_SPILLING``: the memory an index build's
sort may hold, as pylance reads them.

Which builds a tiny pool fails, and that bypassing spilling lifts the limit, is
compared with pylance; that the budget is real (runs and merge blocks within it,
spilled runs merging into the index an unlimited sort builds) is checked on the sort
itself and against pylance reading the index.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import lance
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lancelet as ll
from lancelet.errors import ResourcesExhaustedError
from lancelet.index import external_sort, write_bitmap, write_btree
from lancelet.index.memory_pool import default_pool_bytes, sort_budget
from tests.storage import copy_tree, local

POOL, BYPASS = "LANCE_MEM_POOL_SIZE", "LANCE_BYPASS_SPILLING"


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(POOL, raising=False)
    monkeypatch.delenv(BYPASS, raising=False)


DEFAULT = default_pool_bytes()


@pytest.mark.parametrize(
    ("given", "budget"),
    [
        (None, DEFAULT),
        ("1024", 1024),
        ("+77", 77),
        ("0", 0),
        ("18446744073709551615", 2**64 - 1),
        ("18446744073709551616", DEFAULT),  # past u64: the default
        ("abc", DEFAULT),
        ("-1", DEFAULT),
        (" 5", DEFAULT),
        ("1_000", DEFAULT),
        ("1e6", DEFAULT),
    ],
)
def test_the_pool_size_is_read_as_rust_parses_a_u64(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    given: str | None,
    budget: int,
) -> None:
    if given is not None:
        monkeypatch.setenv(POOL, given)
    with caplog.at_level(logging.WARNING):
        assert sort_budget() == budget
    warned = any(POOL in r.getMessage() for r in caplog.records)
    assert warned == (given is not None and budget == DEFAULT)


@pytest.mark.parametrize("value", ["1", "0", ""])
def test_any_bypass_value_lifts_the_limit(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(POOL, "1024")
    monkeypatch.setenv(BYPASS, value)
    assert sort_budget() is None


@pytest.fixture
def uri(tmp_path: Path) -> Path:
    ints = pa.array([i * 10 for i in range(100 * 1024)])
    ll.write_dataset(pa.table({"int": ints}), tmp_path / "ds")
    return tmp_path / "ds"


def _outcome(build: object) -> str:
    try:
        build()  # type: ignore[operator]
    except OSError:
        return "failed"
    return "built"


@pytest.mark.parametrize("kind", ["BTREE", "BITMAP", "ZONEMAP", "BLOOMFILTER"])
def test_a_tiny_pool_fails_the_builds_pylance_fails(
    uri: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    twin = uri.parent / "twin"
    copy_tree(str(uri), str(twin))
    monkeypatch.setenv(POOL, "1024")
    outcomes = [
        _outcome(lambda lib=lib, at=at: lib.dataset(at).create_scalar_index("int", kind))
        for lib, at in ((ll, uri), (lance, twin))
    ]
    assert outcomes[0] == outcomes[1]
    if outcomes[0] == "failed":
        with pytest.raises(ResourcesExhaustedError, match="Resources exhausted.*LANCE_MEM_POOL"):
            ll.dataset(uri).create_scalar_index("int", kind)
        assert ll.dataset(uri).list_indices() == []
    monkeypatch.setenv(BYPASS, "1")
    for lib, at in ((ll, uri), (lance, twin)):
        lib.dataset(at).create_scalar_index("int", kind, replace=True)
    assert (
        ll.dataset(uri)
        .to_table(filter="int = 70")
        .equals(lance.dataset(twin).to_table(filter="int = 70"))
    )


def _pairs(rows: int, seed: int) -> tuple[pa.Array, np.ndarray]:
    rng = np.random.default_rng(seed)
    values = pa.array([f"v{v:05d}" for v in rng.integers(0, rows // 7, rows)], pa.string())
    addresses = rng.permutation(np.arange(rows, dtype=np.uint64))
    return values, addresses


def _batches(values: pa.Array, ids: np.ndarray, size: int) -> Iterator[tuple[pa.Array, np.ndarray]]:
    for start in range(0, len(values), size):
        yield values.slice(start, size), ids[start : start + size]


def _files(directory: Path) -> dict[str, pa.Table]:
    return {
        name: ll.file.LanceFileReader(str(directory / name)).read_all().to_table()
        for name in sorted(os.listdir(directory))
    }


@settings(max_examples=6, deadline=None)
@given(budget=st.integers(120_000, 600_000), seed=st.integers(0, 3))
def test_a_budget_spills_and_merges_into_the_unlimited_sort(budget: int, seed: int) -> None:
    """Runs and merge blocks stay within the budget, and the index written equals the
    one an unlimited sort writes (BTREE pages and BITMAP bitmaps alike)."""
    values, ids = _pairs(20_000, seed)
    runs_seen: list[int] = []
    real_runs = external_sort._runs

    def spy_runs(tables: object, limits: object) -> Iterator[pa.Table]:
        for run in real_runs(tables, limits):  # type: ignore[arg-type]
            assert run.nbytes <= budget // 2
            runs_seen.append(run.num_rows)
            yield run

    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        for writer in (write_btree, write_bitmap):
            name = writer.__name__
            with (
                mock.patch.object(external_sort, "_runs", spy_runs),
                mock.patch.dict(os.environ, {POOL: str(budget)}),
            ):
                writer(
                    _batches(values, ids, 3000), local(root / f"{name}-budget"), values.type, "2.2"
                )
            with mock.patch.dict(os.environ, {BYPASS: "1"}):
                writer(
                    _batches(values, ids, 3000), local(root / f"{name}-memory"), values.type, "2.2"
                )
            budgeted, unlimited = _files(root / f"{name}-budget"), _files(root / f"{name}-memory")
            assert budgeted.keys() == unlimited.keys()
            for file in budgeted:
                assert budgeted[file].equals(unlimited[file]), (name, file)
    assert sum(runs_seen) == 2 * len(values) and len(runs_seen) > 2  # it spilled


def test_a_spilled_bitmap_is_read_by_pylance_as_its_own(
    uri: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    twin = uri.parent / "twin"
    copy_tree(str(uri), str(twin))
    monkeypatch.setenv(POOL, str(64 << 10))  # runs of ~32 KB: the build spills
    ll.dataset(uri).create_scalar_index("int", "BITMAP")
    monkeypatch.delenv(POOL)
    lance.dataset(twin).create_scalar_index("int", "BITMAP")
    for where in ("int = 70", "int IN (0, 1023990, 5)", "int < 300"):
        assert (
            lance.dataset(uri)
            .to_table(filter=where)
            .equals(lance.dataset(twin).to_table(filter=where))
        )
