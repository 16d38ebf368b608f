"""Field metadata that steers 2.1 encodings, parsed and checked once per column.

pylance reads ``lance-encoding:*`` keys from a field's metadata.  lancelet honours
the ones it implements; a key it does not implement, or a value pylance would
reject, is refused here so that no request is silently ignored.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import pyarrow as pa

from lancelet.errors import (
    SchemaError,
    TypeVersionError,
    UnsupportedOptionError,
    UnsupportedTypeError,
)
from lancelet.file.blob_v2 import is_descriptor_field
from lancelet.file.v2_0.layout import is_packed_struct
from lancelet.file.v2_1.write import dictionary
from lancelet.file.v2_1.write.blocks import is_variable, packed_field_problem

PREFIX = b"lance-encoding:"
COMPRESSION = b"lance-encoding:compression"
LEVEL = b"lance-encoding:compression-level"
STRUCTURAL = b"lance-encoding:structural-encoding"
RLE_THRESHOLD = b"lance-encoding:rle-threshold"
BSS = b"lance-encoding:bss"
MINICHUNK = b"lance-encoding:minichunk-size"
PACKED = b"lance-encoding:packed"
BLOB = b"lance-encoding:blob"
LEGACY_PACKED = b"packed"

_SCHEMES = ("none", "lz4", "zstd", "fsst")
_DICT_SCHEMES = ("none", "lz4", "zstd")
_INT = re.compile(rb"[+-]?[0-9]+")

_HONOURED = {
    COMPRESSION,
    MINICHUNK,
    LEVEL,
    STRUCTURAL,
    RLE_THRESHOLD,
    BSS,
    dictionary.DIVISOR_KEY,
    dictionary.RATIO_KEY,
    dictionary.VALUES_COMPRESSION_KEY,
    dictionary.VALUES_LEVEL_KEY,
}


# pylance 14 run-length encodes whenever that is the smallest encoding (runs are kept
# up to 8/9 of the values for 64-bit values): a threshold of 1 only when asked for less.
RLE_DEFAULT_THRESHOLD = 1.0


@dataclass(frozen=True)
class FieldParams:
    compression: str | None = None  # None, "none", "lz4", "zstd" or "fsst"
    level: int | None = None
    structural: str | None = None  # None, "miniblock" or "fullzip"
    dict_values: str = "lz4"
    dict_values_level: int | None = None
    rle_threshold: float = RLE_DEFAULT_THRESHOLD  # run-length encode when runs < threshold * values
    bss: str = "auto"  # byte stream split: "off", "on" or "auto"
    minichunk_size: int = 4096  # the byte size variable-width chunks aim at
    metadata: Mapping[bytes, bytes] | None = None


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _level(raw: bytes | None, key: bytes, where: str) -> int | None:
    if raw is None:
        return None
    if not _INT.fullmatch(raw.strip()) or not -(2**31) <= int(raw) < 2**31:
        raise SchemaError(f"{where}: {_text(key)} must be an integer, got {_text(raw)!r}")
    return int(raw)


def _threshold(raw: bytes | None, where: str) -> float:
    if raw is None:
        return RLE_DEFAULT_THRESHOLD
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0.0 <= value <= 1.0:
        raise SchemaError(
            f"{where}: lance-encoding:rle-threshold must be a number from 0 to 1, "
            f"got {_text(raw)!r}"
        )
    return value


def _bss(raw: bytes | None, where: str) -> str:
    if raw is None:
        return "auto"
    mode = _text(raw).strip().lower()
    if mode not in ("off", "on", "auto"):
        raise SchemaError(
            f"{where}: lance-encoding:bss must be 'off', 'on' or 'auto', got {_text(raw)!r}"
        )
    return mode


def _check_packed(field: pa.Field, where: str, minor: int) -> None:
    for child in field.type:
        problem = packed_field_problem(child.type)
        if problem is not None:
            raise UnsupportedTypeError(f"{where}: packed struct cannot be written: {problem}")
        if is_variable(child.type) and minor < 2:
            # pylance: NotImplementedError from its file writer, OSError from write_dataset
            raise TypeVersionError(
                f"{where}: packed structs with variable-width fields ({child.name!r}) need "
                "Lance file format 2.2"
            )


def _check_blob(field: pa.Field, where: str, in_list: bool) -> None:
    """pylance stores ``large_binary`` values of a blob column out of line (a blob
    page); it writes no other type that way, and cannot read blobs inside lists."""
    if is_descriptor_field(field) and not in_list:
        return
    if not pa.types.is_large_binary(field.type):
        raise UnsupportedTypeError(
            f"{where}: lance-encoding:blob needs a large_binary field, not {field.type}"
        )
    if in_list:
        raise UnsupportedOptionError(f"{where}: blob values inside lists are not supported")


def _refuse_unimplemented(meta: Mapping[bytes, bytes], where: str) -> None:
    for key in meta:
        if key.startswith(PREFIX) and key not in _HONOURED and key not in (PACKED, BLOB):
            raise UnsupportedOptionError(
                f"{where}: field metadata key {_text(key)!r} is not implemented by lancelet's "
                "2.1 writer"
            )


def _minichunk(raw: bytes | None, where: str, minor: int) -> int:
    if raw is None:
        return 4096
    limit = 2**31 - 1 if minor >= 2 else 2**15 - 1  # 2.1 chunks are at most 32 KiB
    if not _INT.fullmatch(raw.strip()) or not 0 <= int(raw) <= limit:
        raise SchemaError(
            f"{where}: lance-encoding:minichunk-size must be an integer from 0 to {limit} "
            f"in file format 2.{minor}, got {_text(raw)!r}"
        )
    return int(raw)


def parse(meta: Mapping[bytes, bytes], where: str, minor: int) -> FieldParams:
    """The encoding parameters a leaf's metadata (its own over its ancestors') asks for."""
    _refuse_unimplemented(meta, where)
    scheme = meta.get(COMPRESSION)
    compression = None if scheme is None else _text(scheme).strip().lower()
    if compression is not None and compression not in _SCHEMES:
        raise SchemaError(
            f"{where}: unknown lance-encoding:compression {compression!r}; "
            f"known: {', '.join(_SCHEMES)}"
        )
    structural = meta.get(STRUCTURAL)
    shape = None if structural is None else _text(structural).strip().lower()
    if shape is not None and shape not in ("miniblock", "fullzip"):
        raise SchemaError(
            f"{where}: lance-encoding:structural-encoding must be 'miniblock' or 'fullzip', "
            f"got {shape!r}"
        )
    dict_scheme = meta.get(dictionary.VALUES_COMPRESSION_KEY, b"lz4")
    dict_values = _text(dict_scheme).strip().lower()
    if dict_values not in _DICT_SCHEMES:
        raise SchemaError(
            f"{where}: unknown lance-encoding:dict-values-compression {dict_values!r}; "
            f"known: {', '.join(_DICT_SCHEMES)}"
        )
    dictionary.parse_divisor(meta)
    dictionary.parse_ratio(meta, where)
    return FieldParams(
        rle_threshold=_threshold(meta.get(RLE_THRESHOLD), where),
        minichunk_size=_minichunk(meta.get(MINICHUNK), where, minor),
        bss=_bss(meta.get(BSS), where),
        compression=compression,
        level=_level(meta.get(LEVEL), LEVEL, where),
        structural=shape,
        dict_values=dict_values,
        dict_values_level=_level(
            meta.get(dictionary.VALUES_LEVEL_KEY), dictionary.VALUES_LEVEL_KEY, where
        ),
        metadata=meta,
    )


def check_field_tree(
    field: pa.Field, path: str, name: str, minor: int, in_list: bool = False
) -> None:
    """Refuse metadata lancelet does not implement on any field of a column (structs
    and lists included), and packed structs the file version cannot hold.  ``name``
    is the field's dotted path, ``path`` the file's, ``minor`` the format's (2.x)."""
    meta: Mapping[bytes, bytes] = field.metadata or {}
    where = f"{path}: column {name!r}"
    _refuse_unimplemented(meta, where)
    if BLOB in meta:
        _check_blob(field, where, in_list)
    if is_packed_struct(field):
        _check_packed(field, where, minor)
        return
    dtype = field.type
    children: list[pa.Field] = []
    if pa.types.is_struct(dtype):
        children = list(dtype)
    elif pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        children = [dtype.value_field]
    elif pa.types.is_map(dtype):
        if minor < 2:
            raise TypeVersionError(
                f"{where} is a map, which Lance file format 2.{minor} cannot store "
                "(maps need format 2.2 or later)"
            )
        children = [dtype.field(0)]
    nested = in_list or not pa.types.is_struct(dtype)
    for child in children:
        check_field_tree(child, path, f"{name}.{child.name}", minor, nested)
