"""General-purpose buffer compression used by 2.0 ``Flat`` encodings.

A ``Flat`` encoding may carry ``Compression{scheme, level}``; then its page buffer
is one compressed blob holding all of the flat values.  pylance writes one for
the bytes buffer of a ``Binary`` column whose field metadata has
``lance-encoding:compression`` set to ``zstd``, ``lz4`` or ``none``.

Framing of the compressed buffer (as written by the reference):

* ``zstd``: an 8-byte little-endian uncompressed length, then one zstd frame.
  Older writers stored a bare zstd frame; such a buffer starts with the zstd magic
  and a frame-header byte whose reserved bit is clear, which is how the two are
  told apart.  An empty buffer decodes to nothing.
* ``lz4``: a 4-byte little-endian uncompressed length, then one LZ4 *block*
  (not the LZ4 frame format).
* ``none``: the bytes as they are.

The ``zstandard`` and ``lz4`` packages do the work; both are plain dependencies,
because pylance's default 2.2 writer compresses dictionary values with lz4, so a
plain install must read and write them.  They are imported on first use, which
keeps ``import lancelet`` quick.  (pyarrow's raw LZ4 decoder would not do: it does
not report a short or corrupt block.)
"""

from __future__ import annotations

import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import Final

from lancelet.errors import CorruptFileError, UnsupportedEncodingError

Buffer = bytes | bytearray | memoryview

_ZSTD_MAGIC: Final = b"\x28\xb5\x2f\xfd"
_ZSTD_PREFIX: Final = 8
_LZ4_PREFIX: Final = 4
# Largest possible expansion, used to refuse a length header before allocating it:
# a zstd block of 128 KiB can shrink to a 4-byte RLE block, an LZ4 match byte
# encodes at most 255 output bytes.
_ZSTD_MAX_RATIO: Final = 1 << 15
_LZ4_MAX_RATIO: Final = 255
_SLACK: Final = 64

SCHEMES: Final = ("none", "zstd", "lz4")
COMPRESSION_KEY: Final = b"lance-encoding:compression"
LEVEL_KEY: Final = b"lance-encoding:compression-level"
_ZSTD_MAX_LEVEL: Final = 22
_INT32 = re.compile(rb"[+-]?[0-9]+")


@cache
def _zstandard() -> ModuleType:
    import zstandard

    return zstandard


@cache
def _lz4_block() -> ModuleType:
    from lz4 import block

    return block  # type: ignore[no-any-return]


def _unknown_scheme(scheme: str) -> UnsupportedEncodingError:
    if scheme == "fsst":
        return UnsupportedEncodingError(
            "compression scheme 'fsst' is not a buffer compressor (FSST is its own encoding)"
        )
    return UnsupportedEncodingError(
        f"unknown buffer compression scheme {scheme!r}; known: {', '.join(SCHEMES)}"
    )


def _check_size(size: int, payload_len: int, ratio: int, scheme: str) -> None:
    if size > payload_len * ratio + _SLACK:
        raise CorruptFileError(
            f"{scheme} buffer claims {size} uncompressed bytes from only "
            f"{payload_len} compressed bytes"
        )


def max_decompressed_size(scheme: str, compressed_size: int) -> int:
    """The most bytes :func:`decompress_buffer` accepts from ``compressed_size`` bytes
    of ``scheme`` (what a count derived from them may be checked against)."""
    ratio = {"zstd": _ZSTD_MAX_RATIO, "lz4": _LZ4_MAX_RATIO}.get(scheme, 1)
    return compressed_size * ratio + _SLACK


def _check_expected(size: int, expected: int | None, scheme: str) -> None:
    if expected is not None and size != expected:
        raise CorruptFileError(
            f"{scheme} buffer holds {size} uncompressed bytes, expected {expected}"
        )


# ---------------------------------------------------------------------------
# zstd
# ---------------------------------------------------------------------------


def _is_bare_zstd_frame(data: bytes) -> bool:
    """True for the legacy layout (a zstd frame with no length prefix)."""
    if len(data) < _ZSTD_PREFIX:
        return True
    # A length prefix can collide with the magic; a real frame header always has
    # its reserved bit (0x10 of the descriptor byte) clear.
    return data[:4] == _ZSTD_MAGIC and data[4] & 0x10 == 0


def _zstd_frame_size(payload: bytes, expected: int | None) -> int:
    """Uncompressed size of a bare frame, from the caller or the frame header."""
    if expected is not None:
        return expected
    zstd = _zstandard()
    try:
        declared = int(zstd.frame_content_size(payload))
    except zstd.ZstdError as exc:
        raise CorruptFileError(f"zstd buffer: bad frame header: {exc}") from exc
    if declared < 0:
        raise UnsupportedEncodingError(
            "zstd buffer without length prefix or content size; pass expected_size"
        )
    return declared


