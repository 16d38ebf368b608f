"""What a decoder needs: the page's buffers and a way to decode a sub-encoding."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lancelet._proto import encodings_v2_0_pb2 as pb
from lancelet.errors import CorruptFileError

Decoder = Callable[["PageContext", pb.ArrayEncoding, int, pa.DataType], pa.Array]


@dataclass
class PageContext:
    """The buffers one page's encoding tree may reference, plus the recursive decoder."""

    path: str
    what: str
    page_buffers: Sequence[pa.Buffer]
    column_buffers: Callable[[], Sequence[pa.Buffer]]
    file_buffers: Callable[[], Sequence[pa.Buffer]]
    decode_fn: Decoder

    def buffer(self, ref: pb.Buffer) -> pa.Buffer:
        kind = ref.buffer_type
        pool: Sequence[pa.Buffer]
        if kind == pb.Buffer.page:
            pool = self.page_buffers
        elif kind == pb.Buffer.column:
            pool = self.column_buffers()
        else:
            pool = self.file_buffers()
        if ref.buffer_index >= len(pool):
            raise CorruptFileError(
                f"{self.path}: {self.what} refers to buffer {ref.buffer_index} "
                f"but only {len(pool)} exist"
            )
        return pool[ref.buffer_index]

    def decode(self, encoding: pb.ArrayEncoding, num_rows: int, dtype: pa.DataType) -> pa.Array:
        return self.decode_fn(self, encoding, num_rows, dtype)

    def corrupt(self, detail: str) -> CorruptFileError:
        return CorruptFileError(f"{self.path}: {self.what}: {detail}")

    def require(self, buf: pa.Buffer, nbytes: int, what: str) -> None:
        if buf.size < nbytes:
            raise self.corrupt(f"{what} buffer holds {buf.size} bytes, {nbytes} needed")

    def decode_u64(self, encoding: pb.ArrayEncoding, num_rows: int) -> np.ndarray:
        """Decode an integer sub-array (offsets, indices) into a uint64 numpy array."""
        arr = self.decode(encoding, num_rows, pa.uint64())
        if arr.null_count:
            raise self.corrupt("an offsets or indices array contains nulls")
        return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.uint64)
