"""``array_has_any``, ``array_has_all`` and ``array_has`` over list columns, as pylance 14
(DataFusion) evaluates them, for :mod:`lancelet.expr.filter` and :mod:`lancelet.expr`.

What pylance does, and lancelet with it:

* A list holds a value when one of its items equals it.  Floats are equal when their
  bits are (equal in IEEE 754's total order): ``-0.0`` is not ``0.0``, a NaN equals a
  NaN with the same bits.  A NULL in the values matches a NULL item.
* The result is NULL where the list is NULL, except that an empty array of values
  gives FALSE (any) or TRUE (all) on every row; ``array_has(l, NULL)`` and
  ``array_has_any(l, NULL)`` are NULL on every row.
* Items and values are compared in a common type (:func:`needles`): integers with
  integers exactly; when a float is involved, in the widest float type of the two
  sides, the other side's integers rounded to it (an ``int32`` list and a ``float32``
  value compare in ``float32``; a ``float32`` list and ``0.1``, a ``float64``, in
  ``float64``, so ``0.1`` is not found).  The literal array's own values are first
  brought to one type the same way (``[1, 2.5]`` is ``float64``).

Lists of integers, ``float32``/``float64``, strings, booleans and dates are supported,
with values of the same family; other mixes are refused (pylance refuses most of them
or fails while scanning).

The test itself (:func:`has_values`) is a pyarrow UDF, vectorized over the items of a
whole batch of lists.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet.errors import FilterError
from lancelet.expr.sql import kernels

__all__ = ["Mode", "Needles", "expression", "has_values", "has_values_expr", "is_list", "needles"]

Mode = Literal["any", "all"]

_FLOAT_WIDTH = {pa.float32(): 32, pa.float64(): 64}
_BITS = {pa.float16(): pa.int16(), pa.float32(): pa.int32(), pa.float64(): pa.int64()}


def is_list(dtype: pa.DataType) -> bool:
    return bool(
        pa.types.is_list(dtype)
        or pa.types.is_large_list(dtype)
        or pa.types.is_fixed_size_list(dtype)
    )


# --- typing: the values in the type they are compared in ------------------------------


@dataclass(frozen=True)
class Needles:
    """The literal values, in the type items are compared in (``values.type``; a NULL
    value stays NULL).  Integers an integer list cannot hold are left out, and
    ``unmatchable`` says whether there were any: no list holds them."""

    values: pa.Array
    unmatchable: bool


def needles(item_type: pa.DataType, literals: Sequence[pa.Scalar], *, element: bool) -> Needles:
    """Type ``literals`` for a list of ``item_type``, as pylance does.

    ``element``: the single value of ``array_has``, which pylance types more strictly
    (an integer list and a ``uint64`` value are refused, and the reverse).  Raises
    :class:`FilterError` (a reason, without the SQL) for what lancelet refuses.
    """
    family = _family(item_type)
    if family is None:
        raise FilterError(f"lancelet does not test lists of {item_type} for values")
    for value in literals:
        if not pa.types.is_null(value.type) and _family(value.type) != family:
            raise FilterError(f"a list of {item_type} cannot hold values of type {value.type}")
    if family != "number":
        return Needles(_array(literals, item_type), False)
    if element and literals:
        _check_signedness(item_type, literals[0].type)
    return _numbers(item_type, literals)


def _family(dtype: pa.DataType) -> str | None:
    if pa.types.is_integer(dtype) or dtype in _FLOAT_WIDTH:
        return "number"
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
        return "string"
    if pa.types.is_boolean(dtype) or pa.types.is_date32(dtype):
        return str(dtype)
    return None


def _array(values: Sequence[pa.Scalar], dtype: pa.DataType) -> pa.Array:
    return pa.array([v.cast(dtype, safe=False) for v in values], dtype)


def _check_signedness(item_type: pa.DataType, value_type: pa.DataType) -> None:
    # DataFusion's common type of uint64 and a signed integer is a decimal, which
    # array_has does not accept.
    pair = {item_type, value_type}
    if pa.uint64() in pair and any(pa.types.is_signed_integer(t) for t in pair):
        raise FilterError(f"array_has does not compare a list of {item_type} with {value_type}")


def _widest_float(types: Sequence[pa.DataType]) -> pa.DataType | None:
    floats = [t for t in types if t in _FLOAT_WIDTH]
    return max(floats, key=lambda t: _FLOAT_WIDTH[t]) if floats else None


def _numbers(item_type: pa.DataType, literals: Sequence[pa.Scalar]) -> Needles:
    typed = [v.type for v in literals if not pa.types.is_null(v.type)]
    union = _widest_float(typed)
    common = _widest_float([item_type, *([union] if union else [])])
    if common is None:
        return _integers(item_type, literals)
    if _mixes_uint64(typed):
        # DataFusion types such a mix as a decimal, and then compares the list's
        # floats as decimals too (failing on NaN); lancelet does not follow.
        raise FilterError(f"lancelet does not compare a mix of {', '.join(map(str, typed))}")
    values = [v if union is None else _round(v, union) for v in literals]
    return Needles(pa.array([_round(v, common) for v in values], common), False)


def _mixes_uint64(types: Sequence[pa.DataType]) -> bool:
    return pa.uint64() in types and any(pa.types.is_signed_integer(t) for t in types)


def _round(value: pa.Scalar, dtype: pa.DataType) -> pa.Scalar:
    if pa.types.is_null(value.type):
        return pa.scalar(None, dtype)
    # Integers round to the nearest float, as DataFusion's cast does.
    return value.cast(dtype, safe=False)


def _integers(item_type: pa.DataType, literals: Sequence[pa.Scalar]) -> Needles:
    """Integers compare exactly: a value outside ``item_type`` equals no item."""
    kept: list[int | None] = []
    for value in literals:
        number = value.as_py()
        if number is None or _fits(number, item_type):
            kept.append(number)
    return Needles(pa.array(kept, item_type), len(kept) < len(literals))


def _fits(number: int, dtype: pa.DataType) -> bool:
    info = np.iinfo(dtype.to_pandas_dtype())
    return int(info.min) <= number <= int(info.max)


# --- evaluation ----------------------------------------------------------------------


def expression(
    lists: pc.Expression, list_type: pa.DataType, needles: Needles, mode: Mode
) -> pc.Expression:
    """The SQL call's value over the lists ``lists`` evaluates to."""
    if needles.unmatchable and (mode == "all" or len(needles.values) == 0):
        # No list holds every value (or any, none being left): FALSE, NULL for NULL lists.
        return pc.if_else(
            pc.is_valid(lists), pc.scalar(False), pc.scalar(pa.scalar(None, pa.bool_()))
        )
    return has_values_expr(lists, list_type, needles.values, mode)