def _check_frame_header(zstd: ModuleType, payload: bytes, size: int) -> None:
    # zstandard allocates a size declared in the frame header even when it exceeds
    # max_output_size, so that size must agree with the one already vetted.
    declared = int(zstd.frame_content_size(payload))
    if declared >= 0 and declared != size:
        raise CorruptFileError(
            f"zstd frame header declares {declared} bytes but {size} are expected"
        )


def _zstd_decode(payload: bytes, size: int) -> bytes:
    _check_size(size, len(payload), _ZSTD_MAX_RATIO, "zstd")
    zstd = _zstandard()
    try:
        _check_frame_header(zstd, payload, size)
        out = bytes(zstd.ZstdDecompressor().decompress(payload, max_output_size=size))
    except CorruptFileError:
        raise
    except Exception as exc:  # codec errors have library-specific types
        raise CorruptFileError(f"zstd buffer cannot be decompressed: {exc}") from exc
    _check_expected(len(out), size, "zstd")
    return out


def _zstd_decompress(data: bytes, expected: int | None) -> bytes:
    if not data:
        _check_expected(0, expected, "zstd")
        return b""
    if _is_bare_zstd_frame(data):
        return _zstd_decode(data, _zstd_frame_size(data, expected))
    (size,) = struct.unpack_from("<Q", data)
    _check_expected(size, expected, "zstd")
    return _zstd_decode(data[_ZSTD_PREFIX:], size)


def _zstd_compress(data: bytes, level: int | None) -> bytes:
    # The reference passes level 0 when none is given, which zstd reads as its default.
    # zstd itself clamps larger levels; the Python bindings refuse them instead.
    lvl = 0 if level is None else min(level, _ZSTD_MAX_LEVEL)
    frame = bytes(_zstandard().ZstdCompressor(level=lvl).compress(data))
    return struct.pack("<Q", len(data)) + frame


# ---------------------------------------------------------------------------
# lz4
# ---------------------------------------------------------------------------


def _lz4_decompress(data: bytes, expected: int | None) -> bytes:
    if len(data) < _LZ4_PREFIX:
        raise CorruptFileError(f"lz4 buffer of {len(data)} bytes has no length prefix")
    (size,) = struct.unpack_from("<I", data)
    _check_expected(size, expected, "lz4")
    _check_size(size, len(data) - _LZ4_PREFIX, _LZ4_MAX_RATIO, "lz4")
    lz4 = _lz4_block()
    try:
        # lz4.block reads the same 4-byte little-endian size prefix itself.
        out = bytes(lz4.decompress(data))
    except Exception as exc:  # LZ4BlockError lives in a private module
        raise CorruptFileError(f"lz4 buffer cannot be decompressed: {exc}") from exc
    _check_expected(len(out), size, "lz4")
    return out


def _lz4_compress(data: bytes) -> bytes:
    return bytes(_lz4_block().compress(data, store_size=True))


# ---------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------


def decompress_buffer(scheme: str, data: Buffer, expected_size: int | None = None) -> bytes:
    """Undo ``Flat.compression`` for one page buffer.

    ``expected_size`` (e.g. ``num_values * bits_per_value // 8``) is checked against
    the stored length when given, and is required for a legacy bare zstd frame
    that does not declare its size.
    """
    raw = bytes(data)
    if scheme == "none":
        _check_expected(len(raw), expected_size, "uncompressed")
        return raw
    if scheme == "zstd":
        return _zstd_decompress(raw, expected_size)
    if scheme == "lz4":
        return _lz4_decompress(raw, expected_size)
    raise _unknown_scheme(scheme)


def compress_buffer(scheme: str, data: Buffer, level: int | None = None) -> bytes:
    """Compress a page buffer with the framing the reference reader expects."""
    raw = bytes(data)
    if scheme == "none":
        return raw
    if scheme == "zstd":
        return _zstd_compress(raw, level)
    if scheme == "lz4":
        return _lz4_compress(raw)
    raise _unknown_scheme(scheme)


@dataclass(frozen=True)
class BufferCompression:
    """The ``Flat.compression`` a writer applies: a scheme and an optional level."""

    scheme: str
    level: int | None = None


def _parse_level(raw: bytes | None) -> int | None:
    # The reference parses an i32 and silently drops anything else.
    if raw is None or not _INT32.fullmatch(raw):
        return None
    value = int(raw)
    return value if -(2**31) <= value < 2**31 else None


def compression_from_metadata(meta: Mapping[bytes, bytes] | None) -> BufferCompression | None:
    """The buffer compression pylance applies for this field metadata, if any.

    Only ``zstd``, ``lz4`` and ``none`` name a buffer compressor; ``fsst`` is an
    encoding of its own and unknown names are ignored, as the reference does.
    """
    scheme = (meta or {}).get(COMPRESSION_KEY, b"").decode("utf-8", "replace")
    if scheme not in SCHEMES:
        return None
    return BufferCompression(scheme, _parse_level((meta or {}).get(LEVEL_KEY)))
