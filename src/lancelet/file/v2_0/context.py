"""What a decoder needs: the page's buffers and a way to decode a sub-encoding."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from lancelet._proto import encodings_v2_0_pb2 as pb
from lancelet.errors import CorruptFileError

Decoder = Callable[["PageContext", pb.ArrayEncoding, int, pa.DataType], pa.Array]


@dataclass
class PageContext:
    """The buffers one page's encoding tree may reference, plus the recursive decoder.

    ``free_values`` bounds how many values an encoding may produce from no bytes at
    all (an all-null or constant array): a page of ``n`` rows never needs more than
    its ``n`` rows times the values per row of its type, so a forged count cannot make
    the reader allocate without limit.  ``used`` records which page buffers the
    encoding tree referenced; a page buffer nothing refers to means the tree was
    damaged.
    """

    path: str
    what: str
    page_buffers: Sequence[pa.Buffer]
    column_buffers: Callable[[], Sequence[pa.Buffer]]
    file_buffers: Callable[[], Sequence[pa.Buffer]]
    decode_fn: Decoder
    free_values: int = 0
    used: set[int] = field(default_factory=set)

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
        if kind == pb.Buffer.page:
            self.used.add(ref.buffer_index)
        return pool[ref.buffer_index]

    def decode(self, encoding: pb.ArrayEncoding, num_rows: int, dtype: pa.DataType) -> pa.Array:
        return self.decode_fn(self, encoding, num_rows, dtype)

    def corrupt(self, detail: str) -> CorruptFileError:
        return CorruptFileError(f"{self.path}: {self.what}: {detail}")

    def require_exact(self, buf: pa.Buffer, nbytes: int, what: str) -> None:
        """Writers size every page buffer exactly; any other size means damaged metadata."""
        if buf.size != nbytes:
            raise self.corrupt(f"{what} buffer holds {buf.size} bytes, {nbytes} expected")

    def check_free(self, count: int, what: str) -> None:
        """Refuse ``count`` values made from no bytes beyond what the page can hold."""
        if count > self.free_values:
            raise self.corrupt(
                f"{what} of {count} values exceeds the {self.free_values} the page can hold"
            )

    def check_all_buffers_used(self) -> None:
        unused = sorted(set(range(len(self.page_buffers))) - self.used)
        if unused:
            raise self.corrupt(f"page buffer {unused[0]} is not referenced by the page encoding")

    def decode_u64(self, encoding: pb.ArrayEncoding, num_rows: int) -> np.ndarray:
        """Decode an integer sub-array (offsets, indices) into a uint64 numpy array."""
        arr = self.decode(encoding, num_rows, pa.uint64())
        if arr.null_count:
            raise self.corrupt("an offsets or indices array contains nulls")
        return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.uint64)

    def decode_bytes(self, encoding: pb.ArrayEncoding, count: int) -> pa.Buffer:
        """The ``count`` bytes of a byte sub-array (string data), which has no nulls."""
        arr = self.decode(encoding, count, pa.uint8())
        if arr.null_count:
            raise self.corrupt("a bytes array contains nulls")
        data = arr.buffers()[1]
        return pa.py_buffer(b"") if data is None else data.slice(arr.offset, count)
