"""Legacy (0.1) files for tests: written by pylance, taken apart, forged."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa

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
