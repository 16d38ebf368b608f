"""The common type DataFusion gives the arguments of ``coalesce``, ``nullif``, ``nvl``,
``greatest``, ``least`` and the like, for the types lancelet supports there.

What pylance does, as probed:

* NULL literals take the other arguments' type.
* Integers: the widest of them when all are signed or all unsigned; a signed and an
  unsigned one meet in a signed type wide enough for both (``uint8`` and ``int8`` in
  ``int16``), ``uint64`` with a signed type in ``decimal(20, 0)``.
* Integers and floats: ``float64`` if one is ``float64``, otherwise ``float32`` (even for
  ``int64``).
* Decimals with other numbers: every number as a decimal wide enough for its type
  (``int64`` as ``decimal(20, 0)``, ``float32`` as ``decimal(14, 7)``, ``float64`` as
  ``decimal(30, 15)``); the union keeps the most integer digits and the largest scale.
* ``string`` and ``large_string``: ``large_string``.
* Timestamps of one time zone: the coarsest unit, the finer values truncated to it.
* Otherwise the types must be equal.

Mixes pylance resolves by casting strings to numbers or dates (which may fail on some
rows), dates with timestamps, and timestamps of different zones, are refused.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

__all__ = ["CoercionError", "common_type"]

_DECIMAL_OF: dict[pa.DataType, tuple[int, int]] = {
    pa.int8(): (3, 0),
    pa.int16(): (5, 0),
    pa.int32(): (10, 0),
    pa.int64(): (20, 0),
    pa.uint8(): (3, 0),
    pa.uint16(): (5, 0),
    pa.uint32(): (10, 0),
    pa.uint64(): (20, 0),
    pa.float32(): (14, 7),
    pa.float64(): (30, 15),
}
_SIGNED = {8: pa.int8(), 16: pa.int16(), 32: pa.int32(), 64: pa.int64()}
_UNSIGNED = {8: pa.uint8(), 16: pa.uint16(), 32: pa.uint32(), 64: pa.uint64()}


class CoercionError(Exception):
    """The types have no common type lancelet supports."""


def common_type(types: Sequence[pa.DataType]) -> pa.DataType:
    """The type DataFusion brings ``types`` to; :class:`CoercionError` if lancelet does
    not support the mix."""
    known = [t for t in types if not pa.types.is_null(t)]
    if not known:
        return pa.null()
    if all(t == known[0] for t in known):
        return known[0]
    if all(pa.types.is_string(t) or pa.types.is_large_string(t) for t in known):
        return pa.large_string()
    if all(t in _DECIMAL_OF or pa.types.is_decimal(t) for t in known):
        return _numeric(known)
    if all(pa.types.is_timestamp(t) for t in known) and len({t.tz for t in known}) == 1:
        # The coarsest unit (pylance truncates the finer values to it).
        return min(known, key=lambda t: _UNIT_ORDER[t.unit])
    raise CoercionError(", ".join(str(t) for t in known))


_UNIT_ORDER = {"s": 0, "ms": 1, "us": 2, "ns": 3}


def _numeric(types: list[pa.DataType]) -> pa.DataType:
    if any(pa.types.is_decimal(t) for t in types):
        return _decimal(types)
    floats = [t for t in types if pa.types.is_floating(t)]
    if floats:
        if pa.float16() in floats:
            raise CoercionError("float16")
        return pa.float64() if pa.float64() in floats else pa.float32()
    signed = [t.bit_width for t in types if pa.types.is_signed_integer(t)]
    unsigned = [t.bit_width for t in types if pa.types.is_unsigned_integer(t)]
    if not unsigned:
        return _SIGNED[max(signed)]
    if not signed:
        return _UNSIGNED[max(unsigned)]
    if max(unsigned) < max(signed):
        return _SIGNED[max(signed)]
    if max(unsigned) == 64:
        return pa.decimal128(20, 0)
    return _SIGNED[2 * max(unsigned)]


def _decimal(types: list[pa.DataType]) -> pa.DataType:
    shapes = [(t.precision, t.scale) if pa.types.is_decimal(t) else _DECIMAL_OF[t] for t in types]
    if any(scale < 0 for _, scale in shapes) or any(
        pa.types.is_decimal(t) and t.bit_width != 128 for t in types
    ):
        raise CoercionError(", ".join(str(t) for t in types))
    scale = max(s for _, s in shapes)
    digits = max(p - s for p, s in shapes)
    if digits + scale > 38:
        raise CoercionError(", ".join(str(t) for t in types))
    return pa.decimal128(digits + scale, scale)
