"""Which bytes of a 2.1 / 2.2 data file are structure and which are payload.

A reader must notice a change to *structure*: the footer, the offset tables, the
column metadata and page layouts (protobuf), mini-block chunk metadata words and chunk
headers, repetition levels and repetition-index entries, bit widths, run lengths,
variable-width offsets' first entries, compressed buffers' size prefixes, full-zip
control words and value lengths of variable-width pages.  Changing one must be refused
(or change nothing, as for padding).  *Payload* is what the format stores with no
redundancy: values, definition levels (which say null or not), run values, offsets
between values, compressed streams, an inline constant, an FSST symbol table, a
field's name; a change there may give different rows.

The map is computed from the pristine file by an independent, loop-by-loop reading of
the format (:mod:`tests.file.v2_1.page_bytes` and this module), never by lancelet.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from google.protobuf import any_pb2

from lancelet._proto import encodings_v2_1_pb2 as pb
from lancelet._proto import file2_pb2
from lancelet.file.container import FOOTER, FOOTER_SIZE
from tests.file.v2_1.page_bytes import Chunk, PageBytes, miniblock_chunks, pages
from tests.fuzz.data_file_mutants import _descriptor_unguarded
from tests.fuzz.wire import spans

_FASTLANES = 1024


@dataclass
class Regions:
    """Byte ranges of one file by kind; ``labels`` names what each structure range is
    (for the coverage test)."""

    structure: list[range] = field(default_factory=list)
    payload: list[range] = field(default_factory=list)
    labels: dict[str, int] = field(default_factory=dict)
    named: list[tuple[range, str]] = field(default_factory=list)

    def add(self, start: int, size: int, payload: bool, label: str) -> None:
        if size <= 0:
            return
        (self.payload if payload else self.structure).append(range(start, start + size))
        key = ("payload: " if payload else "structure: ") + label
        self.labels[key] = self.labels.get(key, 0) + size
        self.named.append((range(start, start + size), key))

    def describe(self, offset: int) -> str:
        """What the byte at ``offset`` is (for reports)."""
        return next((f"{name} {r}" for r, name in self.named if offset in r), "?")


def regions(path: Path) -> Regions:
    """Every byte of the file's metadata and of its pages' buffers, classified."""
    data, columns = pages(path)
    out = Regions()
    _container(data, out)
    for column in columns:
        for page in column:
            _page(page, out)
    _gaps(len(data), out)
    return out


def _gaps(size: int, out: Regions) -> None:
    """Bytes no page or metadata claims (alignment between buffers): a change there
    must change nothing."""
    claimed = sorted((r.start, r.stop) for r in [*out.structure, *out.payload])
    pos = 0
    for lo, hi in claimed:
        out.add(pos, lo - pos, False, "unclaimed")
        pos = max(pos, hi)
    out.add(pos, size - pos, False, "unclaimed")


# ---------------------------------------------------------------------------
# the container: footer, offset tables, column metadata, the schema
# ---------------------------------------------------------------------------


def _container(data: bytes, out: Regions) -> None:
    _, cmo, gbo, n_gb, n_col, _, _, _ = FOOTER.unpack(data[-FOOTER_SIZE:])
    end = len(data)
    out.add(end - FOOTER_SIZE, FOOTER_SIZE, False, "footer")
    out.add(cmo, 16 * n_col, False, "column metadata offset table")
    out.add(gbo, 16 * n_gb, False, "global buffer offset table")
    for c in range(n_col):
        pos, size = struct.unpack_from("<QQ", data, cmo + 16 * c)
        _column_metadata(data, pos, size, out)
    desc_pos, desc_size = struct.unpack_from("<QQ", data, gbo)
    unguarded = _descriptor_unguarded(data[desc_pos : desc_pos + desc_size], desc_pos)
    _split(desc_pos, desc_size, [(lo, hi) for lo, hi in unguarded], "schema", out)


def _split(start: int, size: int, holes: list[tuple[int, int]], label: str, out: Regions) -> None:
    """``[start, start + size)`` as structure, but for ``holes`` (payload)."""
    pos = start
    for lo, hi in sorted(holes):
        out.add(pos, lo - pos, False, label)
        out.add(lo, hi - lo, True, f"{label} (unguarded)")
        pos = hi
    out.add(pos, start + size - pos, False, label)


def _column_metadata(data: bytes, pos: int, size: int, out: Regions) -> None:
    """A column's metadata message: structure, but for inline constants and FSST
    symbol tables inside its page layouts (data the format keeps there)."""
    holes = []
    for span in spans(data, file2_pb2.ColumnMetadata.DESCRIPTOR, pos, pos + size):
        if span.path != ("pages", "encoding", "direct", "encoding"):
            continue
        for inner in spans(data, any_pb2.Any.DESCRIPTOR, span.value, span.end):
            if inner.path != ("value",):
                continue
            for leaf in spans(data, pb.PageLayout.DESCRIPTOR, inner.value, inner.end):
                if leaf.path[-1] in ("inline_value", "symbol_table"):
                    holes.append((leaf.value, leaf.end))
    _split(pos, size, holes, "column metadata", out)


# ---------------------------------------------------------------------------
# pages
# ---------------------------------------------------------------------------


def _page(page: PageBytes, out: Regions) -> None:
    offsets = [int(o) for o in page.meta.buffer_offsets]
    kind = page.layout.WhichOneof("layout")
    if kind == "mini_block_layout":
        _mini_block(page, offsets, out)
    elif kind == "full_zip_layout":
        _full_zip(page, offsets, out)
    elif kind == "constant_layout":
        _constant(page, offsets, out)
    else:
        raise AssertionError(f"the fixture has a {kind} page")


def _mini_block(page: PageBytes, offsets: list[int], out: Regions) -> None:
    mini = page.layout.mini_block_layout
    out.add(offsets[0], len(page.buffers[0]), False, "chunk metadata")
    base = offsets[1]
    roles: list[tuple[str, pb.CompressiveEncoding | None]] = []
    if mini.HasField("rep_compression"):
        roles.append(("rep", mini.rep_compression))
    if mini.HasField("def_compression"):
        roles.append(("def", mini.def_compression))
    roles += [("value", mini.value_compression)] * int(mini.num_buffers)
    for chunk in miniblock_chunks(mini, page.buffers[0], page.buffers[1]):
        first = chunk.buffers[0][0] if chunk.buffers else chunk.start
        out.add(base + chunk.start, first - chunk.start, False, "chunk header")
        value_index = 0
        for (at, size), (role, enc) in zip(chunk.buffers, roles, strict=True):
            assert enc is not None
            count = chunk.num_levels if role != "value" else chunk.count
            index = value_index if role == "value" else -1
            for start, n, payload, label in _codec(enc, page.buffers[1], at, size, count, index):
                out.add(base + start, n, payload and role != "rep", f"{role} {label}")
            value_index += role == "value"
        # Padding after each buffer changes nothing: structure (it must stay so).
        pad = _padding(chunk)
        for at, n in pad:
            out.add(base + at, n, False, "chunk padding")
    if mini.HasField("dictionary"):
        dictionary = page.buffers[2]
        for start, n, payload, label in _block(mini.dictionary, dictionary, 0, len(dictionary)):
            out.add(offsets[2] + start, n, payload, f"dictionary {label}")
    if mini.repetition_index_depth:
        out.add(offsets[-1], len(page.buffers[-1]), False, "repetition index")


def _padding(chunk: Chunk) -> list[tuple[int, int]]:
    out = []
    for (at, size), nxt in zip(chunk.buffers, [*chunk.buffers[1:], None], strict=True):
        end = at + size
        stop = nxt[0] if nxt is not None else end + (-end % 8)
        out.append((end, stop - end))
    return out


Piece = tuple[int, int, bool, str]  # start, size, payload, label


def _codec(
    enc: pb.CompressiveEncoding, buf: bytes, at: int, size: int, count: int, index: int
) -> Iterator[Piece]:
    """The pieces of one chunk buffer: levels (``index`` -1, a block per chunk) or
    the codec's value buffer ``index``."""
    kind = enc.WhichOneof("compression")
    if kind == "inline_bitpacking":
        yield from _inline(enc.inline_bitpacking, buf, at, size, count)
    elif kind == "rle" and index < 0:
        yield from _rle_block(buf, at, size)
    elif kind == "rle":
        yield at, size, index == 0, "run values" if index == 0 else "run lengths"
    elif kind in ("variable", "fsst"):
        variable = enc.variable if kind == "variable" else enc.fsst.values.variable
        width = int(variable.offsets.flat.bits_per_value) // 8
        table = (count + 1) * width
        yield at, width, False, "first offset"
        yield at + width, table - width, True, "offsets"
        yield at + table, size - table, True, "bytes"
    elif kind == "general":
        zstd = enc.general.compression.scheme == pb.COMPRESSION_ALGORITHM_ZSTD
        prefix = 8 if zstd else 4
        yield at, prefix, False, "compressed size"
        yield at + prefix, size - prefix, True, "compressed bytes"
    else:  # flat, out-of-line bit packing, byte stream split, packed, fixed-size list
        yield at, size, True, kind or "?"