def has_values(lists: pa.Array, needles: pa.Array, mode: Mode) -> pa.BooleanArray:
    """Whether each list holds any (``mode="any"``) or every one of ``needles``.

    Items are brought to ``needles.type`` (integers to floats by rounding) and compared
    as the module docstring says.  NULL where the list is NULL; with no needles, FALSE
    (any) or TRUE (all) everywhere.
    """
    count = len(lists)
    if len(needles) == 0:
        return pa.array(np.full(count, mode == "all"), pa.bool_())
    items, parents = _items(lists)
    keys, wanted = _keys(items, needles.type), _keys(needles, needles.type)
    item_nulls = items.is_null().to_numpy(zero_copy_only=False)
    wants_null = wanted.null_count > 0
    distinct = pc.unique(wanted.drop_null())
    if mode == "any":
        hit = pc.is_in(keys, value_set=distinct, skip_nulls=True).to_numpy(zero_copy_only=False)
        if wants_null:
            hit |= item_nulls
        rows = np.zeros(count, dtype=bool)
        rows[parents[hit]] = True
    else:
        rows = _holds_all(keys, distinct, item_nulls if wants_null else None, parents, count)
    mask = lists.is_null().to_numpy(zero_copy_only=False) if lists.null_count else None
    return pa.array(rows, pa.bool_(), mask=mask)


