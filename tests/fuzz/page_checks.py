"""A fixture of 2.2 pages in the layouts and codecs of the full-zip work, and a check
that decodes them page by page (until the reader's public path exists, the pages are
found with the test helpers of ``tests.file.v2_1.page_bytes``, whose metadata parsing
the mutants leave alone).

Columns of ``pages.lance`` (pylance 2.2): nullable 300-byte binaries, FSST strings and a
variable packed struct (full-zip, no lists), lists of binaries with long rows (full-zip
with lists, walked by pointer doubling), nullable vectors (full-zip, fixed width),
run-length encoded integers and byte-stream-split floats (mini-block chunks), and blobs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from lancelet._proto import encodings_v2_1_pb2 as pb
from lancelet.file.codecs.byte_stream_split import decode_bss_chunks
from lancelet.file.codecs.general import decompress_buffer
from lancelet.file.codecs.rle import decode_rle_chunks
from lancelet.file.v2_1.read import blob, fullzip
from lancelet.file.v2_1.read.page import LevelledPage
from lancelet.io.local import LocalInputFile
from tests.file.v2_1.page_bytes import PageBytes, miniblock_chunks, page_entry, pages, write
from tests.file.v2_1.test_blob import PackedDescriptions

FILE = "pages.lance"
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "iota"]


def _fields() -> list[pa.Field]:
    packed = pa.struct([("a", pa.int32()), ("s", pa.string())])
    return [
        pa.field("bin", pa.binary()),
        pa.field("text", pa.string()),
        pa.field("packed", packed, metadata={"lance-encoding:packed": "true"}),
        pa.field("lists", pa.list_(pa.binary())),
        pa.field("vectors", pa.list_(pa.float32(), 64)),
        pa.field("runs", pa.int64(), metadata={"lance-encoding:dict-divisor": "100000"}),
        pa.field(
            "floats",
            pa.float64(),
            metadata={"lance-encoding:compression": "zstd", "lance-encoding:bss": "on"},
        ),
        pa.field("blobs", pa.large_binary(), metadata={"lance-encoding:blob": "true"}),
    ]


def build(root: Path) -> Path:
    """Write the fixture; the data is seeded."""
    rng = np.random.default_rng(42)
    n = 60

    def blob_of(size: int) -> bytes:
        return bytes(rng.integers(0, 256, size, dtype=np.uint8))

    columns: list[object] = [
        [None if i % 7 == 3 else blob_of(300) for i in range(n)],
        [None if i % 9 == 4 else " ".join(rng.choice(WORDS, 150)) for i in range(n)],
        [None if i % 5 == 1 else {"a": i, "s": "x" * (i % 11)} for i in range(n)],
        [
            None if i % 11 == 5 else [blob_of(260) for _ in range(40 if i % 13 == 0 else i % 4)]
            for i in range(n)
        ],
        [None if i % 6 == 2 else [float(x) for x in rng.random(64)] for i in range(n)],
        list(np.repeat(np.arange(6), 10).tolist()),
        [float(x) for x in rng.random(n) * 100],
        [None if i % 8 == 2 else blob_of(int(rng.integers(0, 600))) for i in range(n)],
    ]
    fields = _fields()
    table = pa.table(
        [pa.array(c, f.type) for c, f in zip(columns, fields, strict=True)],
        schema=pa.schema(fields),
    )
    return write(root / FILE, table)


@dataclass
class Regions:
    """Byte ranges of the fixture: ``structure`` holds bytes whose change the decoders
    must notice (or that change nothing); ``payload`` bytes no reader can check."""

    structure: list[range]
    payload: list[range]


def regions(path: Path) -> Regions:
    """Where the mutants go, from a plain (loop) reading of the pristine pages."""
    data, columns = pages(path)
    out = Regions([], [])
    for page_list in columns:
        for page in page_list:
            _page_regions(data, page, out)
    return out


def _page_regions(data: bytes, page: PageBytes, out: Regions) -> None:
    offsets = [int(o) for o in page.meta.buffer_offsets]
    kind = page.layout.WhichOneof("layout")
    if kind == "full_zip_layout":
        layout = page.layout.full_zip_layout
        start, size = offsets[0], len(page.buffers[0])
        out.payload.append(range(start, start + size))
        if len(offsets) > 1:
            out.structure.append(range(offsets[1], offsets[1] + len(page.buffers[1])))
            if not layout.bits_rep and layout.WhichOneof("details") == "bits_per_offset":
                out.structure.extend(_row_heads(page, start))
    elif kind == "mini_block_layout":
        mini = page.layout.mini_block_layout
        for chunk in miniblock_chunks(mini, page.buffers[0], page.buffers[1]):
            for index, (at, n) in enumerate(chunk.buffers):
                where = range(offsets[1] + at, offsets[1] + at + n)
                lengths = mini.value_compression.HasField("rle") and index == 1
                (out.structure if lengths else out.payload).append(where)
    elif kind == "blob_layout":
        out.payload.append(range(offsets[1], offsets[1] + len(page.buffers[1])))


def _row_heads(page: PageBytes, start: int) -> list[range]:
    """Control word and value length of every row of a variable-width page without
    lists (the rows' starts from the repetition index)."""
    layout = page.layout.full_zip_layout
    index = page.buffers[1]
    rows = int(page.meta.length)
    width = len(index) // (rows + 1)
    word = 0 if not layout.bits_def else 1
    heads = []
    for row in range(rows):
        at = int.from_bytes(index[row * width : (row + 1) * width], "little")
        null = word and page.buffers[0][at] != 0
        heads.append(range(start + at, start + at + word + (0 if null else 4)))
    return heads


def _leaf(field: pa.Field) -> pa.DataType:
    return field.type.value_type if pa.types.is_list(field.type) else field.type


def _levels_table(name: str, page: LevelledPage) -> dict[str, pa.Array]:
    return {
        f"{name}.values": pa.array([page.values.to_pylist()], pa.list_(page.values.type)),
        f"{name}.rep": pa.array(
            [[] if page.rep is None else page.rep.tolist()], pa.list_(pa.uint16())
        ),
        f"{name}.defs": pa.array(
            [[] if page.defs is None else page.defs.tolist()], pa.list_(pa.uint16())
        ),
    }


def read_pages(root: Path) -> pa.Table:
    """Every page of the fixture decoded whole and as a take, stacked into one row."""
    path = root / FILE
    data, columns = pages(path)
    source = LocalInputFile(path)
    out: dict[str, pa.Array] = {}
    for index, (field, page_list) in enumerate(zip(_fields(), columns, strict=True)):
        for number, page in enumerate(page_list):
            label = f"{field.name}.{number}"
            out.update(
                _decode(source, data, page, field, f"column {index} ({field.name})", number, label)
            )
    return pa.table(out)


def _decode(
    source: LocalInputFile,
    data: bytes,
    page: PageBytes,
    field: pa.Field,
    column: str,
    number: int,
    label: str,
) -> dict[str, pa.Array]:
    kind = page.layout.WhichOneof("layout")
    decoder: fullzip.FullZipPageDecoder | blob.BlobPageDecoder
    if kind == "full_zip_layout":
        decoder = fullzip.decoder(
            source,
            page_entry(page),
            page.layout.full_zip_layout,
            column,
            _leaf(field),
            page_index=number,
        )
    elif kind == "blob_layout":

        def inner(layout: pb.PageLayout, arrow_type: pa.DataType) -> PackedDescriptions:
            return PackedDescriptions(page, layout, arrow_type)

        decoder = blob.decoder(
            source,
            page_entry(page),
            page.layout.blob_layout,
            column,
            field.type,
            inner,
            page_index=number,
        )
    else:
        return {f"{label}.chunks": _chunks(page, field, f"{source.path}: {column} page {number}")}
    whole = decoder.read(0, decoder.num_rows)
    picks = np.unique(np.array([0, decoder.num_rows // 2, decoder.num_rows - 1], dtype=np.int64))
    taken = decoder.take(picks)
    return {**_levels_table(label, whole), **_levels_table(label + ".take", taken)}


def _chunks(page: PageBytes, field: pa.Field, what: str) -> pa.Array:
    mini = page.layout.mini_block_layout
    chunks = miniblock_chunks(mini, page.buffers[0], page.buffers[1])
    counts = [c.count for c in chunks]
    value = mini.value_compression
    if value.HasField("rle"):
        bits = value.rle.values.flat.bits_per_value
        out = decode_rle_chunks(
            page.buffers[1],
            [c.buffers[0][0] for c in chunks],
            [c.buffers[0][1] for c in chunks],
            [c.buffers[1][0] for c in chunks],
            [c.buffers[1][1] for c in chunks],
            counts,
            bits,
            what=what,
        )
    else:
        plain = [page.buffers[1][at : at + n] for c in chunks for at, n in c.buffers]
        if value.HasField("general"):
            zstd = value.general.compression.scheme == pb.COMPRESSION_ALGORITHM_ZSTD
            plain = [decompress_buffer("zstd" if zstd else "lz4", raw) for raw in plain]
        sizes = np.array([len(p) for p in plain], dtype=np.int64)
        out = decode_bss_chunks(
            b"".join(plain), np.cumsum(sizes) - sizes, sizes, counts, 64, what=what
        )
    return pa.array([out.view(field.type.to_pandas_dtype()).tolist()], pa.list_(field.type))