def _rle_block(buf: bytes, at: int, size: int) -> Iterator[Piece]:
    (head,) = struct.unpack_from("<Q", buf, at)
    yield at, 8, False, "run block header"
    yield at + 8, head, True, "run values"
    yield at + 8 + head, size - 8 - head, False, "run lengths"


def _inline(
    msg: pb.InlineBitpacking, buf: bytes, at: int, size: int, count: int
) -> Iterator[Piece]:
    word = int(msg.uncompressed_bits_per_value) // 8
    pos, end = at, at + size
    for _ in range((count + _FASTLANES - 1) // _FASTLANES):
        bits = int.from_bytes(buf[pos : pos + word], "little")
        yield pos, word, False, "bit width"
        yield pos + word, _FASTLANES * bits // 8, True, "bit-packed values"
        pos += word + _FASTLANES * bits // 8
    assert pos == end, "inline bit packing does not fill its buffer"


def _block(enc: pb.CompressiveEncoding, buf: bytes, at: int, size: int) -> Iterator[Piece]:
    """A page's dictionary buffer."""
    kind = enc.WhichOneof("compression")
    if kind == "general":
        prefix = 4 if enc.general.compression.scheme == pb.COMPRESSION_ALGORITHM_LZ4 else 8
        yield at, prefix, False, "compressed size"
        yield at + prefix, size - prefix, True, "compressed bytes"
    elif kind == "variable":
        yield at, 8, False, "variable block header"
        yield at + 8, size - 8, True, "offsets and bytes"
    else:
        yield at, size, True, kind or "?"


# ---------------------------------------------------------------------------
# full-zip and constant pages
# ---------------------------------------------------------------------------


def _full_zip(page: PageBytes, offsets: list[int], out: Regions) -> None:
    layout = page.layout.full_zip_layout
    data = page.buffers[0]
    if layout.WhichOneof("details") == "bits_per_value":
        # Fixed-width rows: a null item keeps its value's bytes, so a control word's
        # definition bit is as unguarded as the value.
        out.add(offsets[0], len(data), True, "fixed-width rows")
        return
    index = page.buffers[1]
    out.add(offsets[1], len(index), False, "full-zip repetition index")
    rows = int(page.meta.length)
    width = len(index) // (rows + 1)
    starts = [int.from_bytes(index[r * width : (r + 1) * width], "little") for r in range(rows + 1)]
    bits = int(layout.bits_rep) + int(layout.bits_def)
    word = 0 if bits == 0 else 1 if bits <= 8 else 2 if bits <= 16 else 4
    length = int(layout.bits_per_offset) // 8
    def_mask = (1 << int(layout.bits_def)) - 1
    packed = layout.value_compression.WhichOneof("compression") == "variable_packed_struct"
    for row in range(rows):
        pos = starts[row]
        while pos < starts[row + 1]:
            control = int.from_bytes(data[pos : pos + word], "little")
            out.add(offsets[0] + pos, word, False, "control word")
            pos += word
            if control & def_mask:
                continue  # no value
            size = int.from_bytes(data[pos : pos + length], "little")
            out.add(offsets[0] + pos, length, False, "value length")
            pos += length
            if packed:
                _packed_value(layout, data, offsets[0], pos, size, out)
            else:
                out.add(offsets[0] + pos, size, True, "value bytes")
            pos += size


def _packed_value(
    layout: pb.FullZipLayout, data: bytes, base: int, pos: int, size: int, out: Regions
) -> None:
    """A variable packed struct's row: fixed fields, and length-prefixed variable ones
    whose prefixes must add up to the row."""
    end = pos + size
    for field_enc in layout.value_compression.variable_packed_struct.fields:
        if field_enc.WhichOneof("layout") == "bits_per_value":
            n = int(field_enc.bits_per_value) // 8
            out.add(base + pos, n, True, "packed fixed field")
            pos += n
        else:
            prefix = int(field_enc.bits_per_length) // 8
            n = int.from_bytes(data[pos : pos + prefix], "little")
            out.add(base + pos, prefix, False, "packed field length")
            out.add(base + pos + prefix, n, True, "packed variable field")
            pos += prefix + n
    assert pos == end, "a packed row's fields do not fill it"


def _constant(page: PageBytes, offsets: list[int], out: Regions) -> None:
    """Buffers ``[]``, ``[rep, def]``, ``[scalar]`` or ``[scalar, rep, def]``."""
    buffers = list(zip(offsets, (len(b) for b in page.buffers), strict=True))
    if len(buffers) in (1, 3):
        at, size = buffers.pop(0)
        out.add(at, size, True, "constant value buffer")
    if buffers:
        (rep_at, rep_size), (def_at, def_size) = buffers
        out.add(rep_at, rep_size, False, "constant page repetition levels")
        out.add(def_at, def_size, True, "constant page definition levels")
