"""Where a 2.1 decode is (file, column, page), for errors that name it."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, TypeVar

import pyarrow as pa

from lancelet.errors import CorruptFileError, LanceFileError, UnsupportedEncodingError

T = TypeVar("T")


class PageRef(NamedTuple):
    """A page of a column of a file; every error raised while decoding it names all
    three.  (A named tuple: a compaction makes one for each of thousands of pages.)"""

    path: str
    column: str
    page: int

    @property
    def what(self) -> str:
        return f"{self.column} page {self.page}"

    def corrupt(self, detail: str) -> CorruptFileError:
        return CorruptFileError(f"{self.path}: {self.what}: {detail}")

    def unsupported(self, detail: str) -> UnsupportedEncodingError:
        return UnsupportedEncodingError(f"{self.path}: {self.what}: {detail}")


def guarded(ref: PageRef, work: Callable[[], T]) -> T:
    """Run one page's decode so that every error names the file, column and page.

    The codecs below the page decoders (bit packing, FSST, general compression) do
    not know where their bytes came from; their lancelet errors gain the location
    here.  Arrow refusing buffers a decoder built, and numpy refusing an index or a
    shape, mean the page's bytes contradict each other: both become a corrupt page.
    """
    try:
        return work()
    except LanceFileError as exc:
        if str(exc).startswith(ref.path):
            raise
        raise type(exc)(f"{ref.path}: {ref.what}: {exc}") from exc
    except (pa.ArrowInvalid, pa.ArrowIndexError) as exc:
        raise ref.corrupt(f"the decoded data is not valid: {exc}") from exc
    except (IndexError, ValueError, OverflowError) as exc:
        raise ref.corrupt(f"the page's sizes and counts do not agree: {exc}") from exc
