"""The storage protocol every backend implements.

Locations above this layer are strings: an absolute local path, or a URI whose
scheme picks the backend (``s3://bucket/key``, ``memory://key``).  A backend sees
only its own keys: a local backend the absolute path, an object store the key
inside its bucket.  Objects are immutable once written, except the few that the
table layer replaces whole (a version hint, a tag); every write is atomic, so a
reader never sees half an object.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol, TypeVar

import pyarrow as pa

Self = TypeVar("Self", bound="PublishOnSuccess")


@dataclass(frozen=True)
class ObjectInfo:
    """What a listing or a head request tells about one object."""

    size: int
    modified_ns: int


class InputFile(Protocol):
    """An immutable object read by byte ranges."""

    path: str
    size: int

    def read(self, offset: int, length: int) -> pa.Buffer:
        """The bytes ``[offset, offset + length)``; the caller has range-checked them."""
        ...

    def prefetch(self, ranges: Sequence[tuple[int, int]], *, gap: int | None = None) -> None:
        """Fetch ``(offset, length)`` ranges a reader is about to ask for, together.

        Local files ignore it; object stores coalesce nearby ranges and fetch them
        concurrently, so many small pages cost a few requests instead of one each.
        ``gap``: ranges at most this far apart are fetched as one (None: the store's
        own choice, made for scans)."""
        ...

    def retain(self, ranges: Sequence[tuple[int, int]]) -> None:
        """Let go of fetched bytes outside ``ranges`` (the file's tail excepted): a reader
        calls it after a read, keeping only what the next sequential read continues in,
        so a long scan holds about one read's bytes, not the whole file's."""
        ...

    def release(self, ranges: Sequence[tuple[int, int]]) -> None:
        """A reader is done with ``ranges``: memory holding only them may go (a local
        memory map unmaps those pages; object stores let go of bytes in :meth:`retain`)."""
        ...

    def close(self) -> None: ...


class OutputFile(Protocol):
    """An object written front to back, visible under its name only on :meth:`commit`."""

    path: str
    position: int

    def write(self, data: bytes | bytearray | memoryview | pa.Buffer) -> None: ...

    def commit(self) -> None: ...

    def abort(self) -> None: ...

    def __enter__(self) -> OutputFile: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


class Storage(Protocol):
    """One backend: local files, memory, or an object store bucket.

    Keys are "/"-separated.  ``list_dir`` names the immediate children of a
    "directory" key (objects and deeper prefixes alike); ``list_tree`` walks every
    object below one, yielding keys relative to it.
    """

    def open_input(self, key: str, uri: str) -> InputFile: ...

    def open_output(self, key: str, uri: str) -> OutputFile: ...

    def read_bytes(self, key: str) -> bytes: ...

    def put(self, key: str, data: bytes, *, durable: bool = True) -> None: ...

    def put_if_not_exists(self, key: str, data: bytes) -> bool: ...

    def head(self, key: str) -> ObjectInfo | None: ...

    def list_dir(self, key: str) -> list[str]: ...

    def list_tree(self, key: str) -> Iterator[tuple[str, ObjectInfo]]: ...

    def is_dir(self, key: str) -> bool: ...

    def delete(self, key: str) -> None: ...

    def remove_empty_dirs(self, key: str) -> None: ...

    def remove_tree(self, key: str) -> None: ...

    def fingerprint(self, key: str) -> tuple[int, int] | None: ...

    def writers_turn(self, key: str) -> AbstractContextManager[bool]: ...


class PublishOnSuccess:
    """``with`` support for an output file: published (``commit``) when the block
    ends normally, discarded (``abort``) when it raises."""

    def commit(self) -> None:
        raise NotImplementedError

    def abort(self) -> None:
        raise NotImplementedError

    def __enter__(self: Self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()
