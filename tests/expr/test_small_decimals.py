"""Decimal + - * in int64 (small_decimals) against Python's decimal arithmetic, and the
cases it must leave to the exact path."""

from __future__ import annotations

import decimal

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lancelet.errors import FilterError
from lancelet.expr.sql import small_decimals
from lancelet.expr.sql.value_types import _decimal_compute, _decimal_type

D = decimal.Decimal
_WIDE = decimal.Context(prec=100)  # the default context rounds to 28 digits
_OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}


def _unscaled(precision: int) -> st.SearchStrategy[int]:
    top = 10**precision - 1
    edges = st.sampled_from([0, 1, -1, top, -top, 2**31, -(2**31), 2**62, -(2**62)])
    return st.one_of(st.integers(-top, top), edges.filter(lambda v: abs(v) <= top))


@st.composite
def _decimal_arrays(draw: st.DrawFn, length: int) -> pa.Array:
    precision = draw(st.integers(1, 38))
    scale = draw(st.integers(0, min(precision, 6)))
    values = draw(
        st.lists(st.none() | _unscaled(precision), min_size=length + 2, max_size=length + 2)
    )
    decimals = [None if v is None else D(v).scaleb(-scale, _WIDE) for v in values]
    # Sliced by one row at each end, so the array starts at an offset.
    return pa.array(decimals, pa.decimal128(precision, scale)).slice(1, length)


def _expected(op: str, a: pa.Array, b: pa.Array, result: pa.DataType) -> list[D | None]:
    with decimal.localcontext() as context:
        context.prec = 200
        return [
            None
            if x is None or y is None
            # DataFusion truncates toward zero to a capped scale.
            else _OPS[op](x, y).quantize(D(1).scaleb(-result.scale), decimal.ROUND_DOWN)
            for x, y in zip(a.to_pylist(), b.to_pylist(), strict=True)
        ]


@settings(max_examples=300, deadline=None)
@given(data=st.data(), op=st.sampled_from(sorted(_OPS)), length=st.integers(0, 20))
def test_fast_results_are_exact(data: st.DataObject, op: str, length: int) -> None:
    a = data.draw(_decimal_arrays(length))
    b = data.draw(_decimal_arrays(length))
    result = _decimal_type(op, a.type, b.type)
    fast = small_decimals.compute(op, a, b, result)
    exact = _expected(op, a, b, result)
    limit = D(10**result.precision).scaleb(-result.scale, _WIDE)
    # copy_abs, not abs(): abs() rounds to the context's 28 digits.
    if any(v is not None and v.copy_abs() >= limit for v in exact):
        # Beyond the result's precision: an error, as in DataFusion, never a value.
        assert fast is None
        with pytest.raises(FilterError):
            _decimal_compute(op, a, b, result)
        return
    if fast is not None:
        fast.validate(full=True)
        assert fast.type == result
        assert fast.to_pylist() == exact
    # Through the entry point either path gives the same values.
    assert _decimal_compute(op, a, b, result).to_pylist() == exact


@settings(max_examples=100, deadline=None)
@given(data=st.data(), op=st.sampled_from(sorted(_OPS)), length=st.integers(1, 10))
def test_a_scalar_operand(data: st.DataObject, op: str, length: int) -> None:
    a = data.draw(_decimal_arrays(length))
    value = data.draw(st.none() | st.integers(-(10**6), 10**6))
    scalar = pa.scalar(None if value is None else D(value).scaleb(-2), pa.decimal128(9, 2))
    result = _decimal_type(op, a.type, scalar.type)
    fast = small_decimals.compute(op, a, scalar, result)
    exact = _expected(op, a, pa.array([scalar.as_py()] * length, scalar.type), result)
    if fast is not None:
        assert fast.to_pylist() == exact


def test_lineitem_arithmetic_takes_the_fast_path() -> None:
    price = pa.array([D("90000.00"), D("0.01"), None, D("-1.50")], pa.decimal128(15, 2))
    discount = pa.array([D("0.04"), D("0.10"), D("0.00"), None], pa.decimal128(15, 2))
    one_minus = small_decimals.compute(
        "-", pa.scalar(D(1), pa.decimal128(20, 0)), discount, pa.decimal128(23, 2)
    )
    assert one_minus is not None
    assert one_minus.to_pylist() == [D("0.96"), D("0.90"), D("1.00"), None]
    net = small_decimals.compute("*", price, one_minus, pa.decimal128(38, 4))
    assert net is not None
    assert net.to_pylist() == [D("86400.0000"), D("0.0090"), None, None]


@pytest.mark.parametrize(
    ("op", "a", "b", "result"),
    [
        # The product's scale capped below s1 + s2: DataFusion truncates, exact path.
        ("*", pa.decimal128(38, 20), pa.decimal128(38, 20), pa.decimal128(38, 38)),
        # A product beyond int64.
        ("*", pa.decimal128(18, 0), pa.decimal128(18, 0), pa.decimal128(37, 0)),
        # Division and remainder are never computed here.
        ("/", pa.decimal128(5, 2), pa.decimal128(5, 2), pa.decimal128(11, 6)),
        ("%", pa.decimal128(5, 2), pa.decimal128(5, 2), pa.decimal128(5, 2)),
    ],
)
def test_left_to_the_exact_path(
    op: str, a: pa.DataType, b: pa.DataType, result: pa.DataType
) -> None:
    big = 10 ** min(a.precision, 18) - 1
    left = pa.array([D(big).scaleb(-a.scale)], a)
    right = pa.array([D(big).scaleb(-b.scale)], b)
    assert small_decimals.compute(op, left, right, result) is None


def test_values_beyond_int64_are_left_alone() -> None:
    wide = pa.array([D(2**70), D(1)], pa.decimal128(38, 0))
    assert small_decimals.compute("+", wide, wide, pa.decimal128(38, 0)) is None
    # A wide value in a NULL slot does not matter: only valid values are computed.
    validity = pa.array([False, True]).buffers()[1]
    masked = pa.Array.from_buffers(wide.type, 2, [validity, wide.buffers()[1]], null_count=1)
    summed = small_decimals.compute("+", masked, masked, pa.decimal128(38, 0))
    assert summed is not None
    assert summed.to_pylist() == [None, D(2)]


def test_a_38_digit_sum_within_precision() -> None:
    # 29 significant digits: Python's abs() would round it up to 10**38 under the
    # default context; the sum is in range and both paths give it exactly.
    big = D("99999999999999999999999999995000000000")
    a = pa.array([D(0)], pa.decimal128(1, 0))
    b = pa.array([big], pa.decimal128(38, 0))
    result = _decimal_type("+", a.type, b.type)
    assert _decimal_compute("+", a, b, result).to_pylist() == [big]


@pytest.mark.parametrize("nulls", [False, True])
def test_wide_operands_whose_row_products_fit(nulls: bool) -> None:
    """The largest values lie in different rows (or beside the other operand's nulls):
    Arrow would type their product past 76 digits, but every row's product fits."""
    big = D(10**37)
    left = [big, None if nulls else D(1)]
    right = [None if nulls else D(1), big]
    a = pa.array(left, pa.decimal128(38, 0))
    b = pa.array(right, pa.decimal128(38, 0))
    result = _decimal_type("*", a.type, b.type)
    expected = [None, None] if nulls else [big, big]
    assert _decimal_compute("*", a, b, result).to_pylist() == expected
    # A row whose own product does not fit is still an error.
    with pytest.raises(FilterError):
        _decimal_compute("*", pa.array([big], a.type), pa.array([big], b.type), result)
