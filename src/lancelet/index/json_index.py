"""JSON indices: a scalar index over one path of a JSON column, as pylance 14 makes them.

``create_scalar_index(col, IndexConfig("json", {"target_index_type": "btree", "path":
"x"}))`` extracts the value at ``path`` from every document and indexes those values
with the target index type.  On disk a JSON index is exactly its target index (the
same files in ``_indices/<uuid>/``); the manifest records ``JsonIndexDetails``
(``/lance.index.pb.JsonIndexDetails``: the path as given, and the target's details as
a protobuf Any) at index version 0.

The values' type is inferred as pylance infers it: from the first non-null value in
row order, JSON ``true``/``false`` giving Boolean, integers that fit int64 Int64 (others
Float64), other numbers Float64, strings Utf8, and Utf8 when every value is null.  Every
other value must have that type (integers are also taken where floats are); an array or
an object is refused.  A document that is null, or where the path leads nowhere or to a
JSON null, has a null value.

Paths are chains of object keys, ``x`` or ``x.y``, with or without a leading ``$.``;
lancelet builds nothing else (array subscripts, quoted keys).  A filter uses the index
when it applies ``json_get_int``, ``json_get_float``, ``json_get_bool`` or
``json_get_string`` to the column with a key equal to the index's path, the function's
type is the index's value type, and the key is a plain key those functions read as
the index reads its path (letters, digits, underscores; not all digits, which they
read as an array subscript).  Other uses (``json_extract``, nested paths) scan.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from google.protobuf import any_pb2

from lancelet._proto import index_pb2
from lancelet.errors import ArgumentError, CorruptIndexError
from lancelet.index._files import IndexDetails

TYPE_URL = "/lance.index.pb.JsonIndexDetails"
INDEX_VERSION = 0
# The target types lancelet builds and reads under a JSON index: those whose files
# record the values' type (a Bloom filter's do not, so it could not tell an int64
# filter from a float64 one).
TARGETS = frozenset({"BTREE", "BITMAP", "ZONEMAP"})
_KEY = re.compile(r"[A-Za-z0-9_]+")
_I64 = (-(1 << 63), (1 << 63) - 1)


# --- details --------------------------------------------------------------------------


def wrap(path: str, target: IndexDetails) -> IndexDetails:
    """The details of a JSON index over ``path`` whose target index has ``target``."""
    message = index_pb2.JsonIndexDetails(
        path=path, target_details=any_pb2.Any(type_url=target.type_url, value=target.value)
    )
    return IndexDetails(TYPE_URL, message.SerializeToString(), INDEX_VERSION)


@dataclass(frozen=True)
class JsonDetails:
    path: str
    target_type_url: str
    target_value: bytes


def unwrap(type_url: str, value: bytes) -> JsonDetails | None:
    """The path and target details of a JSON index's details; None for another kind."""
    if type_url != TYPE_URL:
        return None
    message = index_pb2.JsonIndexDetails()
    try:
        message.ParseFromString(value)
    except Exception as exc:  # protobuf's DecodeError
        raise CorruptIndexError(f"JsonIndexDetails do not decode: {exc}") from exc
    if not message.HasField("target_details"):
        raise CorruptIndexError("JsonIndexDetails name no target index")
    target = message.target_details
    return JsonDetails(message.path, target.type_url, bytes(target.value))


# --- paths and filters ------------------------------------------------------------------


def path_keys(path: str, where: str) -> tuple[str, ...]:
    """The object keys ``path`` follows; refuses paths lancelet does not build on."""
    if not isinstance(path, str):
        raise ArgumentError(f"{where}: the JSON index path must be a string, not {path!r}")
    body = path[2:] if path.startswith("$.") else path
    keys = tuple(body.split("."))
    if not body or not all(_KEY.fullmatch(k) for k in keys):
        raise ArgumentError(
            f"{where}: lancelet builds JSON indices on paths of object keys (letters, digits "
            f"and underscores: 'x', 'x.y', '$.x.y'), not {path!r}"
        )
    return keys


def answers_key(key: str) -> bool:
    """Whether ``json_get_*(col, key)`` reads what an index on path ``key`` holds."""
    return _KEY.fullmatch(key) is not None and not key.isdigit()


# --- building ------------------------------------------------------------------------------


def extracted(
    batches: Iterable[tuple[pa.Array, np.ndarray]],
    path: str,
    where: str,
    value_type: pa.DataType | None = None,
) -> tuple[list[tuple[pa.Array, np.ndarray]], pa.DataType]:
    """Each batch's values at ``path`` (the documents given as JSON text) with their
    row addresses, in ``value_type`` (an existing index's, when it is rebuilt with more
    rows) or else the type inferred from the first value, and that type."""
    keys = path_keys(path, where)
    raw = [(_values_at(docs, keys), rows) for docs, rows in batches]
    found = _Typing(path, where, value_type)
    for values, _ in raw:
        found.check(values)
    dtype = found.type or pa.string()
    return [(_typed(values, dtype), rows) for values, rows in raw], dtype


def _values_at(docs: pa.Array, keys: tuple[str, ...]) -> list[Any]:
    texts = docs.storage if isinstance(docs, pa.ExtensionArray) else docs
    return [None if t is None else _follow(json.loads(t), keys) for t in texts.to_pylist()]


def _follow(value: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "Boolean"
    if isinstance(value, int):
        return "Int64" if _I64[0] <= value <= _I64[1] else "Float64"
    if isinstance(value, float):
        return "Float64"
    if isinstance(value, str):
        return "Utf8"
    return "Array" if isinstance(value, list) else "Object"


_ARROW = {"Boolean": pa.bool_(), "Int64": pa.int64(), "Float64": pa.float64(), "Utf8": pa.string()}
_NAMES = {dtype: name for name, dtype in _ARROW.items()}


class _Typing:
    """The values' type: the first non-null value's, which every other must have."""

    def __init__(self, path: str, where: str, known: pa.DataType | None = None) -> None:
        self.path = path
        self.where = where
        self.name = None if known is None else _NAMES[known]
        self.row = 0

    @property
    def type(self) -> pa.DataType | None:
        return None if self.name is None else _ARROW[self.name]

    def check(self, values: list[Any]) -> None:
        for value in values:
            if value is not None:
                self._check(_json_type(value))
            self.row += 1

    def _check(self, kind: str) -> None:
        if self.name is None:
            if kind not in _ARROW:
                raise ArgumentError(
                    f"{self.where}: cannot create a JSON index for JSON path {self.path!r} with "
                    f"JSON type {kind}; only scalar values are supported"
                )
            self.name = kind
        elif kind != self.name and not (self.name == "Float64" and kind == "Int64"):
            raise ArgumentError(
                f"{self.where}: JSON path {self.path!r} expected {self.name}, but row "
                f"{self.row} has JSON type {kind}"
            )


def _typed(values: list[Any], dtype: pa.DataType) -> pa.Array:
    if pa.types.is_floating(dtype):
        values = [None if v is None else float(v) for v in values]
    return pa.array(values, dtype)
