"""A vector index's ``VectorIndexDetails`` as pylance 14's ``describe_indices``
shows them (measured on IVF_FLAT, IVF_PQ, IVF_SQ, IVF_RQ, IVF_HNSW_SQ and
IVF_HNSW_PQ indices):

``{"metric_type": "L2" | "COSINE" | "DOT" | "HAMMING",
"target_partition_size": n`` (when recorded)``, "hnsw": {"max_connections",
"construction_ef", "max_level"}`` (HNSW)``, "compression": {"type": "pq",
"num_bits", "num_sub_vectors"} | {"type": "sq", "num_bits"} | {"type": "rq",
"num_bits", "rotation_type": "fast"}`` (none for FLAT)``, "runtime_hints": {...}}``.

The message, field by field (lancelet's protocol copy does not describe it): 1 the
metric, 2 ``target_partition_size``, 3 HNSW (1 max connections, 2 construction ef,
3 max level), 4 PQ (1 bits, 2 sub-vectors), 5 SQ (1 bits), 6 RQ (1 bits, 2 the
rotation), 8 FLAT (empty), 9 the runtime hints (a string map).  Details holding
anything else are not shown (None) rather than shown wrongly.
"""

from __future__ import annotations

from typing import Any

_METRICS = {0: "L2", 1: "COSINE", 2: "DOT", 3: "HAMMING"}
_ROTATIONS = {0: "fast"}
_VARINT, _BYTES = 0, 2


class _Unknown(Exception):
    """The details hold a field or value not measured."""


def describe(value: bytes) -> dict[str, Any] | None:
    try:
        fields = _fields(value)
        out: dict[str, Any] = {"metric_type": _METRICS[_single(fields, 1, 0)]}
        known = {1, 2, 3, 4, 5, 6, 8, 9}
        if set(fields) - known:
            raise _Unknown
        if 2 in fields:
            out["target_partition_size"] = _single(fields, 2, 0)
        if 3 in fields:
            hnsw = _message(fields, 3, {1, 2, 3})
            out["hnsw"] = {
                "max_connections": _single(hnsw, 1, 0),
                "construction_ef": _single(hnsw, 2, 0),
                "max_level": _single(hnsw, 3, 0),
            }
        compression = _compression(fields)
        if compression is not None:
            out["compression"] = compression
        out["runtime_hints"] = dict(_hint(entry) for entry in fields.get(9, []))
        return out
    except (_Unknown, KeyError, IndexError, UnicodeDecodeError):
        return None


def _compression(fields: dict[int, list[Any]]) -> dict[str, Any] | None:
    present = [n for n in (4, 5, 6) if n in fields]
    if len(present) > 1:
        raise _Unknown
    if 4 in fields:
        pq = _message(fields, 4, {1, 2})
        return {"type": "pq", "num_bits": _single(pq, 1, 0), "num_sub_vectors": _single(pq, 2, 0)}
    if 5 in fields:
        return {"type": "sq", "num_bits": _single(_message(fields, 5, {1}), 1, 0)}
    if 6 in fields:
        rq = _message(fields, 6, {1, 2})
        rotation = _ROTATIONS[_single(rq, 2, 0)]
        return {"type": "rq", "num_bits": _single(rq, 1, 0), "rotation_type": rotation}
    return None


def _hint(entry: Any) -> tuple[str, str]:
    if not isinstance(entry, bytes):
        raise _Unknown
    pair = _fields(entry)
    key, value = pair.get(1, [b""])[0], pair.get(2, [b""])[0]
    if not isinstance(key, bytes) or not isinstance(value, bytes):
        raise _Unknown
    return key.decode("utf-8"), value.decode("utf-8")


def _message(fields: dict[int, list[Any]], number: int, known: set[int]) -> dict[int, list[Any]]:
    raw = fields[number]
    if len(raw) != 1 or not isinstance(raw[0], bytes):
        raise _Unknown
    inner = _fields(raw[0])
    if set(inner) - known:
        raise _Unknown
    return inner


def _single(fields: dict[int, list[Any]], number: int, default: int) -> int:
    values = fields.get(number, [default])
    if len(values) != 1 or not isinstance(values[0], int):
        raise _Unknown
    return values[0]


def _fields(data: bytes) -> dict[int, list[Any]]:
    """Field number -> its values (ints for varints, bytes for length-delimited)."""
    out: dict[int, list[Any]] = {}
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == _VARINT:
            value, at = _varint(data, at)
            out.setdefault(number, []).append(value)
        elif wire == _BYTES:
            size, at = _varint(data, at)
            if at + size > len(data):
                raise _Unknown
            out.setdefault(number, []).append(data[at : at + size])
            at += size
        else:
            raise _Unknown
    return out


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise _Unknown
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7