def _items(lists: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """Every item slot of ``lists`` (those of NULL lists too) and the list of each."""
    count = len(lists)
    if pa.types.is_fixed_size_list(lists.type):
        size = lists.type.list_size
        # .values ignores the array's offset.
        items = lists.values.slice(lists.offset * size, count * size)
        lengths = np.full(count, size, dtype=np.int64)
    else:
        offsets = lists.offsets.to_numpy().astype(np.int64)
        items = lists.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
        lengths = np.diff(offsets)
    parents = np.repeat(np.arange(count, dtype=np.int64), lengths)
    if len(parents) != len(items):
        raise FilterError(f"a list array of {count} lists has inconsistent offsets")
    return items, parents


def _keys(values: pa.Array, dtype: pa.DataType) -> pa.Array:
    """Values as compared: in ``dtype``, floats as their bits."""
    if values.type != dtype:
        values = values.cast(dtype, safe=False)
    if dtype in _BITS:
        values = values.view(_BITS[dtype])
    return values


def _holds_all(
    keys: pa.Array,
    distinct: pa.Array,
    item_nulls: np.ndarray | None,
    parents: np.ndarray,
    count: int,
) -> np.ndarray:
    """Each list holds every distinct needle (and a NULL item when ``item_nulls``)."""
    wanted = len(distinct) + (item_nulls is not None)
    codes = pc.index_in(keys, value_set=distinct, skip_nulls=True)
    code = codes.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    if item_nulls is not None:
        code[item_nulls] = len(distinct)
    found = code >= 0
    pairs = np.unique(parents[found] * wanted + code[found])
    held = np.bincount(pairs // wanted, minlength=count)
    holds: np.ndarray = held == wanted
    return holds


# Float needles travel to the kernel as their bits: Arrow takes two expressions whose
# scalars compare equal (a list holding -0.0 and one holding 0.0) as one and evaluates
# it once, which would give both the answer of the first.
_FLOAT_BITS = {
    pa.float16(): pa.uint16(),
    pa.float32(): pa.uint32(),
    pa.float64(): pa.uint64(),
}


@functools.cache
def _register(list_type: pa.DataType, needle_type: pa.DataType, mode: Mode) -> str:
    # The name must be the same for equal types in every import of this module.
    digest = hashlib.sha1(f"{list_type}|{needle_type}".encode()).hexdigest()
    name = f"lancelet_array_has_{mode}_{digest}"
    passed_type = _FLOAT_BITS.get(needle_type, needle_type)

    def kernel(context: Any, lists: Any, values: pa.ListScalar) -> pa.Array:
        if isinstance(lists, pa.Scalar):
            lists = pa.repeat(lists, context.batch_length)
        needles = values.values
        if passed_type != needle_type:
            needles = needles.view(needle_type)
        return has_values(lists, needles, mode)

    doc = {
        "summary": f"SQL's array_has_{mode}",
        "description": "NULL where the list is NULL; floats compare by their bits.",
    }
    with contextlib.suppress(pa.ArrowKeyError):
        pc.register_scalar_function(
            kernel, name, doc, {"lists": list_type, "values": pa.list_(passed_type)}, pa.bool_()
        )
    return name


def has_values_expr(
    lists: pc.Expression, list_type: pa.DataType, needles: pa.Array, mode: Mode
) -> pc.Expression:
    """An expression for :func:`has_values` over the lists ``lists`` evaluates to."""
    # Built from the array itself: a float's bits (a NaN's sign) survive.
    passed = needles.view(_FLOAT_BITS[needles.type]) if needles.type in _FLOAT_BITS else needles
    values = pc.scalar(pa.ListArray.from_arrays(pa.array([0, len(needles)], pa.int32()), passed)[0])
    return kernels.call(_register(list_type, needles.type, mode), [lists, values])
