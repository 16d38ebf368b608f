"""``LanceFileSession``: readers, writers and object operations under one base path
(pylance's ``lance.file.LanceFileSession``).

pylance shares one object-store connection between the readers and writers a
session opens; here they share the session's :class:`~lancelet.io.FileIO`, made from
its base path and storage options.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import pyarrow as pa

from lancelet import io
from lancelet.errors import (
    StorageError,
    StorageNotFoundError,
    UnsupportedFunctionError,
    UnsupportedOptionError,
)
from lancelet.file.reader import LanceFileReader
from lancelet.file.writer import LanceFileWriter


@dataclass
class ListResult:
    """One directory level: child "directories" and child files, relative to the
    session's base path."""

    common_prefixes: list[str]
    objects: list[str]


class LanceFileSession:
    def __init__(
        self,
        base_path: str | os.PathLike[str],
        storage_options: dict[str, str] | None = None,
        namespace_client: Any = None,
        table_id: list[str] | None = None,
    ) -> None:
        if namespace_client is not None or table_id is not None:
            raise UnsupportedOptionError(
                "LanceFileSession: namespace_client and table_id are not supported"
            )
        self._base = io.normalize(base_path).rstrip("/")
        self._io = io.FileIO.for_uri(self._base, storage_options)

    def _path(self, path: str | None) -> str:
        return self._base if not path else io.join(self._base, path.strip("/"))

    def open_reader(self, path: str, columns: Sequence[str] | None = None) -> LanceFileReader:
        return LanceFileReader(self._path(path), columns=columns, file_io=self._io)

    def open_writer(
        self,
        path: str,
        *,
        schema: pa.Schema | None = None,
        data_cache_bytes: int | None = None,
        version: str | None = None,
        keep_original_array: bool | None = None,
        max_page_bytes: int | None = None,
    ) -> LanceFileWriter:
        # keep_original_array is a memory trade-off of pylance's writer; it does not
        # change the file written, and lancelet's writer copies nothing it would keep.
        del keep_original_array
        return LanceFileWriter(
            self._path(path),
            schema,
            data_cache_bytes=data_cache_bytes,
            version=version,
            max_page_bytes=max_page_bytes,
            file_io=self._io,
        )

    def open_dedicated_blob_writer(self, path: str, blob_id: int) -> NoReturn:
        raise UnsupportedFunctionError(
            "LanceFileSession.open_dedicated_blob_writer is not supported: lancelet writes "
            "blob v2 files only through write_dataset"
        )

    def open_packed_blob_writer(self, path: str, blob_id: int) -> NoReturn:
        raise UnsupportedFunctionError(
            "LanceFileSession.open_packed_blob_writer is not supported: lancelet writes blob "
            "v2 files only through write_dataset"
        )

    def contains(self, path: str) -> bool:
        return self._io.exists(self._path(path))

    def list(self, path: str | None = None) -> list[str]:
        """Every file below ``path`` (default: the base path), relative to the base path."""
        prefix = f"{path.strip('/')}/" if path else ""
        return sorted(prefix + name for name, _ in self._io.list_tree(self._path(path)))

    def list_with_delimiter(self, path: str | None = None) -> ListResult:
        prefix = f"{path.strip('/')}/" if path else ""
        dirs: set[str] = set()
        files: list[str] = []
        for name, _ in self._io.list_tree(self._path(path)):
            head, sep, _ = name.partition("/")
            if sep:
                dirs.add(prefix + head)
            else:
                files.append(prefix + name)
        return ListResult(sorted(dirs), sorted(files))

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        source = self._io.open_input(self._path(path))
        try:
            if offset < 0 or length < 0 or offset + length > source.size:
                raise StorageError(
                    f"{source.path}: cannot read {length} bytes at {offset} "
                    f"of a {source.size}-byte file"
                )
            data: bytes = source.read(offset, length).to_pybytes()
        finally:
            source.close()
        return data

    def delete_file(self, path: str) -> None:
        full = self._path(path)
        if not self._io.exists(full):
            raise StorageNotFoundError(f"{full}: cannot delete, no such file")
        self._io.delete(full)

    def upload_file(self, local_path: str | os.PathLike[str], remote_path: str) -> None:
        with open(local_path, "rb") as f:
            self._io.put(self._path(remote_path), f.read())

    def download_file(self, remote_path: str, local_path: str | os.PathLike[str]) -> None:
        data = self._io.read_bytes(self._path(remote_path))
        tmp = f"{os.fspath(local_path)}.part"
        with open(tmp, "wb") as f:
            f.write(data)
        shutil.move(tmp, local_path)
