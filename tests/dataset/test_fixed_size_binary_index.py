"""A BTREE on a FixedSizeBinary(16) column, plain or as Arrow's ``arrow.uuid``
extension: filters comparing it with binary literals use the index, as in pylance,
and select what pylance selects.

pylance's filters see an extension column as its storage, so ``uuid = X'...'`` and
``uuid = arrow_cast(0x..., 'FixedSizeBinary(16)')`` compare bytes.  Each filter runs
on lancelet (index built by lancelet) and on pylance (reading lancelet's dataset and
index, and its own copy with its own index); the rows and the plan's index line must
agree.
"""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lancelet as ll
from tests.storage import copy_tree

WIDTH = 16
_values = st.binary(min_size=WIDTH, max_size=WIDTH)


def _table(values: list[bytes | None]) -> pa.Table:
    storage = pa.array(values, pa.binary(WIDTH))
    return pa.table(
        {
            "uuid": pa.ExtensionArray.from_storage(pa.uuid(), storage),
            "fb": storage,
            "row": pa.array(range(len(values)), pa.int64()),
        }
    )


def _index_lines(plan: str) -> list[str]:
    return [line.strip() for line in plan.splitlines() if "ScalarIndexQuery" in line]


def _filters(column: str, probe: bytes, other: bytes) -> list[str]:
    hex_probe, hex_other = probe.hex(), other.hex()
    return [
        f"{column} = arrow_cast(0x{hex_probe}, 'FixedSizeBinary(16)')",
        f"{column} = X'{hex_probe}'",
        f"{column} IN (X'{hex_probe}', X'{hex_other}')",
        f"{column} IS NULL",
    ]


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    values=st.lists(st.one_of(_values, st.none()), min_size=1, max_size=60),
    pick=st.integers(0, 59),
    other=_values,
)
def test_binary_filters_use_the_index_as_pylance(
    tmp_path_factory: pytest.TempPathFactory, values: list[bytes | None], pick: int, other: bytes
) -> None:
    base = tmp_path_factory.mktemp("fsb")
    ours, theirs = str(base / "ours"), str(base / "theirs")
    ll.write_dataset(_table(values), ours, max_rows_per_file=25)
    copy_tree(ours, theirs)
    for column in ("uuid", "fb"):
        ll.dataset(ours).create_scalar_index(column, "BTREE")
        lance.dataset(theirs).create_scalar_index(column, "BTREE")
    present = [v for v in values if v is not None]
    probe = present[pick % len(present)] if present else other
    for column in ("uuid", "fb"):
        for where in _filters(column, probe, other):
            want = lance.dataset(theirs).to_table(filter=where).sort_by("row")
            for ds in (ll.dataset(ours), lance.dataset(ours)):
                assert ds.to_table(filter=where).sort_by("row").equals(want), where
            plans = [
                lib.dataset(uri).scanner(filter=where).explain_plan()
                for lib, uri in ((ll, ours), (lance, theirs))
            ]
            assert _index_lines(plans[0]) == _index_lines(plans[1]) or "IN" in where, where


def test_pylances_own_fixed_size_binary_case(tmp_path: Path) -> None:
    """pylance's test_fixed_size_binary, its plan line compared with pylance's."""
    arr = pa.array([b"0123012301230123", b"2345234523452345"], pa.uuid())
    query = "uuid = arrow_cast(0x32333435323334353233343532333435, 'FixedSizeBinary(16)')"
    lines = []
    for lib in (ll, lance):
        ds = lib.write_dataset(pa.table({"uuid": arr}), tmp_path / lib.__name__)
        ds.create_scalar_index("uuid", "BTREE")
        lines.append(_index_lines(ds.scanner(filter=query).explain_plan()))
        assert ds.to_table(filter=query).column("uuid").to_pylist() == arr.slice(1, 1).to_pylist()
    assert (
        lines[0]
        == lines[1]
        == ["ScalarIndexQuery: query=[uuid = 32333435323334353233...]@uuid_idx(BTree)"]
    )
