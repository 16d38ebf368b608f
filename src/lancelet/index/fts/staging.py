"""Distributed INVERTED builds: one staged build per call, merged into one partition.

The staging layout is pylance 14's (measured): a build over some fragments writes,
under ``<index dir>/staging/``, one partition numbered by its first fragment id
shifted left by 32 bits (``part_<n>_{tokens,docs,invert}.lance``) and that
partition's own ``part_<n>_metadata.lance`` (``metadata.lance``'s keys, listing
``[n]``).  Merging reads every staged partition into partition 0 of the index
directory, smallest first (by the bytes of its files; ties in partition-number
order), as pylance 14 orders them (measured on partitions of different document
and token counts, built in either order); it writes ``metadata.lance`` and deletes
the staged files.  The merged documents follow one another and token ids follow
the order tokens are first met, as in pylance's merged partition.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from lancelet import io
from lancelet.errors import ArgumentError
from lancelet.index._files import read_index_file
from lancelet.index.fts import details, writer
from lancelet.index.fts.params import InvertedParams
from lancelet.index.fts.reader import (
    FORMAT_KEYS,
    METADATA_FILE,
    Partition,
    params_from_json,
)
from lancelet.index.fts.reader import _check_keys as check_format_keys
from lancelet.index.fts.reader import _partition_numbers as partition_numbers
from lancelet.index.fts.segment import analyzed_partition
from lancelet.table import row_address

STAGING_DIR = "staging"
_STAGED_METADATA = re.compile(r"part_(\d+)_metadata\.lance")


def staged_metadata_file(number: int) -> str:
    return f"part_{number}_metadata.lance"


def staged_partition_number(fragment_ids: Sequence[int]) -> int:
    """The number of a build's staged partition: the row address of its first
    fragment's first row (pylance numbers a build over ``[1, 0]`` as fragment 1's)."""
    return row_address.of_row(int(fragment_ids[0]), 0) if fragment_ids else 0


def write_staged(
    batches: Iterable[tuple[pa.Array, np.ndarray]],
    directory: io.Place,
    value_type: pa.DataType,
    version: str,
    number: int,
    kwargs: dict[str, Any],
) -> None:
    """Analyze the rows of ``batches`` and stage them as partition ``number`` of the
    index in ``directory``."""
    params = details.parameters(kwargs)
    data = analyzed_partition(batches, value_type, params)
    staging = directory.join(STAGING_DIR)
    partitions = []
    if len(data.row_ids):
        writer.write_partition(staging, number, data, version)
        partitions.append(number)
    writer.write_metadata(staging, params, partitions, version, staged_metadata_file(number))


def merge_staged(directory: io.Place, version: str) -> bool:
    """Merge the staged builds of the index in ``directory`` into its partition 0 and
    ``metadata.lance``; False when nothing is staged and the index is merged already
    (pylance lets a merge be repeated).  No staged build and no merged index is an
    ArgumentError, as is a mix of parameters."""
    staging = directory.join(STAGING_DIR)
    numbers = _staged_numbers(staging)
    if not numbers:
        if directory.file_io.exists(directory.join(METADATA_FILE).path):
            return False
        raise ArgumentError(f"No partition metadata files found in index directory: {directory}")
    params: InvertedParams | None = None
    parts: list[Partition] = []
    for number in numbers:
        meta = read_index_file(staging, staged_metadata_file(number))
        check_format_keys(meta, FORMAT_KEYS)
        staged = params_from_json(
            meta.metadata.get("params", ""), int(FORMAT_KEYS["format_version"]), meta.path
        )
        if params is not None and staged != params:
            raise ArgumentError(
                f"{directory}: cannot merge staged INVERTED builds made with different "
                f"parameters ({params} and {staged})"
            )
        params = staged
        parts.extend(
            Partition.open(staging, p, staged.with_position) for p in partition_numbers(meta)
        )
    assert params is not None
    parts.sort(key=lambda part: (_staged_bytes(part), part.number))
    merged = writer.merged([writer.read_partition(part) for part in parts])
    writer.write_index(directory, [(0, merged)], params, version)
    for number in numbers:
        for name in staged_files(number):
            directory.file_io.delete(staging.join(name).path)
    return True


def _staged_bytes(part: Partition) -> int:
    """The bytes of a staged partition's files: pylance merges the smallest first."""
    files = part.directory.file_io
    return sum(
        files.size_of(part.directory.join(f"part_{part.number}_{kind}.lance").path)
        for kind in ("tokens", "docs", "invert")
    )


def _staged_numbers(staging: io.Place) -> list[int]:
    if not staging.file_io.is_dir(staging.path):
        return []
    found = (_STAGED_METADATA.fullmatch(name) for name in staging.file_io.list_dir(staging.path))
    return sorted(int(m.group(1)) for m in found if m)


def staged_files(number: int) -> list[str]:
    return [
        staged_metadata_file(number),
        *(f"part_{number}_{kind}.lance" for kind in ("tokens", "docs", "invert")),
    ]
