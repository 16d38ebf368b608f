"""Decoders of variable-width values (strings, binaries): offsets and bytes, and
FSST-compressed bytes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from lancelet._proto import encodings_v2_1_pb2 as pb
from lancelet.errors import UnsupportedEncodingError
from lancelet.file.codecs import jit
from lancelet.file.codecs.fsst import FsstSymbolTable, fsst_decompress, parse_symbol_table
from lancelet.file.codecs.kernels import chunks as kernels
from lancelet.file.v2_1.read.codec import (
    BlockBuilder,
    BlockCodec,
    ChildBuilder,
    MiniBlockBuilder,
    MiniBlockCodec,
    concat_slices,
    corrupt,
    no_buffer_compression,
)
from lancelet.file.v2_1.read.values import (
    I64,
    U8,
    Slices,
    Values,
    Var,
    gather_ranges,
    take_values,
)


def _copy_ranges(base: U8, starts: I64, lengths: I64, total: int) -> U8:
    """``base``'s ranges ``[starts, starts + lengths)`` back to back (``total`` bytes).
    Compiled, one copy: numpy builds an index of every byte first, 4-8x slower."""
    if not jit.enabled():
        if len(starts) and (int(starts.min()) < 0 or int((starts + lengths).max()) > len(base)):
            raise corrupt("a variable-width value lies past its chunk's bytes")
        return base[gather_ranges(starts, lengths)]
    out = np.empty(total, dtype=np.uint8)
    if kernels.copy_ranges(base, starts, lengths, out) >= 0:
        raise corrupt("a variable-width value lies past its chunk's bytes")
    return out


def _int64(values: np.ndarray) -> I64:
    return np.ascontiguousarray(values, dtype=np.int64)


def _offset_bits(msg: pb.Variable, what: str) -> int:
    no_buffer_compression(msg, "values", what)
    if msg.offsets.WhichOneof("compression") != "flat":
        raise UnsupportedEncodingError(f"{what} with compressed offsets is not supported")
    bits = int(msg.offsets.flat.bits_per_value)
    if bits not in (32, 64):
        raise corrupt(f"{what} with {bits}-bit offsets")
    return bits


def _run_offsets(base: U8, starts: I64, counts: I64, width: int) -> tuple[I64, I64, I64]:
    """Runs of offsets (``counts[i] + 1`` of ``width`` bytes at ``starts[i]`` of
    ``base``, as chunks and blocks store them): each run's first and last offset, and
    the lengths of the values they delimit, back to back."""
    raw = concat_slices(base, starts, (counts + 1) * width)
    offsets = np.ascontiguousarray(raw).view(f"<u{width}").astype(np.int64)
    firsts = np.cumsum(counts + 1) - (counts + 1)
    lasts = firsts + counts
    steps = np.diff(offsets)
    inner = np.ones(len(steps), dtype=bool)
    inner[lasts[:-1]] = False  # a step from one run's last offset to the next's first
    return offsets[firsts], offsets[lasts], steps[inner]


@dataclass(frozen=True)
class VariableMiniBlock:
    """Each chunk: ``count + 1`` offsets (relative to the chunk buffer), then the bytes."""

    offset_bits: int
    num_buffers: int = 1

    def decode(self, buffers: Sequence[Slices], counts: I64) -> Values:
        buf = buffers[0]
        out = self._flat_offsets(buf, counts)
        ends = np.cumsum(counts)
        sizes = out[ends] - out[ends - counts]
        return Var(out, concat_slices(buf.base, buf.starts + (counts + 1) * self._width, sizes))

    def decode_selected(self, buffers: Sequence[Slices], counts: I64, index: I64) -> Values:
        """The values at ``index`` only: their bytes are gathered from the chunks, the
        rest never copied (every chunk's offsets are still read and checked)."""
        buf = buffers[0]
        words = self._words(buf) if jit.enabled() and len(buf) else None
        if words is not None:
            # One compiled pass checks the offsets, one finds the picked values' sizes
            # and one copies them; numpy takes a dozen passes.
            self._check_tables(buf, counts)
            out = np.empty(len(index) + 1, dtype=np.int64)
            picked, bad = kernels.select_values(
                buf.base, words, _int64(buf.starts), _int64(counts), _int64(buf.sizes),
                _int64(index), out,
            )  # fmt: skip
            if bad == len(buf):
                raise corrupt("a value to take lies past the chunks' values")
            if bad >= 0:
                raise corrupt("variable-width offsets leave their chunk or decrease")
            return Var(out, picked)
        flat = self._flat_offsets(buf, counts)
        if len(index) and (int(index.min()) < 0 or int(index.max()) >= int(counts.sum())):
            raise corrupt("a value to take lies past the chunks' values")
        ends = np.cumsum(counts)
        chunk = np.searchsorted(ends, index, side="right")
        # Where each chunk's bytes start in the buffer, less where they start in flat.
        shift = buf.starts + (counts + 1) * self._width - flat[ends - counts]
        starts = flat[index] + shift[chunk]
        lengths = flat[index + 1] - flat[index]
        out = np.zeros(len(index) + 1, dtype=np.int64)
        np.cumsum(lengths, out=out[1:])
        return Var(out, _copy_ranges(buf.base, starts, lengths, int(out[-1])))

    @property
    def _width(self) -> int:
        return self.offset_bits // 8

    def _flat_offsets(self, buf: Slices, counts: I64) -> I64:
        """The values' offsets, checked, with the chunks' bytes back to back (from 0)."""
        out = np.zeros(int(counts.sum()) + 1, dtype=np.int64)
        if jit.enabled() and len(buf):
            # One compiled pass over the offsets where they lie; numpy takes a dozen.
            self._check_tables(buf, counts)
            bad = kernels.value_offsets(buf.base, buf.starts, counts, buf.sizes, self._width, out)
        else:
            table = (counts + 1) * self._width
            if len(buf) and bool(np.any(buf.sizes < table)):
                raise corrupt("a variable-width chunk is too small for its offsets")
            bad = self._numpy_offsets(buf, counts, table, out)
        if bad >= 0:
            raise corrupt("variable-width offsets leave their chunk or decrease")
        return out

    def _words(self, buf: Slices) -> np.ndarray | None:
        """The chunks' buffer as offsets (unsigned integers of their width), when each
        chunk starts on a whole one (writers pad chunks so): None otherwise."""
        width = self._width
        base = buf.base
        if (
            not base.flags.c_contiguous
            or base.ctypes.data % width
            or bool(np.any(buf.starts % width))
        ):
            return None
        return base[: len(base) // width * width].view(f"<u{width}")

    def _check_tables(self, buf: Slices, counts: I64) -> None:
        """Each chunk (of some) holds its offsets, which lie in the buffer: what the
        compiled loops read without checking."""
        table = (counts + 1) * self._width
        if bool(np.any(buf.sizes < table)):
            raise corrupt("a variable-width chunk is too small for its offsets")
        if int(buf.starts.min()) < 0 or int((buf.starts + table).max()) > len(buf.base):
            raise corrupt("a variable-width chunk lies past its buffer")

    def _numpy_offsets(self, buf: Slices, counts: I64, table: I64, out: I64) -> int:
        """:func:`.kernels.chunks.value_offsets` in numpy: fills ``out``, returns -1 or
        (here, any) bad chunk."""
        first, last, lengths = _run_offsets(buf.base, buf.starts, counts, self._width)
        # A chunk's bytes start right after its offsets: the first offset says where.
        if (
            bool(np.any(lengths < 0))
            or bool(np.any(first != table))
            or bool(np.any(last > buf.sizes))
        ):
            return 0
        np.cumsum(lengths, out=out[1:])
        return -1

    def pick(self, buffers: Sequence[U8], count: int, index: I64) -> Values | None:
        buf = buffers[0]
        width = self.offset_bits // 8
        table = (count + 1) * width
        if len(buf) < table:
            return None
        offsets = buf[:table].view(f"<u{width}").astype(np.int64)
        if (
            int(offsets[0]) != table
            or int(offsets[-1]) > len(buf)
            or bool(np.any(offsets[1:] < offsets[:-1]))
        ):
            return None
        starts = offsets[index]
        lengths = offsets[index + 1] - starts
        out = np.zeros(len(index) + 1, dtype=np.int64)
        np.cumsum(lengths, out=out[1:])
        return Var(out, buf[gather_ranges(starts, lengths)])


def _variable_mini(msg: pb.Variable, build: ChildBuilder) -> MiniBlockCodec:
    return VariableMiniBlock(_offset_bits(msg, "variable-width values"))


@dataclass(frozen=True)
class VariableBlock(BlockCodec):
    """``[bits per offset][start of the bytes][count + 1 offsets][bytes]``, the two
    header words of the offsets' width."""

    offset_bits: int

    def decode(self, data: U8, count: int) -> Values:
        width = self.offset_bits // 8
        if len(data) < 2 * width:
            raise corrupt("variable-width block too short for its header")
        head = np.ascontiguousarray(data[: 2 * width]).view(f"<u{width}")
        if int(head[0]) != self.offset_bits:
            raise corrupt(
                f"variable-width block says {int(head[0])}-bit offsets, "
                f"its encoding {self.offset_bits}"
            )
        start = int(head[1])
        if start != 2 * width + (count + 1) * width or start > len(data):
            raise corrupt(f"variable-width block of {count} values puts its bytes at {start}")
        offsets = np.ascontiguousarray(data[2 * width : start]).view(f"<u{width}").astype(np.int64)
        body = data[start:]
        if len(offsets) and (
            int(offsets[-1]) > len(body) or bool(np.any(np.diff(offsets) < 0)) or offsets[0] < 0
        ):
            raise corrupt("variable-width block offsets leave the block or decrease")
        first = int(offsets[0]) if len(offsets) else 0
        return Var(offsets - first, body[first : int(offsets[-1]) if len(offsets) else 0])

    def decode_blocks(self, buffers: Slices, counts: I64) -> Values:
        """Blocks decoded together, each checked as :meth:`decode` checks it: a
        hundred pages' dictionaries cost a dozen array operations, not a hundred
        decodes."""
        if len(buffers) < 2:
            return super().decode_blocks(buffers, counts)
        width = self.offset_bits // 8
        base, starts, sizes = buffers.base, buffers.starts, buffers.sizes
        if bool(np.any(sizes < 2 * width)) or int((starts + sizes).max()) > len(base):
            raise corrupt("variable-width block too short for its header")
        head = base[starts[:, None] + np.arange(2 * width, dtype=np.int64)]
        head = np.ascontiguousarray(head).view(f"<u{width}").astype(np.int64)
        if bool(np.any(head[:, 0] != self.offset_bits)):
            raise corrupt(f"a variable-width block's offsets are not {self.offset_bits}-bit")
        body_at = head[:, 1]
        table = (counts + 1) * width
        if bool(np.any(body_at != 2 * width + table)) or bool(np.any(body_at > sizes)):
            raise corrupt("a variable-width block puts its bytes elsewhere than after its offsets")
        first, last, lengths = _run_offsets(base, starts + 2 * width, counts, width)
        if (
            bool(np.any(lengths < 0))
            or bool(np.any(first < 0))
            or bool(np.any(last > sizes - body_at))
        ):
            raise corrupt("variable-width block offsets leave the block or decrease")
        out = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=out[1:])
        return Var(out, concat_slices(base, starts + body_at + first, last - first))


def _variable_block(msg: pb.Variable, build: ChildBuilder) -> BlockCodec:
    return VariableBlock(_offset_bits(msg, "variable-width values"))


# -- FSST ------------------------------------------------------------------


@dataclass(frozen=True)
class FsstMiniBlock:
    raw_table: bytes
    inner: MiniBlockCodec

    @property
    def num_buffers(self) -> int:
        return self.inner.num_buffers

    @cached_property
    def table(self) -> FsstSymbolTable:
        return parse_symbol_table(self.raw_table)

    def decode(self, buffers: Sequence[Slices], counts: I64) -> Values:
        inner = self._compressed(buffers, counts)
        offsets, data = fsst_decompress(self.table, inner.data, inner.offsets)
        return Var(offsets, data)

    def decode_selected(self, buffers: Sequence[Slices], counts: I64, index: I64) -> Values:
        # Every value is compressed on its own: expand only the ones asked for.
        if isinstance(self.inner, VariableMiniBlock):
            picked = self.inner.decode_selected(buffers, counts, index)
        else:
            picked = take_values(self._compressed(buffers, counts), index)
        if not isinstance(picked, Var):
            raise corrupt("FSST values do not decode to variable-width values")
        offsets, data = fsst_decompress(self.table, picked.data, picked.offsets)
        return Var(offsets, data)

    def pick(self, buffers: Sequence[U8], count: int, index: I64) -> Values | None:
        inner = getattr(self.inner, "pick", None)
        picked = None if inner is None else inner(buffers, count, index)
        if not isinstance(picked, Var):
            return None
        offsets, data = fsst_decompress(self.table, picked.data, picked.offsets)
        return Var(offsets, data)

    def _compressed(self, buffers: Sequence[Slices], counts: I64) -> Var:
        inner = self.inner.decode(buffers, counts)
        if not isinstance(inner, Var):
            raise corrupt("FSST values do not decode to variable-width values")
        if inner.count != int(counts.sum()):
            raise corrupt(f"the chunks hold {inner.count} values, {int(counts.sum())} expected")
        return inner


def _fsst(msg: pb.Fsst, build: ChildBuilder) -> MiniBlockCodec:
    return FsstMiniBlock(bytes(msg.symbol_table), build.miniblock(msg.values))


# -- the registries of this module's decoders ----------------------------------------

MINIBLOCK: dict[str, MiniBlockBuilder] = {"variable": _variable_mini, "fsst": _fsst}
BLOCK: dict[str, BlockBuilder] = {"variable": _variable_block}
