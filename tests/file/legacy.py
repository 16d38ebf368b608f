"""Legacy (0.1) files for tests: written by pylance, taken apart, forged."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
from hypothesis import strategies as st

from lancelet._proto import file_pb2, table_pb2

FOOTER = struct.Struct("<qHH4s")
FIXTURE = Path(__file__).parents[1] / "dataset" / "fixtures" / "legacy_v0_1"


def write_dataset(uri: Path, table: pa.Table, **kwargs: int) -> list[Path]:
    """A pylance legacy dataset of ``table``; its data files, in fragment order."""
    ds = lance.write_dataset(table, uri, data_storage_version="legacy", **kwargs)
    return [uri / "data" / f.metadata.files[0].path for f in ds.get_fragments()]


def write_file(uri: Path, table: pa.Table, batch_rows: int) -> Path:
    """One legacy data file of ``table`` in batches of ``batch_rows``."""
    (path,) = write_dataset(uri, table, max_rows_per_group=batch_rows)
    return path


@dataclass
class Parts:
    """A legacy file's sections: everything before its embedded schema, the schema
    (a table manifest), the metadata and the footer version."""

    data: bytearray
    manifest: table_pb2.Manifest
    metadata: file_pb2.Metadata
    version: tuple[int, int]

    @classmethod
    def of(cls, path: Path) -> Parts:
        raw = path.read_bytes()
        meta_pos, major, minor, _ = FOOTER.unpack_from(raw, len(raw) - FOOTER.size)
        metadata = file_pb2.Metadata.FromString(_message(raw, meta_pos))
        manifest = table_pb2.Manifest.FromString(_message(raw, metadata.manifest_position))
        return cls(bytearray(raw[: metadata.manifest_position]), manifest, metadata, (major, minor))

    def pages(self) -> np.ndarray:
        """The page table: (field ids, batches, 2) of (position, length)."""
        ids = [f.id for f in self.manifest.fields]
        batches = len(self.metadata.batch_offsets) - 1
        pos = self.metadata.page_table_position
        count = (max(ids) - min(ids) + 1) * batches * 2
        table = np.frombuffer(bytes(self.data[pos : pos + 8 * count]), dtype="<i8")
        return table.reshape(-1, batches, 2).copy()

    def set_pages(self, pages: np.ndarray) -> None:
        pos = self.metadata.page_table_position
        raw = pages.astype("<i8").tobytes()
        self.data[pos : pos + len(raw)] = raw

    def i64(self, offset: int) -> int:
        return int(struct.unpack_from("<q", self.data, offset)[0])

    def set_i64(self, offset: int, value: int) -> None:
        struct.pack_into("<q", self.data, offset, value)

    def write(self, path: Path) -> Path:
        out = bytearray(self.data)
        self.metadata.manifest_position = len(out)
        out += _prefixed(self.manifest.SerializeToString())
        meta_pos = len(out)
        out += _prefixed(self.metadata.SerializeToString())
        out += FOOTER.pack(meta_pos, *self.version, b"LANC")
        path.write_bytes(bytes(out))
        return path


def _message(raw: bytes, pos: int) -> bytes:
    (length,) = struct.unpack_from("<I", raw, pos)
    return raw[pos + 4 : pos + 4 + length]


def _prefixed(body: bytes) -> bytes:
    return struct.pack("<I", len(body)) + body


def assert_same_file(ours: bytes, theirs: bytes, what: str = "") -> None:
    """Two legacy files are pylance's byte for byte but the writer their embedded
    schema names (and so the offsets of what follows it)."""
    mine, other = _sections(ours), _sections(theirs)
    assert mine[0] == other[0], f"{what}: pages, page tables, statistics or dictionaries differ"
    assert mine[1] == other[1], f"{what}: the embedded schemas differ"
    assert mine[2] == other[2], f"{what}: the file metadata differs"
    assert ours[-4:] == theirs[-4:] and ours[-8:-4] == theirs[-8:-4], f"{what}: footers differ"


def _sections(raw: bytes) -> tuple[bytes, table_pb2.Manifest, file_pb2.Metadata]:
    meta_pos = FOOTER.unpack_from(raw, len(raw) - FOOTER.size)[0]
    metadata = file_pb2.Metadata.FromString(_message(raw, meta_pos))
    manifest = table_pb2.Manifest.FromString(_message(raw, metadata.manifest_position))
    assert manifest.writer_version.library in ("lance", "lancelet")
    manifest.ClearField("writer_version")
    return raw[: metadata.manifest_position], manifest, metadata


def data_files(uri: Path, version: int | None = None) -> list[bytes]:
    """Every data file of a version (default: the latest), in fragment and file order."""
    ds = lance.dataset(uri, version=version)
    return [
        (uri / "data" / d.path).read_bytes() for f in ds.get_fragments() for d in f.data_files()
    ]


def assert_same_datasets(ours: Path, theirs: Path) -> None:
    """Two legacy datasets hold the same fragments of the same files (see
    :func:`assert_same_file`), with the same rows."""
    mine, other = lance.dataset(ours), lance.dataset(theirs)
    assert [f.count_rows() for f in mine.get_fragments()] == [
        f.count_rows() for f in other.get_fragments()
    ]
    files, reference = data_files(ours), data_files(theirs)
    assert len(files) == len(reference)
    for i, (a, b) in enumerate(zip(files, reference, strict=True)):
        assert_same_file(a, b, f"data file {i}")


# Every kind of leaf pylance's legacy writer stores, and those a fixed-size list holds.
FIXED_WIDTH: list[pa.DataType] = [
    pa.bool_(),
    pa.int8(),
    pa.uint16(),
    pa.int32(),
    pa.uint64(),
    pa.float16(),
    pa.float32(),
    pa.float64(),
    pa.decimal128(12, 3),
    pa.decimal256(45, 7),
    pa.date32(),
    pa.date64(),
    pa.time32("s"),
    pa.time64("ns"),
    pa.timestamp("us"),
    pa.timestamp("ms", "UTC"),
    pa.duration("ms"),
    pa.binary(7),
]
LEAVES: list[pa.DataType] = [
    *FIXED_WIDTH,
    pa.null(),
    pa.binary(),
    pa.large_binary(),
    pa.string(),
    pa.large_string(),
    pa.dictionary(pa.int32(), pa.string()),
    pa.dictionary(pa.int8(), pa.int64()),
    pa.dictionary(pa.uint16(), pa.large_binary()),
]


def legacy_types() -> st.SearchStrategy[pa.DataType]:
    """Arrow types pylance writes in legacy files: the leaves, fixed-size lists (of
    fixed-size lists) of fixed-width values, and lists, large lists and structs of
    any of them."""
    fixed = st.sampled_from(FIXED_WIDTH)
    sizes = st.integers(1, 3)
    inner_fixed = fixed | st.builds(pa.list_, fixed, sizes)
    fixed_lists = st.builds(pa.list_, inner_fixed, sizes)
    structs = st.lists(st.deferred(lambda: nested), min_size=1, max_size=3).map(
        lambda types: pa.struct([(f"f{i}", t) for i, t in enumerate(types)])
    )
    nested: st.SearchStrategy[pa.DataType] = st.recursive(
        st.sampled_from(LEAVES) | fixed_lists,
        lambda inner: st.builds(pa.list_, inner) | st.builds(pa.large_list, inner) | structs,
        max_leaves=5,
    )
    return nested
