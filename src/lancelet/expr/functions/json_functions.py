"""Lance's JSON functions in filters and projections, as pyarrow UDFs.

``json_extract(j, path)`` (the value's JSON text), ``json_exists(j, path)``,
``json_array_contains(j, path, text)``, ``json_array_length(j, path)``,
``json_get(j, key)`` (JSONB, so calls nest) and ``json_get_string`` / ``_int`` /
``_float`` / ``_bool(j, key)`` (the value converted as Lance converts it).

``j`` is a JSON column (``arrow.json``, text) or the JSONB ``json_get`` returns.
Paths are JSONPath with keys (``.k``, ``['k']``) and non-negative subscripts
(``[0]``); a key argument is a string (an object key, or an array index when it is
all digits) or an integer.  A document that is SQL NULL gives NULL.  Each document
is parsed once per call: JSON has no columnar form to vectorize over.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import re
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelet.errors import FilterError, FilterEvaluationError
from lancelet.expr.sql import kernels
from lancelet.file import jsonb
from lancelet.file.extensions import ARROW_JSON, is_extension

_MISSING = object()
Step = str | int  # an object key, or an array subscript

NAMES = frozenset(
    {
        "json_extract",
        "json_exists",
        "json_array_contains",
        "json_array_length",
        "json_get",
        "json_get_string",
        "json_get_int",
        "json_get_float",
        "json_get_bool",
    }
)
_OUTPUT: dict[str, pa.DataType] = {
    "json_extract": pa.string(),
    "json_exists": pa.bool_(),
    "json_array_contains": pa.bool_(),
    "json_array_length": pa.int64(),
    "json_get": pa.large_binary(),
    "json_get_string": pa.string(),
    "json_get_int": pa.int64(),
    "json_get_float": pa.float64(),
    "json_get_bool": pa.bool_(),
}


def call_parts(node: exp.Expression) -> tuple[str, exp.Expression, list[Any]]:
    """A JSON function call's name, its document argument and its literal arguments
    (a path as steps, a key, a text), checked."""
    if isinstance(node, exp.JSONExtract):
        name, subject, rest = "json_extract", node.this, [node.expression]
    elif isinstance(node, exp.JSONArrayContains):
        name, subject = "json_array_contains", node.this
        rest = [node.expression, node.args.get("json_type")]
    else:
        name, args = node.name.lower(), list(node.expressions)
        subject, rest = (args[0] if args else None), args[1:]
    wanted = 2 if name == "json_array_contains" else 1
    if subject is None or len(rest) != wanted or any(r is None for r in rest):
        raise FilterError(f"{name} takes {wanted + 1} arguments")
    if name.startswith("json_get"):
        return name, subject, [_key(rest[0], name)]
    params: list[Any] = [_path(rest[0], name)]
    if name == "json_array_contains":
        params.append(_text(rest[1], name))
    return name, subject, params


def _literal(node: exp.Expression, name: str) -> exp.Literal:
    if not isinstance(node, exp.Literal):
        raise FilterError(f"{name}: the path, key or text must be a literal, not {node.sql()}")
    return node


def _key(node: exp.Expression, name: str) -> Step:
    negative = isinstance(node, exp.Neg)
    literal = _literal(node.this if negative else node, name)
    if literal.is_string and not negative:
        return str(literal.this)
    try:
        number = int(literal.this)
    except ValueError as exc:
        raise FilterError(f"{name}: a key is a string or an integer, not {literal.sql()}") from exc
    return -number if negative else number


def _text(node: exp.Expression, name: str) -> str:
    literal = _literal(node, name)
    if not literal.is_string:
        raise FilterError(f"{name}: the value to look for must be a string literal")
    return str(literal.this)


_STEP = re.compile(r"\.([^.\[\]*]+)|\[(-?\d+)\]|\['([^']*)'\]|\[\"([^\"]*)\"\]")


def _path(node: exp.Expression, name: str) -> tuple[Step, ...]:
    if isinstance(node, exp.JSONPath):
        return _sqlglot_path(node, name)
    text = _text(node, f"{name} (path)")
    if not text.startswith("$"):
        raise FilterError(f"{name}: the path {text!r} does not start with '$'")
    steps: list[Step] = []
    pos = 1
    while pos < len(text):
        match = _STEP.match(text, pos)
        if match is None:
            raise FilterError(
                f"{name}: lancelet reads JSONPath keys and subscripts only, not {text!r}"
            )
        key, index, single, double = match.groups()
        steps.append(
            int(index)
            if index is not None
            else next(k for k in (key, single, double) if k is not None)
        )
        pos = match.end()
    return tuple(steps)


def _sqlglot_path(node: exp.JSONPath, name: str) -> tuple[Step, ...]:
    steps: list[Step] = []
    for part in node.expressions:
        if isinstance(part, exp.JSONPathRoot):
            continue
        if (isinstance(part, exp.JSONPathKey) and isinstance(part.this, str)) or (
            isinstance(part, exp.JSONPathSubscript) and isinstance(part.this, int)
        ):
            steps.append(part.this)
        else:
            raise FilterError(f"{name}: lancelet reads JSONPath keys and subscripts only")
    return tuple(steps)


# -- evaluation ----------------------------------------------------------------------


def input_type(dtype: pa.DataType, name: str) -> pa.DataType:
    """The storage type a document argument is passed to the UDF as."""
    if is_extension(dtype) and dtype.extension_name == ARROW_JSON:
        return pa.string()
    if dtype == pa.large_binary():
        return dtype  # JSONB, from json_get
    raise FilterError(f"{name} takes a JSON column or json_get(...), not {dtype}")


def expression(
    name: str, subject: pc.Expression, subject_type: pa.DataType, params: Sequence[Any]
) -> tuple[pc.Expression, pa.DataType]:
    storage = input_type(subject_type, name)
    operand = subject.cast(storage) if storage != subject_type else subject
    udf = _register(name, storage, tuple(type(p).__name__ for p in params))
    scalars = [pc.scalar(json.dumps(p) if isinstance(p, tuple) else p) for p in params]
    return kernels.call(udf, [operand, *scalars]), _OUTPUT[name]


_PARAM_TYPES = {"str": pa.string(), "int": pa.int64(), "tuple": pa.string()}


@functools.cache
def _register(name: str, storage: pa.DataType, params: tuple[str, ...]) -> str:
    udf = f"lancelet_{name}_{'text' if storage == pa.string() else 'jsonb'}_{'_'.join(params)}"
    row = _ROW_FUNCTIONS[name]

    def kernel(_context: Any, docs: pa.Array, *args: pa.Scalar) -> pa.Array:
        values = [a.as_py() for a in args]
        if params and params[0] == "tuple":
            values[0] = tuple(json.loads(values[0]))
        out = [None if d is None else row(_parse(d), *values) for d in docs.to_pylist()]
        return pa.array(out, _OUTPUT[name])

    in_types = {"doc": storage} | {f"p{i}": _PARAM_TYPES[p] for i, p in enumerate(params)}
    doc = {"summary": f"Lance's {name}", "description": "NULL for a NULL document."}
    with contextlib.suppress(pa.ArrowKeyError):
        pc.register_scalar_function(kernel, udf, doc, in_types, _OUTPUT[name])
    return udf


def _parse(doc: str | bytes) -> Any:
    text = jsonb.decode(doc) if isinstance(doc, bytes) else doc
    return json.loads(text)


def _follow(value: Any, steps: Sequence[Step]) -> Any:
    for step in steps:
        if isinstance(step, int):
            ok = isinstance(value, list) and 0 <= step < len(value)
            value = value[step] if ok else _MISSING
        else:
            value = value.get(step, _MISSING) if isinstance(value, dict) else _MISSING
        if value is _MISSING:
            break
    return value


def _get(value: Any, key: Step) -> Any:
    if isinstance(value, list):
        index = key if isinstance(key, int) else int(key) if key.isdigit() else -1
        return value[index] if 0 <= index < len(value) else _MISSING
    if isinstance(value, dict):
        return value.get(str(key), _MISSING)
    return _MISSING


def _extract(doc: Any, path: tuple[Step, ...]) -> str | None:
    value = _follow(doc, path)
    return None if value is _MISSING else jsonb.to_text(value)


def _exists(doc: Any, path: tuple[Step, ...]) -> bool:
    return _follow(doc, path) is not _MISSING


def _array_contains(doc: Any, path: tuple[Step, ...], needle: str) -> bool:
    items = _follow(doc, path)
    if not isinstance(items, list):
        return False
    return any((i if isinstance(i, str) else jsonb.to_text(i)) == needle for i in items)


def _array_length(doc: Any, path: tuple[Step, ...]) -> int | None:
    value = _follow(doc, path)
    if value is _MISSING:
        return None
    return len(value) if isinstance(value, list) else 0


def _json_get(doc: Any, key: Step) -> bytes | None:
    value = _get(doc, key)
    return None if value is _MISSING else jsonb.encode_value(value)


def _converter(convert: Callable[[Any], Any]) -> Callable[[Any, Step], Any]:
    def row(doc: Any, key: Step) -> Any:
        value = _get(doc, key)
        return None if value is _MISSING or value is None else convert(value)

    return row


def _fail(value: Any, what: str) -> FilterEvaluationError:
    return FilterEvaluationError(f"Failed to convert to {what}: {jsonb.to_text(value)}")


def _as_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        raise _fail(value, "string")
    return jsonb.to_text(value)


# Rust's float syntax, without its inf / NaN spellings (refused below).
_FLOAT_TEXT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_INT_TEXT = re.compile(r"[+-]?\d+")
_I64 = (-(1 << 63), (1 << 63) - 1)


def _as_float(value: Any) -> float:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and _FLOAT_TEXT.fullmatch(value):
        return float(value)
    raise _fail(value, "float")


def _as_int(value: Any) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, str) and _INT_TEXT.fullmatch(value):
        number = int(value)
    elif isinstance(value, int):
        number = value
    else:
        try:
            number = _round_half_away(value if isinstance(value, float) else _as_float(value))
        except FilterEvaluationError:
            raise _fail(value, "integer") from None
    if not _I64[0] <= number <= _I64[1]:
        raise _fail(value, "integer")
    return number


def _round_half_away(value: float) -> int:
    if not math.isfinite(value):
        raise FilterEvaluationError(f"Failed to convert to integer: {value}")
    magnitude = abs(value)
    whole = math.floor(magnitude)
    rounded = whole + 1 if magnitude - whole >= 0.5 else whole
    return -rounded if value < 0 else rounded


def _as_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise _fail(value, "boolean")


_ROW_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "json_extract": _extract,
    "json_exists": _exists,
    "json_array_contains": _array_contains,
    "json_array_length": _array_length,
    "json_get": _json_get,
    "json_get_string": _converter(_as_string),
    "json_get_int": _converter(_as_int),
    "json_get_float": _converter(_as_float),
    "json_get_bool": _converter(_as_bool),
}
