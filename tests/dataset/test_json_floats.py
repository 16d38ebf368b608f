"""JSON floats read back as pylance prints them.

Lance prints a float with its shortest round-trip digits (Ryu), positional from
1e-5 up to 1e16 and ``d.ddde±N`` beyond; lancelet's compiled printer has its own Ryu
and the reference formats through ``repr``.  pylance is the oracle: the same
documents, written by each library, read back as the same text by both printers.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from pathlib import Path

import lance
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lancelet as ll
from lancelet.file import jsonb

# Every finite double: any bit pattern, so subnormals and extremes come up often.
_BITS = st.integers(0, (1 << 64) - 1).map(lambda b: struct.unpack("<d", b.to_bytes(8, "little"))[0])
_FINITE = (
    st.floats(allow_nan=False, allow_infinity=False)
    | _BITS.filter(lambda v: v == v and abs(v) != float("inf"))
    | st.integers(-(1 << 60), 1 << 60).map(float)  # integers as floats
    | st.sampled_from(
        [5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 1e16, 1e-5, 1e-7, -0.0]
    )
    | st.decimals(allow_nan=False, allow_infinity=False, places=3).map(float)
)
_NESTED = st.recursive(
    _FINITE,
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=3), kids, max_size=4)
    ),
    max_leaves=12,
)


@pytest.fixture(params=["1", "0"], ids=["jit", "nojit"])
def printer(request: pytest.FixtureRequest) -> Iterator[None]:
    """Both printers, the compiled one on small columns too."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LANCELET_JIT", request.param)
        patch.setattr(jsonb, "COMPILED_MIN_BYTES", 0)
        yield


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(values=st.lists(_NESTED, min_size=1, max_size=40))
def test_floats_read_as_pylance_prints_them(
    values: list[object], tmp_path_factory: pytest.TempPathFactory, printer: None
) -> None:
    docs = [json.dumps(v) for v in values]
    table = pa.table({"j": pa.array(docs, pa.json_())})
    root = tmp_path_factory.mktemp("floats")
    lance.write_dataset(table, str(root / "p"))
    ll.write_dataset(table, str(root / "l"))
    expected = lance.dataset(str(root / "p")).to_table()["j"].to_pylist()
    assert ll.dataset(str(root / "p")).to_table()["j"].to_pylist() == expected
    assert ll.dataset(str(root / "l")).to_table()["j"].to_pylist() == expected


def test_hard_floats_read_as_pylance_prints_them(tmp_path: Path, printer: None) -> None:
    hard = [1.0, 1e16, 1e-7, 123456789012345680000.0, -0.0, 0.0, 5e-324, 1.7976931348623157e308]
    hard += [1e-5, 1e-6, 9.999999999999999e15, 1e15, 0.1, 1e23, 9007199254740993.0, 0.3]
    hard += [2.0**k for k in range(-1074, 1024, 7)] + [10.0**k for k in range(-323, 309, 5)]
    docs = [json.dumps(v) for v in hard] + [json.dumps(hard)]
    table = pa.table({"j": pa.array(docs, pa.json_())})
    lance.write_dataset(table, str(tmp_path / "p"))
    expected = lance.dataset(str(tmp_path / "p")).to_table()["j"].to_pylist()
    assert ll.dataset(str(tmp_path / "p")).to_table()["j"].to_pylist() == expected
